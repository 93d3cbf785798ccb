//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package files

import (
	"context"
	"time"
)

// lock takes the write lock for a change in dir (see lock.go). Here, and on
// Windows in particular, there is no advisory lock that a directory can
// hold (LockFileEx locks byte ranges of files, mandatorily, which would fail
// readers), so only this process's writes are serialized; against another
// process, edit_file's check of the file just before its rename is what
// keeps an edit from being lost, with a small window left.
func (w *workspace) lock(ctx context.Context, name, dir string) (unlock func(), err error) {
	deadline := time.NewTimer(w.lockWait)
	defer deadline.Stop()
	if err := w.acquire(ctx, name, deadline.C); err != nil {
		return nil, err
	}
	return w.release, nil
}
