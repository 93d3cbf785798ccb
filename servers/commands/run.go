package commands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
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
	Err       error // the command could not start, or was cancelled
}

// Run runs argv in dir with env, without a shell, in a process group of its
// own. When ctx ends or timeout passes, the whole group is killed. Whatever
// the outcome, when Run returns nothing it started is still running: a tool
// that leaves a daemon behind does not get to keep it.
func Run(ctx context.Context, argv []string, dir string, env []string, timeout time.Duration) *Result {
	res := &Result{Exit: -1}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	// Our own pipes, handed to the child as files, so that Wait returns when
	// the child exits even if a grandchild still holds them open; killing the
	// group then closes them.
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
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		res.Err = startError(argv[0], err)
		return res
	}

	stdout := &capped{max: MaxOutput}
	stderr := &tail{max: stderrTail}
	read := make(chan struct{}, 2)
	go func() { io.Copy(stdout, outR); outR.Close(); read <- struct{}{} }()
	go func() { io.Copy(stderr, errR); errR.Close(); read <- struct{}{} }()

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var waitErr error
	select {
	case waitErr = <-exited:
	case <-timer.C:
		res.TimedOut = true
		killGroup(cmd.Process.Pid)
		waitErr = <-exited
	case <-ctx.Done():
		res.Err = ctx.Err()
		killGroup(cmd.Process.Pid)
		waitErr = <-exited
	}
	killGroup(cmd.Process.Pid) // what the tool left behind
	<-read
	<-read

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

// killGroup ends the process group led by pid. A group that is already gone
// (ESRCH) is what we want.
func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
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
