//go:build linux || darwin

package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A testGroup is a shell started in a process group of its own, as the
// launcher starts servers.
type testGroup struct {
	pid    int
	stdin  *os.File      // the shell's stdin: closing it ends a `read`
	exited chan struct{} // closed once the shell has been waited for
	err    error         // how it exited; read after exited is closed
}

// startGroup runs sh -c script with Setpgid. The test's cleanup kills the
// group and waits for the shell, whatever happened.
func startGroup(t *testing.T, script string) *testGroup {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", script)
	cmd.Stdin = inR
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	inR.Close()
	if err != nil {
		inW.Close()
		t.Fatal(err)
	}
	g := &testGroup{pid: cmd.Process.Pid, stdin: inW, exited: make(chan struct{})}
	go func() { // the shell's one Wait; it ends when the shell exits
		g.err = cmd.Wait()
		close(g.exited)
	}()
	t.Cleanup(func() {
		if len(groupProcs(t, g.pid)) > 0 {
			syscall.Kill(-g.pid, syscall.SIGKILL)
		}
		inW.Close()
		<-g.exited
	})
	return g
}

// waitExited waits for the shell to have been waited for.
func (g *testGroup) waitExited(t *testing.T) {
	t.Helper()
	select {
	case <-g.exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("shell %d has not exited", g.pid)
	}
}

// waitSleeps waits until group g runs n sleeps, so that everything the
// script starts before them has happened.
func (g *testGroup) waitSleeps(t *testing.T, n int) []Stat {
	t.Helper()
	var procs []Stat
	waitUntil(t, "the group runs its sleeps", func() bool {
		procs = groupProcs(t, g.pid)
		sleeps := 0
		for _, p := range procs {
			if p.Comm == "sleep" {
				sleeps++
			}
		}
		return sleeps == n
	})
	return procs
}

// gone reports whether a process has ended: it no longer exists, its pid
// belongs to another process, or it is a zombie that is not ours to wait
// for (an orphan, which init reaps).
func gone(p Stat) bool {
	st, err := ReadStat(p.Pid)
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	return st.Start != p.Start || (st.State == 'Z' && st.PPid != os.Getpid())
}

func signalOf(err error) syscall.Signal {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return ws.Signal()
		}
	}
	return 0
}

// TestReap plays a launcher killed with SIGKILL: it starts groups as a
// launcher would and records them, then forgets them, and a fresh Reap
// must end every process they hold.
func TestReap(t *testing.T) {
	dir := t.TempDir()
	rec, err := NewRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	two := startGroup(t, "sleep 300 & sleep 300")
	stubborn := startGroup(t, `trap "" TERM; sleep 300`)       // sleep inherits the ignored TERM
	orphaned := startGroup(t, "sleep 300 & read line; exit 0") // the leader exits below
	for _, g := range []*testGroup{two, stubborn, orphaned} {
		if err := rec.Add(g.pid); err != nil {
			t.Fatal(err)
		}
	}
	var procs []Stat
	procs = append(procs, two.waitSleeps(t, 2)...)
	procs = append(procs, stubborn.waitSleeps(t, 1)...)
	procs = append(procs, orphaned.waitSleeps(t, 1)...)

	orphaned.stdin.Close() // read meets EOF and the leader exits
	orphaned.waitExited(t)
	if orphaned.err != nil {
		t.Fatalf("the orphaned group's leader: %v", orphaned.err)
	}
	if len(orphaned.waitSleeps(t, 1)) != 1 {
		t.Fatal("the orphaned group lost its sleep: the test proves nothing")
	}

	// The launcher dies: its Record is forgotten, and a fresh Reap starts
	// from the file alone.
	reaped, err := Reap(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []int{two.pid, stubborn.pid, orphaned.pid}
	slices.Sort(want)
	if !slices.Equal(reaped, want) {
		t.Errorf("Reap = %v, want %v", reaped, want)
	}

	two.waitExited(t)
	stubborn.waitExited(t)
	if sig := signalOf(two.err); sig != syscall.SIGTERM {
		t.Errorf("first group's leader: %v, want ended by SIGTERM", two.err)
	}
	if sig := signalOf(stubborn.err); sig != syscall.SIGKILL {
		t.Errorf("leader that ignores SIGTERM: %v, want ended by SIGKILL", stubborn.err)
	}
	for _, p := range procs {
		if !gone(p) {
			t.Errorf("process %d (%s) of group %d outlived Reap", p.Pid, p.Comm, p.Pgid)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, pgidsFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("record after Reap: %v, want it removed", err)
	}
	if again, err := Reap(dir); again != nil || err != nil {
		t.Errorf("second Reap = %v, %v; want nothing to do", again, err)
	}
}

// TestReapSparesOthers records groups whose ids now name processes that
// are not the recorded ones: Reap must leave them all alone.
func TestReapSparesOthers(t *testing.T) {
	dir := t.TempDir()
	self, err := ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// A leader whose pid came back as another process, which leads a group
	// of its own: the recorded leader started earlier.
	recycled := startGroup(t, "sleep 300 & exec sleep 300")
	recycled.waitSleeps(t, 2)
	recycledStat, err := ReadStat(recycled.pid)
	if err != nil {
		t.Fatal(err)
	}
	// Groups whose leader is gone, with a member that started before the
	// recorded leader, or in another session.
	early := startGroup(t, "sleep 300 & read line")
	early.waitSleeps(t, 1)
	earlyStat, err := ReadStat(early.pid)
	if err != nil {
		t.Fatal(err)
	}
	session := startGroup(t, "sleep 300 & read line")
	session.waitSleeps(t, 1)
	sessionStat, err := ReadStat(session.pid)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []*testGroup{early, session} {
		g.stdin.Close()
		g.waitExited(t)
	}
	var member Stat
	for _, p := range early.waitSleeps(t, 1) {
		if p.Comm == "sleep" {
			member = p
		}
	}

	entries := []groupEntry{
		{pid: self.Pid, start: self.Start + 1, sid: self.Sid},
		{pid: recycled.pid, start: recycledStat.Start - 1, sid: recycledStat.Sid},
		{pid: early.pid, start: member.Start + 1, sid: earlyStat.Sid},
		{pid: session.pid, start: sessionStat.Start, sid: sessionStat.Sid + 1},
	}
	if err := writeRecord(filepath.Join(dir, pgidsFile), entries); err != nil {
		t.Fatal(err)
	}
	// The same groups, rightly recorded, are what Reap acts on (TestReap
	// shows it ends them); here every entry must fail a check.
	reaped, err := Reap(dir)
	if len(reaped) != 0 || err != nil {
		t.Errorf("Reap = %v, %v; want nothing reaped", reaped, err)
	}
	select {
	case <-recycled.exited:
		t.Errorf("the process with a recycled pid exited: %v", recycled.err)
	default:
	}
	// Reap waits for what it signals to end, so a signalled group would
	// be gone by now.
	for name, g := range map[string]*testGroup{"recycled": recycled, "early": early, "session": session} {
		if len(groupProcs(t, g.pid)) == 0 {
			t.Errorf("%s group: its sleep is gone", name)
		}
	}
	if n := len(groupProcs(t, recycled.pid)); n != 2 {
		t.Errorf("the group of the process with a recycled pid has %d processes, want 2", n)
	}
	if _, err := os.Stat(filepath.Join(dir, pgidsFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("record after Reap: %v, want it cleared", err)
	}
}

func TestRecord(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, pgidsFile)
	rec, err := NewRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	g := startGroup(t, "exec sleep 300")
	if err := rec.Add(g.pid); err != nil {
		t.Fatal(err)
	}
	st, err := ReadStat(g.pid)
	if err != nil {
		t.Fatal(err)
	}
	got, err := readRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := []groupEntry{{pid: g.pid, start: st.Start, sid: st.Sid}}; !slices.Equal(got, want) {
		t.Errorf("record holds %+v, want %+v", got, want)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("record: %v, %v; want mode 0600", fi, err)
	}
	if text := fileText(t, path); !strings.HasPrefix(text, recordHeader) {
		t.Errorf("record %q does not start with its header", text)
	}

	// A fresh Record (the next launcher's) sees the entry and can drop it.
	rec2, err := NewRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec2.Remove(g.pid); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("record after its last Remove: %v, want it removed", err)
	}
	if err := rec2.Remove(g.pid); err != nil {
		t.Errorf("second Remove: %v, want nil", err)
	}

	// Add refuses a process that leads no group, and one that is gone.
	child := exec.Command("sleep", "300") // in the test's group
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Wait()
	defer child.Process.Kill()
	if err := rec.Add(child.Process.Pid); err == nil || !strings.Contains(err.Error(), "leads no group") {
		t.Errorf("Add of a process in another's group: %v, want it refused", err)
	}
	if err := rec.Add(1 << 30); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Add of a pid no process has: %v, want fs.ErrNotExist", err)
	}
	if leftover, err := os.ReadDir(dir); err != nil || len(leftover) != 0 {
		t.Errorf("runtime dir holds %v (%v), want nothing: no temporary files left", leftover, err)
	}
}

func TestRecordCorrupt(t *testing.T) {
	tests := []struct{ name, text string }{
		{"two fields", "123 456\n"},
		{"not a number", "12x 456 7\n"},
		{"pid 1", "1 456 7\n"},
		{"pid 0", "0 456 7\n"},
		{"negative pid", "-5 456 7\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, pgidsFile)
			if err := os.WriteFile(path, []byte(recordHeader+tt.text), 0o600); err != nil {
				t.Fatal(err)
			}
			reaped, err := Reap(dir)
			want := fmt.Sprintf("%s:2: want \"PID START SID\", got %q", path, strings.TrimSpace(tt.text))
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("Reap = %v, %v\nwant an error starting with %s", reaped, err, want)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("a record Reap cannot read must stay for a human: %v", err)
			}
			if _, err := NewRecord(dir); err == nil {
				t.Error("NewRecord of a corrupt record: nil error")
			}
		})
	}
}

func FuzzParseRecord(f *testing.F) {
	f.Add([]byte(recordHeader + "4242 987654 77\n99 1 2\n"))
	f.Add([]byte("\n# comment\n  12 3 4  \n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := parseRecord(b)
		if err != nil {
			return
		}
		for _, e := range entries {
			if e.pid <= 1 {
				t.Fatalf("parseRecord accepted pid %d", e.pid)
			}
		}
	})
}
