package commands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/mcpgen/mcpgen/internal/proc"
)

// Output caps. A tool's stdout beyond MaxOutput is cut (and the result says
// so); of stderr only the tail is kept, for error results.
const (
	MaxOutput  = 1 << 20
	stderrTail = 4 << 10
)

// A Result is what one run of a command produced.
type Result struct {
	Stdout    []byte
	StdoutLen int64 // bytes written, including those cut
	Stderr    []byte
	StderrLen int64
	Exit      int // -1 when killed by a signal
	TimedOut  bool
	// Held says that a process the command started kept its output open
	// after the command ended and could not be stopped: the output was
	// not waited for beyond outputWait.
	Held bool
	// Err says why the command did not run: it could not start, or the
	// call was cancelled before it started.
	Err error
	// Cancelled is why a command that ran was stopped before it ended:
	// the call was cancelled (by its client, or by the server's stop);
	// nil otherwise. Its processes were killed.
	Cancelled error
	// Elapsed is how long the command ran.
	Elapsed time.Duration
}

// outputWait is how long Run waits for a command's output once the command
// has ended (exited, or been killed at its timeout) and its process group is
// gone, before it looks for the processes that still hold the output open,
// and again after it has killed them. As exec.Cmd's WaitDelay, it bounds a
// call whose descendants escaped the group (setsid) keeping stdout open.
var outputWait = 2 * time.Second

// Run runs argv in dir with env, without a shell, as the root of a process
// tree of its own in a container of c (see startTree), named for the tool.
// When ctx ends or timeout passes, the tree is killed. Whatever the
// outcome, Run returns within outputWait (twice, at worst) of the
// command's end, and what it started is killed: a tool that leaves a
// daemon behind does not get to keep it. With process groups only, what
// escaped the group and let go of its output is beyond reach (see tree).
func Run(ctx context.Context, c *proc.Containment, name string, argv []string, dir string, env []string, timeout time.Duration) *Result {
	res := &Result{Exit: -1}
	if ctx.Err() != nil {
		res.Err = fmt.Errorf("the call was cancelled before it started: %w", context.Cause(ctx))
		return res
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env

	// Our own pipes, handed to the child as files, so that Wait returns when
	// the child exits even if a descendant still holds them open; the read
	// ends are ours to close when we stop waiting for output.
	outR, outW, err := os.Pipe()
	if err != nil {
		res.Err = err
		return res
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		res.Err = err
		return res
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	tree, err := startTree(c, name, cmd)
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		res.Err = startError(argv[0], err)
		return res
	}

	started := time.Now()
	// The readers end when every writer has closed its end of the pipe, or
	// when we close the read end (below).
	stdout := &capped{max: MaxOutput}
	stderr := &tail{max: stderrTail}
	read := make(chan struct{}, 2)
	go func() { io.Copy(stdout, outR); read <- struct{}{} }()
	go func() { io.Copy(stderr, errR); read <- struct{}{} }()
	// The waiter ends when the command exits, which killing the tree
	// ensures.
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var waitErr error
	select {
	case waitErr = <-exited:
	case <-timer.C:
		res.TimedOut = true
		tree.end()
		waitErr = <-exited
	case <-ctx.Done():
		res.Cancelled = context.Cause(ctx)
		tree.end()
		waitErr = <-exited
	}
	res.Elapsed = time.Since(started)
	tree.end() // what the command left behind in its tree
	defer tree.close()

	readers := 2
	drained := func() bool {
		wait := time.NewTimer(outputWait)
		defer wait.Stop()
		for readers > 0 {
			select {
			case <-read:
				readers--
			case <-wait.C:
				return false
			}
		}
		return true
	}
	if !drained() {
		// Someone the container did not reach holds the output: with
		// process groups only, a descendant that left the group (setsid).
		// End those that can be found, then stop waiting whatever happens.
		tree.end(outR, errR)
		if !drained() {
			res.Held = true
		}
	}
	outR.Close()
	errR.Close()
	for ; readers > 0; readers-- {
		<-read
	}

	res.Stdout, res.StdoutLen = stdout.buf.Bytes(), stdout.n
	res.Stderr, res.StderrLen = stderr.bytes(), stderr.n
	var ee *exec.ExitError
	switch {
	case waitErr == nil:
		res.Exit = 0
	case errors.As(waitErr, &ee):
		res.Exit = ee.ExitCode() // -1 when a signal ended it
	}
	return res
}

func startError(name string, err error) error {
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return fmt.Errorf("command %q not found on PATH", name)
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("command %q is not executable (permission denied)", name)
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("command %q does not exist (or its working directory does not)", name)
	}
	return err
}

// capped keeps the first max bytes written to it and counts the rest, so
// that a chatty command never blocks on a full pipe nor fills memory.
type capped struct {
	buf bytes.Buffer
	max int
	n   int64
}

func (c *capped) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// tail keeps the last max bytes written to it.
type tail struct {
	buf []byte
	max int
	n   int64
}

func (t *tail) Write(p []byte) (int, error) {
	t.n += int64(len(p))
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) bytes() []byte {
	if len(t.buf) > t.max {
		return t.buf[len(t.buf)-t.max:]
	}
	return t.buf
}
