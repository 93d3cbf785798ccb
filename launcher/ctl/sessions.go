package ctl

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpgen/mcpgen/launcher/internal/dirs"
)

// A Running is a workspace whose launcher runs: its runtime dir's lock is
// held.
type Running struct {
	Workspace string
	Pid       int // the launcher's, as its lock says; 0 when unreadable
}

// RunningSessions finds the workspaces of this user whose launcher runs,
// sorted by id, by looking for held locks in the runtime dirs. It creates
// nothing, and a runtime dir whose lock is not held (a launcher that ended,
// however it ended) is not listed. A directory there that is not private
// to the user is skipped: RuntimeDir would refuse it too.
func RunningSessions() ([]Running, error) {
	dir, exists, err := dirs.SessionsDir()
	if err != nil || !exists {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("runtime dir: %w", err)
	}
	var out []Running
	for _, e := range entries {
		ws := e.Name()
		if !e.IsDir() || dirs.CheckName(ws) != nil {
			continue
		}
		wsDir := filepath.Join(dir, ws)
		if dirs.CheckPrivateDir(wsDir) != nil {
			continue
		}
		if pid, running := dirs.Holder(wsDir); running {
			out = append(out, Running{Workspace: ws, Pid: pid})
		}
	}
	slices.SortFunc(out, func(a, b Running) int { return strings.Compare(a.Workspace, b.Workspace) })
	return out, nil
}

// IsRunning reports whether a launcher runs for the workspace, and its pid,
// without creating anything.
func IsRunning(workspace string) (pid int, running bool, err error) {
	dir, exists, err := dirs.FindRuntimeDir(workspace)
	if err != nil || !exists {
		return 0, false, err
	}
	pid, running = dirs.Holder(dir)
	return pid, running, nil
}

// A SessionInfo is a running session as mcpgen ps shows it: its status,
// or why it could not be had (a launcher that is starting, stopping, or
// stuck).
type SessionInfo struct {
	Running
	Status *Status
	Err    error
}

// statusWait bounds how long a launcher has to answer a status request.
const statusWait = 10 * time.Second

// Sessions finds every running session, as RunningSessions does, and asks
// each for its status, all at once, each within a bound.
func Sessions(ctx context.Context) ([]SessionInfo, error) {
	running, err := RunningSessions()
	if err != nil {
		return nil, err
	}
	out := make([]SessionInfo, len(running))
	var wg sync.WaitGroup
	for i, r := range running {
		out[i].Running = r
		wg.Go(func() { out[i].Status, out[i].Err = QueryStatus(ctx, r.Workspace) })
	}
	wg.Wait()
	return out, nil
}

// Holder reports whether a launcher holds the lock in runtimeDir, and its
// pid (0 when it could not be read), without disturbing a launcher that
// takes it at that instant.
func Holder(runtimeDir string) (pid int, running bool) { return dirs.Holder(runtimeDir) }
