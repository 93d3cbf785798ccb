//go:build unix

package main

import (
	"os"
	"os/exec"
	"syscall"

	"github.com/mcpgen/mcpgen/internal/statefile"
)

// startDetached starts the command newCmd makes in a session of its own:
// no terminal, so the agent's terminal and its signals (hangup, Ctrl-C) do
// not reach it.
func startDetached(newCmd func() *exec.Cmd) (*exec.Cmd, error) {
	cmd := newCmd()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd, cmd.Start()
}

// lockFile takes an exclusive lock on path, waiting for it.
func lockFile(path string) (func(), error) {
	f, err := statefile.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
