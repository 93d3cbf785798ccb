//go:build linux || darwin

package proc

import (
	"os"
	"testing"
	"time"
)

// waitUntil polls cond, failing the test if it stays false: a bound on a
// hang, not an assertion on timing.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// groupProcs returns the live (not zombie) processes of group pgid.
func groupProcs(t *testing.T, pgid int) []Stat {
	t.Helper()
	procs, err := Scan()
	if err != nil {
		t.Fatal(err)
	}
	var in []Stat
	for _, p := range procs {
		if p.Pgid == pgid && p.State != 'Z' {
			in = append(in, p)
		}
	}
	return in
}

func fileText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
