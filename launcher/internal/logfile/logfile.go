// Package logfile keeps logs capped in size and rotated: the stderr of each
// server of a workspace session, and the launcher's own log.
package logfile

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpgen/mcpgen/internal/statefile"
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
// A process's output should reach it through a Stream or a Pipe, which
// stamp each line with its time, not through Write, which writes bytes as
// they are; and never by handing the File itself to exec (see Pipe).
type File struct {
	path  string
	max   int64
	keep  int
	drain time.Duration // how long Close lets pipes drain

	mu      sync.Mutex
	f       *os.File // nil once closed
	size    int64
	midLine bool                  // the last byte written was not a newline
	last    *Stream               // the stream that wrote last; nil for others
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
	// To read and append, created private; never a named pipe or a link
	// put in its place, and shared with renames on Windows (rotation
	// renames the log this File holds open): see statefile.
	f, err := statefile.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
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
	l.last = nil
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
	l.f, l.size, l.midLine, l.last = f, 0, false, nil
	return nil
}

func (l *File) rotated(n int) string { return l.path + "." + strconv.Itoa(n) }

// TimeFormat is how lines are stamped: local time to the millisecond,
// with the offset, so that they sort and read unambiguously, and the logs
// of several servers can be merged by time.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// MaxLine bounds a stamped line: a longer one is cut into lines of at most
// this many bytes (each stamped), so that every line of a log can be read
// with a bounded buffer, and a server that never writes a newline still
// gets its output into the log as it comes.
const MaxLine = 16 << 10

// A Stream is one process's output going into the log: each line is
// stamped with the time its first byte arrived. A partial line is written
// at once, not held back (the process may be about to die), and finished by
// the stream's next write; when another writer wrote in between (a Mark, or
// the next process), the rest of the line starts a line of its own, with
// its own stamp. Lines are cut at MaxLine bytes.
//
// A Stream never fails: what cannot be written (the disk is full, the log
// is closed) is dropped, so that a process never blocks on a pipe that
// nobody drains.
type Stream struct {
	l       *File
	inLine  bool // the stream's last write ended mid-line
	lineLen int  // bytes of that line so far
	// held keeps what comes before Begin, so that the line Begin writes
	// comes first; it holds at most maxHeld bytes.
	held    bool
	pending []byte
	buf     []byte // what write renders, kept between writes
}

// maxHeld bounds what a held stream keeps before Begin; more is written
// at once.
const maxHeld = 64 << 10

// maxKeptBuf bounds the buffer a stream keeps for the next write: a burst
// of output does not stay in memory after it.
const maxKeptBuf = 64 << 10

// Stream returns a new stream into the log, for one process's output.
func (l *File) Stream() *Stream { return &Stream{l: l} }

// HeldStream returns a stream that holds what it is given until Begin: for
// a process whose output may come before the line that says it started,
// which needs its pid.
func (l *File) HeldStream() *Stream { return &Stream{l: l, held: true} }

// Begin writes a Mark, then what the stream held.
func (s *Stream) Begin(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	s.l.mark(msg)
	held := s.pending
	s.held, s.pending = false, nil
	s.write(held)
}

// Write stamps and appends p; it always reports all of p written.
func (s *Stream) Write(p []byte) (int, error) {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	if s.held && len(s.pending)+len(p) <= maxHeld {
		s.pending = append(s.pending, p...)
		return len(p), nil
	}
	if s.held { // too much before Begin: it goes in as it is
		s.held = false
		s.write(s.pending)
		s.pending = nil
	}
	s.write(p)
	return len(p), nil
}

// write stamps and appends p, with the log's lock held.
func (s *Stream) write(p []byte) {
	l := s.l
	if l.f == nil || len(p) == 0 {
		return
	}
	now := time.Now()
	cont := s.inLine && l.last == s
	b, inLine, lineLen := render(s.buf[:0], p, now, cont, l.midLine, s.lineLen)
	if cap(b) <= maxKeptBuf {
		s.buf = b
	}
	if l.size > 0 && l.size+int64(len(b)) > l.max {
		if err := l.rotate(); err != nil {
			return // dropped: the cap holds
		}
		if cont { // the new file must not start with the rest of a line
			b, inLine, lineLen = render(b[:0], p, now, false, false, 0)
		}
	}
	n, err := l.f.Write(b)
	l.size += int64(n)
	if n > 0 {
		l.midLine = b[n-1] != '\n'
	}
	l.last = s
	s.inLine, s.lineLen = inLine, lineLen
	if err != nil || n < len(b) {
		s.inLine, l.last = false, nil // where the line stands is unknown
	}
}

// render appends p to dst as stamped lines. cont goes on with a line begun
// before, of lineLen bytes; otherwise a line begins, on a line of its own
// when the file ends mid-line (midFile). It returns whether p ended
// mid-line, and that line's length.
func render(dst, p []byte, now time.Time, cont, midFile bool, lineLen int) ([]byte, bool, int) {
	inLine := cont
	if !cont {
		lineLen = 0
		if midFile {
			dst = append(dst, '\n')
		}
	}
	for len(p) > 0 {
		if !inLine {
			dst = now.AppendFormat(dst, TimeFormat)
			dst = append(dst, ' ')
			inLine, lineLen = true, 0
		}
		room := MaxLine - lineLen
		i := bytes.IndexByte(p, '\n')
		switch {
		case i >= 0 && i <= room: // the line ends within the bound
			dst = append(dst, p[:i+1]...)
			p = p[i+1:]
			inLine = false
		case i < 0 && len(p) <= room: // it goes on in a later write
			dst = append(dst, p...)
			lineLen += len(p)
			p = nil
		default: // cut at the bound
			dst = append(dst, p[:room]...)
			dst = append(dst, '\n')
			p = p[room:]
			inLine = false
		}
	}
	return dst, inLine, lineLen
}

// Mark writes a line of the launcher's own: "--- MSG at TIME ---", on a
// line of its own even when a process left half a line (a MSG of several
// lines becomes one). A line that cannot
// be written is dropped: the log is where its error would have gone.
func (l *File) Mark(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mark(msg)
}

func (l *File) mark(msg string) {
	// One line, bounded, so that LineTime finds its time.
	msg = strings.ReplaceAll(strings.TrimRight(msg, "\n"), "\n", "; ")
	if len(msg) > MaxLine-64 {
		msg = msg[:MaxLine-64] + "..."
	}
	var b []byte
	if l.midLine {
		b = append(b, '\n')
	}
	b = append(b, "--- "...)
	b = append(b, msg...)
	b = append(b, " at "...)
	b = time.Now().AppendFormat(b, TimeFormat)
	b = append(b, " ---\n"...)
	_, _ = l.write(b)
}

// LineTime returns the time a line of a log was stamped with: the stamp
// that starts a line of a Stream, or the time of a Mark. ok is false for a
// line without either (written before lines were stamped).
func LineTime(line []byte) (t time.Time, ok bool) {
	if len(line) > 0 && line[0] >= '0' && line[0] <= '9' {
		stamp, _, _ := bytes.Cut(line, []byte{' '})
		t, err := time.Parse(TimeFormat, string(stamp))
		return t, err == nil
	}
	line = bytes.TrimRight(line, "\r\n")
	if rest, found := bytes.CutPrefix(line, []byte("--- ")); found && bytes.HasSuffix(rest, []byte(" ---")) {
		rest = rest[:len(rest)-len(" ---")]
		if i := bytes.LastIndex(rest, []byte(" at ")); i >= 0 {
			t, err := time.Parse(TimeFormat, string(rest[i+len(" at "):]))
			return t, err == nil
		}
	}
	return time.Time{}, false
}

// Pipe returns the write end of a pipe whose read end the log copies from,
// for a child's stderr. exec hands an *os.File to the child as it is, where
// any other io.Writer costs a copying goroutine that Wait must wait for, and
// a grandchild that keeps stderr open then holds up Wait.
//
// What comes through the pipe is stamped line by line, as a Stream does.
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
	s := l.Stream() // never fails: the pipe drains on when the log cannot be written
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			_, _ = s.Write(buf[:n])
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
