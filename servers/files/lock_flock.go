//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package files

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// lock takes the write locks for a change in dir, a directory relative to
// the root (see lock.go), and returns the function that lets both go.
func (w *workspace) lock(ctx context.Context, name, dir string) (unlock func(), err error) {
	deadline := time.NewTimer(w.lockWait)
	defer deadline.Stop()
	if err := w.acquire(ctx, name, deadline.C); err != nil {
		return nil, err
	}
	// "/." opens dir as a directory on the way, never as a pipe.
	d, err := w.root.OpenFile(dir+"/.", os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
	if err != nil {
		w.release()
		return nil, w.pathError(name, dir, err)
	}
	// flock waits in the kernel, which wakes waiters as soon as the lock is
	// free; it cannot be interrupted, so it runs in a goroutine that ends
	// when the kernel grants or refuses the lock.
	got := make(chan error, 1)
	go func() { got <- flock(d, syscall.LOCK_EX) }()
	select {
	case err := <-got:
		if err != nil && !unsupported(err) {
			d.Close()
			w.release()
			return nil, w.pathError(name, dir, err)
		}
		// Where the file system has no locks (some network ones), this
		// process's lock and edit_file's check before its rename are all
		// there is.
		return func() {
			flock(d, syscall.LOCK_UN)
			d.Close()
			w.release()
		}, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-deadline.C:
		err = w.busy(name)
	}
	// Given up. The waiting goroutine inherits the workspace's lock and lets
	// it go once its flock returns, so that at most one thread waits on a
	// stuck lock and later writes queue (bounded) behind it.
	go func() {
		if <-got == nil {
			flock(d, syscall.LOCK_UN)
		}
		d.Close()
		w.release()
	}()
	return nil, err
}

// flock applies op to the open directory d.
func flock(d *os.File, op int) error {
	c, err := d.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := c.Control(func(fd uintptr) {
		for {
			ferr = syscall.Flock(int(fd), op)
			if !errors.Is(ferr, syscall.EINTR) {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}

// unsupported reports whether a flock error means that the file system
// has no such locks (NFS emulates flock with byte-range locks, which refuse
// an exclusive lock on a descriptor opened to read: EBADF).
func unsupported(err error) bool {
	return errors.Is(err, syscall.ENOLCK) || errors.Is(err, syscall.EBADF) || errors.Is(err, syscall.EOPNOTSUPP) ||
		errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EINVAL)
}
