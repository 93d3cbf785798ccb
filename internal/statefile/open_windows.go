package statefile

import (
	"io/fs"
	"os"

	"golang.org/x/sys/windows"
)

// openFile opens path without following a link or a junction at it
// (FILE_FLAG_OPEN_REPARSE_POINT: the link itself opens, and is refused
// once its type is seen), letting others rename and delete the file while
// it is open (FILE_SHARE_DELETE): a log is rotated under its readers, and
// os.OpenFile's sharing would make the rotation fail. Windows has no named
// pipes among files; its opens do not block. perm is left to the dir's
// access control list, which the file inherits.
func openFile(path string, flag int, _ fs.FileMode) (*os.File, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var access uint32
	switch flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR) {
	case os.O_RDONLY:
		access = windows.GENERIC_READ
	case os.O_WRONLY:
		access = windows.GENERIC_WRITE
	default:
		access = windows.GENERIC_READ | windows.GENERIC_WRITE
	}
	if flag&os.O_APPEND != 0 && access&windows.GENERIC_WRITE != 0 {
		// Writes go to the end, whatever the offset: as os.OpenFile's
		// O_APPEND. FILE_WRITE_ATTRIBUTES lets Chmod work.
		access &^= windows.GENERIC_WRITE
		access |= windows.FILE_APPEND_DATA | windows.FILE_WRITE_ATTRIBUTES | windows.SYNCHRONIZE
	}
	create := uint32(windows.OPEN_EXISTING)
	if flag&os.O_CREATE != 0 {
		create = windows.OPEN_ALWAYS
	}
	h, err := windows.CreateFile(p, access,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE,
		nil, create, windows.FILE_ATTRIBUTE_NORMAL|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(h), path), nil
}

// openFollow opens path for reading, following links: Windows has no
// named pipes among files, and its opens do not block.
func openFollow(path string) (*os.File, error) { return os.Open(path) }
