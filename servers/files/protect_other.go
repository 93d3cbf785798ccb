//go:build !windows

package files

// storedName is the name the file system stores for c: c itself, outside
// Windows.
func storedName(c string) string { return c }
