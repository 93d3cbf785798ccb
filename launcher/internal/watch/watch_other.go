//go:build !linux

package watch

import (
	"errors"
	"fmt"
	"syscall"
)

// overflowHint is empty: only inotify has a queue to raise.
const overflowHint = ""

// watchError describes a failure to watch dir. On macOS and the BSDs,
// fsnotify's kqueue backend holds a file descriptor for the directory and
// for each file in it, so a large tree can run out of them.
func watchError(dir string, err error) error {
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		return fmt.Errorf("watch %s: %v (each watched file takes a file descriptor here: raise the limit, ulimit -n, or narrow the watch patterns)", dir, err)
	}
	return fmt.Errorf("watch %s: %v", dir, err)
}
