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
	"time"
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
}

// A Process is one running child in a process group of its own, with its
// stdin and stdout as pipes of ours (for a server, its MCP connection).
type Process struct {
	Pid     int
	Started time.Time

	stdinGrace, termGrace time.Duration

	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	exited chan struct{} // closed when the child has been waited for
	copied chan struct{} // closed when its stderr has all been copied
	err    error         // how it exited; read after exited is closed
}

// Start starts the process in its own process group, so that stopping it
// reaches everything it starts (npx, sh -c and the like).
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
	cmd.SysProcAttr = groupAttr()
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
	if err := cmd.Start(); err != nil {
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
		cmd:        cmd,
		stdin:      inW,
		stdout:     outR,
		exited:     make(chan struct{}),
		copied:     make(chan struct{}),
	}
	if errR != nil {
		go func() {
			// Ends at EOF: when the whole group has let go of stderr.
			defer close(p.copied)
			_, _ = io.Copy(spec.Stderr, errR)
			errR.Close()
		}()
	} else {
		close(p.copied)
	}
	go func() {
		// The one Wait of the child; it ends when the child exits.
		p.err = cmd.Wait()
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

// Stop ends the process as the MCP spec asks, and everything in its group:
// close stdin and wait (the Spec's StdinGrace), then SIGTERM to the group
// and wait (TermGrace), then SIGKILL to the group; the child is always
// waited for, and the group always ends with a SIGKILL so that no
// grandchild outlives it. ctx cuts the graces short (a second signal to
// the launcher, say).
func (p *Process) Stop(ctx context.Context) error {
	p.stdin.Close()
	if !p.waitFor(ctx, p.stdinGrace) {
		terminateGroup(p.Pid)
		if !p.waitFor(ctx, p.termGrace) {
			killGroup(p.Pid)
			<-p.exited
		}
	}
	killGroup(p.Pid) // grandchildren the child left
	p.stdout.Close()
	p.waitCopied()
	return p.err
}

// Kill ends the process group at once.
func (p *Process) Kill() {
	killGroup(p.Pid)
	<-p.exited
	p.stdin.Close()
	p.stdout.Close()
	p.waitCopied()
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
