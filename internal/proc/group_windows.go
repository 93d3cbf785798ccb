package proc

import (
	"os"
	"syscall"
)

// Windows has no process groups to signal. Until the Windows port puts each
// child in a Job Object that is killed with it (issue 9), only the child
// itself is ended, not what it started.

func groupAttr() *syscall.SysProcAttr { return nil }

// terminateGroup does nothing: Windows cannot ask a console process to end
// the way SIGTERM does; Stop goes on to killGroup after its grace.
func terminateGroup(pid int) {}

// killGroup ends the process pid. A process already gone is what we want.
func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
		_ = p.Release()
	}
}
