package launcher

import (
	"io"
	"path/filepath"
	"sync"

	"github.com/mcpgen/mcpgen/launcher/internal/logfile"
)

// This file is the session's logs in the state dir: each server's stderr
// (NAME.log), and the launcher's own (launcher.log).

// serverLogs are the servers' stderr logs in the state dir, each opened
// once per session.
type serverLogs struct {
	dir   string // the state dir; set by Run, before any server exists
	mu    sync.Mutex
	files map[string]*logfile.File // guarded by mu
}

// file returns the server's stderr log, opened once per session.
func (l *serverLogs) file(name string) (*logfile.File, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f := l.files[name]; f != nil {
		return f, nil
	}
	f, err := logfile.Open(l.path(name), logfile.DefaultMaxBytes, logfile.DefaultKeep)
	if err != nil {
		return nil, err
	}
	l.files[name] = f
	return f, nil
}

// close closes the logs, once every server has stopped.
func (l *serverLogs) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.files {
		f.Close()
	}
}

// SessionLog opens the launcher's own log in the workspace's state dir,
// launcher.log, capped and rotated as the servers' logs are: where a launch
// writes its events when its terminal belongs to a live table or an agent.
func SessionLog(workspace string) (io.WriteCloser, error) {
	dir, err := StateDir(workspace)
	if err != nil {
		return nil, err
	}
	return logfile.Open(filepath.Join(dir, "launcher.log"), logfile.DefaultMaxBytes, logfile.DefaultKeep)
}

// path is where a server's stderr goes.
func (l *serverLogs) path(name string) string {
	return filepath.Join(l.dir, name+".log")
}
