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
// its sockets and the record of what it contains. It is
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
	var base string
	var managed []string // created one by one under base, each checked
	if v := os.Getenv(envRuntimeDir); v != "" {
		if !filepath.IsAbs(v) {
			return "", fmt.Errorf("%s=%q: not an absolute path: set it to one", envRuntimeDir, v)
		}
		base, managed = v, []string{workspace}
	} else if v := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(v) {
		// The XDG spec has relative paths ignored, and so they are.
		base, managed = v, []string{"mcpgen", workspace}
	} else {
		base, managed = os.TempDir(), []string{"mcpgen-" + strconv.Itoa(os.Getuid()), workspace}
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", fmt.Errorf("runtime dir: %w", err)
	}
	dir := filepath.Clean(base)
	for _, name := range managed {
		dir = filepath.Join(dir, name)
		if err := privateDir(dir, os.Getuid()); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// privateDir makes dir (mode 0700) unless it exists, then checks that it is
// a directory that only uid can enter. uid is a parameter so that a test
// can play another user.
func privateDir(dir string, uid int) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("runtime dir: %w", err)
	}
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
	if err := checkDirName(workspace); err != nil {
		return "", err
	}
	var dir string
	if v := os.Getenv(envStateDir); v != "" {
		if !filepath.IsAbs(v) {
			return "", fmt.Errorf("%s=%q: not an absolute path: set it to one", envStateDir, v)
		}
		dir = filepath.Join(v, workspace)
	} else if v := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(v) {
		dir = filepath.Join(v, "mcpgen", workspace)
	} else {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("state dir: %v: set %s", err, envStateDir)
		}
		dir = filepath.Join(home, ".local", "state", "mcpgen", workspace)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("state dir: %w", err)
	}
	return dir, nil
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
