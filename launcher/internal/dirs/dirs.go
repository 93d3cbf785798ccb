// Package dirs holds where a workspace's session lives and what it
// keeps: its runtime dir (the session lock, the sockets, the record of
// what it contains), made private to the user, and its state dir (logs,
// catalogs); and the lock that makes one launcher the holder of a
// workspace. The launcher makes them; the control socket's client (ctl)
// finds them without creating anything.
package dirs

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// Where each platform keeps mcpgen's directories when MCPGEN_RUNTIME_DIR and
// MCPGEN_STATE_DIR are unset. The rules of every platform are here, as
// values, so that tests on any system can check each; dirs_<os>.go picks
// the one that applies (hostDirs). Each joins paths by its own platform's
// rules (path for Unix, joinWindows), whatever system runs it.

// dirEnv is what the default directories depend on: tests pass their own.
type dirEnv struct {
	getenv  func(string) string
	home    func() (string, error)
	uid     int    // the user's id (Unix)
	tempDir string // os.TempDir (Linux)
}

// dirRules are one platform's conventions.
type dirRules struct {
	// runtime returns the directory the runtime dirs go in, which is
	// trusted as it is (the system's or the user's choice), and the
	// directories mcpgen makes between it and a workspace's runtime dir,
	// in order, each of which must be private to the user.
	runtime func(e dirEnv) (base string, managed []string, err error)
	// state returns the workspace's state dir: where its logs go.
	state func(e dirEnv, workspace string) (string, error)
	// maxSocketPath is the longest path a unix socket can be bound to:
	// sun_path's size, less the terminating NUL.
	maxSocketPath int
}

// absEnv returns the variable's value when it is an absolute path: the XDG
// spec has relative paths ignored, and so they are.
func (e dirEnv) absEnv(name string) (string, bool) {
	v := e.getenv(name)
	return v, v != "" && path.IsAbs(v)
}

func (e dirEnv) homeDir(what string) (string, error) {
	home, err := e.home()
	if err == nil && home == "" {
		err = errors.New("no home directory")
	}
	if err != nil {
		return "", fmt.Errorf("%s: %v: set %s", what, err, envFor(what))
	}
	return home, nil
}

func envFor(what string) string {
	if what == "state dir" {
		return EnvStateDir
	}
	return EnvRuntimeDir
}

// linuxDirs follow the XDG base directory spec: the runtime dir in
// $XDG_RUNTIME_DIR (a tmpfs of the user's, emptied at logout), else in a
// per-user directory of the temp dir; the state dir in $XDG_STATE_HOME,
// else ~/.local/state.
var linuxDirs = dirRules{
	runtime: func(e dirEnv) (string, []string, error) {
		if v, ok := e.absEnv("XDG_RUNTIME_DIR"); ok {
			return v, []string{"mcpgen"}, nil
		}
		return e.tempDir, []string{"mcpgen-" + strconv.Itoa(e.uid)}, nil
	},
	state: func(e dirEnv, ws string) (string, error) {
		if v, ok := e.absEnv("XDG_STATE_HOME"); ok {
			return path.Join(v, "mcpgen", ws), nil
		}
		home, err := e.homeDir("state dir")
		if err != nil {
			return "", err
		}
		return path.Join(home, ".local", "state", "mcpgen", ws), nil
	},
	maxSocketPath: 107, // sun_path holds 108 bytes
}

// darwinDirs honour the XDG variables when they are set, as Linux does,
// and otherwise follow macOS:
//
//   - the runtime dir is /tmp/mcpgen-UID, not $TMPDIR. $TMPDIR
//     (/var/folders/xx/…/T/, per user) is 49 bytes long, which with a
//     64-character workspace id and "control.sock" overflows sun_path's
//     104 bytes; and it is unset in ssh sessions and some daemons, so two
//     processes of one user could disagree on the socket, and start two
//     launchers. /tmp is shared, like Linux's, and the same checks
//     (owner, mode 0700, no symbolic link) guard it.
//   - the state dir, which holds logs only, is ~/Library/Logs/mcpgen, where
//     Console.app shows them.
var darwinDirs = dirRules{
	runtime: func(e dirEnv) (string, []string, error) {
		if v, ok := e.absEnv("XDG_RUNTIME_DIR"); ok {
			return v, []string{"mcpgen"}, nil
		}
		return "/tmp", []string{"mcpgen-" + strconv.Itoa(e.uid)}, nil
	},
	state: func(e dirEnv, ws string) (string, error) {
		if v, ok := e.absEnv("XDG_STATE_HOME"); ok {
			return path.Join(v, "mcpgen", ws), nil
		}
		home, err := e.homeDir("state dir")
		if err != nil {
			return "", err
		}
		return path.Join(home, "Library", "Logs", "mcpgen", ws), nil
	},
	maxSocketPath: 103, // sun_path holds 104 bytes
}

// windowsDirs are in %LOCALAPPDATA%\mcpgen (the user's profile, which other
// users cannot enter): run\ID for the lock and the socket, logs\ID for the
// logs. XDG variables, which only Unix-like shells on Windows set, are
// not Windows' conventions and are ignored.
var windowsDirs = dirRules{
	runtime: func(e dirEnv) (string, []string, error) {
		local, err := localAppData(e, "runtime dir")
		if err != nil {
			return "", nil, err
		}
		return joinWindows(local, "mcpgen"), []string{"run"}, nil
	},
	state: func(e dirEnv, ws string) (string, error) {
		local, err := localAppData(e, "state dir")
		if err != nil {
			return "", err
		}
		return joinWindows(local, "mcpgen", "logs", ws), nil
	},
	maxSocketPath: 107, // afunix.h: UNIX_PATH_MAX is 108
}

// localAppData is %LOCALAPPDATA%, else the profile's AppData\Local.
func localAppData(e dirEnv, what string) (string, error) {
	if v := e.getenv("LOCALAPPDATA"); v != "" && isAbsWindows(v) {
		return v, nil
	}
	home, err := e.homeDir(what)
	if err != nil {
		return "", err
	}
	return joinWindows(home, "AppData", "Local"), nil
}

// isAbsWindows reports whether p is an absolute Windows path (C:\x, \\host\share),
// on any system, for the rules' tests.
func isAbsWindows(p string) bool {
	if len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') {
		return true
	}
	return len(p) >= 2 && (p[0] == '\\' || p[0] == '/') && (p[1] == '\\' || p[1] == '/')
}

// joinWindows joins path elements with backslashes.
func joinWindows(elem ...string) string {
	p := elem[0]
	for _, e := range elem[1:] {
		p = strings.TrimRight(p, `\/`) + `\` + e
	}
	return p
}
