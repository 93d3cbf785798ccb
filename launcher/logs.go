package launcher

import (
	"io"
	"path/filepath"

	"github.com/mcpgen/mcpgen/launcher/internal/logfile"
)

// This file is the session's logs in the state dir: each server's stderr
// (NAME.log), and the launcher's own (launcher.log).

// serverLog returns the server's stderr log, opened once per session.
func (s *Session) serverLog(name string) (*logfile.File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.logs[name]; l != nil {
		return l, nil
	}
	l, err := logfile.Open(s.logPath(name), logfile.DefaultMaxBytes, logfile.DefaultKeep)
	if err != nil {
		return nil, err
	}
	s.logs[name] = l
	return l, nil
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

// logPath is where a server's stderr goes.
func (s *Session) logPath(name string) string {
	return filepath.Join(s.stateDir, name+".log")
}
