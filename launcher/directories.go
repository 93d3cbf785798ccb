package launcher

import "github.com/mcpgen/mcpgen/launcher/internal/dirs"

// A workspace's directories and its session lock are internal/dirs's,
// where the control socket's client (ctl) finds them too; these are the
// ones mcpgen's commands make.

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
