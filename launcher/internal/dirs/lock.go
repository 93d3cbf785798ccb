package dirs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/mcpgen/mcpgen/internal/statefile"
)

// LockFile is the name of the session lock in a runtime dir. It holds the
// pid of the launcher that holds the lock.
const LockFile = "lock"

// A SessionLock makes its holder the one launcher of a workspace. It is an
// flock on runtimeDir/lock, held through an open descriptor for the
// session's life, so the kernel releases it when the launcher dies however
// it dies (kill -9 included): there is no stale lock to clean up (on
// Windows it is a LockFileEx lock, which the system releases in the same
// way: lock_windows.go). The descriptor is close-on-exec, so the servers
// the launcher starts never hold the lock on its behalf.
//
// The lock file is never removed: a file removed while another launcher has
// it open but not yet locked would let two launchers lock two different
// files of the same name. Nor may anyone else remove it: the runtime dir
// may be in /tmp (macOS's default, and Linux's without XDG_RUNTIME_DIR),
// whose cleaners (macOS's periodic clean-tmps, systemd-tmpfiles) delete
// files untouched for some days, and a session lives longer. So the lock
// touches its file every lockTouch, in a goroutine that Unlock ends.
type SessionLock struct {
	f    *os.File
	stop chan struct{} // closed by Unlock: ends the toucher
	done chan struct{} // closed when the toucher has ended
}

// lockTouch is how often a held lock touches its file: far below the days
// that /tmp cleaners wait.
var lockTouch = time.Hour

// touch sets the lock file's access and modification times to now, every
// lockTouch, until stop is closed.
func (l *SessionLock) touch(path string) {
	defer close(l.done)
	t := time.NewTicker(lockTouch)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case now := <-t.C:
			_ = os.Chtimes(path, now, now)
		}
	}
}

// A LockedError is a workspace whose lock another launcher holds.
type LockedError struct {
	Workspace string
	Pid       int // the holder's pid; 0 when it could not be read
}

func (e *LockedError) Error() string {
	who := "pid unknown"
	if e.Pid > 0 {
		who = "pid " + strconv.Itoa(e.Pid)
	}
	return fmt.Sprintf("workspace %q already has a launcher (%s); see it with mcpgen status --workspace %s, or stop it with mcpgen stop --workspace %s", e.Workspace, who, e.Workspace, e.Workspace)
}

// Lock takes the session lock of the workspace whose runtime dir this is
// (as RuntimeDir returns it: its last element is the workspace id), without
// waiting, and writes the caller's pid into it. When another launcher holds
// it, the error is a *LockedError.
func Lock(runtimeDir string) (*SessionLock, error) {
	path := filepath.Join(runtimeDir, LockFile)
	f, err := statefile.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("session lock: %w", err)
	}
	pid, held, err := tryLock(f, true)
	if err != nil || held {
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("session lock: %w", err)
		}
		return nil, &LockedError{Workspace: filepath.Base(runtimeDir), Pid: pid}
	}
	// Write the pid, then cut what is left of a longer one: a reader sees
	// the old pid, or the new one, or the new one followed by debris after
	// its newline, never a blend.
	b := strconv.AppendInt(nil, int64(os.Getpid()), 10)
	b = append(b, '\n')
	if _, err := f.WriteAt(b, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("session lock: %w", err)
	}
	if err := f.Truncate(int64(len(b))); err != nil {
		f.Close()
		return nil, fmt.Errorf("session lock: %w", err)
	}
	l := &SessionLock{f: f, stop: make(chan struct{}), done: make(chan struct{})}
	go l.touch(path)
	return l, nil
}

// Unlock releases the lock and clears the pid it holds. Call it once, after
// everything the session started has ended.
func (l *SessionLock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	close(l.stop)
	<-l.done
	terr := l.f.Truncate(0)
	cerr := l.f.Close() // releases the flock
	l.f = nil
	if cerr != nil {
		return fmt.Errorf("session lock: %w", cerr)
	}
	if terr != nil {
		return fmt.Errorf("session lock: %w", terr)
	}
	return nil
}

// Holder reports whether a launcher holds the lock in runtimeDir, and its
// pid (0 when it could not be read). It tests the lock with a shared lock
// that it drops at once: two callers of Holder never disturb each other, and
// a launcher starting at that instant retries rather than fail (see
// tryLock).
func Holder(runtimeDir string) (pid int, running bool) {
	f, err := statefile.Open(filepath.Join(runtimeDir, LockFile))
	if err != nil {
		// No lock file: no launcher ever ran here. Anything else in its
		// place no launcher can lock: launch says why.
		return 0, false
	}
	defer f.Close() // drops the shared lock, if we took it
	pid, held, err := tryLock(f, false)
	if err != nil {
		return 0, false
	}
	return pid, held
}

// How long a lock attempt keeps trying when the lock is held but its pid is
// missing or dead. That is the case for an instant after another launcher
// locks and before it writes its pid, and while a Holder probe holds its
// shared lock: waiting a little turns both into a clear answer.
const (
	lockRetries    = 20
	lockRetryDelay = 10 * time.Millisecond
)

// tryLock takes the lock of f without blocking: exclusive, or shared. When
// another holds it, it returns held and the holder's pid, read from f.
func tryLock(f *os.File, exclusive bool) (pid int, held bool, err error) {
	for attempt := 0; ; attempt++ {
		err := lockNB(f, exclusive)
		if err == nil {
			return 0, false, nil
		}
		if !errors.Is(err, errLocked) {
			return 0, false, &os.PathError{Op: "lock", Path: f.Name(), Err: err}
		}
		pid = readLockPid(f)
		if (pid > 0 && alive(pid)) || attempt == lockRetries {
			return pid, true, nil
		}
		time.Sleep(lockRetryDelay)
	}
}

// readLockPid reads the pid on the first line of a lock file, or 0.
func readLockPid(f *os.File) int {
	var b [32]byte
	n, _ := f.ReadAt(b[:], 0)
	line, _, ok := bytes.Cut(b[:n], []byte{'\n'})
	if !ok {
		return 0
	}
	pid, err := strconv.Atoi(string(line))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
