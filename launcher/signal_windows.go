package launcher

import (
	"strconv"
	"syscall"
)

// signalName names a signal. Windows has no signals that end a process
// with a status that says so; this only names what Go's emulation reports.
func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	}
	return "signal " + strconv.Itoa(int(sig))
}
