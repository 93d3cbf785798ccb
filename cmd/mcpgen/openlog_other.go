//go:build !windows

package main

import "os"

// openLog opens a log to read it.
func openLog(path string) (*os.File, error) { return os.Open(path) }
