package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// leftovers ends the processes still running a program of dir (the mcpgen
// that testscript put there, which scripts run) and returns what they
// were: a launcher that a script started and did not stop (it failed
// before its mcpgen stop, say) would otherwise run on after the tests,
// with its servers.
func leftovers(dir string) []string {
	if dir == "" {
		return nil
	}
	var found []string
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		argv := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if len(argv) == 0 || !strings.HasPrefix(argv[0], dir+string(filepath.Separator)) {
			continue
		}
		found = append(found, strconv.Itoa(pid)+": "+strings.Join(argv, " "))
		pids = append(pids, pid)
	}
	// A launcher stops its servers on SIGTERM; what is left then is killed.
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGTERM)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		alive := 0
		for _, pid := range pids {
			if syscall.Kill(pid, 0) == nil {
				alive++
			}
		}
		if alive == 0 {
			break
		}
	}
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	return found
}
