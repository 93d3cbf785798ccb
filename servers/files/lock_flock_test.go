//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLockHeld: a process that holds the directory's lock and never lets
// go (a stuck files server, or a hostile program) costs writes a clear error
// after the wait, not a hang; a cancelled call stops waiting; and once the
// lock is free, writes work again.
func TestLockHeld(t *testing.T) {
	w := workspaceWith(t, map[string]string{"d/f": "one\n"})
	hold, err := os.Open(filepath.Join(w.dir, "d"))
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	if err := syscall.Flock(int(hold.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}

	w.lockWait = 100 * time.Millisecond
	const busy = `path "d/f": another write to the workspace has held its lock for more than 100ms (another files server on this workspace, or a program that locked the directory); nothing was written: try again later`
	if _, err := w.write(t.Context(), "d/f", []byte("two\n")); err == nil || err.Error() != busy {
		t.Errorf("write under a held lock: got %v, want %s", err, busy)
	}
	if _, err := w.edit(t.Context(), "d/f", "one", "two", false); err == nil || err.Error() != busy {
		t.Errorf("edit under a held lock: got %v, want %s", err, busy)
	}

	w.lockWait = time.Hour
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := w.write(ctx, "d/f", []byte("two\n")); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled write under a held lock: got %v, want %v", err, context.Canceled)
	}
	if got := readDisk(t, w, "d/f"); got != "one\n" {
		t.Errorf("file = %q after refused writes, want it unchanged", got)
	}

	if err := syscall.Flock(int(hold.Fd()), syscall.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	if _, err := w.edit(t.Context(), "d/f", "one", "two", false); err != nil {
		t.Errorf("edit once the lock is free: %v", err)
	}
	if got := readDisk(t, w, "d/f"); !strings.HasPrefix(got, "two") {
		t.Errorf("file = %q, want the edit", got)
	}
}
