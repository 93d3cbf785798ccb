package main

import (
	"errors"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/windows"

	"github.com/mcpgen/mcpgen/internal/statefile"
)

// startDetached starts the command newCmd makes without a console
// (DETACHED_PROCESS), in a process group of its own
// (CREATE_NEW_PROCESS_GROUP), so that closing the agent's console or its
// Ctrl-C does not reach it; and out of the agent's job, if the agent runs
// in one that allows it (CREATE_BREAKAWAY_FROM_JOB), so that the agent's
// end does not kill it. A job that forbids breaking away refuses such a
// start: then the launcher starts inside it, and lives as long as the
// agent's job.
func startDetached(newCmd func() *exec.Cmd) (*exec.Cmd, error) {
	flags := uint32(windows.DETACHED_PROCESS | windows.CREATE_NEW_PROCESS_GROUP)
	cmd := newCmd()
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: flags | windows.CREATE_BREAKAWAY_FROM_JOB}
	err := cmd.Start()
	if errors.Is(err, windows.ERROR_ACCESS_DENIED) {
		cmd = newCmd() // an exec.Cmd starts once
		cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: flags}
		err = cmd.Start()
	}
	return cmd, err
}

// lockFile takes an exclusive lock on path, waiting for it (LockFileEx;
// the file holds nothing, so its first byte is the lock).
func lockFile(path string) (func(), error) {
	f, err := statefile.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	ol := new(windows.Overlapped)
	if err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, ol); err != nil {
		f.Close()
		return nil, &os.PathError{Op: "lock", Path: path, Err: err}
	}
	return func() { f.Close() }, nil
}
