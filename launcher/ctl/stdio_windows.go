package ctl

import (
	"errors"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/windows"
)

// canPassStdio is false: Windows has no SCM_RIGHTS to hand a client's
// stdin and stdout to the launcher, so connect bridges them, as it does a
// terminal's on Unix.
const canPassStdio = false

// PassableStdio is false on Windows: see canPassStdio.
func PassableStdio(*os.File) bool { return false }

func sendStdio(net.Conn, *os.File, *os.File) error {
	return errors.New("handing stdio over a socket is not supported on Windows")
}

// noListener reports whether a dial error says that no launcher listens:
// no socket file, or one that a dead launcher left (Windows keeps the
// file, and connecting to it is refused).
func noListener(err error) bool {
	return errors.Is(err, os.ErrNotExist) ||
		errors.Is(err, windows.WSAECONNREFUSED) ||
		errors.Is(err, syscall.ERROR_FILE_NOT_FOUND) ||
		errors.Is(err, syscall.ERROR_PATH_NOT_FOUND)
}
