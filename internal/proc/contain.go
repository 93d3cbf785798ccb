// Package proc runs and contains what mcpgen starts: the launcher's
// servers, the build steps of `mcpgen build` and the launcher's rebuilds,
// and declared tools' runs. Each is stopped with everything it started, its
// output drained in bounded memory, and what it is recorded so that a
// launcher killed with SIGKILL leaves nothing behind for long (the next one
// reaps it). Every server and every tool run gets a Container, and nothing
// started inside one outlives it, whatever it does with sessions and
// process groups.
//
// A Containment is chosen once per process by Setup, the strongest that the
// machine allows:
//
//   - cgroup (Linux, a writable cgroup v2 hierarchy): a cgroup per session
//     and a leaf per container; processes are started straight into their
//     leaf, and stopping writes cgroup.kill. Limits (memory_max, cpu_max)
//     need the memory and cpu controllers delegated to mcpgen.
//   - subreaper (Linux, cgroups not writable): mcpgen becomes a child
//     subreaper, so that every orphan of what it started is reparented to
//     it, and kills each one; a container ends its whole process tree.
//   - groups (elsewhere): a process group per container, as before.
//   - job (Windows, not yet): a Job Object per container, killed on close.
//
// A launcher that is killed with SIGKILL cannot stop its containers; Entries
// name what it must record so that the next launch can end them (Sweep). A
// Record attached to the Containment keeps them in the runtime dir as
// containers start, change and close, and a container whose entries cannot
// be recorded starts nothing.
package proc

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A Mode is a way of containing processes.
type Mode int

const (
	// ModeAuto, in Options, asks for the strongest mode available.
	ModeAuto Mode = iota
	// ModeGroups puts each container in a process group: a process that
	// calls setsid or setpgid escapes it.
	ModeGroups
	// ModeSubreaper makes this process a child subreaper (Linux): orphans
	// come back to it and are killed, and a container ends its process tree.
	ModeSubreaper
	// ModeCgroup puts each container in a cgroup v2 leaf (Linux).
	ModeCgroup
	// ModeJob puts each container in a Job Object (Windows; not yet).
	ModeJob
)

var modeNames = [...]string{"auto", "groups", "subreaper", "cgroup", "job"}

func (m Mode) String() string {
	if m >= 0 && int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "mode(" + strconv.Itoa(int(m)) + ")"
}

// MarshalText makes a Mode a word in status's JSON.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads what MarshalText wrote.
func (m *Mode) UnmarshalText(b []byte) error {
	for i, name := range modeNames {
		if string(b) == name {
			*m = Mode(i)
			return nil
		}
	}
	return fmt.Errorf("containment mode %q: want one of %s", b, strings.Join(modeNames[:], ", "))
}

// Options configure Setup.
type Options struct {
	// Name is part of the session cgroup's name (mcpgen-NAME-PID): the
	// workspace, so that an administrator can tell whose it is.
	Name string
	// Mode forces a mode, for tests and for users who must; ModeAuto picks
	// the strongest available. A forced mode that is unavailable is an
	// error.
	Mode Mode

	// For tests: pretend the kernel has no cgroup.kill (before 5.14), and
	// scan for orphans this often.
	noCgroupKill bool
	scanInterval time.Duration
}

// A Report says which containment is in use and why, for status.
type Report struct {
	Mode Mode `json:"mode"`
	// Cgroup is the session's cgroup directory (ModeCgroup).
	Cgroup string `json:"cgroup,omitempty"`
	// Limits are the cgroup controllers that containers may use:
	// "memory" (memory_max), "cpu" (cpu_max).
	Limits []string `json:"limits"`
	// Reason says why no stronger mode is in use, or, in ModeCgroup, why
	// limits are missing; empty when nothing is missing.
	Reason string `json:"reason,omitempty"`
}

// String is the report in one line:
//
//	cgroup v2 at /sys/fs/cgroup/user.slice/.../mcpgen-ws-4242, limits: memory, cpu
//	subreaper (cgroups not writable: mkdir /sys/fs/cgroup/...: permission denied)
func (r Report) String() string {
	s := r.describe(true)
	if r.Reason != "" {
		s += " (" + r.Reason + ")"
	}
	return s
}

// Summary names the mode in a few words, without the cgroup's path and
// the reason, which do not change during a session:
//
//	cgroup v2, limits: memory, cpu
//	subreaper
func (r Report) Summary() string { return r.describe(false) }

func (r Report) describe(where bool) string {
	switch r.Mode {
	case ModeCgroup:
		s := "cgroup v2"
		if where {
			s += " at " + r.Cgroup
		}
		s += ", limits: "
		if len(r.Limits) == 0 {
			return s + "none"
		}
		return s + strings.Join(r.Limits, ", ")
	case ModeSubreaper:
		return "subreaper"
	case ModeGroups:
		return "process groups only"
	case ModeJob:
		return "job objects"
	}
	return r.Mode.String()
}

// Limits bound what a container's processes may use, as the manifest's
// memory_max and cpu_max say. Zero values are no limit.
type Limits struct {
	MemoryMax int64   // bytes
	CPUMax    float64 // CPUs, such as 0.5 or 2
}

// A LimitError is a limit that this system cannot enforce.
type LimitError struct {
	Key        string // the manifest key: "memory_max", "cpu_max"
	Controller string // the cgroup controller it needs: "memory", "cpu"
	System     string // what this system has instead
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s needs the cgroup v2 %s controller delegated to mcpgen; this system has %s: run the launcher under systemd-run --user --scope -p Delegate=yes, or remove %s",
		e.Key, e.Controller, e.System, e.Key)
}

// A Containment holds the containers of one process (a launcher, a
// `serve`): see the package comment. It is safe for concurrent use.
type Containment struct {
	report Report
	sys    system
	record atomic.Pointer[Record] // set by NewRecord
}

// system is a mode's implementation for a whole session.
type system interface {
	// newHolder makes the implementation of one container.
	newHolder(name string, lim Limits) (holder, error)
	// checkLimits says whether lim can be enforced.
	checkLimits(lim Limits) error
	// entries names what the session leaves if this process dies.
	entries() []Entry
	// changed fires when some container's entries have changed.
	changed() <-chan struct{}
	// close ends every container left and releases the session.
	close(ctx context.Context) error
}

// holder is a mode's implementation of one container.
type holder interface {
	// start starts cmd inside the container; cmd.SysProcAttr is the
	// caller's, to add to. attached: in this process's process group (see
	// Container.StartAttached), else in one of its own.
	start(cmd *exec.Cmd, attached bool) error
	// signal sends sig to every process in the container.
	signal(sig syscall.Signal) error
	// kill ends every process in the container, and returns once they are
	// gone (where the platform can tell) or ctx ends.
	kill(ctx context.Context) error
	// release frees what the container holds (a cgroup, a handle); the
	// processes are gone.
	release() error
	// entries names the container's processes for the record.
	entries() []Entry
	// pids lists the live processes in the container.
	pids() ([]int, error)
}

// Setup chooses the containment of this process and prepares it (the
// session cgroup, the subreaper). Call it once, before starting anything,
// and Close it when the process stops its containers.
func Setup(ctx context.Context, opts Options) (*Containment, error) {
	sys, report, err := setup(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &Containment{report: report, sys: sys}, nil
}

// Report says which containment is in use, and why.
func (c *Containment) Report() Report {
	r := c.report
	r.Limits = append([]string{}, r.Limits...) // [] in JSON, not null
	return r
}

// Check says whether lim can be enforced here: a *LimitError when not. The
// launcher calls it when a manifest is loaded, so that a limit that cannot
// hold fails before anything stops.
func (c *Containment) Check(lim Limits) error { return c.sys.checkLimits(lim) }

// New makes an empty container for one server or one tool run; name (a
// server's name, say) shows in the cgroup's name. lim is enforced on every
// process in the container, or New fails with a *LimitError.
func (c *Containment) New(name string, lim Limits) (*Container, error) {
	if err := c.sys.checkLimits(lim); err != nil {
		return nil, err
	}
	h, err := c.sys.newHolder(name, lim)
	if err != nil {
		return nil, err
	}
	return &Container{name: name, h: h, owner: c}, nil
}

// Mode is the containment's mode: what Report says, without the copy.
func (c *Containment) Mode() Mode { return c.report.Mode }

// StartOutside starts cmd outside every container, as a child that the
// containment leaves alone until a container adopts it (Container.Adopt)
// or it has exited: a sandbox's spare setup step, which waits for the
// server it will run. (In ModeSubreaper, any other child that no
// container started is taken for an orphan, and killed.)
func (c *Containment) StartOutside(cmd *exec.Cmd) error {
	if o, ok := c.sys.(outsider); ok {
		return o.startOutside(cmd)
	}
	return cmd.Start()
}

// An outsider is a system that must be told of a child started outside
// its containers (StartOutside).
type outsider interface {
	startOutside(cmd *exec.Cmd) error
}

// Entries names what this session leaves behind if the process dies before
// Close: in ModeCgroup, the session cgroup, which holds every container.
// Record them, with each container's Entries, before starting anything.
func (c *Containment) Entries() []Entry { return c.sys.entries() }

// Changed fires (a value is ready) when a container's Entries have changed:
// in ModeSubreaper, when its processes have started others. Rewrite the
// record then. It never fires in other modes.
func (c *Containment) Changed() <-chan struct{} { return c.sys.changed() }

// Close ends every container that is still running and releases the
// session (the session cgroup, the subreaper). ctx bounds the wait for
// processes to end.
func (c *Containment) Close(ctx context.Context) error { return c.sys.close(ctx) }

// A Container holds the processes of one server or one tool run, and
// everything they start. Its methods are safe for concurrent use.
type Container struct {
	name  string
	h     holder
	owner *Containment

	// mu is held for reading by starts and for writing by Close, so that
	// nothing starts in a container being closed or closed.
	mu     sync.RWMutex
	closed bool
}

// Name is the name the container was made with.
func (k *Container) Name() string { return k.name }

// Start starts cmd inside the container, as cmd.Start does; the caller
// waits for it with cmd.Wait as usual. The process gets a process group of
// its own (unless cmd.SysProcAttr asks for a session), so that a terminal's
// signals do not reach it. A cmd that failed to start leaves nothing in
// the container.
//
// Where the Containment has a Record, the container's entries are
// recorded before Start returns; when they cannot be, the process is
// killed and waited for, and Start fails: nothing runs that a launcher
// killed next could not find.
func (k *Container) Start(cmd *exec.Cmd) error { return k.start(cmd, false) }

// StartAttached is Start for a program that shares this process's
// terminal: an agent that `launch -- CMD` runs in the foreground. It stays
// in this process's process group, which a group of its own would take
// out of the terminal's foreground (a background group is stopped when it
// reads the terminal). Signal, Kill and Close reach it, and what it
// starts as far as the mode sees it: in ModeGroups, the process alone.
func (k *Container) StartAttached(cmd *exec.Cmd) error { return k.start(cmd, true) }

func (k *Container) start(cmd *exec.Cmd, attached bool) error {
	k.mu.RLock()
	defer k.mu.RUnlock()
	if k.closed {
		return fmt.Errorf("start %s in container %q: the container is closed", cmd.Path, k.name)
	}
	if err := k.h.start(cmd, attached); err != nil {
		return fmt.Errorf("start %s in container %q: %w", cmd.Path, k.name, err)
	}
	if rec := k.owner.record.Load(); rec != nil {
		if err := rec.add(k); err != nil {
			// Killed as a whole: it may have started others already.
			ctx, cancel := context.WithTimeout(context.Background(), KillWait)
			defer cancel()
			_ = k.h.kill(ctx)
			_ = cmd.Wait()
			// %v: the record's file errors are no answer to errors.Is
			// about the command's own (not found, permission denied).
			return fmt.Errorf("start %s in container %q: not started, as what it runs in could not be recorded for the next launch to end: %v", cmd.Path, k.name, err)
		}
	}
	return nil
}

// Adopt puts cmd's process, started elsewhere and not yet running
// anything of its own (a sandbox's spare setup step, waiting for its
// order), in the container, as Start would have, and records it. The
// caller waits for it. It fails where the mode cannot take in a running
// process (Windows' job objects here), and on any error the process is
// left as it was.
func (k *Container) Adopt(cmd *exec.Cmd) error {
	k.mu.RLock()
	defer k.mu.RUnlock()
	if k.closed {
		return fmt.Errorf("adopt %s in container %q: the container is closed", cmd.Path, k.name)
	}
	a, ok := k.h.(adopter)
	if !ok {
		return fmt.Errorf("adopt %s in container %q: not in this containment mode", cmd.Path, k.name)
	}
	if err := a.adopt(cmd); err != nil {
		return fmt.Errorf("adopt %s in container %q: %w", cmd.Path, k.name, err)
	}
	if rec := k.owner.record.Load(); rec != nil {
		if err := rec.add(k); err != nil {
			return fmt.Errorf("adopt %s in container %q: not recorded: %v", cmd.Path, k.name, err)
		}
	}
	return nil
}

// An adopter is a holder that can take in a process started elsewhere
// (Adopt). Its process group is its own already.
type adopter interface {
	adopt(cmd *exec.Cmd) error
}

// Signal sends sig to every process in the container: SIGTERM, to ask
// them all to end. A process that is gone is no error.
func (k *Container) Signal(sig syscall.Signal) error { return k.h.signal(sig) }

// Kill ends every process in the container at once and returns when they
// are gone, or when ctx ends (a process stuck in the kernel). The
// container stays usable.
func (k *Container) Kill(ctx context.Context) error { return k.h.kill(ctx) }

// Close kills what is left in the container and releases it, and takes
// it out of the record. Call it once the container's processes have been
// waited for, or are no longer wanted. Nothing can be started in it after;
// a second Close does nothing.
func (k *Container) Close(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return nil
	}
	k.closed = true
	if err := k.h.kill(ctx); err != nil {
		// Stays recorded: the next launch's sweep ends what is left.
		return fmt.Errorf("container %q: %w", k.name, err)
	}
	if err := k.h.release(); err != nil {
		return fmt.Errorf("container %q: %w", k.name, err)
	}
	if rec := k.owner.record.Load(); rec != nil {
		if err := rec.remove(k); err != nil {
			return fmt.Errorf("container %q: %w", k.name, err)
		}
	}
	return nil
}

// Entries names the container's processes for the record, beyond what the
// Containment's Entries cover.
func (k *Container) Entries() []Entry { return k.h.entries() }

// Pids lists the live processes in the container.
func (k *Container) Pids() ([]int, error) { return k.h.pids() }

// A ProcID names one process for as long as it lives: a pid alone may be
// reused once the process is gone, a pid and a start time (in clock ticks
// after boot on Linux) do not repeat.
type ProcID struct {
	Pid   int
	Start uint64
}

// An EntryKind says what an Entry names.
type EntryKind int

const (
	// EntryCgroup is a cgroup directory and everything below it.
	EntryCgroup EntryKind = iota + 1
	// EntryProc is a process and every process below it.
	EntryProc
)

// An Entry names what a launcher must record so that, if it dies without
// stopping its containers, the next launch can end them (Sweep).
type Entry struct {
	Kind EntryKind
	// EntryCgroup: the cgroup's directory and its inode number, which the
	// kernel never reuses while the system runs: a path alone may name a
	// cgroup that someone made since.
	Path  string
	Inode uint64
	// EntryProc: the process.
	Proc ProcID
}

// String is the entry as a record line, which ParseEntry reads:
//
//	cgroup INODE PATH
//	proc PID START
func (e Entry) String() string {
	switch e.Kind {
	case EntryCgroup:
		return fmt.Sprintf("cgroup %d %s", e.Inode, e.Path)
	case EntryProc:
		return fmt.Sprintf("proc %d %d", e.Proc.Pid, e.Proc.Start)
	}
	return fmt.Sprintf("entry(%d)", e.Kind)
}

// ParseEntry reads a line written by Entry.String. A path is the rest of
// the line: the kernel allows spaces in cgroup names, not newlines.
func ParseEntry(line string) (Entry, error) {
	kind, rest, _ := strings.Cut(strings.TrimRight(line, "\r\n"), " ")
	bad := func(want string) (Entry, error) {
		return Entry{}, fmt.Errorf("containment entry %q: want %q", line, want)
	}
	switch kind {
	case "cgroup":
		ino, path, ok := strings.Cut(rest, " ")
		n, err := strconv.ParseUint(ino, 10, 64)
		if !ok || err != nil || n == 0 || !strings.HasPrefix(path, "/") {
			return bad("cgroup INODE /PATH")
		}
		return Entry{Kind: EntryCgroup, Inode: n, Path: path}, nil
	case "proc":
		f := strings.Fields(rest)
		if len(f) != 2 {
			return bad("proc PID START")
		}
		pid, err1 := strconv.Atoi(f[0])
		start, err2 := strconv.ParseUint(f[1], 10, 64)
		// pid 1 is init; a record never names it but a corrupt one.
		if err1 != nil || err2 != nil || pid <= 1 {
			return bad("proc PID START")
		}
		return Entry{Kind: EntryProc, Proc: ProcID{Pid: pid, Start: start}}, nil
	}
	return bad("cgroup INODE /PATH\" or \"proc PID START")
}

// limitsWithoutCgroups is Check where there are no cgroups; system says
// what there is instead.
func limitsWithoutCgroups(lim Limits, system string) error {
	if lim.MemoryMax > 0 {
		return &LimitError{Key: "memory_max", Controller: "memory", System: system}
	}
	if lim.CPUMax > 0 {
		return &LimitError{Key: "cpu_max", Controller: "cpu", System: system}
	}
	return nil
}

// poll calls done until it says so, an error, or ctx ends; the waits
// between calls grow from 1ms to 50ms. Processes that are not our children
// give no other sign of their end (cgroup.events could be watched with
// inotify; a stop is rare enough that polling costs nothing that matters).
func poll(ctx context.Context, done func() (bool, error)) error {
	wait := time.Millisecond
	for {
		ok, err := done()
		if ok || err != nil {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("processes left: %w", context.Cause(ctx))
		case <-t.C:
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// KillWait bounds the wait for a container's processes to be gone after
// SIGKILL: only a process stuck in the kernel (a hung NFS mount) takes
// that long.
const KillWait = 5 * time.Second

// errUnavailable says that a forced mode cannot be had here.
var errUnavailable = errors.New("not available on this system")
