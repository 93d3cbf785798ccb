//go:build linux || darwin

package ctl

import (
	"context"
	"time"

	"github.com/mcpgen/mcpgen/internal/proc"
)

// waitExit waits, at most exitWait and while ctx lasts, until the process
// pid, which started at start (proc.Proc.Start), has exited: gone, a
// zombie that its parent has yet to wait for, or its pid another
// process's. A launcher exits a moment after it releases its workspace,
// once its last logs are written.
func waitExit(ctx context.Context, pid int, start uint64) {
	ctx, cancel := context.WithTimeout(ctx, exitWait)
	defer cancel()
	for {
		p, err := proc.ReadProc(pid)
		if err != nil || p.Dead() || p.Start != start {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// startOf is when process pid started (proc.Proc.Start), 0 if it cannot
// be read.
func startOf(pid int) uint64 {
	p, err := proc.ReadProc(pid)
	if err != nil {
		return 0
	}
	return p.Start
}
