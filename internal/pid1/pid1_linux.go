// Package pid1 is what a process does as PID 1 of a PID namespace, for
// one child: a container's entrypoint (internal/proc's init) and a
// sandbox's setup step (internal/sandbox) both are one.
//
// PID 1 is given every orphan of the namespace, and must reap them all, or
// they stay zombies. It ignores the signals it has no handler for, so a
// program run as PID 1 would not stop on SIGTERM: PID 1 handles them and
// passes them on to its child instead. When PID 1 exits, the kernel kills
// whatever is left in the namespace.
package pid1

import (
	"errors"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// Signals are what PID 1 passes on to its child: all that a container
// runtime, a launcher, a terminal or a person sends, but SIGCHLD, which is
// PID 1's own.
var Signals = []os.Signal{
	unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGTERM,
	unix.SIGUSR1, unix.SIGUSR2, unix.SIGWINCH, unix.SIGALRM,
}

// A Listener catches Signals and SIGCHLD for Run.
type Listener struct {
	sigs, chld chan os.Signal
}

// Listen catches Signals and SIGCHLD from now on, for a Run to come:
// registering a signal takes the Go runtime a hand-off between threads,
// some milliseconds for them all on a loaded machine, which a setup step
// started ahead of need (a sandbox's spare) spends while it waits.
// Signals that arrive before Run has nobody to go to, and are dropped.
func Listen() *Listener {
	l := &Listener{sigs: make(chan os.Signal, 16), chld: make(chan os.Signal, 1)}
	signal.Notify(l.sigs, Signals...)
	signal.Notify(l.chld, unix.SIGCHLD)
	return l
}

// stop stops catching signals.
func (l *Listener) stop() {
	signal.Stop(l.sigs)
	signal.Stop(l.chld)
}

// Run starts path (argv, this process's environment and stdio, attr) as
// the one child of this process, passes Signals on to it, reaps every
// child that exits until that one has, and returns its status as a shell
// says it: its exit status, or 128 plus the signal that killed it. Its
// signal channels are stopped before it returns. err is the start's.
func Run(path string, argv []string, attr *syscall.SysProcAttr) (status int, err error) {
	return Listen().Run(path, argv, attr)
}

// Run is the package's Run, with the signals l has caught since Listen
// (those before Run dropped).
func (l *Listener) Run(path string, argv []string, attr *syscall.SysProcAttr) (status int, err error) {
	defer l.stop()
	for drained := false; !drained; {
		select {
		case <-l.sigs:
		default:
			drained = true
		}
	}
	child, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		Sys:   attr,
	})
	if err != nil {
		return 0, err
	}
	for {
		// Reap first: the child may have exited before SIGCHLD was
		// delivered, and one notice may stand for many exits.
		if status, exited := reapAll(child); exited {
			return status, nil
		}
		select {
		case sig := <-l.sigs:
			// ESRCH: the child has just exited, and the next reap says so.
			_ = unix.Kill(child, sig.(syscall.Signal))
		case <-l.chld:
		}
	}
}

// reapAll waits for every child that has exited, without blocking, and
// reports the status of child if it was one of them.
func reapAll(child int) (status int, exited bool) {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			// ECHILD (no child left) or none exited yet.
			return status, exited
		}
		if pid != child {
			continue // an orphan: reaped, which was all it needed
		}
		exited = true
		switch {
		case ws.Exited():
			status = ws.ExitStatus()
		case ws.Signaled():
			status = 128 + int(ws.Signal())
		default:
			status = 1
		}
	}
}
