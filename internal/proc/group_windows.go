package proc

import (
	"os"
	"syscall"

	"golang.org/x/sys/windows"
)

// Windows has no process groups to signal: a process started in a
// Container is in a Job Object (ModeJob, job.go), which ends everything
// it started. What these functions serve, a process started without a
// Container, is ended alone, not with what it started.

// groupAttr gives the child a console process group of its own, so that
// the launcher's console's Ctrl-C is not the child's (as Setpgid does on
// Unix), and no console window: a launcher that has no console (started by
// connect) would otherwise make Windows open one for each child.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.CREATE_NO_WINDOW}
}

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

// withGroup is groupAttr: nothing else (no sandbox yet) sets attr here.
func withGroup(*syscall.SysProcAttr) *syscall.SysProcAttr { return groupAttr() }
