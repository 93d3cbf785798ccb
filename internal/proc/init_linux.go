package proc

import (
	"fmt"
	"github.com/mcpgen/mcpgen/internal/pid1"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

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
// child has exited.
func runInit(argv []string) (int, bool) {
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
	status, err := pid1.Run(self, argv, attr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcpgen: as PID 1: starting %s: %v\n", self, err)
		return 1, true
	}
	return status, true
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
