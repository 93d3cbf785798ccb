package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// macOS contains by process groups, as Linux does when it has neither
// cgroups nor a subreaper: it has neither either. What Linux reads in
// /proc, macOS gives by sysctl kern.proc (stat_darwin.go): a process's
// start time, parent, group, and the processes of a group.

// What macOS lacks, for the report and for a LimitError.
const (
	noContainmentDarwin = "no cgroups or subreaper on macOS: a process that calls setsid leaves its group"
	noCgroupsDarwin     = "no cgroups (they are Linux's)"
)

// setup contains by process groups.
func setup(_ context.Context, opts Options) (system, Report, error) {
	switch opts.Mode {
	case ModeAuto, ModeGroups:
		return newGroupSystem(noCgroupsDarwin), Report{Mode: ModeGroups, Reason: noContainmentDarwin}, nil
	}
	return nil, Report{}, fmt.Errorf("%s containment: %w", opts.Mode, errUnavailable)
}

// readLeader reads what sysctl kern.proc.pid says of a process just
// started: its start time and session, which name its group for as long
// as it lives (see groupMembers).
func readLeader(pid int) groupLeader {
	st, err := ReadProc(pid)
	if err != nil || st.Sid < 0 {
		return groupLeader{pid: pid}
	}
	return groupLeader{pid: pid, start: st.Start, sid: st.Sid, known: true}
}

// groupMembers lists the live processes of each leader's group, from
// sysctl kern.proc.pgrp: those in its session (a group never leaves its
// session) that started no earlier than its leader.
func groupMembers(leaders []groupLeader) ([][]int, bool) {
	members := make([][]int, len(leaders))
	for i, l := range leaders {
		if !l.known {
			return nil, false
		}
		kps, err := unix.SysctlKinfoProcSlice("kern.proc.pgrp", l.pid)
		if err != nil {
			return nil, false
		}
		for j := range kps {
			p := statOf(&kps[j])
			if p.Pgid == l.pid && p.Sid == l.sid && p.Start >= l.start && p.State != 'Z' {
				members[i] = append(members[i], p.Pid)
			}
		}
	}
	return members, true
}

// procTree indexes a process table by parent.
type procTree struct {
	byPid    map[int]Proc
	children map[int][]int
}

func newProcTree(table []Proc) procTree {
	x := procTree{byPid: make(map[int]Proc, len(table)), children: map[int][]int{}}
	for _, p := range table {
		x.byPid[p.Pid] = p
		x.children[p.PPid] = append(x.children[p.PPid], p.Pid)
	}
	return x
}

// below returns the processes of the trees rooted at roots (those still
// in the table with their start time), roots included, each once.
func (x procTree) below(roots []ProcID) []Proc {
	return below(x.byPid, x.children, Proc.ID, roots)
}

// Tree returns the process pid and every process below it, with their
// start times (microseconds since 1970, from kern.proc), as they are now;
// pid comes first. A process whose parent died is no longer below it.
func Tree(pid int) ([]ProcID, error) {
	root, err := ReadProc(pid)
	if err != nil {
		return nil, fmt.Errorf("process tree of %d: %w", pid, err)
	}
	table, err := Procs()
	if err != nil {
		return nil, err
	}
	x := newProcTree(table)
	x.byPid[root.Pid] = root
	var ids []ProcID
	for _, p := range x.below([]ProcID{{Pid: root.Pid, Start: root.Start}}) {
		ids = append(ids, ProcID{Pid: p.Pid, Start: p.Start})
	}
	return ids, nil
}

// Sweep ends what a dead launcher left, as its record names it: each
// process with every process below it (macOS has no cgroups: a cgroup
// entry, which only a Linux record holds, is kept and named in the error).
// Processes get SIGTERM first and grace to end, then are stopped
// (SIGSTOP, until a pass finds no new one, so that none can fork a child
// that escapes when its parent dies) and killed; ctx bounds the whole. A
// process is signalled only while it has its recorded start time; the
// check and the signal are two steps (macOS has no pidfd), and only a pid
// reused in that instant could take a signal meant for another.
//
// It returns the processes it found alive and signalled, and the entries
// that still name living processes (kept for the next launch).
func Sweep(ctx context.Context, entries []Entry, grace time.Duration) (ended []ProcID, left []Entry, err error) {
	var errs []error
	var roots []ProcID
	var procs []Entry
	for _, e := range entries {
		switch {
		case e.Kind == EntryProc && (e.Proc.Pid <= 1 || e.Proc.Pid == os.Getpid()):
			errs = append(errs, fmt.Errorf("record names process %d: only a corrupt record would", e.Proc.Pid))
		case e.Kind == EntryProc:
			roots, procs = append(roots, e.Proc), append(procs, e)
		case e.Kind == EntryCgroup:
			errs = append(errs, fmt.Errorf("cgroup %s: %w", e.Path, errors.ErrUnsupported))
			left = append(left, e)
		default:
			errs = append(errs, fmt.Errorf("record: unknown entry %v", e))
		}
	}
	if len(roots) == 0 {
		return nil, left, errors.Join(errs...)
	}
	if x, err := liveTree(); err == nil {
		for _, p := range livingStats(x.below(roots)) {
			ended = append(ended, p.ID())
		}
	}
	if grace > 0 {
		if x, err := liveTree(); err == nil {
			for _, p := range livingStats(x.below(roots)) {
				signalStat(p, unix.SIGTERM)
			}
		}
		gctx, cancel := context.WithTimeout(ctx, grace)
		_ = poll(gctx, func() (bool, error) {
			x, err := liveTree()
			return err == nil && len(livingStats(x.below(roots))) == 0, err
		})
		cancel()
	}
	if err := freezeAndKill(ctx, roots); err != nil {
		errs = append(errs, err)
		if x, err := liveTree(); err == nil {
			for _, e := range procs {
				if len(livingStats(x.below([]ProcID{e.Proc}))) > 0 {
					left = append(left, e)
				}
			}
		} else {
			left = append(left, procs...)
		}
	}
	return ended, left, errors.Join(errs...)
}

func liveTree() (procTree, error) {
	table, err := Procs()
	if err != nil {
		return procTree{}, err
	}
	return newProcTree(table), nil
}

// livingStats drops the dead (zombies) and this process.
func livingStats(ps []Proc) []Proc {
	var out []Proc
	for _, p := range ps {
		if p.State != 'Z' && p.Pid != os.Getpid() {
			out = append(out, p)
		}
	}
	return out
}

// signalStat sends sig to p if its pid still names it (its start time).
func signalStat(p Proc, sig unix.Signal) error {
	now, err := ReadProc(p.Pid)
	if err != nil || now.Start != p.Start {
		return nil // gone, or another process's pid now
	}
	if err := unix.Kill(p.Pid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("process %d: %v: %w", p.Pid, sig, err)
	}
	return nil
}

// freezeAndKill stops every process of the trees rooted at roots, pass
// after pass, until a pass finds none it had not stopped; then it kills
// them all, and waits until none is left.
func freezeAndKill(ctx context.Context, roots []ProcID) error {
	caught := map[ProcID]Proc{}
	err := poll(ctx, func() (bool, error) {
		x, err := liveTree()
		if err != nil {
			return false, err
		}
		all := append([]ProcID(nil), roots...)
		for id := range caught {
			all = append(all, id)
		}
		live := livingStats(x.below(all))
		if len(live) == 0 {
			return true, nil
		}
		grew := false
		for _, p := range live {
			id := ProcID{Pid: p.Pid, Start: p.Start}
			if _, ok := caught[id]; !ok {
				caught[id], grew = p, true
				if err := signalStat(p, unix.SIGSTOP); err != nil {
					return false, err
				}
			}
		}
		if !grew {
			for _, p := range caught {
				if err := signalStat(p, unix.SIGKILL); err != nil {
					return false, err
				}
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("recorded process trees: %w", err)
	}
	return nil
}
