package proc

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"time"
)

// Run runs spec's program to its end in a container of its own (or a
// process group, without spec.Containment): a build step. Its stdin is the
// null device; its stdout goes to stdout and its stderr to spec.Stderr
// (nil discards either; the same writer for both gets them in the order
// they were written). When ctx ends first, the whole container is killed.
// Whatever the outcome, when Run returns nothing the program started is
// still running: a build that leaves a daemon behind does not get to keep
// it.
//
// The error is StartError's when the program could not start, ctx's cause
// when ctx ended it, and else how it exited (an *exec.ExitError).
func Run(ctx context.Context, spec *Spec, stdout io.Writer) error {
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Dir = spec.Dir
	cmd.Env = spec.Env

	// Pipes of our own, handed to the child as files, so that Wait returns
	// when the child exits even if a grandchild still holds them; killing
	// the group then closes them.
	var theirs, ours []*os.File
	var copies []func()
	capture := func(w io.Writer) (*os.File, error) {
		if w == nil {
			return nil, nil
		}
		r, wf, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		theirs, ours = append(theirs, wf), append(ours, r)
		copies = append(copies, func() { _, _ = io.Copy(w, r) })
		return wf, nil
	}
	closeAll := func(files []*os.File) {
		for _, f := range files {
			f.Close()
		}
	}
	outW, err := capture(stdout)
	if err != nil {
		return err
	}
	errW := outW
	if spec.Stderr != stdout {
		if errW, err = capture(spec.Stderr); err != nil {
			closeAll(slices.Concat(theirs, ours))
			return err
		}
	}
	// A nil *os.File would not be a nil io.Writer: set only what we have.
	if outW != nil {
		cmd.Stdout = outW
	}
	if errW != nil {
		cmd.Stderr = errW
	}
	k, cmd, err := spec.start(cmd)
	closeAll(theirs)
	defer spec.setup.Close() // once the program has exited, below
	if err != nil {
		closeAll(ours)
		return StartError(spec.Path, err)
	}
	// end kills what runs in the container (or group); at the last, it
	// closes the container.
	end := func(last bool) error {
		if k == nil {
			killGroup(cmd.Process.Pid)
			return nil
		}
		if last {
			return closeContainer(k)
		}
		ctx, cancel := context.WithTimeout(context.Background(), KillWait)
		defer cancel()
		return k.Kill(ctx)
	}

	copied := make(chan struct{}, len(copies))
	for _, c := range copies {
		go func() {
			// Ends at EOF, once the group has let go of the pipe, or when
			// the read end is closed below.
			c()
			copied <- struct{}{}
		}()
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // the child's one Wait

	select {
	case err = <-exited:
	case <-ctx.Done():
		_ = end(false)
		<-exited
		err = context.Cause(ctx)
	}
	// What the program left behind; a container that cannot be closed
	// (a process stuck in the kernel) stays recorded, and says so.
	if cerr := end(true); cerr != nil {
		err = errors.Join(err, cerr)
	}

	// A process that left the group (setsid, without a container) may
	// hold a pipe open: its output is not worth more than a moment's wait.
	t := time.NewTimer(copyGrace)
	defer t.Stop()
	done := 0
	for ; done < len(copies); done++ {
		select {
		case <-copied:
			continue
		case <-t.C:
		}
		break
	}
	closeAll(ours) // ends the copies that still wait
	for ; done < len(copies); done++ {
		<-copied
	}
	return err
}
