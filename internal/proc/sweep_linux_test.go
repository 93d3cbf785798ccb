package proc

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

// A testGroup is a shell that leads a process group of its own, as the
// containers of ModeGroups (and mcpgen before containers) start servers.
type testGroup struct {
	*started
	leader ProcID
	stdin  *os.File // the shell's stdin: closing it ends a `read`
}

// startGroup runs sh -c script with Setpgid and waits until the group
// has sleeps sleeping. The test's cleanup kills the group.
func startGroup(t *testing.T, script string, sleeps int) *testGroup {
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
	s := &started{cmd: cmd, waited: make(chan error, 1)}
	go func() { s.waited <- cmd.Wait() }() // ends when the shell exits
	leader, err := readProcInfo(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	g := &testGroup{started: s, leader: leader.id(), stdin: inW}
	t.Cleanup(func() {
		_, _ = signalProc(g.leader, syscall.SIGKILL)
		for _, p := range g.members(t) {
			_, _ = signalProc(p.id(), syscall.SIGKILL)
		}
		inW.Close()
		s.wait(t)
	})
	waitFor(t, "the group's sleeps", func() bool { return len(g.members(t)) >= sleeps })
	return g
}

// members returns the group's live processes other than its leader.
func (g *testGroup) members(t *testing.T) []procInfo {
	t.Helper()
	table, err := procTable()
	if err != nil {
		t.Fatal(err)
	}
	var ms []procInfo
	for _, p := range table {
		if p.pgid == g.leader.Pid && p.pid != g.leader.Pid && !p.dead() {
			ms = append(ms, p)
		}
	}
	return ms
}

// A proc entry for a group's leader ends its group too, even members
// whose parent died (init has them now): how a record of the old format,
// and those of ModeGroups, are swept.
func TestSweepGroups(t *testing.T) {
	// "; :" keeps a shell from exec'ing its last command.
	two := startGroup(t, "sleep 300 & sleep 300; :", 2)
	stubborn := startGroup(t, `trap "" TERM; sleep 300; :`, 1) // sleep inherits the ignored TERM
	orphaned := startGroup(t, "sleep 300 & read line; exit 0", 1)
	orphan := orphaned.members(t)[0]
	orphaned.stdin.Close() // read meets EOF: the leader exits, its sleep lives on
	if err := orphaned.wait(t); err != nil {
		t.Fatalf("the orphaned group's leader: %v", err)
	}
	if p, err := readProcInfo(orphan.pid); err != nil || p.ppid == orphaned.leader.Pid || p.dead() {
		t.Fatalf("the orphan: got %+v, %v; want it alive, with another parent", p, err)
	}

	var entries []Entry
	var want []ProcID
	for _, g := range []*testGroup{two, stubborn, orphaned} {
		entries = append(entries, Entry{Kind: EntryProc, Proc: g.leader})
		if g != orphaned {
			want = append(want, g.leader)
		}
		for _, p := range g.members(t) {
			want = append(want, p.id())
		}
	}
	slices.SortFunc(want, func(a, b ProcID) int { return a.Pid - b.Pid })
	ended, left, err := Sweep(closeCtx(t), entries, time.Second)
	if err != nil || len(left) != 0 {
		t.Fatalf("Sweep: left %v, %v; want nothing left", left, err)
	}
	if !slices.Equal(ended, want) {
		t.Errorf("Sweep ended %v, want %v", ended, want)
	}
	if sig := signalOf(two.wait(t)); sig != syscall.SIGTERM {
		t.Errorf("the first group's leader: ended by %v, want SIGTERM", sig)
	}
	if sig := signalOf(stubborn.wait(t)); sig != syscall.SIGKILL {
		t.Errorf("a leader that ignores SIGTERM: ended by %v, want SIGKILL", sig)
	}
	for _, id := range want {
		if alive(id) {
			t.Errorf("process %v outlived Sweep", id)
		}
	}
}

// Entries whose pids now name other processes, or whose groups hold
// processes that started before the recorded leader, end nothing.
func TestSweepSparesOthers(t *testing.T) {
	// A leader whose pid came back as another process, which leads a group
	// of its own: the recorded leader started earlier.
	recycled := startGroup(t, "sleep 300 & exec sleep 300", 1)
	// A group whose leader is gone, with a member that started before the
	// recorded leader.
	early := startGroup(t, "sleep 300 & read line", 1)
	member := early.members(t)[0]
	early.stdin.Close()
	early.wait(t)
	entries := []Entry{
		{Kind: EntryProc, Proc: ProcID{recycled.leader.Pid, recycled.leader.Start - 1}},
		{Kind: EntryProc, Proc: ProcID{early.leader.Pid, member.start + 1}},
	}
	ended, left, err := Sweep(closeCtx(t), entries, 0)
	if len(ended) != 0 || len(left) != 0 || err != nil {
		t.Errorf("Sweep: got %v, %v, %v; want nothing ended", ended, left, err)
	}
	if !alive(recycled.leader) || len(recycled.members(t)) != 1 {
		t.Errorf("the group of the process with a recycled pid: leader alive %v, members %v; want both alive", alive(recycled.leader), recycled.members(t))
	}
	if !alive(member.id()) {
		t.Errorf("the member that started before the recorded leader was killed")
	}
}

// signalOf returns the signal that ended a process, or 0.
func signalOf(err error) syscall.Signal {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return ws.Signal()
		}
	}
	return 0
}
