package dirs

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	lockPath := filepath.Join(dir, LockFile)
	self := os.Getpid()

	if pid, running := Holder(dir); running {
		t.Fatalf("Holder before any launch = %d, true; want not running", pid)
	}
	// A longer pid left by an earlier launcher must not leave debris.
	if err := os.WriteFile(lockPath, []byte("1234567890\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fileText(t, lockPath), strconv.Itoa(self)+"\n"; got != want {
		t.Errorf("lock file holds %q, want %q", got, want)
	}
	if pid, running := Holder(dir); pid != self || !running {
		t.Errorf("Holder = %d, %v; want %d, true", pid, running, self)
	}

	// flock locks belong to open files, so a second Lock in this process
	// meets the first as another launcher would.
	l2, err := Lock(dir)
	var held *LockedError
	if !errors.As(err, &held) {
		l2.Unlock()
		t.Fatalf("second Lock: %v, want a *lockedError", err)
	}
	if held.Pid != self || held.Workspace != "ws" {
		t.Errorf("lockedError = %+v, want pid %d, workspace ws", held, self)
	}

	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if pid, running := Holder(dir); running {
		t.Errorf("Holder after Unlock = %d, true; want not running", pid)
	}
	if got := fileText(t, lockPath); got != "" {
		t.Errorf("lock file after Unlock holds %q, want nothing", got)
	}
	l, err = Lock(dir)
	if err != nil {
		t.Fatalf("Lock after Unlock: %v", err)
	}
	defer l.Unlock()

	// A holder whose pid cannot be read is still a holder.
	if err := os.WriteFile(lockPath, []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if pid, running := Holder(dir); pid != 0 || !running {
		t.Errorf("Holder with an unreadable pid = %d, %v; want 0, true", pid, running)
	}
}

func TestLockedErrorMessage(t *testing.T) {
	tests := []struct {
		err  LockedError
		want string
	}{
		{LockedError{"acme-1", 4242}, `workspace "acme-1" already has a launcher (pid 4242); see it with mcpgen status --workspace acme-1, or stop it with mcpgen stop --workspace acme-1`},
		{LockedError{"acme-1", 0}, `workspace "acme-1" already has a launcher (pid unknown); see it with mcpgen status --workspace acme-1, or stop it with mcpgen stop --workspace acme-1`},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
}

func fileText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLockTouches shows that a held lock keeps its file's times fresh, so
// that a /tmp cleaner never takes it for abandoned.
func TestLockTouches(t *testing.T) {
	defer func(d time.Duration) { lockTouch = d }(lockTouch)
	lockTouch = 10 * time.Millisecond
	dir := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	path := filepath.Join(dir, LockFile)
	old := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second) // a bound on a hang, not a timing
	for {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.ModTime().After(old.Add(24 * time.Hour)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lock file's time stayed %v", fi.ModTime())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	// Unlocked, it touches nothing any more.
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if fi, err := os.Stat(path); err != nil || !fi.ModTime().Equal(old) {
		t.Errorf("after Unlock, the lock file's time is %v (%v), want it left at %v", fi.ModTime(), err, old)
	}
}
