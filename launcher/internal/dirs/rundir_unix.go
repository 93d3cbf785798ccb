//go:build unix

package dirs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// makePrivateDir makes dir private to this user, or checks that it is.
func makePrivateDir(dir string) error { return privateDir(dir, os.Getuid()) }

// PrivateSocket makes a socket that the launcher bound private: mode 0600,
// besides its private directory.
func PrivateSocket(path string) error { return os.Chmod(path, 0o600) }

// CheckPrivateDir checks that dir is private to this user; an error that
// wraps fs.ErrNotExist when it does not exist.
func CheckPrivateDir(dir string) error { return checkPrivate(dir, os.Getuid()) }

// privateDir makes dir (mode 0700) unless it exists, then checks that it is
// a directory that only uid can enter. uid is a parameter so that a test
// can play another user.
func privateDir(dir string, uid int) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("runtime dir: %w", err)
	}
	return checkPrivate(dir, uid)
}

// checkPrivate checks that dir is a directory that only uid can enter; an
// error that wraps fs.ErrNotExist when it does not exist.
func checkPrivate(dir string, uid int) error {
	fi, err := os.Lstat(dir) // Lstat: a symlink is refused, not followed
	if err != nil {
		return fmt.Errorf("runtime dir: %w", err)
	}
	const fix = "set " + EnvRuntimeDir + " to a directory of your own"
	switch st, _ := fi.Sys().(*syscall.Stat_t); {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s: a symbolic link, not a directory, which another user may have planted: remove it, or %s", dir, fix)
	case !fi.IsDir():
		return fmt.Errorf("%s: not a directory: remove it, or %s", dir, fix)
	case st == nil:
		return fmt.Errorf("%s: cannot tell who owns it: %s", dir, fix)
	case int(st.Uid) != uid:
		return fmt.Errorf("%s: owned by uid %d, not by you (uid %d), so another user may control what it holds: %s", dir, st.Uid, uid, fix)
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("%s: mode %04o lets other users in: run chmod 700 %s, or %s", dir, fi.Mode().Perm(), dir, fix)
	}
	return nil
}
