package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// serverLogPath returns the log of server in a workspace's state dir, or
// an error that names the servers that have one.
func serverLogPath(stateDir, server string) (string, error) {
	path := filepath.Join(stateDir, server+".log")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	matches, _ := filepath.Glob(filepath.Join(stateDir, "*.log"))
	var names []string
	for _, m := range matches {
		if n := strings.TrimSuffix(filepath.Base(m), ".log"); n != "launcher" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		return "", fmt.Errorf("no server logs in %s: has the workspace been launched?", stateDir)
	}
	return "", fmt.Errorf("no log for server %q in %s; there are logs for: %s", server, stateDir, strings.Join(names, ", "))
}

// followPoll is how often a followed log is checked for more.
const followPoll = 200 * time.Millisecond

// tailFile copies path to w; with follow, it keeps copying what is
// appended, reopening the file when it is rotated (replaced or truncated),
// until SIGINT or SIGTERM.
func tailFile(ctx context.Context, w io.Writer, path string, follow bool) error {
	f, err := openLog(path)
	if err != nil {
		return err
	}
	defer func() { f.Close() }()
	if _, err := io.Copy(w, f); err != nil || !follow {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if _, err := io.Copy(w, f); err != nil {
			return err
		}
		if rotated(f, path) {
			nf, err := openLog(path)
			if errors.Is(err, os.ErrNotExist) {
				continue // between the rename and the new file
			}
			if err != nil {
				return err
			}
			_, _ = io.Copy(w, f) // what was written before the switch
			f.Close()
			f = nf
		}
	}
}

// rotated reports whether path is no longer the file f reads, or was
// truncated under it.
func rotated(f *os.File, path string) bool {
	cur, err1 := f.Stat()
	now, err2 := os.Stat(path)
	if err1 != nil || err2 != nil {
		return err2 == nil
	}
	if !os.SameFile(cur, now) {
		return true
	}
	pos, err := f.Seek(0, io.SeekCurrent)
	if err == nil && now.Size() < pos {
		_, _ = f.Seek(0, io.SeekStart) // truncated: start over
	}
	return false
}
