//go:build !linux

package main

import "errors"

// memory needs /proc: flood measures on Linux only.
func memory(pid int) (rss, peak float64, err error) {
	return 0, 0, errors.New("flood reads memory from /proc, which this system does not have")
}
