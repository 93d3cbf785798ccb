package proc

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fakeJobs is a jobAPI that starts nothing: it keeps a log of the calls
// and the processes each job holds, and fails the calls it is told to.
type fakeJobs struct {
	mu      sync.Mutex
	log     []string
	next    jobHandle
	jobs    map[jobHandle][]int // the pids in each open job
	limits  map[jobHandle]Limits
	nextPid int
	fail    map[string]error // by call name: create, start, assign, resume, terminate
	linger  int              // pids calls after terminate that still list the processes
}

func newFakeJobs() *fakeJobs {
	return &fakeJobs{jobs: map[jobHandle][]int{}, limits: map[jobHandle]Limits{}, nextPid: 100, fail: map[string]error{}}
}

func (f *fakeJobs) note(format string, args ...any) error {
	f.log = append(f.log, fmt.Sprintf(format, args...))
	call, _, _ := strings.Cut(format, " ")
	return f.fail[call]
}

// pidOf is the fake pid of a cmd, kept in its Args' last element.
func pidOf(cmd *exec.Cmd) string { return cmd.Args[len(cmd.Args)-1] }

func (f *fakeJobs) create(lim Limits) (jobHandle, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.note("create"); err != nil {
		return 0, err
	}
	f.next++
	f.jobs[f.next], f.limits[f.next] = nil, lim
	return f.next, nil
}

func (f *fakeJobs) startSuspended(cmd *exec.Cmd, attached bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.note("start"); err != nil {
		return err
	}
	f.nextPid++
	cmd.Args = append(cmd.Args, fmt.Sprint(f.nextPid))
	return nil
}

func (f *fakeJobs) assign(job jobHandle, cmd *exec.Cmd) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.note("assign %d %s", job, pidOf(cmd)); err != nil {
		return err
	}
	var pid int
	fmt.Sscan(pidOf(cmd), &pid)
	f.jobs[job] = append(f.jobs[job], pid)
	return nil
}

func (f *fakeJobs) resume(cmd *exec.Cmd) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.note("resume %s", pidOf(cmd))
}

func (f *fakeJobs) abort(cmd *exec.Cmd) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var pid int
	fmt.Sscan(pidOf(cmd), &pid)
	for j, pids := range f.jobs {
		f.jobs[j] = slices.DeleteFunc(pids, func(p int) bool { return p == pid })
	}
	f.note("abort %s", pidOf(cmd))
}

func (f *fakeJobs) terminate(job jobHandle) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.note("terminate %d", job); err != nil {
		return err
	}
	if f.linger == 0 {
		f.jobs[job] = nil
	}
	return nil
}

func (f *fakeJobs) pids(job jobHandle) ([]int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.linger > 0 {
		f.linger--
		if f.linger == 0 {
			f.jobs[job] = nil
		}
	}
	return slices.Clone(f.jobs[job]), nil
}

func (f *fakeJobs) close(job jobHandle) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.note("close %d", job)
	delete(f.jobs, job)
	return nil
}

func (f *fakeJobs) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.log)
}

var _ system = (*jobSystem)(nil)

func TestJobStart(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		fail    string // the call that fails
		want    []string
		wantErr string
		inJob   []int
	}{
		{name: "suspended, assigned, resumed", want: []string{"create", "start", "assign 1 101", "resume 101"}, inJob: []int{101}},
		{name: "the start fails", fail: "start", want: []string{"create", "start"}, wantErr: "boom"},
		// A process that cannot be put in its job must not run: it is
		// killed while still suspended.
		{name: "the assignment fails", fail: "assign", want: []string{"create", "start", "assign 1 101", "abort 101"}, wantErr: "put in its job object: boom"},
		{name: "the resume fails", fail: "resume", want: []string{"create", "start", "assign 1 101", "resume 101", "abort 101"}, wantErr: "resume: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeJobs()
			if tt.fail != "" {
				f.fail[tt.fail] = boom
			}
			c := &Containment{report: Report{Mode: ModeJob}, sys: newJobSystem(f)}
			k, err := c.New("memory", Limits{})
			if err != nil {
				t.Fatal(err)
			}
			err = k.Start(exec.Command("npx"))
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Start: %v, want error %q", err, tt.wantErr)
			}
			if got := f.calls(); !slices.Equal(got, tt.want) {
				t.Errorf("calls %q, want %q", got, tt.want)
			}
			if pids, _ := k.Pids(); !slices.Equal(pids, tt.inJob) {
				t.Errorf("Pids: %v, want %v", pids, tt.inJob)
			}
		})
	}
}

func TestJobKillAndClose(t *testing.T) {
	f := newFakeJobs()
	c := &Containment{report: Report{Mode: ModeJob}, sys: newJobSystem(f)}
	k, err := c.New("git", Limits{MemoryMax: 64 << 20, CPUMax: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.limits[1]; got != (Limits{MemoryMax: 64 << 20, CPUMax: 0.5}) {
		t.Errorf("the job's limits: %+v", got)
	}
	for range 2 {
		if err := k.Start(exec.Command("git")); err != nil {
			t.Fatal(err)
		}
	}

	// SIGTERM means nothing to a job; SIGKILL terminates it.
	if err := k.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if pids, _ := k.Pids(); len(pids) != 2 {
		t.Fatalf("after SIGTERM: %v, want both processes", pids)
	}
	// Kill waits until the job is empty: the processes linger a little.
	f.linger = 3
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := k.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if pids, _ := k.Pids(); len(pids) != 0 {
		t.Errorf("after Kill: %v, want none", pids)
	}
	// The container stays usable after Kill.
	if err := k.Start(exec.Command("git")); err != nil {
		t.Fatalf("Start after Kill: %v", err)
	}
	if err := k.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := k.Close(ctx); err != nil {
		t.Fatal(err)
	}
	closes := 0
	for _, call := range f.calls() {
		if call == "close 1" {
			closes++
		}
	}
	if closes != 1 {
		t.Errorf("the job's handle was closed %d times, want once: %q", closes, f.calls())
	}
	if err := k.Start(exec.Command("git")); err == nil {
		t.Errorf("Start in a closed container worked")
	}
	if len(f.jobs) != 0 {
		t.Errorf("jobs left open: %v", f.jobs)
	}
}

// TestJobSystemClose shows that closing the containment ends every job
// still open, and that nothing can be contained after.
func TestJobSystemClose(t *testing.T) {
	f := newFakeJobs()
	c := &Containment{report: Report{Mode: ModeJob}, sys: newJobSystem(f)}
	var ks []*Container
	for _, name := range []string{"a", "b", "c"} {
		k, err := c.New(name, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if err := k.Start(exec.Command(name)); err != nil {
			t.Fatal(err)
		}
		ks = append(ks, k)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ks[1].Close(ctx); err != nil { // one ended already
		t.Fatal(err)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if len(f.jobs) != 0 {
		t.Errorf("jobs left open: %v (calls %q)", f.jobs, f.calls())
	}
	for _, call := range []string{"terminate 1", "close 1", "terminate 3", "close 3"} {
		if !slices.Contains(f.calls(), call) {
			t.Errorf("no %q in %q", call, f.calls())
		}
	}
	if _, err := c.New("d", Limits{}); err == nil {
		t.Errorf("New after Close worked")
	}
	if len(c.Entries()) != 0 || c.Changed() != nil {
		t.Errorf("a job containment records %v: nothing outlives it to record", c.Entries())
	}
}

func TestJobCreateFails(t *testing.T) {
	f := newFakeJobs()
	f.fail["create"] = errors.New("quota")
	c := &Containment{report: Report{Mode: ModeJob}, sys: newJobSystem(f)}
	if _, err := c.New("memory", Limits{}); err == nil || !strings.Contains(err.Error(), `job object for "memory": quota`) {
		t.Errorf("New: %v, want the job's error", err)
	}
}
