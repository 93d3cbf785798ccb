//go:build unix

package trywrite

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// Raw returns the raw connection that Write writes on, or nil when conn
// cannot be written without blocking: it exposes no descriptor
// (syscall.Conn), or its descriptor is in blocking mode (a write on it
// would block the thread, whatever the poller says). A unix socket and a
// pipe that the runtime polls (os.Pipe's, and the launcher's stdioConn
// makes an agent's so) qualify.
func Raw(conn any) syscall.RawConn {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	nonBlocking := false
	if err := rc.Control(func(fd uintptr) {
		flags, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		nonBlocking = err == nil && flags&unix.O_NONBLOCK != 0
	}); err != nil || !nonBlocking {
		return nil
	}
	return rc
}

// Write writes as much of b as the connection takes without blocking,
// through the runtime's poller (which holds the descriptor's write lock,
// and refuses once a write deadline has passed). It returns how much was
// written; a full socket or pipe takes 0 bytes, which is no error.
func Write(rc syscall.RawConn, b []byte) (n int, err error) {
	werr := rc.Write(func(fd uintptr) bool {
		for n < len(b) {
			m, e := unix.Write(int(fd), b[n:])
			if m > 0 {
				n += m
			}
			switch {
			case e == unix.EINTR:
				continue
			case e == unix.EAGAIN:
				return true
			case e != nil:
				err = e
				return true
			case m <= 0:
				return true
			}
		}
		return true
	})
	if err == nil {
		err = werr
	}
	return n, err
}
