package launcher

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Environment variables that move mcpgen's directories, for a system whose
// defaults do not suit (a runtime dir whose path is too long for a unix
// socket, say).
const (
	envRuntimeDir = "MCPGEN_RUNTIME_DIR"
	envStateDir   = "MCPGEN_STATE_DIR"
)

// RuntimeDir returns the directory of a workspace's live session: its lock,
// its sockets and its record of process groups. It is
// $MCPGEN_RUNTIME_DIR/ID, else $XDG_RUNTIME_DIR/mcpgen/ID, else
// mcpgen-UID/ID under the temp dir, created as needed with mode 0700.
//
// Anyone who can write to the directory can plant a socket that agents then
// talk to, so the directories mcpgen manages (ID, and mcpgen or mcpgen-UID
// above it) must be real directories owned by the user with no access for
// group or others; anything else is refused rather than repaired, because
// on a shared /tmp it may be another user's doing. The base directory
// ($MCPGEN_RUNTIME_DIR, $XDG_RUNTIME_DIR, the temp dir) is the user's or the
// system's choice, and trusted as it is.
func RuntimeDir(workspace string) (string, error) {
	if err := checkDirName(workspace); err != nil {
		return "", err
	}
	base, managed, err := runtimeRoot()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", fmt.Errorf("runtime dir: %w", err)
	}
	dir := base
	for _, name := range append(managed, workspace) {
		dir = filepath.Join(dir, name)
		if err := privateDir(dir, os.Getuid()); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// runtimeRoot returns the base of the runtime dirs (see RuntimeDir) and the
// directories mcpgen manages between it and a workspace's runtime dir,
// without creating anything.
func runtimeRoot() (base string, managed []string, err error) {
	if v := os.Getenv(envRuntimeDir); v != "" {
		if !filepath.IsAbs(v) {
			return "", nil, fmt.Errorf("%s=%q: not an absolute path: set it to one", envRuntimeDir, v)
		}
		return filepath.Clean(v), nil, nil
	}
	if v := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(v) {
		// The XDG spec has relative paths ignored, and so they are.
		return filepath.Clean(v), []string{"mcpgen"}, nil
	}
	return filepath.Clean(os.TempDir()), []string{"mcpgen-" + strconv.Itoa(os.Getuid())}, nil
}

// sessionsDir returns the directory that holds the runtime dir of every
// workspace, checked as RuntimeDir checks it, without creating anything:
// exists is false when it does not exist (no launcher ever ran).
func sessionsDir() (dir string, exists bool, err error) {
	base, managed, err := runtimeRoot()
	if err != nil {
		return "", false, err
	}
	return findPrivate(base, managed)
}

// findRuntimeDir returns the runtime dir of a workspace without creating
// anything: exists is false when it does not exist (the workspace was never
// launched). What exists is checked as RuntimeDir checks it.
func findRuntimeDir(workspace string) (dir string, exists bool, err error) {
	if err := checkDirName(workspace); err != nil {
		return "", false, err
	}
	base, managed, err := runtimeRoot()
	if err != nil {
		return "", false, err
	}
	return findPrivate(base, append(managed, workspace))
}

// findPrivate checks base/managed[0]/managed[1]/... one by one as
// privateDir does, stopping at the first that does not exist.
func findPrivate(base string, managed []string) (dir string, exists bool, err error) {
	dir = base
	for _, name := range managed {
		dir = filepath.Join(dir, name)
		if err := checkPrivate(dir, os.Getuid()); errors.Is(err, fs.ErrNotExist) {
			return dir, false, nil
		} else if err != nil {
			return dir, false, err
		}
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return dir, false, nil // the base itself
	}
	return dir, true, nil
}

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
	const fix = "set " + envRuntimeDir + " to a directory of your own"
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

// StateDir returns the directory where a workspace keeps what outlives a
// session (its logs): $MCPGEN_STATE_DIR/ID, else $XDG_STATE_HOME/mcpgen/ID,
// else ~/.local/state/mcpgen/ID. Missing directories are created with mode
// 0700; existing ones are used as they are, since they sit in the user's
// home, where other users cannot plant anything, and every file mcpgen puts
// there is 0600.
func StateDir(workspace string) (string, error) {
	dir, err := stateDirPath(workspace)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("state dir: %w", err)
	}
	return dir, nil
}

// FindStateDir returns the state dir of a workspace that has one, without
// creating anything; when it has none (it was never launched), the error
// is a *NeverLaunchedError.
func FindStateDir(workspace string) (string, error) {
	dir, err := stateDirPath(workspace)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", &NeverLaunchedError{Workspace: workspace, Dir: dir}
	case err != nil:
		return "", fmt.Errorf("state dir: %w", err)
	case !fi.IsDir():
		return "", fmt.Errorf("state dir %s: not a directory: remove it, or set %s", dir, envStateDir)
	}
	return dir, nil
}

// A NeverLaunchedError is a workspace that has no state dir: no launcher
// ever ran for it (with these settings).
type NeverLaunchedError struct{ Workspace, Dir string }

func (e *NeverLaunchedError) Error() string {
	return fmt.Sprintf("workspace %q has never been launched here (no %s): check the id with mcpgen ps, or start it with mcpgen launch --workspace %s", e.Workspace, e.Dir, e.Workspace)
}

// stateDirPath is where StateDir is, made or not.
func stateDirPath(workspace string) (string, error) {
	if err := checkDirName(workspace); err != nil {
		return "", err
	}
	if v := os.Getenv(envStateDir); v != "" {
		if !filepath.IsAbs(v) {
			return "", fmt.Errorf("%s=%q: not an absolute path: set it to one", envStateDir, v)
		}
		return filepath.Join(v, workspace), nil
	}
	if v := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(v) {
		return filepath.Join(v, "mcpgen", workspace), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("state dir: %v: set %s", err, envStateDir)
	}
	return filepath.Join(home, ".local", "state", "mcpgen", workspace), nil
}

// checkDirName refuses a workspace id that could name anything but one
// directory. manifest.CheckWorkspaceID has checked it already; this is the
// last line before the id becomes a path.
func checkDirName(id string) error {
	if id == "" || id == "." || strings.Contains(id, "..") || strings.ContainsAny(id, "/\x00") {
		return fmt.Errorf("workspace id %q cannot name a directory: use letters, digits, '.', '_' or '-', without \"..\"", id)
	}
	return nil
}

// maxSocketPath is the longest path a unix socket can be bound to on Linux:
// sun_path holds 108 bytes, and the last one must be the terminating NUL.
const maxSocketPath = 107

// socketPath returns the path of the unix socket called name (a server's
// name, say) in a runtime dir: runtimeDir/name.sock. Server names never
// hold a '.', so a socket of the launcher's own whose name holds one can
// never clash with a server's. A path too long to bind is an
// error now, rather than a puzzling EINVAL at listen time.
func socketPath(runtimeDir, name string) (string, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return "", fmt.Errorf("socket name %q cannot name a file in %s", name, runtimeDir)
	}
	p := filepath.Join(runtimeDir, name+".sock")
	if len(p) > maxSocketPath {
		return "", fmt.Errorf("%s: %d bytes, but a unix socket path is limited to %d: set %s to a shorter directory", p, len(p), maxSocketPath, envRuntimeDir)
	}
	return p, nil
}
