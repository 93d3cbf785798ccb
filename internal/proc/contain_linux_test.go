package proc

import (
	"context"
	"errors"
	"fmt"
	"github.com/mcpgen/mcpgen/internal/sandbox"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary doubles as a launcher that a test can kill: with
// MCPGEN_PROC_HELPER=launcher it runs helperLauncher instead of the tests,
// and with MCPGEN_PROC_HELPER=rlimit, helperRlimit.
func TestMain(m *testing.M) {
	// The sandbox's setup step re-execs the test binary (sandbox.Prepare).
	if code, ok := sandbox.Main(); ok {
		os.Exit(code)
	}
	switch os.Getenv("MCPGEN_PROC_HELPER") {
	case "launcher":
		os.Exit(helperLauncher())
	case "rlimit":
		os.Exit(helperRlimit())
	}
	os.Exit(m.Run())
}

// bound is how long a test waits for what must happen, so that a broken
// containment fails the test instead of hanging it. It asserts no timing:
// on a loaded machine each wait takes what it takes, up to this.
const bound = 60 * time.Second

// idLine is sh that writes "PID START" of the shell running it to
// $DIR/name, atomically: the shell then execs, which keeps both.
func idLine(name string) string {
	return `set -- $(cat /proc/$$/stat); echo "$1 ${22}" > "$DIR/` + name + `.tmp"; mv "$DIR/` + name + `.tmp" "$DIR/` + name + `"`
}

// escapeScript is a server's process tree that escapes process groups: a
// child that calls setsid, and a daemon that double-forks (its parent
// exits) and calls setsid. The intermediate waits until the daemon has
// said who it is, so that the test knows it even where it dies young.
var escapeScript = `
setsid sh -c '` + idLine("setsid") + `; exec sleep 300' &
( setsid sh -c '` + idLine("daemon") + `; exec sleep 300' &
  until [ -e "$DIR/daemon" ]; do sleep 0.01; done )
` + idLine("leader") + `
exec sleep 300
`

var escapeNames = []string{"leader", "setsid", "daemon"}

func escapeCmd(dir string) *exec.Cmd {
	cmd := exec.Command("sh", "-c", escapeScript)
	cmd.Env = append(os.Environ(), "DIR="+dir)
	return cmd
}

// readIDs waits for the processes to write their ids into dir.
func readIDs(dir string, names []string, timeout time.Duration) (map[string]ProcID, error) {
	ids := map[string]ProcID{}
	deadline := time.Now().Add(timeout)
	for _, name := range names {
		for {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err == nil {
				f := strings.Fields(string(b))
				pid, err1 := strconv.Atoi(f[0])
				start, err2 := strconv.ParseUint(f[1], 10, 64)
				if len(f) != 2 || err1 != nil || err2 != nil {
					return nil, fmt.Errorf("%s: got %q, want \"PID START\"", name, b)
				}
				ids[name] = ProcID{pid, start}
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("%s has not written its id within %s", name, timeout)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return ids, nil
}

// alive reports whether id runs: present with its start time and not a
// zombie (a zombie is dead; reaping it is its parent's business).
func alive(id ProcID) bool {
	p, err := readProcInfo(id.Pid)
	return err == nil && p.start == id.Start && !p.dead()
}

// waitFor polls cond until it holds, failing the test after bound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, bound)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func needSetsid(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid(1) not found: the escapes need it")
	}
}

// The modes the tests run in; the cgroup ones skip where cgroups are not
// writable, with the reason.
var testModes = []string{"cgroup", "cgroup without cgroup.kill", "subreaper", "groups"}

// setupMode sets up a containment in mode, skipping when it is
// unavailable. Cleanup closes it, and checks that the session cgroup is
// gone and that no child of the test is left (a subreaper reaps its
// orphans).
func setupMode(t *testing.T, mode string) *Containment {
	t.Helper()
	opts := Options{Name: t.Name(), scanInterval: 20 * time.Millisecond}
	switch mode {
	case "cgroup":
		opts.Mode = ModeCgroup
	case "cgroup without cgroup.kill":
		opts.Mode, opts.noCgroupKill = ModeCgroup, true
	case "subreaper":
		opts.Mode = ModeSubreaper
	case "groups":
		opts.Mode = ModeGroups
	default:
		t.Fatalf("mode %q", mode)
	}
	c, err := Setup(context.Background(), opts)
	if err != nil {
		if opts.Mode == ModeCgroup {
			t.Skipf("cgroup containment unavailable here: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		if err := c.Close(ctx); err != nil {
			t.Errorf("Containment.Close: %v", err)
		}
		if dir := c.Report().Cgroup; dir != "" {
			if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("session cgroup %s: got %v after Close, want it removed", dir, err)
				_ = removeCgroupTree(dir)
			}
		}
		checkNoChildren(t)
	})
	return c
}

// checkNoChildren fails the test if a child of the test process is left,
// running or zombie.
func checkNoChildren(t *testing.T) {
	t.Helper()
	table, err := procTable()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range table {
		if p.ppid == os.Getpid() {
			t.Errorf("process %d (state %c) is still a child of the test", p.pid, p.state)
		}
	}
}

// A started is a command started in a container, waited for aside.
type started struct {
	cmd    *exec.Cmd
	waited chan error // receives the one Wait's result
}

func start(t *testing.T, k *Container, cmd *exec.Cmd) *started {
	t.Helper()
	if err := k.Start(cmd); err != nil {
		t.Fatal(err)
	}
	s := &started{cmd: cmd, waited: make(chan error, 1)}
	go func() { s.waited <- cmd.Wait() }() // ends when the process exits
	return s
}

// wait returns what the process's Wait said.
func (s *started) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-s.waited:
		s.waited <- err
		return err
	case <-time.After(bound):
		t.Fatalf("process %d has not been waited for", s.cmd.Process.Pid)
		return nil
	}
}

// killLeft kills whatever of ids still runs, so that a failing test
// leaves nothing behind.
func killLeft(ids map[string]ProcID) {
	for _, id := range ids {
		_, _ = signalProc(id, unix.SIGKILL)
	}
}

func closeCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	t.Cleanup(cancel)
	return ctx
}

// The attack of issue 8 item 2: a server's child calls setsid, and a
// daemon double-forks. After Close, nothing of it may run, in every mode
// but process groups, which the escapes defeat: that case shows the test
// can see an escape.
func TestContainerEndsEscapes(t *testing.T) {
	needSetsid(t)
	for _, mode := range testModes {
		t.Run(mode, func(t *testing.T) {
			c := setupMode(t, mode)
			k, err := c.New("escapes", Limits{})
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			s := start(t, k, escapeCmd(dir))
			ids, err := readIDs(dir, escapeNames, bound)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { killLeft(ids) })

			// The attack happened: the child left the leader's session.
			if p, err := readProcInfo(ids["setsid"].Pid); err != nil || p.sid != ids["setsid"].Pid {
				t.Fatalf("setsid child: got %+v, %v; want a session of its own", p, err)
			}
			if mode != "groups" {
				// The container sees the escapes that are still below it.
				pids, err := k.Pids()
				if err != nil || !slices.Contains(pids, ids["leader"].Pid) || !slices.Contains(pids, ids["setsid"].Pid) {
					t.Errorf("Pids: got %v, %v; want the leader %d and the setsid child %d among them", pids, err, ids["leader"].Pid, ids["setsid"].Pid)
				}
			}
			var leaf string
			if h, ok := k.h.(*cgroupHolder); ok {
				leaf = h.dir
			}

			if err := k.Close(closeCtx(t)); err != nil {
				t.Fatalf("Close: %v", err)
			}
			wantEscape := mode == "groups"
			for _, name := range escapeNames {
				if got := alive(ids[name]); got != (wantEscape && name != "leader") {
					t.Errorf("%s %v: alive %v after Close, want %v", name, ids[name], got, !got)
				}
			}
			// The subreaper did not take the leader's Wait from os/exec.
			var ee *exec.ExitError
			if err := s.wait(t); !errors.As(err, &ee) || ee.ExitCode() != -1 {
				t.Errorf("the leader's Wait: got %v, want the exit of a killed process", err)
			}
			if leaf != "" {
				if _, err := os.Stat(leaf); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("leaf cgroup %s: got %v after Close, want it removed", leaf, err)
				}
			}
		})
	}
}

// Signal reaches what escaped the group: SIGTERM ends the whole tree.
func TestContainerSignal(t *testing.T) {
	needSetsid(t)
	for _, mode := range testModes {
		t.Run(mode, func(t *testing.T) {
			c := setupMode(t, mode)
			k, err := c.New("signal", Limits{})
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			s := start(t, k, escapeCmd(dir))
			ids, err := readIDs(dir, escapeNames, bound)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { killLeft(ids) })
			if err := k.Signal(syscall.SIGTERM); err != nil {
				t.Fatalf("Signal: %v", err)
			}
			s.wait(t)
			if mode == "groups" {
				// What left the group never got the signal.
				if !alive(ids["setsid"]) {
					t.Errorf("setsid child %v: gone, want it to have escaped the group's signal", ids["setsid"])
				}
			} else {
				waitFor(t, "the tree ends on SIGTERM", func() bool {
					return !alive(ids["leader"]) && !alive(ids["setsid"]) && !alive(ids["daemon"])
				})
			}
			if err := k.Close(closeCtx(t)); err != nil {
				t.Fatalf("Close: %v", err)
			}
		})
	}
}

// Containment.Close ends the containers nobody closed, as a launcher's
// shutdown on SIGTERM does.
func TestContainmentCloseEndsContainers(t *testing.T) {
	needSetsid(t)
	for _, mode := range testModes[:3] {
		t.Run(mode, func(t *testing.T) {
			c := setupMode(t, mode)
			var all []ProcID
			var procs []*started
			for i := range 3 {
				k, err := c.New(fmt.Sprint("srv", i), Limits{})
				if err != nil {
					t.Fatal(err)
				}
				dir := t.TempDir()
				procs = append(procs, start(t, k, escapeCmd(dir)))
				ids, err := readIDs(dir, escapeNames, bound)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { killLeft(ids) })
				all = append(all, ids["leader"], ids["setsid"], ids["daemon"])
			}
			if err := c.Close(closeCtx(t)); err != nil {
				t.Fatalf("Close: %v", err)
			}
			for _, id := range all {
				if alive(id) {
					t.Errorf("process %v: alive after Containment.Close", id)
				}
			}
			for _, s := range procs {
				s.wait(t)
			}
			if _, err := c.New("late", Limits{}); err == nil {
				t.Errorf("New after Close: got no error")
			}
		})
	}
}

// The subreaper kills a daemon as soon as it is orphaned, while its server
// still runs.
func TestSubreaperKillsOrphans(t *testing.T) {
	needSetsid(t)
	c := setupMode(t, "subreaper")
	k, err := c.New("orphans", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", `
( setsid sh -c '`+idLine("daemon")+`; exec sleep 300' &
  until [ -e "$DIR/daemon" ]; do sleep 0.01; done )
`+idLine("leader")+`
exec sleep 300`)
	cmd.Env = append(os.Environ(), "DIR="+dir)
	s := start(t, k, cmd)
	ids, err := readIDs(dir, []string{"daemon", "leader"}, bound)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killLeft(ids) })
	waitFor(t, "the orphaned daemon is killed", func() bool { return !alive(ids["daemon"]) })
	if !alive(ids["leader"]) {
		t.Errorf("leader %v: gone, want it untouched while only its orphan is killed", ids["leader"])
	}
	if n := c.sys.(*subreaperSystem).orphanCount(); n < 1 {
		t.Errorf("orphans killed: got %d, want at least 1", n)
	}
	if err := k.Close(closeCtx(t)); err != nil {
		t.Fatal(err)
	}
	s.wait(t)
}

// Children that containers start are os/exec's to wait for: the subreaper,
// which reaps orphans by pid, never takes their exit status. Each run exits
// and stays a zombie (its Wait is called late) while the orphan it left is
// killed and reaped; only then is it waited for.
func TestSubreaperKeepsWaits(t *testing.T) {
	c := setupMode(t, "subreaper")
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		dir := t.TempDir()
		wg.Go(func() {
			if err := runLate(c, dir, 1+i); err != nil {
				errs <- fmt.Errorf("run %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Containment.Close waits for the last orphans to be reaped, and the
	// cleanup checks that the test has no child left.
}

// runLate runs a command that leaves an orphan and exits with status, and
// waits for it only once the orphan has been reaped.
func runLate(c *Containment, dir string, status int) error {
	k, err := c.New("late", Limits{})
	if err != nil {
		return err
	}
	defer k.Close(context.Background())
	cmd := exec.Command("sh", "-c", `(sh -c '`+idLine("orphan")+`; exec sleep 300' & until [ -e "$DIR/orphan" ]; do sleep 0.01; done); `+idLine("leader")+fmt.Sprintf("; exit %d", status))
	cmd.Env = append(os.Environ(), "DIR="+dir)
	if err := k.Start(cmd); err != nil {
		return err
	}
	ids, err := readIDs(dir, []string{"orphan", "leader"}, bound)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return err
	}
	deadline := time.Now().Add(bound)
	for {
		leader, lerr := readProcInfo(ids["leader"].Pid)
		orphan, oerr := readProcInfo(ids["orphan"].Pid)
		zombie := lerr == nil && leader.start == ids["leader"].Start && leader.dead()
		reaped := oerr != nil || orphan.start != ids["orphan"].Start
		if zombie && reaped {
			break
		}
		if lerr != nil || leader.start != ids["leader"].Start {
			_ = cmd.Wait()
			return fmt.Errorf("leader %v: reaped before its Wait was called (%v)", ids["leader"], lerr)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("leader %+v (%v), orphan %+v (%v): want a zombie leader and a reaped orphan", leader, lerr, orphan, oerr)
		}
		time.Sleep(5 * time.Millisecond)
	}
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != status {
		return fmt.Errorf("Wait: got %v, want exit status %d", err, status)
	}
	return nil
}

func TestLimits(t *testing.T) {
	tests := []struct {
		key, controller string
		lim             Limits
		file, want      string
	}{
		{"memory_max", "memory", Limits{MemoryMax: 64 << 20}, "memory.max", "67108864"},
		{"cpu_max", "cpu", Limits{CPUMax: 0.5}, "cpu.max", "50000 100000"},
	}
	t.Run("cgroup", func(t *testing.T) {
		c := setupMode(t, "cgroup")
		report := c.Report()
		host := c.sys.(*cgroupSystem).host
		for _, tt := range tests {
			t.Run(tt.key, func(t *testing.T) {
				if !slices.Contains(report.Limits, tt.controller) {
					// As on this machine: the controller is bound to cgroup
					// v1, or not delegated.
					err := c.Check(tt.lim)
					var le *LimitError
					if !errors.As(err, &le) || le.Key != tt.key || le.Controller != tt.controller {
						t.Fatalf("Check: got %v, want a *LimitError for %s", err, tt.key)
					}
					if slices.Contains(host.v1, tt.controller) {
						want := fmt.Sprintf("%s needs the cgroup v2 %s controller delegated to mcpgen; this system has cgroup v2 at %s without the %s controller, which is bound to a cgroup v1 hierarchy: run the launcher under systemd-run --user --scope -p Delegate=yes, or remove %s",
							tt.key, tt.controller, host.mount, tt.controller, tt.key)
						if err.Error() != want {
							t.Errorf("Check:\ngot  %s\nwant %s", err, want)
						}
					}
					if k, err2 := c.New("limited", tt.lim); err2 == nil || err2.Error() != err.Error() {
						t.Errorf("New: got %v, %v; want %v", k, err2, err)
					}
					if !strings.Contains(report.Reason, "no "+tt.controller+": ") {
						t.Errorf("report reason %q does not say why %s is missing", report.Reason, tt.controller)
					}
					return
				}
				k, err := c.New("limited", tt.lim)
				if err != nil {
					t.Fatal(err)
				}
				defer k.Close(context.Background())
				b, err := os.ReadFile(filepath.Join(k.h.(*cgroupHolder).dir, tt.file))
				if got := strings.TrimSpace(string(b)); err != nil || got != tt.want {
					t.Errorf("%s: got %q, %v; want %q", tt.file, got, err, tt.want)
				}
			})
		}
	})
	t.Run("subreaper", func(t *testing.T) {
		c := setupMode(t, "subreaper")
		for _, tt := range tests {
			err := c.Check(tt.lim)
			want := tt.key + " needs the cgroup v2 " + tt.controller + " controller delegated to mcpgen; this system has no cgroups in use (mcpgen was asked to contain servers as a subreaper): run the launcher under systemd-run --user --scope -p Delegate=yes, or remove " + tt.key
			if err == nil || err.Error() != want {
				t.Errorf("%s: got %v\nwant %s", tt.key, err, want)
			}
		}
		if err := c.Check(Limits{}); err != nil {
			t.Errorf("no limits: got %v", err)
		}
	})
}

func TestTree(t *testing.T) {
	dir := t.TempDir()
	c := setupMode(t, "groups")
	k, err := c.New("tree", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// "; :" keeps a shell that execs a last command (bash) from doing so.
	cmd := exec.Command("sh", "-c", `sleep 300 & sleep 300 & sh -c 'sleep 300; :' & `+idLine("leader")+`; wait`)
	cmd.Env = append(os.Environ(), "DIR="+dir)
	s := start(t, k, cmd)
	ids, err := readIDs(dir, []string{"leader"}, bound)
	if err != nil {
		t.Fatal(err)
	}
	leader := ids["leader"]
	var tree []ProcID
	waitFor(t, "the tree has its five processes, and only those", func() bool {
		// The shell's cat and mv come and go, zombies for a moment.
		tree, err = Tree(leader.Pid)
		return err == nil && len(tree) == 5 && !slices.ContainsFunc(tree, func(id ProcID) bool { return !alive(id) })
	})
	if tree[0] != leader {
		t.Errorf("root: got %v, want %v", tree[0], leader)
	}
	for _, id := range tree[1:] {
		p, err := readProcInfo(id.Pid)
		if err != nil || p.start != id.Start || p.pgid != leader.Pid {
			t.Errorf("member %v: /proc says %+v, %v; want that start time, in group %d", id, p, err, leader.Pid)
		}
	}
	if err := k.Close(closeCtx(t)); err != nil {
		t.Fatal(err)
	}
	s.wait(t)
	if _, err := Tree(leader.Pid); err == nil {
		t.Errorf("Tree of a reaped process: got no error")
	}
}

// helperLauncher is a launcher for TestLauncherDeath: it contains the
// escape tree in $MCPGEN_PROC_MODE, writes its record to $DIR/record,
// says $DIR/ready, and on SIGTERM closes its containment and exits 0.
func helperLauncher() int {
	dir := os.Getenv("DIR")
	fail := func(err error) int {
		_ = os.WriteFile(filepath.Join(dir, "error"), []byte(err.Error()), 0o600)
		return 1
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	var mode Mode
	if err := mode.UnmarshalText([]byte(os.Getenv("MCPGEN_PROC_MODE"))); err != nil {
		return fail(err)
	}
	ctx := context.Background()
	c, err := Setup(ctx, Options{Name: "helper", Mode: mode, scanInterval: 20 * time.Millisecond})
	if err != nil {
		return fail(err)
	}
	k, err := c.New("srv", Limits{})
	if err != nil {
		return fail(err)
	}
	cmd := escapeCmd(dir)
	if err := k.Start(cmd); err != nil {
		return fail(err)
	}
	go cmd.Wait() // ends when the leader exits, or with this process
	ids, err := readIDs(dir, escapeNames, bound)
	if err != nil {
		return fail(err)
	}
	deadline := time.Now().Add(bound)
	if mode == ModeSubreaper {
		// Wait until a scan has seen the setsid child, and the daemon is
		// dead: a launcher killed before either leaves it unrecorded.
		for !slices.Contains(k.Entries(), Entry{Kind: EntryProc, Proc: ids["setsid"]}) || alive(ids["daemon"]) {
			if time.Now().After(deadline) {
				return fail(fmt.Errorf("entries %v: the setsid child %v is not recorded, or the daemon lives", k.Entries(), ids["setsid"]))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	var record strings.Builder
	for _, e := range slices.Concat(c.Entries(), k.Entries()) {
		record.WriteString(e.String() + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "record"), []byte(record.String()), 0o600); err != nil {
		return fail(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o600); err != nil {
		return fail(err)
	}
	<-sigs
	cctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	if err := c.Close(cctx); err != nil {
		return fail(err)
	}
	return 0
}

// A launcher ends what it contains on SIGTERM; killed with SIGKILL, it
// leaves the escapes running, and the record it left lets the next launch
// end them (Sweep), even those whose parents died since.
func TestLauncherDeath(t *testing.T) {
	needSetsid(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"cgroup", "subreaper"} {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
			t.Run(mode+"/"+sig.String(), func(t *testing.T) {
				if mode == "cgroup" {
					// Skip, with the reason, where the helper could not.
					setupMode(t, "cgroup")
				}
				dir := t.TempDir()
				cmd := exec.Command(self, "-test.run=^$")
				cmd.Env = append(os.Environ(), "MCPGEN_PROC_HELPER=launcher", "MCPGEN_PROC_MODE="+mode, "DIR="+dir)
				helper := &started{cmd: cmd, waited: make(chan error, 1)}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				go func() { helper.waited <- cmd.Wait() }() // ends when the helper exits
				t.Cleanup(func() { _ = cmd.Process.Kill(); helper.wait(t) })
				waitFor(t, "the helper launcher is ready", func() bool {
					if b, err := os.ReadFile(filepath.Join(dir, "error")); err == nil {
						t.Fatalf("helper: %s", b)
					}
					_, err := os.Stat(filepath.Join(dir, "ready"))
					return err == nil
				})
				ids, err := readIDs(dir, escapeNames, bound)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { killLeft(ids) })
				b, err := os.ReadFile(filepath.Join(dir, "record"))
				if err != nil {
					t.Fatal(err)
				}
				var entries []Entry
				for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
					e, err := ParseEntry(line)
					if err != nil {
						t.Fatal(err)
					}
					entries = append(entries, e)
				}
				var session string
				for _, e := range entries {
					if e.Kind == EntryCgroup {
						session = e.Path
					}
				}
				if (session != "") != (mode == "cgroup") {
					t.Fatalf("record %v: want a session cgroup in cgroup mode only", entries)
				}
				t.Cleanup(func() { _, _, _ = Sweep(context.Background(), entries, 0) })

				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				err = helper.wait(t)
				if sig == syscall.SIGTERM {
					if err != nil {
						t.Fatalf("helper on SIGTERM: %v", err)
					}
				} else {
					// What kill -9 leaves: the escapes run on.
					for _, name := range []string{"leader", "setsid"} {
						if !alive(ids[name]) {
							t.Fatalf("%s %v: gone after the launcher's SIGKILL, want it left behind", name, ids[name])
						}
					}
					if mode == "subreaper" {
						// Its parent dies too: the setsid child is below no
						// recorded process now, only its own entry names it.
						if _, err := signalProc(ids["leader"], unix.SIGKILL); err != nil {
							t.Fatal(err)
						}
						waitFor(t, "the leader dies", func() bool { return !alive(ids["leader"]) })
						if p, err := readProcInfo(ids["setsid"].Pid); err != nil || p.ppid == ids["leader"].Pid {
							t.Fatalf("setsid child: got %+v, %v; want it reparented", p, err)
						}
					}
					ended, left, err := Sweep(closeCtx(t), entries, 100*time.Millisecond)
					if err != nil || len(left) != 0 {
						t.Fatalf("Sweep: got %v, %v; want nothing left", left, err)
					}
					// In subreaper mode the daemon is gone already (its
					// launcher killed it as an orphan), and so is the
					// leader (the test killed it).
					names := escapeNames
					if mode == "subreaper" {
						names = []string{"setsid"}
					}
					for _, name := range names {
						if !slices.Contains(ended, ids[name]) {
							t.Errorf("Sweep ended %v, want %s %v among them", ended, name, ids[name])
						}
					}
				}
				for _, name := range escapeNames {
					if alive(ids[name]) {
						t.Errorf("%s %v: alive, want it ended", name, ids[name])
					}
				}
				if session != "" {
					if _, err := os.Stat(session); !errors.Is(err, fs.ErrNotExist) {
						t.Errorf("session cgroup %s: got %v, want it removed", session, err)
					}
				}
			})
		}
	}
}

// Sweep acts only on what the record names still: a cgroup by its inode,
// a process by its start time; and refuses what only a corrupt record
// would name.
func TestSweepRefuses(t *testing.T) {
	c := setupMode(t, "groups")
	k, err := c.New("victim", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// A process that took a recorded pid, as far as the record can tell:
	// same pid, another start time.
	s := start(t, k, exec.Command("sleep", "300"))
	victim, err := readProcInfo(s.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	host, hostErr := findCgroup()
	entries := []Entry{{Kind: EntryProc, Proc: ProcID{victim.pid, victim.start + 1}}}
	want := 0
	if hostErr == nil {
		entries = append(entries,
			// Our own cgroup, with its real inode: a corrupt record.
			Entry{Kind: EntryCgroup, Path: host.dir, Inode: mustInode(t, host.dir)},
			// A path that is gone.
			Entry{Kind: EntryCgroup, Path: filepath.Join(host.dir, "mcpgen-gone-1"), Inode: 5})
		want = 1
	}
	_, left, err := Sweep(closeCtx(t), entries, 0)
	if !alive(victim.id()) {
		t.Errorf("process %d with another start time than recorded: killed", victim.pid)
	}
	if len(left) != 0 || strings.Count(fmt.Sprint(err), "only a corrupt record would") != want {
		t.Errorf("Sweep: got %v, %v; want nothing left and %d corrupt entry refused", left, err, want)
	}
	if err := k.Close(closeCtx(t)); err != nil {
		t.Fatal(err)
	}
	s.wait(t)
}

func mustInode(t *testing.T, dir string) uint64 {
	t.Helper()
	ino, err := dirInode(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ino
}

// The subreaper says when a container's processes have changed, and its
// entries then name the escapes, for the record.
func TestSubreaperRecordsDescendants(t *testing.T) {
	needSetsid(t)
	c := setupMode(t, "subreaper")
	k, err := c.New("record", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := start(t, k, escapeCmd(dir))
	ids, err := readIDs(dir, escapeNames, bound)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killLeft(ids) })
	want := []Entry{{Kind: EntryProc, Proc: ids["leader"]}, {Kind: EntryProc, Proc: ids["setsid"]}}
	timeout := time.After(bound)
	for {
		got := k.Entries()
		if slices.Contains(got, want[0]) && slices.Contains(got, want[1]) {
			break
		}
		select {
		case <-c.Changed():
		case <-timeout:
			t.Fatalf("entries: got %v, want %v among them", got, want)
		}
	}
	if err := k.Close(closeCtx(t)); err != nil {
		t.Fatal(err)
	}
	s.wait(t)
	if got := k.Entries(); len(got) != 0 {
		t.Errorf("entries after Close: got %v, want none", got)
	}
}

// Where a process cannot be started into a cgroup, the probe says so: here,
// because the directory is no cgroup.
func TestProbeCloneIntoRefuses(t *testing.T) {
	err := probeCloneInto(t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "cannot start a process into a cgroup") {
		t.Errorf("got %v, want the probe to fail", err)
	}
}

// ModeAuto takes a cgroup where one can be made, and says why not where
// not; limits then fail with the reason.
func TestSetupAuto(t *testing.T) {
	t.Run("here", func(t *testing.T) {
		c, err := Setup(context.Background(), Options{Name: t.Name()})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(context.Background())
		r := c.Report()
		t.Logf("containment here: %s", r)
		if cg, err := setupCgroup("writable"); err == nil {
			if err := cg.close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if r.Mode != ModeCgroup {
				t.Errorf("got %s, want cgroup containment where a cgroup can be made", r)
			}
		}
		if r.Mode != ModeCgroup && r.Mode != ModeSubreaper {
			t.Errorf("got %s, want cgroup or subreaper containment on Linux", r)
		}
	})
	t.Run("cgroups not writable", func(t *testing.T) {
		why := "cgroups not writable: mkdir /sys/fs/cgroup/session-3.scope/mcpgen-x-1: permission denied"
		defer func(f func(string) (*cgroupSystem, error)) { autoCgroup = f }(autoCgroup)
		autoCgroup = func(string) (*cgroupSystem, error) { return nil, errors.New(why) }
		c, err := Setup(context.Background(), Options{Name: t.Name()})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(context.Background())
		if got, want := c.Report().String(), "subreaper ("+why+")"; got != want {
			t.Errorf("report: got %q, want %q", got, want)
		}
		want := "memory_max needs the cgroup v2 memory controller delegated to mcpgen; this system has no cgroup that mcpgen can write (" + why + "): run the launcher under systemd-run --user --scope -p Delegate=yes, or remove memory_max"
		if err := c.Check(Limits{MemoryMax: 1 << 30}); err == nil || err.Error() != want {
			t.Errorf("Check:\ngot  %v\nwant %s", err, want)
		}
	})
	t.Run("no subreaper either", func(t *testing.T) {
		// A subreaper that is taken already stands for one that prctl
		// refuses.
		setupMode(t, "subreaper")
		defer func(f func(string) (*cgroupSystem, error)) { autoCgroup = f }(autoCgroup)
		autoCgroup = func(string) (*cgroupSystem, error) {
			return nil, errors.New("no cgroup v2 hierarchy: this system has cgroup v1 only")
		}
		c, err := Setup(context.Background(), Options{Name: t.Name()})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(context.Background())
		want := "process groups only (no cgroup v2 hierarchy: this system has cgroup v1 only; no subreaper: this process has a subreaper containment already)"
		if got := c.Report().String(); got != want {
			t.Errorf("report: got %q, want %q", got, want)
		}
	})
}

// A closed container starts nothing, in every mode.
func TestClosedContainerStartsNothing(t *testing.T) {
	for _, mode := range testModes {
		t.Run(mode, func(t *testing.T) {
			c := setupMode(t, mode)
			k, err := c.New("closed", Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if err := k.Close(closeCtx(t)); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("sleep", "300")
			if err := k.Start(cmd); err == nil || !strings.Contains(err.Error(), "the container is closed") {
				t.Errorf("Start after Close: got %v, want the container closed", err)
				if cmd.Process != nil {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
				}
			}
			if err := k.Close(closeCtx(t)); err != nil {
				t.Errorf("second Close: %v", err)
			}
		})
	}
}

// The children a process had before it became a subreaper (a wrapper's:
// `helper & exec mcpgen launch`) are no orphans of its containers: they
// are left alone, and their Waits keep their statuses.
func TestSubreaperSparesInherited(t *testing.T) {
	helper := exec.Command("sleep", "300")
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	h := &started{cmd: helper, waited: make(chan error, 1)}
	go func() { h.waited <- helper.Wait() }() // ends when the helper is killed below
	t.Cleanup(func() { _ = helper.Process.Kill(); h.wait(t) })
	c := setupMode(t, "subreaper")

	// An orphan made after, killed by a scan: scans have looked at the
	// helper since.
	k, err := c.New("orphans", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", `( sh -c '`+idLine("orphan")+`; exec sleep 300' >/dev/null & until [ -e "$DIR/orphan" ]; do sleep 0.01; done )`)
	cmd.Env = append(os.Environ(), "DIR="+dir)
	if err := k.Start(cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	ids, err := readIDs(dir, []string{"orphan"}, bound)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killLeft(ids) })
	waitFor(t, "the orphan is killed", func() bool { return !alive(ids["orphan"]) })
	if err := k.Close(closeCtx(t)); err != nil {
		t.Fatal(err)
	}

	if err := helper.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("the inherited child: %v, want it alive", err)
	}
	var ee *exec.ExitError
	if err := h.wait(t); !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Errorf("the inherited child's Wait: got %v, want its end by SIGTERM", err)
	}
}

// A server started with a Containment is stopped (or killed, as after a
// crash) with everything it started, escapes included, and its container
// is closed; with process groups alone, the escapes survive: the case
// shows that the test would see them.
func TestProcessContained(t *testing.T) {
	needSetsid(t)
	for _, mode := range testModes {
		for _, how := range []string{"stop", "kill"} {
			t.Run(mode+"/"+how, func(t *testing.T) {
				c := setupMode(t, mode)
				dir := t.TempDir()
				p, err := Start(&Spec{
					Path: "sh", Args: []string{"-c", escapeScript}, Env: append(os.Environ(), "DIR="+dir),
					StdinGrace: 10 * time.Millisecond, TermGrace: 10 * time.Millisecond,
					Containment: c, Name: "srv",
				})
				if err != nil {
					t.Fatal(err)
				}
				ids, err := readIDs(dir, escapeNames, bound)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { killLeft(ids) })
				if how == "stop" {
					_ = p.Stop(closeCtx(t))
				} else {
					p.Kill()
				}
				if err := p.CloseErr(); err != nil {
					t.Errorf("CloseErr: %v", err)
				}
				escaped := mode == "groups"
				for _, name := range escapeNames {
					if got := alive(ids[name]); got != (escaped && name != "leader") {
						t.Errorf("%s %v: alive %v after %s, want %v", name, ids[name], got, how, !got)
					}
				}
				if _, err := p.k.Pids(); mode != "groups" && err == nil {
					if pids, _ := p.k.Pids(); len(pids) != 0 {
						t.Errorf("the container holds %v after %s", pids, how)
					}
				}
			})
		}
	}
}

// A build step's daemon does not outlive Run, whatever it does with
// sessions, where a containment can reach it.
func TestRunContained(t *testing.T) {
	needSetsid(t)
	for _, mode := range testModes[:3] {
		t.Run(mode, func(t *testing.T) {
			c := setupMode(t, mode)
			dir := t.TempDir()
			out := NewTail(1 << 10)
			err := Run(closeCtx(t), &Spec{
				Path: "sh",
				Args: []string{"-c", `( setsid sh -c '` + idLine("daemon") + `; exec sleep 300' >/dev/null 2>&1 &
until [ -e "$DIR/daemon" ]; do sleep 0.01; done ); echo built`},
				Env:         append(os.Environ(), "DIR="+dir),
				Containment: c, Name: "build",
			}, out)
			if err != nil || string(out.Bytes()) != "built\n" {
				t.Fatalf("Run: got %v, %q; want built", err, out.Bytes())
			}
			ids, err := readIDs(dir, []string{"daemon"}, bound)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { killLeft(ids) })
			if alive(ids["daemon"]) {
				t.Errorf("the build's daemon %v outlived Run", ids["daemon"])
			}
		})
	}
}
