package logfile

import (
	"os"

	"golang.org/x/sys/windows"
)

// openAppend opens path to read and append, creating it. Unlike
// os.OpenFile, it lets others rename and delete the file while it is open
// (FILE_SHARE_DELETE): rotation renames the log this File holds open, which
// Windows otherwise refuses. Readers of the log must share delete access
// too (mcpgen logs does).
func openAppend(path string) (*os.File, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	h, err := windows.CreateFile(p,
		windows.GENERIC_READ|windows.FILE_APPEND_DATA,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE,
		nil, windows.OPEN_ALWAYS, windows.FILE_ATTRIBUTE_NORMAL, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(h), path), nil
}
