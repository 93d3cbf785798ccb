//go:build unix

package proc

import "syscall"

// groupAttr starts a child as the leader of a process group of its own, so
// that signalling the group reaches everything it starts (npx, sh -c and
// the like) and nothing else.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// terminateGroup asks every process of the group led by pid to end.
func terminateGroup(pid int) { signalGroup(pid, syscall.SIGTERM) }

// killGroup ends every process of the group led by pid.
func killGroup(pid int) { signalGroup(pid, syscall.SIGKILL) }

// signalGroup signals every process of the group led by pid. ESRCH (the
// group is gone) is the outcome we want, not an error.
func signalGroup(pid int, sig syscall.Signal) {
	if pid > 0 {
		_ = syscall.Kill(-pid, sig)
	}
}

// withGroup is attr (nil: none) with a process group of its own added.
func withGroup(attr *syscall.SysProcAttr) *syscall.SysProcAttr {
	if attr == nil {
		return groupAttr()
	}
	attr.Setpgid = true
	return attr
}
