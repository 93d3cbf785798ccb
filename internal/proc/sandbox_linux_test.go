package proc

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
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
	type way struct {
		name  string
		mode  string // of containment; "" for none (a process group)
		spare bool   // the setup step a spare, started ahead
	}
	var ways []way
	for _, mode := range []string{"", "cgroup", "subreaper", "groups"} {
		for _, spare := range []bool{false, true} {
			name := cmp.Or(mode, "no containment")
			if spare {
				name += ", spare"
			}
			ways = append(ways, way{name, mode, spare})
		}
	}
	for _, c := range ways {
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
			if c.mode != "" {
				spec.Containment, spec.Name = setupMode(t, c.mode), "server"
			}
			if c.spare {
				var start func(*exec.Cmd) error
				if spec.Containment != nil {
					start = spec.Containment.StartOutside
				}
				spec.Spares = sandbox.NewSpares(start)
				defer spec.Spares.Close()
				ctx, cancel := context.WithTimeout(context.Background(), bound)
				err := spec.Spares.Ready(ctx, spec.Sandbox)
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				if c.mode == "subreaper" {
					// Scans go by (every 20ms here), each killing what
					// it takes for an orphan: not the spare.
					time.Sleep(200 * time.Millisecond)
				}
			}
			p, err := Start(spec)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s", spec.SandboxReport)
			// The process to stop is the setup step: the spare's, or one
			// started for this start.
			cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.Pid))
			if err != nil {
				t.Fatal(err)
			}
			if spare := strings.Contains(string(cmdline), "__mcpgen_sandbox_spare"); spare != c.spare {
				t.Fatalf("the setup step is %q: a spare %v, want %v", cmdline, spare, c.spare)
			}
			if c.mode != "" {
				pids, err := p.k.Pids()
				if err != nil || !slices.Contains(pids, p.Pid) {
					t.Fatalf("the container holds %v (%v), not the setup step %d", pids, err, p.Pid)
				}
			}
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
