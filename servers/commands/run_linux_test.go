package commands

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/proc"
)

// marked returns an environment that marks every process a test starts,
// and their descendants, which inherit it; leftovers finds them by it. The
// test's cleanup kills any that remain, whatever the test says.
func marked(t *testing.T) (env []string, mark string) {
	t.Helper()
	var b [8]byte
	rand.Read(b[:])
	mark = "MCPGEN_TEST_MARK=" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		for _, pid := range leftovers(mark) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return append(os.Environ(), mark), mark
}

// leftovers returns the live processes whose environment holds mark.
func leftovers(mark string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		environ, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(environ, []byte(mark+"\x00")) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// waitNoLeftovers fails unless the processes marked with mark are all gone
// within a while: killed processes take a moment to go.
func waitNoLeftovers(t *testing.T, mark string) {
	t.Helper()
	var left []int
	for range 200 {
		if left = leftovers(mark); len(left) == 0 {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	for _, pid := range left {
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		t.Errorf("process %d (%s) is still running", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
	}
}

// inModes runs f under each containment mode, each set up for the test
// and closed after it (and its parallel subtests); cgroup is skipped,
// with the reason, where cgroups are not writable.
func inModes(t *testing.T, f func(t *testing.T, c *proc.Containment)) {
	for _, mode := range []proc.Mode{proc.ModeCgroup, proc.ModeSubreaper, proc.ModeGroups} {
		t.Run(mode.String(), func(t *testing.T) {
			c, err := proc.Setup(context.Background(), proc.Options{Name: "commands-test", Mode: mode})
			if err != nil {
				if mode == proc.ModeCgroup {
					t.Skipf("no cgroup containment here: %v", err)
				}
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if err := c.Close(ctx); err != nil {
					t.Errorf("closing the containment: %v", err)
				}
			})
			f(t, c)
		})
	}
}

// TestRunLeavesNothing: a tool's call answers, at its exit or at its
// timeout, and nothing it started outlives it: background processes in its
// group, and descendants that left the group with setsid but keep its
// stdout or stderr open (which kept the call from ever answering), in
// every mode; and, in a cgroup or under the subreaper, those that let go
// of the output too, which process groups alone do not reach (the test
// shows that it would see them).
func TestRunLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("an attack test, in every containment mode: run without -short")
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid here")
	}
	// escape runs cmd in a new session, out of the tool's process group,
	// and waits until it is there: cmd writes its pid into a file first.
	escape := func(cmd string) string {
		return "setsid sh -c 'echo $$ > escaped; " + cmd + "' & until [ -s escaped ]; do sleep 0.01; done"
	}
	// reachTimeout is the timeout of a call that must print "started"
	// before it times out: the escape before it polls for a file, which
	// took 0.7 s on a loaded machine, so 500 ms was a race with it.
	const reachTimeout = 5 * time.Second
	tests := []struct {
		name     string
		script   string
		timeout  time.Duration
		timedOut bool
		stdout   string
		// groupsMiss: with process groups only, the escape survives.
		groupsMiss bool
	}{
		{"background in the group", "sleep 300 & echo started", time.Minute, false, "started\n", false},
		{"background in the group, timeout", "sleep 300 & wait", 500 * time.Millisecond, true, "", false},
		{"setsid holding stdout", escape("sleep 300") + "; echo started", time.Minute, false, "started\n", false},
		{"setsid holding stdout, timeout", escape("sleep 300") + "; echo started; wait", reachTimeout, true, "started\n", false},
		{"setsid holding stderr only", escape("exec sleep 300 >/dev/null") + "; echo started", time.Minute, false, "started\n", false},
		{"setsid holding, its child not", escape("sleep 300 >/dev/null 2>&1; :") + "; echo started", time.Minute, false, "started\n", false},
		{"setsid from a subshell that exits", "(" + escape("sleep 300") + "); echo started", time.Minute, false, "started\n", false},
		{"setsid writing on", escape("while :; do echo tick >&2; sleep 0.1; done") + "; echo started", time.Minute, false, "started\n", false},
		{"setsid letting go of the output", escape("exec sleep 300 >/dev/null 2>&1") + "; echo started", time.Minute, false, "started\n", true},
		{"setsid daemon letting go, timeout", "(" + escape("exec sleep 300 >/dev/null 2>&1") + "); echo started; sleep 300", reachTimeout, true, "started\n", true},
	}
	inModes(t, func(t *testing.T, c *proc.Containment) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				env, mark := marked(t)
				done := make(chan *Result, 1)
				go func() {
					done <- Run(context.Background(), c, "t", []string{"sh", "-c", tt.script}, t.TempDir(), env, tt.timeout)
				}()

				var r *Result
				select {
				case r = <-done:
				case <-time.After(2 * time.Minute):
					// Free the call by killing what holds it, to report.
					for _, pid := range leftovers(mark) {
						syscall.Kill(pid, syscall.SIGKILL)
					}
					r = <-done
					t.Errorf("the call did not answer until its processes were killed by the test")
				}
				if r.TimedOut != tt.timedOut || string(r.Stdout) != tt.stdout || r.Held || r.Err != nil {
					t.Errorf("got timedOut=%v stdout=%q held=%v err=%v, want timedOut=%v stdout=%q held=false err=nil",
						r.TimedOut, r.Stdout, r.Held, r.Err, tt.timedOut, tt.stdout)
				}
				if tt.groupsMiss && c.Mode() == proc.ModeGroups {
					// What process groups cannot reach: the test sees it
					// (and its cleanup kills it).
					if left := leftovers(mark); len(left) == 0 {
						t.Errorf("with process groups only: nothing left, want the escape that let go of its output to survive")
					}
					return
				}
				waitNoLeftovers(t, mark)
			})
		}
	})
}

// TestServerSetsid drives the attack through the server: a declared tool
// whose child calls setsid and keeps stdout open answers at its timeout,
// and leaves nothing behind.
func TestServerSetsid(t *testing.T) {
	if testing.Short() {
		t.Skip("an attack test that waits for tool timeouts: run without -short")
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid here")
	}
	m, s := load(t, `
[servers.t]
tool_timeout = "1s"
[servers.t.tools.daemon]
run = ["sh", "-c", "setsid sh -c 'echo $$ > escaped; sleep 300' & until [ -s escaped ]; do sleep 0.01; done; echo started"]
[servers.t.tools.stuck]
run = ["sh", "-c", "setsid sh -c 'sleep 300' & wait"]
`)
	inModes(t, func(t *testing.T, contain *proc.Containment) {
		env, mark := marked(t)
		srv, err := New(m, s, Options{Dir: t.TempDir(), Env: env, Version: "test", Containment: contain})
		if err != nil {
			t.Fatal(err)
		}
		c := connect(t, srv)
		for _, tt := range []struct {
			tool    string
			wantErr bool
			want    string
		}{
			{"daemon", false, "started\n"},
			{"stuck", true, `tool "stuck" timed out after 1s; its processes were killed`},
		} {
			res, err := c.CallTool(t.Context(), tt.tool, json.RawMessage(`{}`))
			if err != nil {
				t.Fatalf("%s: %v", tt.tool, err)
			}
			if res.IsError != tt.wantErr || len(res.Content) != 1 || !strings.Contains(res.Content[0].Text, tt.want) {
				t.Errorf("%s: got isError=%v %q, want isError=%v and %q", tt.tool, res.IsError, res.Content, tt.wantErr, tt.want)
			}
			waitNoLeftovers(t, mark)
		}
	})
}
