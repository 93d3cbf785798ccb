//go:build unix

package launcher

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/hub"
	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
)

// The supervisor's tests run whole sessions (see session_test.go) with one
// or two servers that misbehave in a way of their own.

// TestSupervisorCrashLoop: a server that exits at once is restarted with
// backoff, then given up on after FailureLimit crashes; status says why,
// with the server's last stderr line.
func TestSupervisorCrashLoop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, testServerTOML(t, "boom", "exit"))
	// A backoff long enough that polling cannot miss it.
	ts := startSession(t, path, Options{Timing: Timing{BackoffBase: 300 * time.Millisecond, BackoffMax: time.Second, FailureLimit: 3, FailureWindow: time.Minute}})

	st := ts.wait("backoff", serverIs("boom", ctl.Backoff))
	s := server(st, "boom")
	if s.RetryAt == nil || s.Pid != 0 || !strings.Contains(s.LastError, "exited with status 1 before it was ready; stderr: boom: cannot start") {
		t.Errorf("in backoff: got %+v", s)
	}
	var table strings.Builder
	st.WriteTable(&table, time.Now(), false)
	if !strings.Contains(table.String(), "backoff (") {
		t.Errorf("the table does not show the backoff:\n%s", table.String())
	}

	st = ts.wait("failed", serverIs("boom", ctl.Failed))
	s = server(st, "boom")
	if s.Restarts != 2 {
		t.Errorf("restarts: got %d, want 2 (3 starts)", s.Restarts)
	}
	if !strings.Contains(s.LastError, "3 crashes within 1m0s, giving up") || !strings.Contains(s.LastError, "boom: cannot start") {
		t.Errorf("last error: got %q", s.LastError)
	}
	if s.Pid != 0 || s.RetryAt != nil {
		t.Errorf("failed: got %+v", s)
	}
	want := "[starting backoff starting backoff starting failed]"
	if got := fmt.Sprint(ts.events.states("boom")); got != want {
		t.Errorf("states: got %s, want %s", got, want)
	}
	// The server's stderr is in its log, every start of it.
	b, err := os.ReadFile(s.Log)
	if err != nil || strings.Count(string(b), "boom: cannot start\n") != 3 {
		t.Errorf("log %s: got %q (%v), want the line 3 times", s.Log, b, err)
	}
}

// TestSupervisorPermanent: what no retry can fix fails at once, with the
// reason: a command that does not exist, on PATH or as a path, and a ${VAR}
// that nothing defines.
func TestSupervisorPermanent(t *testing.T) {
	const unset = "MCPGEN_TEST_SURELY_UNSET"
	t.Setenv(unset, "")
	os.Unsetenv(unset)
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, `
[servers.nopath]
command = "mcpgen-test-no-such-command"

[servers.nofile]
command = "./bin/no-such-server"

[servers.unset]
command = "echo"
args = ["${`+unset+`}"]
`)
	ts := startSession(t, path, Options{})
	st := ts.wait("all failed", func(st *ctl.Status) bool {
		return serverIs("nopath", ctl.Failed)(st) && serverIs("nofile", ctl.Failed)(st) && serverIs("unset", ctl.Failed)(st)
	})
	for _, want := range []struct {
		name, err, states string
	}{
		{"nopath", `command "mcpgen-test-no-such-command" not found on PATH`, "[starting failed]"},
		{"nofile", `command "` + filepath.Join(filepath.Dir(path), "bin/no-such-server") + `" or its working directory does not exist`, "[starting failed]"},
		{"unset", unset, "[failed]"},
	} {
		s := server(st, want.name)
		if !strings.Contains(s.LastError, want.err) || s.Restarts != 0 || s.Pid != 0 {
			t.Errorf("%s: got %+v, want last error with %q", want.name, s, want.err)
		}
		if got := fmt.Sprint(ts.events.states(want.name)); got != want.states {
			t.Errorf("%s: states %s, want %s (no retry)", want.name, got, want.states)
		}
	}
	if s := server(st, "unset"); !strings.Contains(s.LastError, `server "unset"`) || !strings.Contains(s.LastError, "args") {
		t.Errorf("unset: the error should name the server and the key: %q", s.LastError)
	}
}

// TestSupervisorHandshakeTimeout: a server that never answers initialize is
// killed at its startup timeout and retried, then given up on.
func TestSupervisorHandshakeTimeout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, testServerTOML(t, "mute", "hang")+"startup_timeout = \"300ms\"\n")
	ts := startSession(t, path, Options{Timing: Timing{FailureLimit: 2}})

	st := ts.wait("spawned", func(st *ctl.Status) bool { return server(st, "mute").Pid != 0 })
	first := server(st, "mute").Pid
	st = ts.wait("failed", serverIs("mute", ctl.Failed))
	s := server(st, "mute")
	if !strings.Contains(s.LastError, "handshake: initialize: not ready within 300ms (startup_timeout)") {
		t.Errorf("last error: got %q", s.LastError)
	}
	if got := fmt.Sprint(ts.events.states("mute")); got != "[starting backoff starting failed]" {
		t.Errorf("states: got %s", got)
	}
	if !ts.events.has("server backoff", "server", "mute", "error", "not ready within 300ms") {
		t.Errorf("no backoff for the timeout:\n%s", ts.events)
	}
	waitGone(t, "the hung server", first)
	if !exited(first) {
		t.Errorf("process %d lives on", first)
	}
	// Both processes ended with their groups: nothing of the test's runs.
	if left := tokenProcs(ts.token); len(left) > 0 {
		t.Errorf("processes left while failed: %v", left)
	}
}

// TestSupervisorStopStubborn: a server that ignores stdin's EOF and SIGTERM
// still ends when the session stops: SIGKILL after the graces.
func TestSupervisorStopStubborn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, testServerTOML(t, "stubborn", "noterm"))
	ts := startSession(t, path, Options{Timing: Timing{StdinGrace: 50 * time.Millisecond, TermGrace: 50 * time.Millisecond}})
	pid := server(ts.wait("ready", allReady("stubborn")), "stubborn").Pid
	if err := ts.end(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "after the session", pid)
	if got := ts.events.states("stubborn"); got[len(got)-1] != ctl.Stopped {
		t.Errorf("states: got %v", got)
	}
}

// TestSupervisorHurry: a second signal (hurry) skips the grace periods. The
// graces here are an hour: only hurry can end the session.
func TestSupervisorHurry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, testServerTOML(t, "stubborn", "noterm")+testServerTOML(t, "polite", "echo"))
	ts := startSession(t, path, Options{Timing: Timing{StdinGrace: time.Hour, TermGrace: time.Hour}})
	st := ts.wait("ready", allReady("stubborn", "polite"))
	stubborn, polite := server(st, "stubborn").Pid, server(st, "polite").Pid

	ts.ended = true
	ts.stop()
	// The polite server leaves at stdin's EOF; the stubborn one stays in
	// its grace period, and so does the session.
	waitGone(t, "the polite server", polite)
	select {
	case err := <-ts.done:
		t.Fatalf("the session ended within an hour's grace: %v", err)
	case <-time.After(waitQuiet):
	}
	if exited(stubborn) {
		t.Fatalf("the stubborn server ended within an hour's grace")
	}

	ts.s.Hurry()
	select {
	case err := <-ts.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitLong):
		t.Fatal("hurry did not end the session")
	}
	waitGone(t, "after hurry", stubborn)
}

// TestSupervisorHurryFirst: Hurry before the stop (two signals in quick
// succession) skips the graces of the stop to come.
func TestSupervisorHurryFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, testServerTOML(t, "stubborn", "noterm"))
	ts := startSession(t, path, Options{Timing: Timing{StdinGrace: time.Hour, TermGrace: time.Hour}})
	stubborn := server(ts.wait("ready", allReady("stubborn")), "stubborn").Pid

	ts.s.Hurry()
	if exited(stubborn) {
		t.Fatal("Hurry alone stopped the server: it only shortens a stop")
	}
	ts.ended = true
	ts.stop()
	select {
	case err := <-ts.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitLong):
		t.Fatal("a hurried stop waited for the graces")
	}
	waitGone(t, "after the hurried stop", stubborn)
}

// TestSupervisorGrandchild: what a server starts dies with it, when it
// stops and when it crashes: the group is killed, not just the server.
func TestSupervisorGrandchild(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpgen.toml")
	gcFile, shFile := filepath.Join(dir, "gc.pid"), filepath.Join(dir, "sh.pid")
	script := `sleep 300 & echo $! > "$PIDFILE"; exec "$0" -test.run='^$'`
	writeFile(t, path, testServerTOML(t, "gc", "grandchild", "MCPGEN_TESTSERVER_PIDFILE="+gcFile)+
		fmt.Sprintf("[servers.sh]\ncommand = \"sh\"\nargs = [\"-c\", %s, %s]\nenv = { MCPGEN_TESTSERVER = \"echo\", PIDFILE = %s }\n",
			tomlString(script), tomlString(self(t)), tomlString(shFile)))
	ts := startSession(t, path, Options{})
	st := ts.wait("ready", allReady("gc", "sh"))

	// A crash (the tool exits the server): its sleep goes with it, and the
	// new process has a new one.
	for _, name := range []string{"gc", "sh"} {
		file := map[string]string{"gc": gcFile, "sh": shFile}[name]
		before := server(st, name).Pid
		sleeper := readPidFile(t, file)
		if exited(sleeper) {
			t.Fatalf("%s: the sleep %d is not running", name, sleeper)
		}
		os.Remove(file)
		c := ts.connect(name, "crasher")
		c.Call("1", "crash", `{}`)
		if m := c.Next(); m.Error == nil || m.Error.Code != hub.CodeUnavailable {
			t.Errorf("%s: crash: got %s", name, m.AppendJSON(nil))
		}
		waitGone(t, name+": the crashed server's sleep", sleeper)
		st = ts.wait(name+" restarted", func(st *ctl.Status) bool {
			s := server(st, name)
			return s.State == ctl.Ready && s.Pid != before
		})
		if next := readPidFile(t, file); next == sleeper || exited(next) {
			t.Errorf("%s: after the restart, sleep %d (before: %d)", name, next, sleeper)
		}
	}

	// A stop: the sleeps go with the servers.
	sleepers := []int{readPidFile(t, gcFile), readPidFile(t, shFile)}
	if err := ts.end(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "the sleeps after the session", sleepers...)
}

// TestSupervisorCrashRestart: a crash restarts the server in a new process;
// the hub's clients get an error for what was in flight, stay connected,
// and reach the new process.
func TestSupervisorCrashRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, testServerTOML(t, "a", "echo"))
	ts := startSession(t, path, Options{})
	first := server(ts.wait("ready", allReady("a")), "a").Pid

	c1, c2 := ts.connect("a", "one"), ts.connect("a", "two")
	c2.Call("7", "slow", `{"ms":60000}`)
	if pid := c2.CallPid("8"); pid != first { // the slow call has reached the server
		t.Fatalf("pid: got %d, want %d", pid, first)
	}
	c1.Call("1", "slow", `{"ms":60000}`)
	c1.Call("2", "crash", `{}`)
	for _, c := range []*testserver.Client{c1, c1, c2} {
		m := c.Next()
		if m.Error == nil || m.Error.Code != hub.CodeUnavailable || !strings.Contains(m.Error.Message, `server "a" is unavailable`) {
			t.Errorf("in flight at the crash: got %s", m.AppendJSON(nil))
		}
	}
	waitGone(t, "the crashed server", first)

	st := ts.wait("restarted", func(st *ctl.Status) bool { s := server(st, "a"); return s.State == ctl.Ready && s.Pid != first })
	s := server(st, "a")
	if s.Restarts != 1 || s.LastError != "" {
		t.Errorf("after the restart: got %+v", s)
	}
	if got := fmt.Sprint(ts.events.states("a")); got != "[starting ready backoff starting ready]" {
		t.Errorf("states: got %s", got)
	}
	if !ts.events.has("server backoff", "server", "a", "error", "exited with status 3") {
		t.Errorf("the crash is not logged:\n%s", ts.events)
	}
	for i, c := range []*testserver.Client{c1, c2} {
		if pid := c.CallPid(fmt.Sprint("10", i)); pid != s.Pid {
			t.Errorf("client %d after the restart: pid %d, want %d", i, pid, s.Pid)
		}
	}
	if got := fmt.Sprint(s.Clients.Names); got != "[one 1.0 two 1.0]" {
		t.Errorf("clients: got %s", got)
	}
}

// TestSupervisorPings: a server that stops answering (here: stopped with
// SIGSTOP, neither exited nor closed) is treated as crashed after
// PingMisses unanswered pings: killed, and restarted.
func TestSupervisorPings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, testServerTOML(t, "a", "echo"))
	ts := startSession(t, path, Options{Timing: Timing{PingInterval: 100 * time.Millisecond, PingTimeout: time.Second, PingMisses: 2}})
	first := server(ts.wait("ready", allReady("a")), "a").Pid
	if err := syscall.Kill(first, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	ts.wait("restarted", func(st *ctl.Status) bool { s := server(st, "a"); return s.State == ctl.Ready && s.Pid != first })
	waitGone(t, "the silent server", first)
	if !ts.events.has("server backoff", "server", "a", "error", "no answer to 2 pings in a row") {
		t.Errorf("no backoff for the pings:\n%s", ts.events)
	}
}
