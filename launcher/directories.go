package launcher

import "github.com/mcpgen/mcpgen/launcher/internal/dirs"

// A workspace's directories and its session lock are internal/dirs's,
// where the control socket's client finds them too; these are the ones
// mcpgen's commands use.

// RuntimeDir returns the directory of a workspace's live session (its
// lock, its sockets, the record of what it contains), made private to the
// user if need be: $MCPGEN_RUNTIME_DIR/ID, else the platform's default
// (see dirs.RuntimeDir). A directory that others could enter is refused,
// not repaired.
func RuntimeDir(workspace string) (string, error) { return dirs.RuntimeDir(workspace) }

// StateDir returns the directory where a workspace keeps what outlives a
// session (its logs, its catalogs), made if need be: $MCPGEN_STATE_DIR/ID,
// else the platform's default (see dirs.StateDir).
func StateDir(workspace string) (string, error) { return dirs.StateDir(workspace) }

// StateDirPath is where StateDir(name) is, made or not: for what is kept
// beside the workspaces' state dirs under a name that is no workspace id.
func StateDirPath(name string) (string, error) { return dirs.StateDirPath(name) }

// FindStateDir returns the state dir of a workspace that has one, without
// creating anything; when it has none (it was never launched), the error
// is a *NeverLaunchedError.
func FindStateDir(workspace string) (string, error) { return dirs.FindStateDir(workspace) }

// A NeverLaunchedError is a workspace that has no state dir: no launcher
// ever ran for it (with these settings).
type NeverLaunchedError = dirs.NeverLaunchedError

// Holder reports whether a launcher holds the lock in runtimeDir, and its
// pid (0 when it could not be read), without disturbing a launcher that
// takes it at that instant.
func Holder(runtimeDir string) (pid int, running bool) { return dirs.Holder(runtimeDir) }
