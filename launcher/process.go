package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/mcpgen/mcpgen/mcp"
)

// A Spec is how to start one server process.
type Spec struct {
	Path string   // the program, absolute or to find on PATH
	Args []string // without the program
	Dir  string
	Env  []string // the whole environment
	// Stderr receives the server's stderr (its log); nil discards it.
	Stderr io.Writer
}

// A Process is one running server: a child in a process group of its own,
// with its stdin and stdout as an MCP connection.
type Process struct {
	Pid     int
	Started time.Time

	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	exited chan struct{} // closed when the child has been waited for
	err    error         // how it exited; read after exited is closed
}

// Start starts the process in its own process group, so that stopping it
// reaches everything it starts (npx, sh -c and the like).
func Start(spec *Spec) (*Process, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Dir = spec.Dir
	cmd.Env = spec.Env
	cmd.Stdin, cmd.Stdout = inR, outW
	cmd.Stderr = spec.Stderr // exec copies it in a goroutine that Wait ends
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A grandchild may keep stderr open after the child exits; Wait then
	// gives up on it after this delay rather than hang.
	cmd.WaitDelay = time.Second
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, StartError(spec.Path, err)
	}
	p := &Process{
		Pid:     cmd.Process.Pid,
		Started: time.Now(),
		cmd:     cmd,
		stdin:   inW,
		stdout:  outR,
		exited:  make(chan struct{}),
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
// close stdin and wait, then SIGTERM to the group and wait, then SIGKILL to
// the group; the child is always waited for, and the group always ends
// with a SIGKILL so that no grandchild outlives it. ctx cuts the graces
// short (a second signal to the launcher, say).
func (p *Process) Stop(ctx context.Context) error {
	p.stdin.Close()
	if !p.waitFor(ctx, StdinGrace) {
		signalGroup(p.Pid, syscall.SIGTERM)
		if !p.waitFor(ctx, TermGrace) {
			signalGroup(p.Pid, syscall.SIGKILL)
			<-p.exited
		}
	}
	signalGroup(p.Pid, syscall.SIGKILL) // grandchildren the child left
	p.stdout.Close()
	return p.err
}

// Kill ends the process group at once.
func (p *Process) Kill() {
	signalGroup(p.Pid, syscall.SIGKILL)
	<-p.exited
	p.stdin.Close()
	p.stdout.Close()
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

// signalGroup signals every process of the group led by pid. ESRCH (the
// group is gone) is the outcome we want, not an error.
func signalGroup(pid int, sig syscall.Signal) {
	if pid > 0 {
		_ = syscall.Kill(-pid, sig)
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

// Ready is what a server said when it became ready.
type Ready struct {
	Init  *mcp.InitializeResult
	Tools []*mcp.Tool
}

// Handshake makes p ready as the launcher defines it: initialize, then
// notifications/initialized, then every page of tools/list. It fails when
// that takes longer than timeout, or when the process exits first.
func Handshake(ctx context.Context, c *mcp.Client, timeout time.Duration) (*Ready, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("not ready within %s", timeout))
	defer cancel()
	init, err := c.Initialize(ctx)
	if err != nil {
		return nil, handshakeError("initialize", ctx, err)
	}
	tools, err := c.ListTools(ctx)
	if err != nil {
		return nil, handshakeError("tools/list", ctx, err)
	}
	return &Ready{Init: init, Tools: tools}, nil
}

func handshakeError(step string, ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
		return fmt.Errorf("%s: %w", step, cause)
	}
	return fmt.Errorf("%s: %w", step, err)
}

// A ServerError is a server that failed to start or to become ready, with
// the tail of what it wrote to stderr.
type ServerError struct {
	Err    error
	Stderr []byte
}

func (e *ServerError) Error() string {
	if len(e.Stderr) == 0 {
		return e.Err.Error()
	}
	return e.Err.Error() + "\n    stderr:\n" + indent(string(e.Stderr))
}

func (e *ServerError) Unwrap() error { return e.Err }

// Probe starts a server, makes it ready and stops it: how mcpgen build
// checks that a server works. It returns what the server offered and how
// long it took from spawn to ready.
func Probe(ctx context.Context, spec *Spec, timeout time.Duration) (*Ready, time.Duration, error) {
	stderr := NewTail(4 << 10)
	spec.Stderr = stderr
	p, err := Start(spec)
	if err != nil {
		return nil, 0, err
	}
	c := mcp.NewClient(ctx, p.Stdout(), p.Stdin(), mcp.ClientOptions{Info: clientInfo})
	ready, err := Handshake(ctx, c, timeout)
	elapsed := time.Since(p.Started)
	stopErr := p.Stop(ctx)
	c.Close()
	if err != nil {
		if stopErr != nil && !isSignal(stopErr) {
			err = fmt.Errorf("%w (the server exited: %v)", err, stopErr)
		}
		return nil, elapsed, &ServerError{Err: err, Stderr: stderr.Bytes()}
	}
	return ready, elapsed, nil
}

// isSignal reports whether a process exited because we signalled it.
func isSignal(err error) bool {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return true
		}
	}
	return false
}

// clientInfo is how the launcher introduces itself to servers.
var clientInfo = mcp.Implementation{Name: "mcpgen-launcher", Version: "1"}
