package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Sweep ends what a dead launcher left, as its record names it: every
// process in each cgroup and below (the cgroups are removed then), and
// each process with every process below it and, when it led a process
// group, the group's members (see procIndex.recorded). Call it before
// starting anything, with the record's entries. Processes get SIGTERM
// first and grace to end (servers may be saving state), then SIGKILL; ctx
// bounds the whole. It returns the processes that were running, and the
// entries that still name live processes, to keep for the next try, and
// says why in the error.
//
// An entry is acted on only while it still names what was recorded: a
// cgroup by its inode, a process by its start time. A cgroup entry that is
// not a cgroup v2 directory named mcpgen-*, or that holds this process,
// only a corrupt record could hold: it is dropped with an error.
//
// A process tree is frozen before it is killed (SIGSTOP, until a pass finds
// no new member), so that no process can fork a child that escapes the
// tree when its parent dies; a member that exits on its own in the instant
// between two passes can still leave a child that is no longer below any
// recorded process.
func Sweep(ctx context.Context, entries []Entry, grace time.Duration) (ended []ProcID, left []Entry, err error) {
	host, hostErr := findCgroup()
	var errs []error
	var cgroups, procs []Entry
	for _, e := range entries {
		switch e.Kind {
		case EntryCgroup:
			if hostErr != nil {
				errs = append(errs, fmt.Errorf("cgroup %s: %w", e.Path, hostErr))
				left = append(left, e)
				continue
			}
			live, err := sweepable(host, e)
			if err != nil {
				errs = append(errs, err)
			} else if live {
				cgroups = append(cgroups, e)
			}
		case EntryProc:
			if e.Proc.Pid <= 1 || e.Proc.Pid == os.Getpid() {
				errs = append(errs, fmt.Errorf("record names process %d: only a corrupt record would", e.Proc.Pid))
				continue
			}
			procs = append(procs, e)
		default:
			errs = append(errs, fmt.Errorf("record: unknown entry %v", e))
		}
	}
	roots := make([]ProcID, len(procs))
	for i, e := range procs {
		roots[i] = e.Proc
	}
	if x, err := liveIndex(); err == nil {
		ended = running(x, cgroups, roots)
	}

	if grace > 0 && len(ended) > 0 {
		for _, e := range cgroups {
			_ = signalCgroup(e.Path, host, unix.SIGTERM)
		}
		if x, err := liveIndex(); err == nil {
			for _, p := range living(x.recorded(roots)) {
				_, _ = signalProc(p.id(), unix.SIGTERM)
			}
		}
		gctx, cancel := context.WithTimeout(ctx, grace)
		_ = poll(gctx, func() (bool, error) { return swept(cgroups, roots) })
		cancel()
	}

	for _, e := range cgroups {
		err := killCgroup(ctx, e.Path, false)
		if err == nil {
			err = removeCgroupTree(e.Path)
		}
		if err != nil {
			errs = append(errs, err)
			left = append(left, e)
		}
	}
	if len(roots) > 0 {
		if err := stopAndKill(ctx, roots); err != nil {
			errs = append(errs, err)
			if x, err := liveIndex(); err == nil {
				for _, e := range procs {
					if len(living(x.recorded([]ProcID{e.Proc}))) > 0 {
						left = append(left, e)
					}
				}
			} else {
				left = append(left, procs...)
			}
		}
	}
	return ended, left, errors.Join(errs...)
}

// running lists the live processes that the cgroups and the recorded
// process trees hold, each once, by pid.
func running(x procIndex, cgroups []Entry, roots []ProcID) []ProcID {
	seen := map[ProcID]bool{}
	var ids []ProcID
	add := func(p procInfo) {
		if !p.dead() && p.pid != os.Getpid() && !seen[p.id()] {
			seen[p.id()] = true
			ids = append(ids, p.id())
		}
	}
	for _, e := range cgroups {
		pids, _ := cgroupPids(e.Path)
		for _, pid := range pids {
			if p, ok := x.byPid[pid]; ok {
				add(p)
			}
		}
	}
	for _, p := range x.recorded(roots) {
		add(p)
	}
	slices.SortFunc(ids, func(a, b ProcID) int { return a.Pid - b.Pid })
	return ids
}

// sweepable checks a recorded cgroup: live says it is still the one
// recorded; an error, that the entry must not be acted on.
func sweepable(host *cgroupHost, e Entry) (live bool, err error) {
	var st unix.Stat_t
	if err := unix.Lstat(e.Path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil
		}
		return false, fmt.Errorf("cgroup %s: %w", e.Path, err)
	}
	if st.Ino != e.Inode {
		return false, nil // another cgroup since: not ours
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(e.Path, &sfs); err != nil {
		return false, fmt.Errorf("cgroup %s: %w", e.Path, err)
	}
	if sfs.Type != unix.CGROUP2_SUPER_MAGIC || st.Mode&unix.S_IFMT != unix.S_IFDIR || !strings.HasPrefix(filepath.Base(e.Path), "mcpgen-") {
		return false, fmt.Errorf("record names %s, which is no cgroup of mcpgen's: only a corrupt record would", e.Path)
	}
	if self := host.dir; self == e.Path || strings.HasPrefix(self, e.Path+"/") {
		return false, fmt.Errorf("record names cgroup %s, which holds this launcher: only a corrupt record would", e.Path)
	}
	return true, nil
}

// swept reports whether the cgroups are empty and no recorded process tree
// has a live member.
func swept(cgroups []Entry, roots []ProcID) (bool, error) {
	for _, e := range cgroups {
		if empty, err := cgroupEmpty(e.Path); err != nil || !empty {
			return false, err
		}
	}
	if len(roots) == 0 {
		return true, nil
	}
	x, err := liveIndex()
	if err != nil {
		return false, err
	}
	return len(living(x.recorded(roots))) == 0, nil
}

func liveIndex() (procIndex, error) {
	table, err := procTable()
	if err != nil {
		return procIndex{}, err
	}
	return indexProcs(table), nil
}

// living drops the dead (zombies) and this process from ps.
func living(ps []procInfo) []procInfo {
	var out []procInfo
	for _, p := range ps {
		if !p.dead() && p.pid != os.Getpid() {
			out = append(out, p)
		}
	}
	return out
}

// stopAndKill ends the process trees rooted at roots: it stops each member
// (SIGSTOP), pass after pass, until a pass finds none it had not stopped,
// so that the trees can no longer grow; then it kills them all, and waits
// until none is left.
func stopAndKill(ctx context.Context, roots []ProcID) error {
	caught := map[ProcID]bool{}
	err := poll(ctx, func() (bool, error) {
		x, err := liveIndex()
		if err != nil {
			return false, err
		}
		var more []ProcID
		for id := range caught {
			more = append(more, id)
		}
		// What the roots cover now, and what lies below the processes
		// caught before, whose parents may have died since.
		live := living(append(x.recorded(roots), x.below(more)...))
		if len(live) == 0 {
			return true, nil
		}
		grew := false
		for _, p := range live {
			if !caught[p.id()] {
				caught[p.id()] = true
				grew = true
				if _, err := signalProc(p.id(), unix.SIGSTOP); err != nil {
					return false, err
				}
			}
		}
		if !grew {
			for id := range caught {
				if _, err := signalProc(id, unix.SIGKILL); err != nil {
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
