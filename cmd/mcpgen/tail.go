package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mcpgen/mcpgen/internal/statefile"
	"github.com/mcpgen/mcpgen/internal/termtext"
	"github.com/mcpgen/mcpgen/launcher/ctl"
)

// serverLogPath returns the log of server among a workspace's logs, or an
// error that names the servers that have one.
func serverLogPath(logs map[string]string, stateDir, server string) (string, error) {
	if path, ok := logs[server]; ok {
		return path, nil
	}
	names := slices.Sorted(maps.Keys(logs))
	if len(names) == 0 {
		return "", fmt.Errorf("no server logs in %s: has the workspace been launched?", stateDir)
	}
	return "", fmt.Errorf("no log for server %q in %s; there are logs for: %s", server, stateDir, strings.Join(names, ", "))
}

// followPoll is how often a followed log is checked for more.
const followPoll = 200 * time.Millisecond

// tailFile copies path to w, its control characters escaped unless raw;
// with follow, it keeps copying what is appended, reopening the file when
// it is rotated (replaced or truncated), until SIGINT or SIGTERM.
func tailFile(ctx context.Context, w io.Writer, path string, follow, raw bool) (err error) {
	f, err := statefile.Open(path)
	if err != nil {
		return err
	}
	defer func() { f.Close() }()
	if !raw {
		tw := termtext.NewWriter(w)
		defer func() {
			if ferr := tw.Flush(); err == nil {
				err = ferr
			}
		}()
		w = tw
	}
	if _, err := io.Copy(w, f); err != nil || !follow {
		return err
	}
	return followEvery(ctx, func() error {
		if _, err := io.Copy(w, f); err != nil {
			return err
		}
		if rotated(f, path) {
			nf, err := statefile.Open(path)
			if errors.Is(err, os.ErrNotExist) {
				return nil // between the rename and the new file
			}
			if err != nil {
				return err
			}
			_, _ = io.Copy(w, f) // what was written before the switch
			f.Close()
			f = nf
		}
		return nil
	})
}

// followEvery calls step every followPoll until ctx ends, or SIGINT or
// SIGTERM comes (the way out of logs -f: a clean exit), or step fails.
func followEvery(ctx context.Context, step func() error) error {
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
		if err := step(); err != nil {
			return err
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

// A logSource is one server's log being read line by line, for the
// merged logs of every server.
type logSource struct {
	name, path string
	f          *os.File
	r          *bufio.Reader
	partial    []byte    // the start of a line whose end has not been written yet
	last       time.Time // the time of the last stamped line: for lines without one
	head       []byte    // the next line, when peeked
	headAt     time.Time
	hasHead    bool
}

// maxLogRead bounds a line read from a log: the launcher writes none
// longer than ctl.MaxLogLine, but a log may be older, or edited.
const maxLogRead = 4 * ctl.MaxLogLine

func openLogSource(name, path string) (*logSource, error) {
	f, err := statefile.Open(path)
	if err != nil {
		return nil, err
	}
	return &logSource{name: name, path: path, f: f, r: bufio.NewReaderSize(f, maxLogRead)}, nil
}

// peek reads the next whole line, if the file has one now. A line cut
// short by the end of the file waits for its end (flush, at the end of
// reading, takes it as it is).
func (s *logSource) peek() bool {
	for !s.hasHead {
		chunk, err := s.r.ReadSlice('\n')
		if len(chunk) > 0 {
			s.partial = append(s.partial, chunk...)
		}
		full := errors.Is(err, bufio.ErrBufferFull) || len(s.partial) >= maxLogRead
		if err != nil && !full {
			return false // the end of the file, for now
		}
		line := bytes.TrimSuffix(s.partial, []byte{'\n'})
		s.take(append([]byte(nil), line...))
		s.partial = s.partial[:0]
	}
	return true
}

// take makes line the head, with its time.
func (s *logSource) take(line []byte) {
	if t, ok := ctl.LogLineTime(line); ok {
		s.last = t
	}
	s.head, s.headAt, s.hasHead = line, s.last, true
}

// flush makes what is left of a line cut short the head.
func (s *logSource) flush() bool {
	if s.hasHead {
		return true
	}
	if len(s.partial) == 0 {
		return false
	}
	s.take(append([]byte(nil), s.partial...))
	s.partial = s.partial[:0]
	return true
}

// reopen switches to a new file when the log was rotated under it; what
// the old file held to its end is read first.
func (s *logSource) reopen() error {
	if !rotated(s.f, s.path) {
		return nil
	}
	nf, err := statefile.Open(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil // between the rename and the new file
	}
	if err != nil {
		return err
	}
	// The old file is read to its end; a line it left unfinished will not
	// go on in the new one.
	if !s.hasHead && len(s.partial) > 0 {
		s.flush()
	}
	s.f.Close()
	s.f = nf
	s.r.Reset(nf)
	return nil
}

func (s *logSource) close() { s.f.Close() }

// mergeLogs writes the logs of several servers as one, line by line in
// the order of their times, each prefixed with its server's name, control
// characters escaped unless raw; with follow, it goes on with what they
// write (and the logs of servers that appear: list is asked again) until
// SIGINT or SIGTERM.
func mergeLogs(ctx context.Context, w io.Writer, logs map[string]string, list func() (map[string]string, error), follow, raw bool) error {
	var sources []*logSource
	defer func() {
		for _, s := range sources {
			s.close()
		}
	}()
	add := func(logs map[string]string) error {
		for _, name := range slices.Sorted(maps.Keys(logs)) {
			if slices.ContainsFunc(sources, func(s *logSource) bool { return s.name == name }) {
				continue
			}
			s, err := openLogSource(name, logs[name])
			if errors.Is(err, os.ErrNotExist) {
				continue // rotated away just now: the next look finds it
			}
			if err != nil {
				return err
			}
			sources = append(sources, s)
		}
		return nil
	}
	if err := add(logs); err != nil {
		return err
	}
	label, text := termtext.Line, termtext.Text
	if raw {
		label = func(s string) string { return s }
		text = label
	}
	width := 0
	for _, s := range sources {
		width = max(width, len(label(s.name)))
	}
	bw := bufio.NewWriter(w)
	emit := func(atEnd bool) error {
		for {
			var next *logSource
			for _, s := range sources {
				if !s.peek() && !(atEnd && s.flush()) {
					continue
				}
				if next == nil || s.headAt.Before(next.headAt) {
					next = s
				}
			}
			if next == nil {
				return bw.Flush()
			}
			fmt.Fprintf(bw, "%-*s | %s\n", width, label(next.name), text(string(next.head)))
			next.hasHead = false
		}
	}
	if !follow {
		return emit(true)
	}
	if err := emit(false); err != nil {
		return err
	}
	return followEvery(ctx, func() error {
		if err := emit(false); err != nil {
			return err
		}
		for _, s := range sources {
			if err := s.reopen(); err != nil {
				return err
			}
		}
		if more, err := list(); err == nil {
			if err := add(more); err != nil {
				return err
			}
		}
		return nil
	})
}
