package launcher

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/dirs"
)

// The attacks of issue 8 item 2 on a session: servers whose child calls
// setsid and that leave a double-forked daemon, stopped every way a
// session stops a server. Each test runs in cgroup mode (where cgroups
// are writable) and in subreaper mode, and checks /proc for what is left.

// containModes are the modes the session tests run in.
var containModes = []proc.Mode{proc.ModeCgroup, proc.ModeSubreaper}

// needMode skips the test, with the reason, where mode cannot be had.
func needMode(t *testing.T, mode proc.Mode) {
	t.Helper()
	c, err := proc.Setup(context.Background(), proc.Options{Name: "probe", Mode: mode})
	if err != nil {
		t.Skipf("%s containment unavailable here: %v", mode, err)
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// escapeNames are the files the escape mode's escapes write.
var escapeNames = []string{"setsid", "daemon"}

// escapeServer is a [servers.NAME] table of a test server that leaves the
// escapes; they say who they are in dir.
func escapeServer(t *testing.T, name, dir string, env ...string) string {
	return testServerTOML(t, name, "escape", append([]string{"MCPGEN_TESTSERVER_PIDDIR=" + dir}, env...)...)
}

// readIDs waits until each escape has said who it is in dir.
func readIDs(t *testing.T, dir string) map[string]proc.ProcID {
	t.Helper()
	ids := map[string]proc.ProcID{}
	deadline := time.Now().Add(waitLong)
	for _, name := range escapeNames {
		for {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if f := strings.Fields(string(b)); err == nil && len(f) == 2 {
				pid, err1 := strconv.Atoi(f[0])
				start, err2 := strconv.ParseUint(f[1], 10, 64)
				if err1 != nil || err2 != nil {
					t.Fatalf("%s/%s: got %q, want \"PID START\"", dir, name, b)
				}
				ids[name] = proc.ProcID{Pid: pid, Start: start}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s has not said who it is in %s", name, dir)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return ids
}

// running reports whether id runs: present with its start time, and no
// zombie.
func running(id proc.ProcID) bool {
	p, err := proc.ReadProc(id.Pid)
	return err == nil && p.Start == id.Start && !p.Dead()
}

// checkEnded fails the test for every process of ids that still runs.
func checkEnded(t *testing.T, what string, ids map[string]proc.ProcID) {
	t.Helper()
	for name, id := range ids {
		if running(id) {
			t.Errorf("%s: the %s escape %v still runs", what, name, id)
			_ = syscall.Kill(id.Pid, syscall.SIGKILL)
		}
	}
}

// TestSessionContainsEscapes: what a server's escapes leave is gone when
// the server is removed by a reload, restarted because it changed,
// crashed, and when the session stops; the record says what the session
// holds meanwhile, and goes with it.
func TestSessionContainsEscapes(t *testing.T) {
	for _, mode := range containModes {
		t.Run(mode.String(), func(t *testing.T) {
			needMode(t, mode)
			testContainsEscapes(t, mode)
		})
	}
}

func testContainsEscapes(t *testing.T, mode proc.Mode) {
	dir := t.TempDir()
	pidDir := func(name string) string {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	mm := &memManifest{dir: dir}
	manifest := func(restartX string, withStop bool) string {
		m := escapeServer(t, "restart", pidDir("restart"), "X="+restartX) +
			escapeServer(t, "crash", pidDir("crash")) +
			testServerTOML(t, "plain", "echo")
		if withStop {
			m += escapeServer(t, "stop", pidDir("stop"))
		}
		return m
	}
	mm.set(manifest("1", true))
	ts := startSession(t, "", Options{Load: mm.load, Containment: mode})
	st := ts.wait("ready", allReady("restart", "crash", "plain", "stop"))
	ids := map[string]map[string]proc.ProcID{}
	for _, name := range []string{"restart", "crash", "stop"} {
		ids[name] = readIDs(t, filepath.Join(dir, name))
	}

	// Status says how, and the record names it.
	if st.Containment.Mode != mode {
		t.Errorf("status: containment %s, want %s", st.Containment, mode)
	}
	record := filepath.Join(os.Getenv(dirs.EnvRuntimeDir), "ws", "contained")
	switch mode {
	case proc.ModeCgroup:
		if fi, err := os.Stat(st.Containment.Cgroup); err != nil || !fi.IsDir() {
			t.Errorf("status names cgroup %q: %v", st.Containment.Cgroup, err)
		}
		if b, err := os.ReadFile(record); err != nil || !strings.Contains(string(b), " "+st.Containment.Cgroup+"\n") {
			t.Errorf("record: got %q, %v; want the session cgroup %s in it", b, err, st.Containment.Cgroup)
		}
	case proc.ModeSubreaper:
		// The setsid child was started by the server, after the server's
		// start was recorded: the record has it once a scan has seen it.
		want := fmt.Sprintf("proc %d %d\n", ids["stop"]["setsid"].Pid, ids["stop"]["setsid"].Start)
		ts.waitFor("the record names the setsid child", func() bool {
			b, _ := os.ReadFile(record)
			return strings.Contains(string(b), want)
		})
	}

	// A crash: the server is killed, with nothing to say; what it left
	// goes with it, and it restarts.
	crashed := server(st, "crash").Pid
	if err := syscall.Kill(crashed, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ts.wait("the crashed server back", func(st *ctl.Status) bool {
		s := server(st, "crash")
		return s.State == ctl.Ready && s.Pid != crashed
	})
	ts.waitFor("what the crashed server left ends", func() bool {
		return !running(ids["crash"]["setsid"]) && !running(ids["crash"]["daemon"])
	})

	// A reload: stop is removed, restart changed. Both are stopped by the
	// time the reload returns.
	mm.set(manifest("2", false))
	ts.s.reloadNow(false, nil)
	checkEnded(t, "a server removed by a reload", ids["stop"])
	checkEnded(t, "a server restarted by a reload", ids["restart"])
	ts.wait("ready after the reload", allReady("restart", "crash", "plain"))

	// The session's end ends what runs now.
	last := map[string]map[string]proc.ProcID{}
	for _, name := range []string{"restart", "crash"} {
		last[name] = readIDs(t, filepath.Join(dir, name))
	}
	if err := ts.end(); err != nil {
		t.Fatal(err)
	}
	for name, ids := range last {
		checkEnded(t, "the session's end: "+name, ids)
	}
	if _, err := os.Stat(record); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("record after the session: %v, want it removed", err)
	}
	if cg := st.Containment.Cgroup; cg != "" {
		if _, err := os.Stat(cg); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("session cgroup %s after the session: %v, want it removed", cg, err)
		}
	}
}

// waitFor polls cond, a hang guard: not a timing check.
func (ts *testSession) waitFor(what string, cond func() bool) {
	ts.t.Helper()
	deadline := time.Now().Add(waitLong)
	for !cond() {
		if time.Now().After(deadline) {
			ts.t.Fatalf("waiting until %s: not after %s", what, waitLong)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSessionLimits: a server whose memory_max or cpu_max this system
// cannot enforce fails with the reason, at the key's place in the
// manifest; the others run. Where the system can, the server runs with
// its limits.
func TestSessionLimits(t *testing.T) {
	for _, mode := range containModes {
		t.Run(mode.String(), func(t *testing.T) {
			needMode(t, mode)
			path := filepath.Join(t.TempDir(), "mcpgen.toml")
			content := testServerTOML(t, "plain", "echo") +
				testServerTOML(t, "mem", "echo") + "memory_max = \"64M\"\n\n" +
				testServerTOML(t, "cpu", "echo") + "cpu_max = 0.5\n"
			writeFile(t, path, content)
			// Where a key's value is: file:line:col.
			at := func(key string) string {
				i := strings.Index(content, key+" = ")
				return fmt.Sprintf(":%d:%d: ", strings.Count(content[:i], "\n")+1, len(key+" = ")+1)
			}
			ts := startSession(t, path, Options{Containment: mode})
			st := ts.wait("plain ready, the limited ones ready or failed", func(st *ctl.Status) bool {
				done := func(name string) bool {
					s := server(st, name).State
					return s == ctl.Ready || s == ctl.Failed
				}
				return server(st, "plain").State == ctl.Ready && done("mem") && done("cpu")
			})
			for _, tt := range []struct {
				name string
				lim  proc.Limits
				at   string
			}{
				{"mem", proc.Limits{MemoryMax: 64 << 20}, at("memory_max")},
				{"cpu", proc.Limits{CPUMax: 0.5}, at("cpu_max")},
			} {
				s := server(st, tt.name)
				err := ts.s.contain.Check(tt.lim)
				if err == nil {
					if s.State != ctl.Ready {
						t.Errorf("%s: got %s (%s), want ready: the system enforces the limit", tt.name, s.State, s.LastError)
					}
					continue
				}
				want := path + tt.at + fmt.Sprintf("server %q: ", tt.name) + err.Error()
				if s.State != ctl.Failed || s.LastError != want {
					t.Errorf("%s: got %s, %q\nwant failed, %q", tt.name, s.State, s.LastError, want)
				}
				if !strings.Contains(err.Error(), "run the launcher under systemd-run --user --scope -p Delegate=yes, or remove") {
					t.Errorf("%s: the error %q does not say what to do", tt.name, err)
				}
			}
		})
	}
}

// TestSessionUnrecordedStart: the attack of issue 8 item 5. A start whose
// containment cannot be recorded (here the record is a directory, which
// no write reaches, whoever runs the test) starts nothing: the server
// does not become ready and says why, and nothing of it runs.
func TestSessionUnrecordedStart(t *testing.T) {
	needMode(t, proc.ModeSubreaper)
	mm := &memManifest{dir: t.TempDir()}
	mm.set(testServerTOML(t, "first", "echo"))
	ts := startSession(t, "", Options{Load: mm.load, Containment: proc.ModeSubreaper})
	ts.wait("ready", allReady("first"))
	record := filepath.Join(os.Getenv(dirs.EnvRuntimeDir), "ws", "contained")
	if err := os.Remove(record); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(record, 0o700); err != nil {
		t.Fatal(err)
	}
	mm.set(testServerTOML(t, "first", "echo") + testServerTOML(t, "late", "echo"))
	ts.s.reloadNow(false, nil)
	st := ts.wait("late fails to start", func(st *ctl.Status) bool {
		return strings.Contains(server(st, "late").LastError, "could not be recorded")
	})
	if s := server(st, "late"); s.State == ctl.Ready || s.Pid != 0 {
		t.Errorf("late: got %+v, want no process", s)
	}
	if s := server(st, "first"); s.State != ctl.Ready {
		t.Errorf("first: got %+v, want it untouched", s)
	}
	if len(ts.events.states("late")) == 0 || slices.Contains(ts.events.states("late"), ctl.Ready) {
		t.Errorf("late went through %v, want never ready", ts.events.states("late"))
	}
}
