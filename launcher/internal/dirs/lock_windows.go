package dirs

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// errLocked is what lockNB's error is when another holds the lock.
var errLocked = windows.ERROR_LOCK_VIOLATION

// lockOffset is where the lock is taken: one byte far beyond the pid the
// file holds. LockFileEx's locks are mandatory, so a lock on the pid's
// bytes would keep Holder and LockedError from reading it; a byte past the
// end of the file can be locked, and guards nothing but itself.
const lockOffset = 1 << 40

// lockNB takes a LockFileEx lock on f's lock byte without waiting. The
// system releases it when the handle is closed, or when the process ends
// however it ends.
func lockNB(f *os.File, exclusive bool) error {
	flags := uint32(windows.LOCKFILE_FAIL_IMMEDIATELY)
	if exclusive {
		flags |= windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(h uintptr) {
		ol := &windows.Overlapped{Offset: uint32(lockOffset & 0xffffffff), OffsetHigh: uint32(lockOffset >> 32)}
		lerr = windows.LockFileEx(windows.Handle(h), flags, 0, 1, 0, ol)
	}); err != nil {
		return err
	}
	return lerr
}

// alive reports whether a process with this pid exists and has not exited.
// A process that we may not open (another user's) exists.
func alive(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return errors.Is(err, windows.ERROR_ACCESS_DENIED)
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return true
	}
	return code == 259 // STILL_ACTIVE
}
