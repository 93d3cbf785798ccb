//go:build unix

package main

import (
	"io/fs"
	"syscall"
)

// inode returns fi's inode number.
func inode(fi fs.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Ino), true
}
