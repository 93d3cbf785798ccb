package proc

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// initSignals are what init passes on to mcpgen: all that a container
// runtime, a terminal or a person sends, but SIGCHLD, which is init's own.
var initSignals = []os.Signal{
	unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGTERM,
	unix.SIGUSR1, unix.SIGUSR2, unix.SIGWINCH, unix.SIGALRM,
}

// Init makes this process an init when it is PID 1 of its PID namespace, as
// a container's entrypoint is, and returns the status to exit with; ok is
// false when it is not PID 1 (or EnvNoInit is set), and the caller goes on
// as itself.
//
// PID 1 is given every orphan of the namespace, and must reap them all, or
// they stay zombies. mcpgen cannot wait for "any child" in the process
// that runs servers: Go's os/exec waits for each of its children by pid,
// and a wait for any would steal their statuses. So PID 1 splits in two,
// as tini does: it starts this same program again, with the same
// arguments, environment and files, as its one child, and then only reaps,
// waiting for any child; it passes on to the child every signal it gets,
// and exits with the child's status once the child has exited. When PID 1
// exits the kernel kills whatever is left in the namespace.
func Init() (code int, ok bool) {
	if os.Getpid() != 1 || os.Getenv(EnvNoInit) != "" {
		return 0, false
	}
	return runInit(os.Args)
}

// runInit starts argv (this program) as init's child and reaps until the
// child has exited. Its signal channels are stopped before it returns.
func runInit(argv []string) (int, bool) {
	// Notified before the child starts: a signal sent at once is passed
	// on, and no SIGCHLD is missed.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, initSignals...)
	defer signal.Stop(sigs)
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, unix.SIGCHLD)
	defer signal.Stop(chld)

	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcpgen: as PID 1: %v\n", err)
		return 1, true
	}
	// The child leads a process group of its own, which takes the terminal
	// when init has it (docker run -t): Ctrl-C on the terminal then reaches
	// the child's group alone, and init passes on only what is sent to it.
	// In init's group, the child would get each Ctrl-C twice, from the
	// terminal and from init, and take the second for a second signal.
	// On a terminal that is not ours to give (init in a background job),
	// the child stays in init's group: in a group of its own, it would be
	// stopped as it read the terminal.
	attr := &syscall.SysProcAttr{}
	switch onTerminal, owner := terminal(); {
	case owner:
		attr.Setpgid, attr.Foreground, attr.Ctty = true, true, 0
	case !onTerminal:
		attr.Setpgid = true
	}
	child, err := syscall.ForkExec(self, argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		Sys:   attr,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcpgen: as PID 1: starting %s: %v\n", self, err)
		return 1, true
	}
	for {
		// Reap first: the child may have exited before SIGCHLD was
		// delivered, and one notice may stand for many exits.
		if status, exited := reapAll(child); exited {
			return status, true
		}
		select {
		case sig := <-sigs:
			// ESRCH: the child has just exited, and the next reap says so.
			_ = unix.Kill(child, sig.(syscall.Signal))
		case <-chld:
		}
	}
}

// terminal reports whether stdin is a terminal, and whether its foreground
// process group is ours, which the child may then take. A group led
// outside our PID namespace shows as 0, and is not taken for ours.
func terminal() (onTerminal, owner bool) {
	pgrp, err := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	if err != nil {
		return false, false
	}
	return true, pgrp != 0 && pgrp == unix.Getpgrp()
}

// reapAll waits for every child that has exited, without blocking, and
// reports the status of child if it was one of them: its exit status, or
// 128 plus the signal that killed it, as a shell says.
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
