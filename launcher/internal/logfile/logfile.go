// Package logfile keeps logs capped in size and rotated: the stderr of each
// server of a workspace session, and the launcher's own log.
package logfile

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// Defaults for a server's log: what a chatty server writes in a long
// session fits, and the disk use of a workspace stays bounded.
const (
	DefaultMaxBytes = 10 << 20
	DefaultKeep     = 3
)

// pipeDrain is how long Close lets its pipes drain before it stops reading
// them: long enough for what an exited server left in the pipe, short
// enough that a process that escaped its group and holds the pipe open does
// not hold up the launcher's exit.
const pipeDrain = time.Second

// A File is a log capped in size: it appends to a file (mode 0600) and,
// when a write would take the file past its cap, moves it to path.1 (and
// path.1 to path.2, and so on up to path.KEEP, dropping the oldest) and
// goes on in a fresh file. A write is never split between two files, so a
// file passes the cap only when a single write does. It is safe for
// concurrent use.
//
// A server's stderr should reach it through Pipe, not by handing the
// File itself to exec (see Pipe).
type File struct {
	path  string
	max   int64
	keep  int
	drain time.Duration // how long Close lets pipes drain

	mu      sync.Mutex
	f       *os.File // nil once closed
	size    int64
	midLine bool                  // the last byte written was not a newline
	closing bool                  // Close has begun: no new pipes
	pipes   map[*os.File]struct{} // read ends being copied
	copiers sync.WaitGroup        // one per pipe
}

// Open opens the log at path, appending to what it holds, with a cap of
// maxBytes per file and keep rotated files.
func Open(path string, maxBytes int64, keep int) (*File, error) {
	if maxBytes <= 0 || keep < 0 {
		return nil, fmt.Errorf("log %s: cap %d bytes, keep %d: want a positive cap and keep >= 0", path, maxBytes, keep)
	}
	f, err := openLogFile(path)
	if err != nil {
		return nil, err
	}
	l := &File{path: path, max: maxBytes, keep: keep, drain: pipeDrain, f: f, pipes: map[*os.File]struct{}{}}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if l.size = fi.Size(); l.size > 0 {
		// A launcher that died may have left half a line.
		var last [1]byte
		if _, err := f.ReadAt(last[:], l.size-1); err == nil {
			l.midLine = last[0] != '\n'
		}
	}
	return l, nil
}

func openLogFile(path string) (*os.File, error) {
	f, err := openAppend(path)
	if err != nil {
		return nil, err
	}
	// A log may hold what a server prints about its secrets: an existing
	// file is made private too.
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Write appends p to the log, first rotating the file when p would take it
// past the cap. When the rotation fails, nothing is written: the cap holds,
// and the error says why.
func (l *File) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.write(p)
}

func (l *File) write(p []byte) (int, error) {
	if l.f == nil {
		return 0, &os.PathError{Op: "write", Path: l.path, Err: os.ErrClosed}
	}
	if len(p) == 0 {
		return 0, nil
	}
	if l.size > 0 && l.size+int64(len(p)) > l.max {
		if err := l.rotate(); err != nil {
			return 0, err
		}
	}
	n, err := l.f.Write(p)
	l.size += int64(n)
	if n > 0 {
		l.midLine = p[n-1] != '\n'
	}
	return n, err
}

// rotate shifts path.N to path.N+1 for N from keep-1 down to 1, path to
// path.1, and opens a fresh path. Renaming leaves the open file valid, so a
// failure before the new file opens leaves the log writable.
func (l *File) rotate() error {
	if l.keep == 0 {
		if err := os.Remove(l.path); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("rotate log: %w", err)
		}
	} else {
		for n := l.keep - 1; n >= 1; n-- {
			err := os.Rename(l.rotated(n), l.rotated(n+1))
			if err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("rotate log: %w", err)
			}
		}
		if err := os.Rename(l.path, l.rotated(1)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("rotate log: %w", err)
		}
	}
	f, err := openLogFile(l.path)
	if err != nil {
		return fmt.Errorf("rotate log: %w", err)
	}
	l.f.Close()
	l.f, l.size, l.midLine = f, 0, false
	return nil
}

func (l *File) rotated(n int) string { return l.path + "." + strconv.Itoa(n) }

// logTime is how the launcher's own lines are stamped: local time to the
// millisecond, with the offset, so that they sort and read unambiguously.
const logTime = "2006-01-02T15:04:05.000Z07:00"

// Logf writes a line of the launcher's own, stamped with the time and
// marked "mcpgen:" to tell it from what the server writes. It starts on a
// line of its own even when the server left half a line. A line that cannot
// be written is dropped: the log is where its error would have gone.
func (l *File) Logf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.mu.Lock()
	defer l.mu.Unlock()
	var b []byte
	if l.midLine {
		b = append(b, '\n')
	}
	b = time.Now().AppendFormat(b, logTime)
	b = append(b, " mcpgen: "...)
	b = append(b, msg...)
	if len(msg) == 0 || msg[len(msg)-1] != '\n' {
		b = append(b, '\n')
	}
	_, _ = l.write(b)
}

// Pipe returns the write end of a pipe whose read end the log copies from,
// for a child's stderr. exec hands an *os.File to the child as it is, where
// any other io.Writer costs a copying goroutine that Wait must wait for, and
// a grandchild that keeps stderr open then holds up Wait.
//
// The caller passes the file to exec and closes its own copy once the child
// has started (or failed to), or the copy never ends. The copying goroutine
// belongs to the File: it ends when every write end is closed (the
// caller's, the child's and those of whatever the child started), or when
// Close has let it drain for a moment. It keeps reading when the log
// cannot be written, so that a child never blocks on a full pipe.
func (l *File) Pipe() (*os.File, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil || l.closing {
		return nil, &os.PathError{Op: "pipe", Path: l.path, Err: os.ErrClosed}
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("log %s: %w", l.path, err)
	}
	l.pipes[r] = struct{}{}
	l.copiers.Add(1)
	go l.copy(r)
	return w, nil
}

func (l *File) copy(r *os.File) {
	defer l.copiers.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			_, _ = l.Write(buf[:n]) // dropped when the log fails; the pipe drains on
		}
		if err != nil { // EOF, or the deadline Close set
			break
		}
	}
	l.mu.Lock()
	delete(l.pipes, r)
	l.mu.Unlock()
	r.Close()
}

// Close lets the pipes drain (until every writer has closed them, or for a
// moment at most), then closes the file. Call it once the processes that
// write to the log have ended; what a pipe still holds after the moment is
// lost.
func (l *File) Close() error {
	l.mu.Lock()
	if l.f == nil || l.closing {
		l.mu.Unlock()
		return nil
	}
	l.closing = true
	deadline := time.Now().Add(l.drain)
	for r := range l.pipes {
		// Read then fails with ErrDeadlineExceeded, and the copy ends.
		_ = r.SetReadDeadline(deadline)
	}
	l.mu.Unlock()

	l.copiers.Wait()

	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.f.Close()
	l.f = nil
	return err
}
