//go:build unix

package dirs

import (
	"errors"
	"os"
	"syscall"
)

// errLocked is what lockNB's error is when another holds the lock.
var errLocked = syscall.EWOULDBLOCK

// lockNB takes an flock of f without waiting. It calls flock(2) through the
// descriptor without f.Fd, which would put it in blocking mode.
func lockNB(f *os.File, exclusive bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = syscall.Flock(int(fd), how|syscall.LOCK_NB) }); err != nil {
		return err
	}
	return ferr
}

// alive reports whether a process with this pid exists (EPERM: it exists,
// but is another user's).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
