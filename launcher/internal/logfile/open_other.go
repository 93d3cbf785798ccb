//go:build !windows

package logfile

import "os"

// openAppend opens path to read and append, creating it (0600).
func openAppend(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
}
