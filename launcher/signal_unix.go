//go:build unix

package launcher

import (
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// signalName names a signal as kill(1) and the man pages do: SIGKILL, not
// "killed".
func signalName(sig syscall.Signal) string {
	if name := unix.SignalName(sig); name != "" {
		return name
	}
	return "signal " + strconv.Itoa(int(sig))
}
