package dirs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Environment variables that move mcpgen's directories, for a system whose
// defaults do not suit (a runtime dir whose path is too long for a unix
// socket, say).
const (
	EnvRuntimeDir = "MCPGEN_RUNTIME_DIR"
	EnvStateDir   = "MCPGEN_STATE_DIR"
)

// RuntimeDir returns the directory of a workspace's live session: its lock,
// its sockets and the record of what it contains. It is
// $MCPGEN_RUNTIME_DIR/ID, else the platform's default (dirs.go): on Linux
// $XDG_RUNTIME_DIR/mcpgen/ID, else mcpgen-UID/ID under the temp dir; on
// macOS the same, with /tmp for the temp dir; on Windows
// %LOCALAPPDATA%\mcpgen\run\ID. Directories are created as needed, private
// to the user (mode 0700; on Windows, a protected ACL that grants only the
// user).
//
// Anyone who can write to the directory can plant a socket that agents then
// talk to, so the directories mcpgen manages (ID, and those it makes above
// it) must be real directories owned by the user that no one else can
// enter; anything else is refused rather than repaired, because on a
// shared /tmp it may be another user's doing. The base directory
// ($MCPGEN_RUNTIME_DIR, $XDG_RUNTIME_DIR, the temp dir) is the user's or the
// system's choice, and trusted as it is.
func RuntimeDir(workspace string) (string, error) {
	if err := CheckName(workspace); err != nil {
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
		if err := makePrivateDir(dir); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// runtimeRoot returns the base of the runtime dirs (see RuntimeDir) and the
// directories mcpgen manages between it and a workspace's runtime dir,
// without creating anything.
func runtimeRoot() (base string, managed []string, err error) {
	if v := os.Getenv(EnvRuntimeDir); v != "" {
		if !filepath.IsAbs(v) {
			return "", nil, fmt.Errorf("%s=%q: not an absolute path: set it to one", EnvRuntimeDir, v)
		}
		return filepath.Clean(v), nil, nil
	}
	base, managed, err = hostDirs.runtime(hostDirEnv())
	if err != nil {
		return "", nil, err
	}
	return filepath.Clean(base), managed, nil
}

// hostDirEnv is this process's dirEnv.
func hostDirEnv() dirEnv {
	return dirEnv{getenv: os.Getenv, home: os.UserHomeDir, uid: os.Getuid(), tempDir: os.TempDir()}
}

// SessionsDir returns the directory that holds the runtime dir of every
// workspace, checked as RuntimeDir checks it, without creating anything:
// exists is false when it does not exist (no launcher ever ran).
func SessionsDir() (dir string, exists bool, err error) {
	base, managed, err := runtimeRoot()
	if err != nil {
		return "", false, err
	}
	return findPrivate(base, managed)
}

// FindRuntimeDir returns the runtime dir of a workspace without creating
// anything: exists is false when it does not exist (the workspace was never
// launched). What exists is checked as RuntimeDir checks it.
func FindRuntimeDir(workspace string) (dir string, exists bool, err error) {
	if err := CheckName(workspace); err != nil {
		return "", false, err
	}
	base, managed, err := runtimeRoot()
	if err != nil {
		return "", false, err
	}
	return findPrivate(base, append(managed, workspace))
}

// findPrivate checks base/managed[0]/managed[1]/... one by one as
// makePrivateDir does, stopping at the first that does not exist.
func findPrivate(base string, managed []string) (dir string, exists bool, err error) {
	dir = base
	for _, name := range managed {
		dir = filepath.Join(dir, name)
		if err := CheckPrivateDir(dir); errors.Is(err, fs.ErrNotExist) {
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

// StateDir returns the directory where a workspace keeps what outlives a
// session (its logs): $MCPGEN_STATE_DIR/ID, else the platform's default
// (dirs.go): on Linux $XDG_STATE_HOME/mcpgen/ID, else
// ~/.local/state/mcpgen/ID; on macOS $XDG_STATE_HOME/mcpgen/ID, else
// ~/Library/Logs/mcpgen/ID; on Windows %LOCALAPPDATA%\mcpgen\logs\ID.
// Missing directories are created with mode 0700; existing ones are used as
// they are, since they sit in the user's home, where other users cannot
// plant anything, and every file mcpgen puts there is 0600.
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
		return "", fmt.Errorf("state dir %s: not a directory: remove it, or set %s", dir, EnvStateDir)
	}
	return dir, nil
}

// A NeverLaunchedError is a workspace that has no state dir: no launcher
// ever ran for it (with these settings).
type NeverLaunchedError struct{ Workspace, Dir string }

func (e *NeverLaunchedError) Error() string {
	return fmt.Sprintf("workspace %q has never been launched here (no %s): check the id with mcpgen ps, or start it with mcpgen launch --workspace %s", e.Workspace, e.Dir, e.Workspace)
}

// StateDirPath is where StateDir(name) is, made or not: for what is kept
// beside the workspaces' state dirs under a name that is no workspace id.
func StateDirPath(name string) (string, error) { return stateDirPath(name) }

// stateDirPath is where StateDir is, made or not.
func stateDirPath(workspace string) (string, error) {
	if err := CheckName(workspace); err != nil {
		return "", err
	}
	if v := os.Getenv(EnvStateDir); v != "" {
		if !filepath.IsAbs(v) {
			return "", fmt.Errorf("%s=%q: not an absolute path: set it to one", EnvStateDir, v)
		}
		return filepath.Join(v, workspace), nil
	}
	return hostDirs.state(hostDirEnv(), workspace)
}

// CheckName refuses a workspace id that could name anything but one
// directory. manifest.CheckWorkspaceID has checked it already; this is the
// last line before the id becomes a path.
func CheckName(id string) error {
	if id == "" || id == "." || strings.Contains(id, "..") || strings.ContainsAny(id, "/\\:\x00") {
		return fmt.Errorf("workspace id %q cannot name a directory: use letters, digits, '.', '_' or '-', without \"..\"", id)
	}
	return nil
}

// ControlSocket is the name of a session's control socket in its runtime
// dir (see SocketPath).
const ControlSocket = "control"

// SocketPath returns the path of the unix socket called name (a server's
// name, say) in a runtime dir: runtimeDir/name.sock. Server names never
// hold a '.', so a socket of the launcher's own whose name holds one can
// never clash with a server's. A path too long to bind is an
// error now, rather than a puzzling EINVAL at listen time.
func SocketPath(runtimeDir, name string) (string, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\:\x00") {
		return "", fmt.Errorf("socket name %q cannot name a file in %s", name, runtimeDir)
	}
	p := filepath.Join(runtimeDir, name+".sock")
	if max := hostDirs.maxSocketPath; len(p) > max {
		return "", fmt.Errorf("%s: %d bytes, but a unix socket path is limited to %d here: set %s to a shorter directory", p, len(p), max, EnvRuntimeDir)
	}
	return p, nil
}
