package proc

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"sync"
	"syscall"
)

// ModeJob's bookkeeping: a Job Object per container, which kills what it
// holds when its last handle closes, however the launcher ends. The
// Windows calls are behind jobAPI (contain_windows.go), so that tests on
// any system can check the bookkeeping with a stand-in.

// A jobHandle is a Job Object's handle.
type jobHandle uintptr

// jobAPI is what ModeJob needs of the system.
type jobAPI interface {
	// create makes a job that kills its processes when its last handle
	// is closed, and enforces lim on them.
	create(lim Limits) (jobHandle, error)
	// startSuspended starts cmd (Prepare'd) with its first thread
	// suspended: it runs no code, so it can start nothing, until resume.
	// attached: the child shares our console (the agent of launch --
	// CMD), whatever its stdio.
	startSuspended(cmd *exec.Cmd, attached bool) error
	// assign puts cmd's process in job; what it starts is in job too.
	assign(job jobHandle, cmd *exec.Cmd) error
	// resume lets cmd's process run.
	resume(cmd *exec.Cmd) error
	// abort kills cmd's process, which could not be put in its job, and
	// waits for it.
	abort(cmd *exec.Cmd)
	// terminate kills every process in job.
	terminate(job jobHandle) error
	// pids lists the processes in job that have not exited.
	pids(job jobHandle) ([]int, error)
	// close closes job's handle: what is left in it dies.
	close(job jobHandle) error
}

// A jobSystem is ModeJob for a whole session.
type jobSystem struct {
	api jobAPI

	mu      sync.Mutex
	closed  bool
	holders map[*jobHolder]struct{}
}

func newJobSystem(api jobAPI) *jobSystem {
	return &jobSystem{api: api, holders: map[*jobHolder]struct{}{}}
}

// checkLimits accepts every limit: a job enforces memory_max (its job
// memory limit) and cpu_max (a hard cap on its CPU rate).
func (s *jobSystem) checkLimits(Limits) error { return nil }

// newHolder makes the container's job now, so that a process is never
// started before there is a job to put it in.
func (s *jobSystem) newHolder(name string, lim Limits) (holder, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("containment closed")
	}
	job, err := s.api.create(lim)
	if err != nil {
		return nil, fmt.Errorf("job object for %q: %w", name, err)
	}
	h := &jobHolder{sys: s, job: job}
	s.holders[h] = struct{}{}
	return h, nil
}

// entries is empty: nothing needs recording, since every job dies with
// the process that holds its handle.
func (s *jobSystem) entries() []Entry { return nil }

func (s *jobSystem) changed() <-chan struct{} { return nil }

func (s *jobSystem) close(ctx context.Context) error {
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

// A jobHolder is a container in ModeJob: one job.
type jobHolder struct {
	sys *jobSystem
	job jobHandle

	mu       sync.Mutex
	released bool
}

// start starts cmd suspended, puts it in the job, then lets it run: a
// process assigned after it started could start another before it is
// assigned, which would be outside the job. A start that fails at any
// step leaves no process behind.
func (h *jobHolder) start(cmd *exec.Cmd, attached bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return errors.New("job closed")
	}
	api := h.sys.api
	if err := api.startSuspended(cmd, attached); err != nil {
		return err
	}
	if err := api.assign(h.job, cmd); err != nil {
		api.abort(cmd)
		return fmt.Errorf("put in its job object: %w", err)
	}
	if err := api.resume(cmd); err != nil {
		api.abort(cmd)
		return fmt.Errorf("resume: %w", err)
	}
	return nil
}

// signal ends the job's processes for SIGKILL. Windows has no SIGTERM for
// processes without a console of ours: a stop asks a server to end by
// closing its stdin, then kills it after the grace periods.
func (h *jobHolder) signal(sig syscall.Signal) error {
	if sig != syscall.SIGKILL {
		return nil
	}
	return h.terminate()
}

func (h *jobHolder) terminate() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return nil
	}
	return h.sys.api.terminate(h.job)
}

// kill terminates the job and waits until it holds no process.
func (h *jobHolder) kill(ctx context.Context) error {
	if err := h.terminate(); err != nil {
		return err
	}
	return poll(ctx, func() (bool, error) {
		pids, err := h.pids()
		return len(pids) == 0, err
	})
}

// release closes the job's handle, once.
func (h *jobHolder) release() error {
	h.mu.Lock()
	if h.released {
		h.mu.Unlock()
		return nil
	}
	h.released = true
	err := h.sys.api.close(h.job)
	h.mu.Unlock()
	h.sys.mu.Lock()
	delete(h.sys.holders, h)
	h.sys.mu.Unlock()
	return err
}

func (h *jobHolder) entries() []Entry { return nil }

func (h *jobHolder) pids() ([]int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return nil, nil
	}
	return h.sys.api.pids(h.job)
}
