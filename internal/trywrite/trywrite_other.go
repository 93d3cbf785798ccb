//go:build !unix

package trywrite

import (
	"errors"
	"syscall"
)

// Raw returns nil: without non-blocking writes here, a writer that must
// not wait hands every write to a goroutine.
func Raw(any) syscall.RawConn { return nil }

// Write is not available here: see Raw.
func Write(syscall.RawConn, []byte) (int, error) {
	return 0, errors.New("no non-blocking writes on this platform")
}
