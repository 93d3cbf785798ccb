//go:build unix

package launcher

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/dirs"
	"github.com/mcpgen/mcpgen/launcher/internal/logfile"
	"github.com/mcpgen/mcpgen/manifest"
)

// TestSessionCatalogFIFO: a named pipe at a lazy server's catalog path
// (the attack of the hardening issue) is refused, with a log line, and
// taken for no catalog: the launcher answers its control socket, lists the
// server's tools (starting it: there is no catalog) and stops when asked.
// Before, the launcher blocked for good in the catalog's open, deaf to
// stop and SIGTERM.
func TestSessionCatalogFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, lazyTOML(t, "srv", true, "", "MCPGEN_TESTSERVER_TOOLS=echo,pid"))
	// The pipe is made once the test's state dir is set, as the session
	// loads its manifest: before anything reads the catalog.
	var once sync.Once
	load := func() (*manifest.Manifest, error) {
		once.Do(func() {
			dir, err := StateDir("ws")
			if err != nil {
				t.Error(err)
				return
			}
			fifo := catalogPath(dir, "srv")
			if err := os.MkdirAll(filepath.Dir(fifo), 0o700); err != nil {
				t.Error(err)
			}
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Error(err)
			}
		})
		return manifest.Load(path)
	}
	// Until the session has ended, a launcher blocked in the pipe's open
	// (the bug) is let go again and again, so that the test fails instead
	// of hanging.
	released := make(chan struct{})
	t.Cleanup(func() { close(released) }) // after the session's own cleanup
	ts := startSession(t, path, Options{Load: load})
	stateDir, err := StateDir("ws")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { go keepUnblocking(catalogPath(stateDir, "srv"), released) })

	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	// The socket answers from the start; the server is there once the
	// first apply is done.
	for st := statusOver(t, ctx, "ws"); server(st, "srv").State != ctl.Idle; st = statusOver(t, ctx, "ws") {
		if ctx.Err() != nil {
			t.Fatalf("srv is not idle (lazy); status:\n%s", dumpStatus(st))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !ts.events.has(refusedCatalog, "server", "srv", "error", "named pipe") {
		t.Errorf("no log line says the catalog was refused; events:\n%s", ts.events)
	}

	// No catalog: tools/list starts the server, and lists its tools.
	c := ts.connect("srv", "agent")
	if got := listTools(t, c, 2); !slices.Equal(got, []string{"echo", "pid"}) {
		t.Errorf("tools/list: got %q, want [echo pid]", got)
	}
	c.Close()

	if _, err := ctl.Stop(ctx, "ws", false); err != nil {
		t.Fatalf("stop: %v", err)
	}
	select {
	case err := <-ts.done:
		ts.ended = true
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the session did not end after mcpgen stop")
	}
}

// statusOver asks the launcher of workspace for its status over its
// control socket, as mcpgen status does, once the socket is there: a hang
// guard, not a timing check.
func statusOver(t *testing.T, ctx context.Context, workspace string) *ctl.Status {
	t.Helper()
	for {
		st, err := ctl.QueryStatus(ctx, workspace)
		var nr *ctl.NotRunningError
		switch {
		case err == nil:
			return st
		case !errors.As(err, &nr) || ctx.Err() != nil:
			t.Fatalf("status over the control socket: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// keepUnblocking opens the pipe at path for writing, without blocking,
// and closes it, every few milliseconds until stop is closed: a reader
// blocked in its open goes on, and reads its end.
func keepUnblocking(path string, stop <-chan struct{}) {
	for {
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		select {
		case <-stop:
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// stuckApply is a test hook for apply that blocks the nth apply (the
// first is the launch's, the next ones reloads') until the test ends:
// a step stuck for good, as the catalog's open was on a named pipe.
// entered is closed once it blocks.
func stuckApply(t *testing.T, nth int) (hook func(), entered <-chan struct{}) {
	release, in := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(release) }) // registered first: runs last
	var mu sync.Mutex
	n := 0
	return func() {
		mu.Lock()
		n++
		stuck := n == nth
		mu.Unlock()
		if stuck {
			close(in)
			<-release
		}
	}, in
}

// TestSessionStuckApply: whatever an apply waits for, the launcher hears
// mcpgen stop and SIGTERM: its control socket answers during the first
// apply, a stop request or the end of Run's context ends the session
// (every server stopped) without waiting for the stuck step for more
// than a bound.
func TestSessionStuckApply(t *testing.T) {
	if testing.Short() {
		t.Skip("an attack test (a stuck apply): run without -short")
	}
	t.Run("stop during the first apply", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "mcpgen.toml")
		writeFile(t, path, testServerTOML(t, "srv", "echo"))
		hook, entered := stuckApply(t, 1)
		// Short grace periods: the stop waits for the stuck step as long
		// as a step may take, then goes on without it.
		timing := Timing{StdinGrace: 10 * time.Millisecond, TermGrace: 10 * time.Millisecond}
		ts := startSession(t, path, Options{hooks: testHooks{apply: hook}, Timing: timing})
		ctx, cancel := context.WithTimeout(context.Background(), waitLong)
		defer cancel()
		select {
		case <-entered:
		case <-ctx.Done():
			t.Fatal("the first apply did not begin")
		}
		st := statusOver(t, ctx, "ws")
		if st.Pid != os.Getpid() {
			t.Errorf("status: got pid %d, want this process's %d", st.Pid, os.Getpid())
		}
		if _, err := ctl.Stop(ctx, "ws", false); err != nil {
			t.Fatalf("stop: %v", err)
		}
		ts.ended = true
		select {
		case err := <-ts.done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-ctx.Done():
			t.Fatal("Run did not return after mcpgen stop")
		}
		if !ts.events.has(stuckStep) {
			t.Errorf("no log line says the stuck step was left; events:\n%s", ts.events)
		}
	})
	t.Run("signal during a reload", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "mcpgen.toml")
		writeFile(t, path, testServerTOML(t, "srv", "echo"))
		hook, entered := stuckApply(t, 2)
		timing := Timing{StdinGrace: 10 * time.Millisecond, TermGrace: 10 * time.Millisecond}
		ts := startSession(t, path, Options{hooks: testHooks{apply: hook}, Timing: timing})
		pid := server(ts.wait("ready", allReady("srv")), "srv").Pid
		ts.s.Reload()
		select {
		case <-entered:
		case <-time.After(waitLong):
			t.Fatal("the reload's apply did not begin")
		}
		// As SIGTERM does: Run's context ends.
		ts.ended = true
		ts.stop()
		select {
		case err := <-ts.done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(waitLong):
			t.Fatal("Run did not return once its context ended")
		}
		waitGone(t, "the server of a stopped session", pid)
	})
}

// TestStateFilesFIFO: a named pipe in place of any file that the launcher
// and mcpgen read or write in the runtime and state dirs is refused at
// once, with an error that names it, rather than block its reader (or
// writer) until the other end comes.
func TestStateFilesFIFO(t *testing.T) {
	tests := []struct {
		name   string
		file   string // made a named pipe in the dir
		open   func(dir string) error
		silent bool // the open says nothing: it only must not block
	}{
		{"the session lock, taken", dirs.LockFile, func(dir string) error {
			l, err := dirs.Lock(dir)
			if err == nil {
				l.Unlock()
			}
			return err
		}, false},
		{"the session lock, tested (status, ps)", dirs.LockFile, func(dir string) error {
			if _, running := ctl.Holder(dir); running {
				return errors.New("Holder says a launcher holds it")
			}
			return nil
		}, true},
		{"the containment record", "contained", func(dir string) error {
			_, err := proc.ReadRecord(dir)
			return err
		}, false},
		{"a server's log", "srv.log", func(dir string) error {
			l, err := logfile.Open(filepath.Join(dir, "srv.log"), logfile.DefaultMaxBytes, logfile.DefaultKeep)
			if err == nil {
				l.Close()
			}
			return err
		}, false},
		{"a kept catalog", filepath.Join(catalogDir, "srv.json"), func(dir string) error {
			_, err := loadCatalog(dir, "srv", "key")
			return err
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ws")
			path := filepath.Join(dir, tt.file)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- tt.open(dir) }()
			select {
			case err := <-done:
				switch {
				case tt.silent && err != nil:
					t.Errorf("got %v, want no error", err)
				case !tt.silent && (err == nil || !strings.Contains(err.Error(), "a named pipe")):
					t.Errorf("got %v, want an error that names the named pipe", err)
				}
			case <-time.After(waitLong): // a hang guard
				stop := make(chan struct{})
				go keepUnblocking(path, stop)
				<-done
				close(stop)
				t.Fatal("blocked on the named pipe")
			}
		})
	}
}
