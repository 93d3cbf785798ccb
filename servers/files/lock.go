package files

import (
	"context"
	"fmt"
	"time"
)

// Writes take two locks, in this order: the workspace's own, so that one
// write or edit of this process runs at a time, and an advisory lock on the
// directory of the file, which other processes of mcpgen honour (two agents,
// each with its own files server on one workspace). The directory, not the
// file: a write replaces the file by a rename, so a lock on the file would
// stay with the old one; the directory stays.
//
// Neither wait is unbounded: a process that holds the lock forever (or a
// stuck file system) costs a clear error after w.lockWait, not a hang.

// acquire takes the workspace's own lock, giving up when ctx ends or
// deadline fires.
func (w *workspace) acquire(ctx context.Context, name string, deadline <-chan time.Time) error {
	select {
	case w.writing <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-deadline:
		return w.busy(name)
	}
}

// release gives back the lock that acquire took.
func (w *workspace) release() { <-w.writing }

func (w *workspace) busy(name string) error {
	return fmt.Errorf("path %s: another write to the workspace has held its lock for more than %s (another files server on this workspace, or a program that locked the directory); nothing was written: try again later", shown(name), w.lockWait)
}
