package files

import "testing"

// mkfifo makes no named pipe: Windows has none in the file system.
func mkfifo(t *testing.T, p string) bool { return false }

// currentUmask is 0: Windows has no umask.
func currentUmask() int { return 0 }
