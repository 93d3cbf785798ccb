package proc

import (
	"bufio"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/internal/sandbox"
)

// lockedBuffer is a strings.Builder safe for Stderr's copier and the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSandboxStop: a sandboxed server (behind the sandbox's PID 1 in its
// own namespace) gets Stop's SIGTERM, passed on by that PID 1, and stops
// by it; a PID 1 without handlers would drop it, and the server would
// need the SIGKILL.
func TestSandboxStop(t *testing.T) {
	for _, c := range []struct {
		name      string
		contained bool
	}{{"group", false}, {"containment", true}} {
		t.Run(c.name, func(t *testing.T) {
			var stderr lockedBuffer
			spec := &Spec{
				Path: "sh",
				Args: []string{"-c", `trap 'echo got TERM >&2; exit 0' TERM; echo ready; while :; do sleep 0.1; done`},
				Env:  []string{"PATH=/usr/bin:/bin"},
				// The script does not read stdin, so Stop goes on to
				// SIGTERM; the kill comes only after bound.
				StdinGrace: time.Millisecond, TermGrace: bound,
				Stderr:  &stderr,
				Sandbox: &sandbox.Policy{Network: sandbox.Network{Mode: sandbox.NetNone}},
			}
			if c.contained {
				k, err := Setup(context.Background(), Options{Name: "sbxtest"})
				if err != nil {
					t.Fatal(err)
				}
				defer k.Close(context.Background())
				spec.Containment, spec.Name = k, "server"
			}
			p, err := Start(spec)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s", spec.SandboxReport)
			line, err := bufio.NewReader(p.Stdout()).ReadString('\n')
			if line != "ready\n" {
				p.Kill()
				t.Fatalf("first line %q, %v; stderr: %s", line, err, stderr.String())
			}
			p.Stop(context.Background())
			if got := stderr.String(); !strings.Contains(got, "got TERM") {
				t.Errorf("stderr %q: the server did not get SIGTERM through the sandbox", got)
			}
		})
	}
}
