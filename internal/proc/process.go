package proc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/mcpgen/mcpgen/internal/sandbox"
)

// A Spec is how to start one process.
type Spec struct {
	Path string   // the program, absolute or to find on PATH
	Args []string // without the program
	Dir  string
	Env  []string // the whole environment
	// Stderr receives the process's stderr (a server's log); nil discards
	// it.
	Stderr io.Writer
	// StdinGrace and TermGrace are Stop's grace periods; zero means
	// the package's defaults of the same names.
	StdinGrace, TermGrace time.Duration

	// Containment, when set, holds the process and everything it starts
	// in a container of its own, named Name (a server's name), which
	// enforces Limits; the container is closed when the process has been
	// stopped or killed (Run: when it returns). Without one, the process
	// leads a process group of its own, which setsid escapes: for tests.
	Containment *Containment
	Name        string
	Limits      Limits

	// Sandbox, when set, confines the process and all it starts to what
	// it grants (internal/sandbox); a strict one that the platform cannot
	// enforce in full is a PermanentError. SandboxReport is set to what
	// the platform enforces of it.
	Sandbox       *sandbox.Policy
	SandboxReport sandbox.Report
	// Spares, when set, holds setup steps of sandboxes started ahead of
	// need: a sandboxed start takes one when one is idle, and pays then
	// only for what the setup does once started.
	Spares *sandbox.Spares

	setup *sandbox.Setup // released once the process has exited
}

// start starts cmd as spec says: in a new container (returned), or in a
// process group of its own. A limit that the containment cannot enforce
// is a PermanentError. It returns the process to wait for: cmd, or the
// spare setup step of a sandbox (see Spares) that runs cmd's program.
func (spec *Spec) start(cmd *exec.Cmd) (*Container, *exec.Cmd, error) {
	if spec.Sandbox != nil {
		if sp := spec.Spares.Take(cmd, spec.Sandbox); sp != nil {
			k, err := spec.startSpare(sp, cmd)
			if !errors.Is(err, errNoAdoption) && !errors.Is(err, sandbox.ErrSpareGone) {
				return k, sp.Cmd(), err
			}
			// The start goes on as if there had been no spare.
		}
		s, err := sandbox.Prepare(cmd, spec.Sandbox)
		if s != nil {
			spec.SandboxReport = s.Report
		}
		if err != nil {
			return nil, nil, &PermanentError{err}
		}
		spec.setup = s
	}
	k, err := spec.container()
	if err != nil || k == nil {
		if err == nil {
			cmd.SysProcAttr = withGroup(cmd.SysProcAttr) // keeps the sandbox's namespaces
			err = cmd.Start()
		}
		return nil, cmd, err
	}
	if err := k.Start(cmd); err != nil {
		closeContainer(k)
		return nil, nil, err
	}
	return k, cmd, nil
}

// container makes spec's container: nil without a Containment.
func (spec *Spec) container() (*Container, error) {
	if spec.Containment == nil {
		return nil, nil
	}
	k, err := spec.Containment.New(cmp.Or(spec.Name, "process"), spec.Limits)
	if err != nil {
		var le *LimitError
		if errors.As(err, &le) {
			return nil, &PermanentError{err}
		}
		return nil, fmt.Errorf("contain %s: %v", spec.Path, err) // not the command's own error
	}
	return k, nil
}

// errNoAdoption: a spare could not be put in the container; the start
// goes on without it.
var errNoAdoption = errors.New("the spare could not be put in its container")

// startSpare has sp, a spare setup step, run cmd in the sandbox: sp goes
// in spec's container first, so that all the command does happens in it.
func (spec *Spec) startSpare(sp *sandbox.Spare, cmd *exec.Cmd) (*Container, error) {
	k, err := spec.container()
	if err != nil {
		sp.Discard()
		return nil, err
	}
	if k != nil {
		if err := k.Adopt(sp.Cmd()); err != nil {
			sp.Discard()
			closeContainer(k)
			return nil, errNoAdoption
		}
	}
	s, err := sp.Run(cmd)
	if s != nil {
		spec.SandboxReport = s.Report
	}
	if err != nil {
		_ = sp.Cmd().Wait() // it exits, given no command
		if k != nil {
			closeContainer(k)
		}
		var se *sandbox.StrictError
		if errors.As(err, &se) {
			return nil, &PermanentError{err}
		}
		return nil, err
	}
	spec.setup = s
	return k, nil
}

// closeContainer closes k, waiting KillWait at most for its processes to
// be gone.
func closeContainer(k *Container) error {
	ctx, cancel := context.WithTimeout(context.Background(), KillWait)
	defer cancel()
	return k.Close(ctx)
}

// A Process is one running child with its stdin and stdout as pipes of
// ours (for a server, its MCP connection), in a container or a process
// group of its own.
type Process struct {
	Pid     int
	Started time.Time

	stdinGrace, termGrace time.Duration

	k         *Container // nil: the process leads a group of its own
	closeOnce sync.Once  // closes k, once the child has exited
	closeErr  error
	cmd       *exec.Cmd
	stdin     *os.File
	stdout    *os.File
	exited    chan struct{} // closed when the child has been waited for
	copied    chan struct{} // closed when its stderr has all been copied
	err       error         // how it exited; read after exited is closed
}

// Start starts the process in a container (or its own process group), so
// that stopping it reaches everything it starts (npx, sh -c and the like).
//
// The child's stdio are os pipes: Wait then returns when the child exits,
// even if a grandchild still holds them. When Stderr is not a file, a
// goroutine of the Process copies the pipe into it; it ends when every
// process that holds the pipe has exited, which Stop and Kill make sure of.
func Start(spec *Spec) (*Process, error) {
	var files []*os.File // the child's ends, closed once it has them
	var ours []*os.File  // our ends, closed if the start fails
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files, ours = append(files, w), append(ours, r)
		}
		return r, w, err
	}
	fail := func(err error) (*Process, error) {
		for _, f := range slices.Concat(files, ours) {
			f.Close()
		}
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	files, ours = append(files, inR), append(ours, inW)
	outR, outW, err := pipe()
	if err != nil {
		return fail(err)
	}
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Dir = spec.Dir
	cmd.Env = spec.Env
	cmd.Stdin, cmd.Stdout = inR, outW
	var errR *os.File
	switch w := spec.Stderr.(type) {
	case nil:
	case *os.File:
		cmd.Stderr = w
	default:
		r, errW, err := pipe()
		if err != nil {
			return fail(err)
		}
		errR, cmd.Stderr = r, errW
	}
	k, cmd, err := spec.start(cmd)
	if err != nil {
		spec.setup.Close()
		_, _ = fail(nil)
		return nil, StartError(spec.Path, err)
	}
	for _, f := range files {
		f.Close()
	}
	p := &Process{
		Pid:        cmd.Process.Pid,
		Started:    time.Now(),
		stdinGrace: cmp.Or(spec.StdinGrace, StdinGrace),
		termGrace:  cmp.Or(spec.TermGrace, TermGrace),
		k:          k,
		cmd:        cmd,
		stdin:      inW,
		stdout:     outR,
		exited:     make(chan struct{}),
		copied:     make(chan struct{}),
	}
	if errR != nil {
		go func() {
			// Ends at EOF: when every process has let go of stderr.
			defer close(p.copied)
			_, _ = io.Copy(spec.Stderr, errR)
			errR.Close()
		}()
	} else {
		close(p.copied)
	}
	setup := spec.setup
	go func() {
		// The one Wait of the child; it ends when the child exits. In a
		// sandbox, the child is the sandbox's PID 1: all it started has
		// ended with it, and what the sandbox held for it can go.
		p.err = cmd.Wait()
		setup.Close()
		close(p.exited)
	}()
	return p, nil
}

// Stdin and Stdout are the server's end of the MCP connection.
func (p *Process) Stdin() io.WriteCloser { return p.stdin }
func (p *Process) Stdout() io.ReadCloser { return p.stdout }

// Exited is closed when the process has exited and been waited for.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitErr is how the process exited (nil for status 0); valid once Exited
// is closed.
func (p *Process) ExitErr() error { return p.err }

// Grace periods of Stop: how long a server has to exit after its stdin is
// closed, then after SIGTERM. Servers are asked nicely first because they
// may be writing state (a memory file, say).
const (
	StdinGrace = 2 * time.Second
	TermGrace  = 3 * time.Second
)

// Stop ends the process as the MCP spec asks, and everything it started:
// close stdin and wait (the Spec's StdinGrace), then SIGTERM to every
// process of its container (or group) and wait (TermGrace), then SIGKILL
// to them all; the child is always waited for, and its container always
// ends with a kill, so that nothing it started outlives it, and is closed
// (see CloseErr). ctx cuts the graces short (a second signal to the
// launcher, say). It returns how the process exited.
func (p *Process) Stop(ctx context.Context) error {
	p.stdin.Close()
	if !p.waitFor(ctx, p.stdinGrace) {
		p.terminate()
		if !p.waitFor(ctx, p.termGrace) {
			p.killAll()
			<-p.exited
		}
	}
	p.killAll() // what the child left behind
	p.stdout.Close()
	p.waitCopied()
	return p.err
}

// Kill ends the process and everything it started at once, and closes its
// container (see CloseErr).
func (p *Process) Kill() {
	select {
	case <-p.exited:
	default:
		p.killAll()
		<-p.exited
	}
	p.killAll()
	p.stdin.Close()
	p.stdout.Close()
	p.waitCopied()
}

// CloseErr says, once Stop or Kill has returned, why the process's
// container could not be closed: a process in it outlived SIGKILL (stuck
// in the kernel), and stays recorded for the next launch to end.
func (p *Process) CloseErr() error { return p.closeErr }

// terminate asks every process of the container (or group) to end.
func (p *Process) terminate() {
	if p.k == nil {
		terminateGroup(p.Pid)
		return
	}
	_ = p.k.Signal(syscall.SIGTERM)
}

// killAll ends every process of the container (or group); once the child
// has exited, it closes the container too.
func (p *Process) killAll() {
	if p.k == nil {
		killGroup(p.Pid)
		return
	}
	select {
	case <-p.exited:
		p.closeOnce.Do(func() { p.closeErr = closeContainer(p.k) })
		return
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), KillWait)
	defer cancel()
	_ = p.k.Kill(ctx) // Close, once the child has exited, kills again
}

// copyGrace bounds the wait for the last of a dead group's stderr: a
// process that left the group (setsid) may hold the pipe open forever.
const copyGrace = time.Second

// waitCopied waits until what the group wrote to stderr has been copied,
// so that the last words of a crashed server are in its log and its error.
func (p *Process) waitCopied() {
	t := time.NewTimer(copyGrace)
	defer t.Stop()
	select {
	case <-p.copied:
	case <-t.C:
	}
}

func (p *Process) waitFor(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// A PermanentError is a start failure that no retry can fix: the program
// is missing or not executable.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// StartError explains why a program did not start, marking failures that no
// retry can fix.
func StartError(path string, err error) error {
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return &PermanentError{fmt.Errorf("command %q not found on PATH", path)}
	case errors.Is(err, os.ErrPermission):
		return &PermanentError{fmt.Errorf("command %q: permission denied", path)}
	case errors.Is(err, os.ErrNotExist):
		return &PermanentError{fmt.Errorf("command %q or its working directory does not exist", path)}
	}
	return err
}
