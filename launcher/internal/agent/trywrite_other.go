//go:build !unix

package agent

import (
	"errors"
	"syscall"
)

// rawWriter returns nil: without non-blocking writes here, every line for
// a client is written by its outbox's writer goroutine.
func rawWriter(any) syscall.RawConn { return nil }

func tryWrite(syscall.RawConn, []byte) (int, error) {
	return 0, errors.New("no non-blocking writes on this platform")
}
