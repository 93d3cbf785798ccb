package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// memory returns a process's resident memory and its peak, in MB, from
// /proc/PID/status.
func memory(pid int) (rss, peak float64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || key != "VmRSS" && key != "VmHWM" {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/status: %s: %v", pid, key, err)
		}
		if key == "VmRSS" {
			rss = kb / 1024
		} else {
			peak = kb / 1024
		}
	}
	return rss, peak, sc.Err()
}
