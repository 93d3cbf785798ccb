// Package statefile opens the files that mcpgen keeps in a workspace's
// state and runtime dirs (the catalogs, the logs, the session lock, the
// containment record) as the built-in files server opens a workspace's
// files: the open never blocks, never follows a symbolic link at the
// path, and what it opened is refused unless it is a regular file (the
// type of the opened descriptor counts, not that of a look at the path
// before). Anything that can write into those dirs (a bug, a hand, a
// hostile server run as the same user) can swap a named pipe in for a
// file: opened as usual, it would block its reader until a writer came,
// for good.
package statefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// A KindError is a path that is not a regular file: a named pipe, a
// device, a socket, a directory or a symbolic link.
type KindError struct {
	Path string
	Mode fs.FileMode
}

func (e *KindError) Error() string {
	return fmt.Sprintf("%s: %s, not a regular file: mcpgen keeps only regular files there; remove it", e.Path, Kind(e.Mode))
}

// Open opens the regular file at path for reading.
func Open(path string) (*os.File, error) { return OpenFile(path, os.O_RDONLY, 0) }

// OpenFile opens the regular file at path with flag (os.O_RDONLY,
// os.O_WRONLY or os.O_RDWR, with os.O_APPEND and os.O_CREATE; perm for a
// file it creates), as the package says.
func OpenFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	if flag&^(os.O_RDONLY|os.O_WRONLY|os.O_RDWR|os.O_APPEND|os.O_CREATE) != 0 {
		return nil, &os.PathError{Op: "open", Path: path, Err: errors.New("statefile: unsupported flag")}
	}
	f, err := openFile(path, flag, perm)
	if err != nil {
		// A pipe opened to write with no reader fails (ENXIO), and a
		// link fails (ELOOP): say what is there instead.
		if fi, lerr := os.Lstat(path); lerr == nil && !fi.Mode().IsRegular() {
			return nil, &KindError{Path: path, Mode: fi.Mode()}
		}
		return nil, err
	}
	if err := regular(f, path); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// regular refuses f, opened at path, unless it is a regular file: the
// type of the opened descriptor counts, not a look at the path before.
func regular(f *os.File, path string) error {
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &KindError{Path: path, Mode: fi.Mode()}
	}
	return err
}

// ReadFile reads the regular file at path whole (see Open); one of more
// than max bytes is an error, read no further than that.
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readBounded(f, path, max)
}

// readBounded reads f, opened at path, whole: more than max bytes is an
// error, read no further than that.
func readBounded(f *os.File, path string, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: more than %d bytes", path, max)
	}
	return data, nil
}

// ReadRegular reads the file at path whole, as ReadFile does, except that
// it follows symbolic links at the path: it is for files that the user
// keeps, such as a manifest, which may well be a link (a ConfigMap's is).
// What it reaches must still be a regular file, and the open never blocks:
// a named pipe put where the file was expected is refused, not waited on.
func ReadRegular(path string, max int64) ([]byte, error) {
	f, err := openFollow(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := regular(f, path); err != nil {
		return nil, err
	}
	return readBounded(f, path, max)
}

// Kind names a file's type, with its article, for messages: "a file",
// "a directory", "a symlink", "a named pipe"...
func Kind(m fs.FileMode) string {
	switch m.Type() {
	case 0:
		return "a file"
	case fs.ModeDir:
		return "a directory"
	case fs.ModeSymlink:
		return "a symlink"
	case fs.ModeNamedPipe:
		return "a named pipe"
	case fs.ModeSocket:
		return "a socket"
	case fs.ModeDevice:
		return "a device"
	case fs.ModeDevice | fs.ModeCharDevice:
		return "a character device"
	}
	return "a special file"
}
