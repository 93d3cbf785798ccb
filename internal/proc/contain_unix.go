//go:build unix

package proc

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
)

// A groupSystem is ModeGroups: a process group per container. A process
// that calls setsid or setpgid leaves its group, and with it the container:
// this is the mode of last resort.
type groupSystem struct {
	noCgroup string // what the system has instead of cgroups, for a LimitError

	mu      sync.Mutex
	closed  bool
	holders map[*groupHolder]struct{}
}

func newGroupSystem(noCgroup string) *groupSystem {
	return &groupSystem{noCgroup: noCgroup, holders: map[*groupHolder]struct{}{}}
}

func (s *groupSystem) checkLimits(lim Limits) error { return limitsWithoutCgroups(lim, s.noCgroup) }

func (s *groupSystem) newHolder(string, Limits) (holder, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("containment closed")
	}
	h := &groupHolder{sys: s}
	s.holders[h] = struct{}{}
	return h, nil
}

func (s *groupSystem) entries() []Entry { return nil }

func (s *groupSystem) changed() <-chan struct{} { return nil }

func (s *groupSystem) close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	holders := slices.Collect(maps.Keys(s.holders))
	s.mu.Unlock()
	var errs []error
	for _, h := range holders {
		errs = append(errs, h.kill(ctx), h.release())
	}
	return errors.Join(errs...)
}

// A groupLeader is a process a container started, which leads its group.
type groupLeader struct {
	pid   int
	start uint64 // where the platform tells (Linux)
	sid   int
	known bool // start and sid were read
	// attached is set when the process shares our group instead
	// (StartAttached): it is then signalled alone, through its
	// os.Process, which never signals a pid that was reaped and reused.
	attached *os.Process
}

// A groupHolder is a container in ModeGroups.
type groupHolder struct {
	sys *groupSystem

	mu      sync.Mutex
	leaders []groupLeader
}

func (h *groupHolder) start(cmd *exec.Cmd, attached bool) error {
	attr := cmd.SysProcAttr
	if attr == nil {
		attr = &syscall.SysProcAttr{}
	}
	if !attr.Setsid && !attached {
		attr.Setpgid = true
	}
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		return err
	}
	l := readLeader(cmd.Process.Pid)
	if attached {
		l.attached = cmd.Process
	}
	h.mu.Lock()
	h.leaders = append(h.leaders, l)
	h.mu.Unlock()
	return nil
}

// adopt implements adopter: the process leads its group already.
func (h *groupHolder) adopt(cmd *exec.Cmd) error {
	l := readLeader(cmd.Process.Pid)
	h.mu.Lock()
	h.leaders = append(h.leaders, l)
	h.mu.Unlock()
	return nil
}

func (h *groupHolder) leaderList() []groupLeader {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]groupLeader(nil), h.leaders...)
}

// signal sends sig to each leader's group, while it has members: the
// group's id is then nobody else's.
func (h *groupHolder) signal(sig syscall.Signal) error {
	_, err := h.signalGroups(sig)
	return err
}

// signalGroups signals the groups that still have members and reports
// whether any had, where the platform can tell (else it signals them all
// and reports none).
func (h *groupHolder) signalGroups(sig syscall.Signal) (live bool, err error) {
	leaders := h.leaderList()
	var errs []error
	// An attached process is signalled alone, once: it leads no group
	// whose members could be listed, and its end is its waiter's to see.
	leaders = slices.DeleteFunc(leaders, func(l groupLeader) bool {
		if l.attached == nil {
			return false
		}
		if err := l.attached.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
			errs = append(errs, fmt.Errorf("process %d: %v: %w", l.pid, sig, err))
		}
		return true
	})
	// A group without a single process, zombies included, is gone: the
	// usual end of a run, told without reading /proc.
	leaders = slices.DeleteFunc(leaders, func(l groupLeader) bool {
		return errors.Is(syscall.Kill(-l.pid, 0), syscall.ESRCH)
	})
	if len(leaders) == 0 {
		return false, errors.Join(errs...)
	}
	members, known := groupMembers(leaders)
	for i, l := range leaders {
		if known {
			if len(members[i]) == 0 {
				continue
			}
			live = true
		}
		if err := syscall.Kill(-l.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("process group %d: %v: %w", l.pid, sig, err))
		}
	}
	return live, errors.Join(errs...)
}

// kill sends SIGKILL to each group until, where the platform can tell, no
// member is left.
func (h *groupHolder) kill(ctx context.Context) error {
	return poll(ctx, func() (bool, error) {
		live, err := h.signalGroups(syscall.SIGKILL)
		return !live, err
	})
}

func (h *groupHolder) release() error {
	h.sys.mu.Lock()
	delete(h.sys.holders, h)
	h.sys.mu.Unlock()
	return nil
}

// entries names each leader, where its start time is known.
func (h *groupHolder) entries() []Entry {
	var es []Entry
	for _, l := range h.leaderList() {
		if l.known {
			es = append(es, Entry{Kind: EntryProc, Proc: ProcID{Pid: l.pid, Start: l.start}})
		}
	}
	return es
}

func (h *groupHolder) pids() ([]int, error) {
	leaders := h.leaderList()
	members, known := groupMembers(leaders)
	var all []int
	for i, l := range leaders {
		if !known {
			all = append(all, l.pid)
			continue
		}
		all = append(all, members[i]...)
	}
	return all, nil
}
