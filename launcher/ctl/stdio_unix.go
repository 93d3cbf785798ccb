//go:build unix

package ctl

import (
	"errors"
	"net"
	"os"
	"syscall"
)

// canPassStdio says that a client's stdin and stdout can be handed to the
// launcher over the control socket (SCM_RIGHTS).
const canPassStdio = true

// sendStdio hands in and out to the launcher at the other end of conn,
// with one byte.
func sendStdio(conn net.Conn, in, out *os.File) error {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return errors.New("not a unix socket")
	}
	rights := syscall.UnixRights(int(in.Fd()), int(out.Fd()))
	_, _, err := uc.WriteMsgUnix([]byte{0}, rights, nil)
	return err
}

// noListener reports whether a dial error says that no launcher listens:
// no socket, or a socket that a dead launcher left.
func noListener(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED)
}

// PassableStdio reports whether f can be handed to the launcher: a pipe or
// a socket. A terminal or a file is bridged instead, since the launcher
// makes what it takes non-blocking.
func PassableStdio(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) != 0
}
