package logfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/internal/proc"
)

// TestLogCloseHeldPipe: a process that keeps the pipe open (here, a
// background sleep that inherited stderr) does not keep Close waiting.
func TestLogCloseHeldPipe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.log")
	l, err := Open(path, DefaultMaxBytes, DefaultKeep)
	if err != nil {
		t.Fatal(err)
	}
	l.drain = 10 * time.Millisecond
	w, err := l.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `sleep 300 & echo started >&2`)
	cmd.Stderr = w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	// What the child wrote is copied before Close begins, so that the
	// short drain cannot lose it.
	waitUntil(t, "the log holds the child's line", func() bool {
		b, _ := os.ReadFile(path)
		return masked(string(b)) == "T started\n"
	})

	closed := make(chan error, 1)
	go func() { closed <- l.Close() }() // ends when Close returns
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close still waits for a pipe that a background process holds")
	}
	if n := len(groupProcs(t, pgid)); n == 0 {
		t.Fatal("the background sleep is gone: the test proves nothing")
	}
	l.mu.Lock()
	pipes := len(l.pipes)
	l.mu.Unlock()
	if pipes != 0 {
		t.Errorf("%d pipes still copied after Close, want 0", pipes)
	}
}

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
func groupProcs(t *testing.T, pgid int) []proc.Proc {
	t.Helper()
	procs, err := proc.Procs()
	if err != nil {
		t.Fatal(err)
	}
	var in []proc.Proc
	for _, p := range procs {
		if p.Pgid == pgid && !p.Dead() {
			in = append(in, p)
		}
	}
	return in
}
