//go:build unix

package launcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/dirs"
)

// The tests of what mcpgen ps, stop, restart and the session commands'
// defaults rest on: finding running sessions without creating anything,
// and the control socket's stop, restart and wait.

// TestRunningSessions: only runtime dirs whose lock is held are running
// sessions; a stale dir (its launcher ended), a directory other users may
// enter, and anything but a directory are not.
func TestRunningSessions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, testServerTOML(t, "a", "echo"))
	ts := startSession(t, path, Options{Workspace: "live"})
	ts.wait("ready", allReady("a"))
	rt := os.Getenv(dirs.EnvRuntimeDir)

	// A stale dir: a lock file whose launcher is gone (the pid of this
	// test, which holds no lock).
	mkdirMode(t, filepath.Join(rt, "stale"), 0o700)
	writeFile(t, filepath.Join(rt, "stale", dirs.LockFile), fmt.Sprintf("%d\n", os.Getpid()))
	// A dir that never had a lock.
	mkdirMode(t, filepath.Join(rt, "empty"), 0o700)
	// A dir other users may enter: RuntimeDir refuses it, and so is it
	// skipped, lock or not.
	mkdirMode(t, filepath.Join(rt, "loose"), 0o755)
	// A file.
	writeFile(t, filepath.Join(rt, "file"), "")

	running, err := ctl.RunningSessions()
	if err != nil {
		t.Fatal(err)
	}
	want := []ctl.Running{{Workspace: "live", Pid: os.Getpid()}}
	if !slices.Equal(running, want) {
		t.Errorf("RunningSessions = %+v, want %+v", running, want)
	}
	for ws, want := range map[string]bool{"live": true, "stale": false, "empty": false, "never": false} {
		if pid, got, err := ctl.IsRunning(ws); got != want || err != nil || (got && pid != os.Getpid()) {
			t.Errorf("IsRunning(%s) = %d, %v, %v; want running %v", ws, pid, got, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(rt, "never")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("IsRunning made the runtime dir of a workspace never launched: %v", err)
	}

	sessions, err := ctl.Sessions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(sessions) != 1 || sessions[0].Err != nil || sessions[0].Status == nil || sessions[0].Status.Workspace != "live" {
		t.Fatalf("Sessions = %+v", sessions)
	}
	if ready, total, clients := sessions[0].Status.Counts(); ready != 1 || total != 1 || clients != 0 {
		t.Errorf("Counts = %d, %d, %d; want 1, 1, 0", ready, total, clients)
	}

	if err := ts.end(); err != nil {
		t.Fatal(err)
	}
	// Its dir stays (the lock file is never removed), stale now.
	if running, err := ctl.RunningSessions(); err != nil || len(running) != 0 {
		t.Errorf("after the session: RunningSessions = %+v, %v; want none", running, err)
	}
}

// TestFindCreatesNothing: asking about a workspace that was never launched
// (status, reload, restart, stop, connect, logs, ps) says so and creates
// no directory, neither the runtime dirs above it nor its state dir.
func TestFindCreatesNothing(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		gone []string // must not exist afterwards, relative to root
	}{
		{"MCPGEN_RUNTIME_DIR", map[string]string{dirs.EnvRuntimeDir: "@/run", dirs.EnvStateDir: "@/state"}, []string{"run", "state"}},
		{"XDG dirs", map[string]string{"XDG_RUNTIME_DIR": "@/xdg", "XDG_STATE_HOME": "@/xstate"}, []string{"xdg/mcpgen", "xstate"}},
		{"temp dir and home", map[string]string{"TMPDIR": "@/tmp", "HOME": "@/home"}, []string{fmt.Sprintf("tmp/mcpgen-%d", os.Getuid()), "home/.local"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearDirEnv(t)
			root := t.TempDir()
			for k, v := range tt.env {
				t.Setenv(k, strings.Replace(v, "@", root, 1))
			}
			mkdirMode(t, root+"/xdg", 0o700)
			mkdirMode(t, root+"/tmp", 0o700)
			mkdirMode(t, root+"/home", 0o700)
			ctx := context.Background()
			notRunning := func(what string, err error) {
				t.Helper()
				if !errors.As(err, new(*ctl.NotRunningError)) {
					t.Errorf("%s: %v, want a NotRunningError", what, err)
				}
			}
			_, err := ctl.QueryStatus(ctx, "never")
			notRunning("QueryStatus", err)
			_, err = ctl.Reload(ctx, "never")
			notRunning("Reload", err)
			_, _, err = ctl.Restart(ctx, "never", "a")
			notRunning("Restart", err)
			_, err = ctl.Stop(ctx, "never", false)
			notRunning("Stop", err)
			_, _, err = ctl.WaitSettled(ctx, "never")
			notRunning("WaitSettled", err)
			_, _, err = ctl.Connect(ctx, "never", "a", nil, nil)
			notRunning("Connect", err)
			if _, err := ctl.FindStateDir("never"); !errors.As(err, new(*ctl.NeverLaunchedError)) {
				t.Errorf("FindStateDir: %v, want a NeverLaunchedError", err)
			}
			if _, err := ctl.ServerLogs("never"); !errors.As(err, new(*ctl.NeverLaunchedError)) {
				t.Errorf("ServerLogs: %v, want a NeverLaunchedError", err)
			}
			if running, err := ctl.RunningSessions(); len(running) != 0 || err != nil {
				t.Errorf("RunningSessions = %v, %v; want none", running, err)
			}
			for _, d := range tt.gone {
				if _, err := os.Stat(filepath.Join(root, d)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s exists (%v): a lookup created it", d, err)
				}
			}
		})
	}
}

// TestSessionStopRequest: mcpgen stop's request ends the session as a
// first signal does, and returns once the session has ended: its servers
// gone, its lock released, Run returned.
func TestSessionStopRequest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, testServerTOML(t, "a", "echo")+testServerTOML(t, "b", "echo"))
	ts := startSession(t, path, Options{})
	st := ts.wait("ready", allReady("a", "b"))

	got, err := ctl.Stop(context.Background(), "ws", false)
	if err != nil {
		t.Fatal(err)
	}
	if got.Pid != os.Getpid() || len(got.Servers) != 2 {
		t.Errorf("the status of the stop: got %s", dumpStatus(got))
	}
	// Returned: the servers are gone and the lock is free (checked
	// below); Run itself returns right after it closes the connection.
	select {
	case err := <-ts.done:
		ts.ended = true
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the stop")
	}
	for _, s := range st.Servers {
		if !exited(s.Pid) {
			t.Errorf("server %s (pid %d) still runs after the stop returned", s.Name, s.Pid)
		}
	}
	if _, running, _ := ctl.IsRunning("ws"); running {
		t.Error("the lock is still held after the stop returned")
	}
	if !ts.events.has("stop requested (mcpgen stop)", "skip_graces", "false") {
		t.Errorf("the request is not logged:\n%s", ts.events)
	}
}

// TestSessionStopForce: with force, and for a second request while the
// first waits, the stop skips the grace periods (here an hour, which the
// stubborn server would sit out), as a second signal does.
func TestSessionStopForce(t *testing.T) {
	for _, how := range []string{"force", "second request"} {
		t.Run(how, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mcpgen.toml")
			writeFile(t, path, testServerTOML(t, "stubborn", "noterm"))
			ts := startSession(t, path, Options{Timing: Timing{StdinGrace: time.Hour, TermGrace: time.Hour}})
			pid := server(ts.wait("ready", allReady("stubborn")), "stubborn").Pid

			if how == "second request" {
				// The first waits out its bound: the server sits in its
				// hour of grace.
				ctx, cancel := context.WithTimeout(context.Background(), waitQuiet)
				_, err := ctl.Stop(ctx, "ws", false)
				cancel()
				var still *ctl.StillStoppingError
				if !errors.As(err, &still) || still.Pid != os.Getpid() {
					t.Fatalf("first request: %v, want a StillStoppingError", err)
				}
				if want := "mcpgen stop --force --workspace ws"; !strings.Contains(err.Error(), want) {
					t.Errorf("the error does not say %q: %v", want, err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitLong)
			defer cancel()
			if _, err := ctl.Stop(ctx, "ws", how == "force"); err != nil {
				t.Fatalf("the stop that skips the graces: %v", err)
			}
			waitGone(t, "after the stop", pid)
			if !ts.events.has("stop requested (mcpgen stop)", "skip_graces", "true") {
				t.Errorf("the hurried request is not logged:\n%s", ts.events)
			}
		})
	}
}

// TestSessionStopCallback: a session whose owner handles stop requests
// (launch, which runs an agent) calls it, and does not stop by itself.
func TestSessionStopCallback(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, testServerTOML(t, "a", "echo"))
	asked := make(chan bool, 4)
	ts := startSession(t, path, Options{Stop: func(hurry bool) { asked <- hurry }})
	ts.wait("ready", allReady("a"))

	for i, want := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), waitQuiet)
		_, err := ctl.Stop(ctx, "ws", false)
		cancel()
		if !errors.As(err, new(*ctl.StillStoppingError)) {
			t.Errorf("request %d: %v, want a StillStoppingError (the owner did not stop)", i+1, err)
		}
		select {
		case got := <-asked:
			if got != want {
				t.Errorf("request %d: hurry %v, want %v", i+1, got, want)
			}
		case <-time.After(waitLong):
			t.Fatalf("request %d: Stop was not called", i+1)
		}
	}
	if st := ts.status(); server(st, "a").State != ctl.Ready {
		t.Errorf("the session stopped its servers itself: %s", dumpStatus(st))
	}
}

// TestSessionRestart: mcpgen restart replaces a ready server's process and
// counts it; it retries a failed one (counted too), cuts a backoff short
// (counted once, as the backoff's restart), and names the servers there
// are for one there is not.
func TestSessionRestart(t *testing.T) {
	ctx := context.Background()
	t.Run("ready", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "mcpgen.toml")
		writeFile(t, path, testServerTOML(t, "a", "echo"))
		ts := startSession(t, path, Options{})
		first := server(ts.wait("ready", allReady("a")), "a").Pid
		st, starting, err := ctl.Restart(ctx, "ws", "a")
		if err != nil || starting {
			t.Fatalf("restart: %v (starting %v)", err, starting)
		}
		if a := server(st, "a"); a.State != ctl.Ready || a.Pid == first || a.Pid == 0 || a.Restarts != 1 {
			t.Errorf("after the restart: got %+v, want ready, a new pid, 1 restart", a)
		}
		waitGone(t, "the first process", first)
		if got := fmt.Sprint(ts.events.states("a")); got != "[starting ready starting ready]" {
			t.Errorf("states: got %s", got)
		}
		if !ts.events.has("restart requested (mcpgen restart)", "server", "a") {
			t.Errorf("the request is not logged:\n%s", ts.events)
		}
		if _, _, err := ctl.Restart(ctx, "ws", "nope"); err == nil || err.Error() != `workspace "ws" has no server "nope"; it has: a` {
			t.Errorf("restart nope: %v", err)
		}
	})
	t.Run("failed", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "mcpgen.toml")
		writeFile(t, path, testServerTOML(t, "boom", "exit"))
		ts := startSession(t, path, Options{Timing: Timing{FailureLimit: 1}})
		ts.wait("failed", serverIs("boom", ctl.Failed))
		st, _, err := ctl.Restart(ctx, "ws", "boom")
		if err != nil {
			t.Fatal(err)
		}
		if b := server(st, "boom"); b.State != ctl.Failed || b.Restarts != 1 || !strings.Contains(b.LastError, "boom: cannot start") {
			t.Errorf("after the restart: got %+v, want failed again, 1 restart", b)
		}
		if got := fmt.Sprint(ts.events.states("boom")); got != "[starting failed starting failed]" {
			t.Errorf("states: got %s", got)
		}
	})
	t.Run("backoff", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "mcpgen.toml")
		writeFile(t, path, testServerTOML(t, "a", "echo"))
		ts := startSession(t, path, Options{Timing: Timing{BackoffBase: time.Hour, BackoffMax: time.Hour}})
		pid := server(ts.wait("ready", allReady("a")), "a").Pid
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if a := server(ts.wait("backoff", serverIs("a", ctl.Backoff)), "a"); a.Restarts != 1 {
			t.Errorf("in backoff: %d restarts, want 1", a.Restarts)
		}
		st, _, err := ctl.Restart(ctx, "ws", "a")
		if err != nil {
			t.Fatal(err)
		}
		if a := server(st, "a"); a.State != ctl.Ready || a.Restarts != 1 {
			t.Errorf("restarted in backoff: got %+v, want ready, still 1 restart", a)
		}
	})
}

// TestSessionWaitSettled: the wait ends when no server is starting: each
// ready, or in backoff after a handshake that timed out (not ready: that
// would wait forever); a server still starting when the caller gives up is
// named.
func TestSessionWaitSettled(t *testing.T) {
	t.Run("settled", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "mcpgen.toml")
		writeFile(t, path, testServerTOML(t, "a", "echo")+
			testServerTOML(t, "slow", "hang")+"startup_timeout = \"200ms\"\n\n")
		ts := startSession(t, path, Options{Timing: Timing{BackoffBase: time.Hour, BackoffMax: time.Hour}})
		<-ts.s.Up()
		ctx, cancel := context.WithTimeout(context.Background(), waitLong)
		defer cancel()
		st, starting, err := ctl.WaitSettled(ctx, "ws")
		if err != nil || len(starting) != 0 {
			t.Fatalf("WaitSettled: %v, starting %v", err, starting)
		}
		if a, slow := server(st, "a"), server(st, "slow"); a.State != ctl.Ready || slow.State != ctl.Backoff {
			t.Errorf("settled: a %s, slow %s; want ready, backoff", a.State, slow.State)
		}
	})
	t.Run("stuck", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "mcpgen.toml")
		writeFile(t, path, testServerTOML(t, "a", "echo")+
			testServerTOML(t, "stuck", "hang")+"startup_timeout = \"1h\"\n\n")
		ts := startSession(t, path, Options{})
		<-ts.s.Up()
		ts.wait("a ready", serverIs("a", ctl.Ready))
		ctx, cancel := context.WithTimeout(context.Background(), waitQuiet)
		defer cancel()
		if got := ts.s.WaitSettled(ctx); !slices.Equal(got, []string{"stuck"}) {
			t.Errorf("WaitSettled = %v, want [stuck]", got)
		}
	})
}

// TestServerLogMarks: a server's log marks each start (with the restart
// count) and each end (how it ended, with the signal's name), and stamps
// each line the server writes.
func TestServerLogMarks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, testServerTOML(t, "a", "echo", "MCPGEN_TESTSERVER_BANNER=a: listening on stdio"))
	ts := startSession(t, path, Options{Timing: Timing{BackoffBase: time.Millisecond, BackoffMax: time.Millisecond}})
	st := ts.wait("ready", allReady("a"))
	first := server(st, "a")
	if err := syscall.Kill(first.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	second := server(ts.wait("restarted", func(st *ctl.Status) bool {
		s := server(st, "a")
		return s.State == ctl.Ready && s.Pid != first.Pid && s.Pid != 0
	}), "a")
	if _, _, err := ctl.Restart(context.Background(), "ws", "a"); err != nil {
		t.Fatal(err)
	}
	third := server(ts.status(), "a")
	if err := ts.end(); err != nil {
		t.Fatal(err)
	}

	b, err := os.ReadFile(first.Log)
	if err != nil {
		t.Fatal(err)
	}
	stamp := `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d)`
	want := []string{
		fmt.Sprintf(`--- started pid %d at T ---`, first.Pid),
		`T a: listening on stdio`,
		fmt.Sprintf(`--- pid %d: killed by SIGKILL at T ---`, first.Pid),
		fmt.Sprintf(`--- started pid %d \(restart 1\) at T ---`, second.Pid),
		`T a: listening on stdio`,
		fmt.Sprintf(`--- stopped pid %d: exited with status 0 at T ---`, second.Pid),
		fmt.Sprintf(`--- started pid %d \(restart 2\) at T ---`, third.Pid),
		`T a: listening on stdio`,
		fmt.Sprintf(`--- stopped pid %d: exited with status 0 at T ---`, third.Pid),
	}
	re := regexp.MustCompile(`^` + strings.ReplaceAll(strings.Join(want, "\n"), "T", stamp) + `\n$`)
	if !re.Match(b) {
		t.Errorf("%s holds\n%s\nwant lines that match\n%s", first.Log, b, strings.Join(want, "\n"))
	}
}

// TestSupervisorLastError: what status shows as a server's last error.
// A server killed from outside has no say: its stderr (a banner it wrote
// while healthy) is not its error. A server that crashes on its own is
// shown with what it wrote last, and only what it wrote once ready.
func TestSupervisorLastError(t *testing.T) {
	tests := []struct {
		name  string
		env   []string
		crash func(t *testing.T, ts *testSession, pid int)
		want  string
	}{
		{
			name:  "banner, then kill -9",
			crash: func(t *testing.T, _ *testSession, pid int) { _ = syscall.Kill(pid, syscall.SIGKILL) },
			want:  "killed by SIGKILL",
		},
		{
			name:  "banner, then SIGTERM",
			crash: func(t *testing.T, _ *testSession, pid int) { _ = syscall.Kill(pid, syscall.SIGTERM) },
			want:  "killed by SIGTERM",
		},
		{
			name:  "banner, then a crash with last words",
			env:   []string{"MCPGEN_TESTSERVER_LAST_WORDS=fatal: disk full"},
			crash: crashCall,
			want:  "exited with status 3; stderr: fatal: disk full",
		},
		{
			name:  "banner, then a crash without a word",
			crash: crashCall,
			want:  "exited with status 3",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mcpgen.toml")
			// The banner is in the server's log (so the launcher read it)
			// before the server answers: written while it started.
			env := append([]string{
				"MCPGEN_TESTSERVER_BANNER=Server running on stdio",
				"MCPGEN_TESTSERVER_BANNER_LOG=${" + dirs.EnvStateDir + "}/ws/a.log",
			}, tt.env...)
			writeFile(t, path, testServerTOML(t, "a", "echo", env...))
			// An hour's backoff keeps the error in view.
			ts := startSession(t, path, Options{Timing: Timing{BackoffBase: time.Hour, BackoffMax: time.Hour}})
			pid := server(ts.wait("ready", allReady("a")), "a").Pid
			tt.crash(t, ts, pid)
			s := server(ts.wait("backoff", serverIs("a", ctl.Backoff)), "a")
			if s.LastError != tt.want {
				t.Errorf("last error: got %q, want %q", s.LastError, tt.want)
			}
		})
	}
}

// crashCall makes the server crash through its crash tool.
func crashCall(t *testing.T, ts *testSession, _ int) {
	c := ts.connect("a", "crasher")
	c.Call("1", "crash", `{}`)
}

// clearDirEnv unsets every variable that moves mcpgen's directories, so
// that a test sees only what it sets.
func clearDirEnv(t *testing.T) {
	for _, v := range []string{dirs.EnvRuntimeDir, "XDG_RUNTIME_DIR", dirs.EnvStateDir, "XDG_STATE_HOME"} {
		t.Setenv(v, "")
	}
}

func mkdirMode(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}
