package ctl

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpgen/mcpgen/launcher/internal/dirs"
	"github.com/mcpgen/mcpgen/launcher/internal/logfile"
)

// Logs of the launcher's own in a workspace's state dir, beside the
// servers' NAME.log: not a server's.
var ownLogs = []string{"launcher", "autostart"}

// ServerLogs returns the servers' logs in a workspace's state dir, by
// server name, without creating anything; a workspace that was never
// launched is a *NeverLaunchedError.
func ServerLogs(workspace string) (map[string]string, error) {
	dir, err := dirs.FindStateDir(workspace)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	logs := map[string]string{}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".log")
		if !ok || !e.Type().IsRegular() || name == "" || strings.Contains(name, ".") || slices.Contains(ownLogs, name) {
			continue
		}
		logs[name] = filepath.Join(dir, e.Name())
	}
	return logs, nil
}

// LogLineTime returns the time a line of a server's log was stamped with
// (see logfile.Stream and logfile.File.Mark); ok is false for a line
// without one.
func LogLineTime(line []byte) (t time.Time, ok bool) { return logfile.LineTime(line) }

// MaxLogLine is the longest line the launcher writes into a server's log.
const MaxLogLine = logfile.MaxLine

// FindStateDir returns the state dir of a workspace that has one (where
// its logs are), without creating anything; when it has none (it was never
// launched), the error is a *NeverLaunchedError.
func FindStateDir(workspace string) (string, error) { return dirs.FindStateDir(workspace) }

// A NeverLaunchedError is a workspace that has no state dir: no launcher
// ever ran for it (with these settings).
type NeverLaunchedError = dirs.NeverLaunchedError
