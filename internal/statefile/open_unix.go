//go:build unix

package statefile

import (
	"io/fs"
	"os"
	"syscall"
)

// openFile opens path without blocking (O_NONBLOCK: a named pipe opens at
// once, and is refused once its type is seen) and without following a
// link at the path (O_NOFOLLOW). For a regular file, O_NONBLOCK changes
// nothing: reads and writes of one do not wait on other processes.
func openFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, perm)
}

// openFollow opens path for reading without blocking, following links.
func openFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
