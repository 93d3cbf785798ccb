package mcp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"

	"github.com/mcpgen/mcpgen/internal/trywrite"
)

// MaxLineSize is the longest line a Reader accepts, not counting its line
// terminator. Tool results carry file contents, so lines can be large; the
// cap keeps a runaway peer from making us buffer without end.
const MaxLineSize = 16 << 20

// ErrLineTooLong is returned by ReadLine for a line longer than MaxLineSize,
// and matched (errors.Is) by the DecodeError that Read returns for it.
var ErrLineTooLong = fmt.Errorf("line longer than %d bytes", MaxLineSize)

// A Reader reads one message per line.
type Reader struct {
	br  *bufio.Reader
	max int
}

// NewReader returns a Reader that reads lines from r.
func NewReader(r io.Reader) *Reader { return newReader(r, MaxLineSize, 64<<10) }

// NewReaderSize returns a Reader whose read buffer holds size bytes. Lines
// of any length up to MaxLineSize are still read; a small buffer suits a
// process that holds many mostly idle connections.
func NewReaderSize(r io.Reader, size int) *Reader { return newReader(r, MaxLineSize, size) }

func newReader(r io.Reader, maxLine, bufSize int) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, bufSize), max: maxLine}
}

// ReadLine returns the next line that is not blank, without its "\n" or
// "\r\n". The line is a fresh slice that the caller owns. At the end of the
// input it returns io.EOF; a last line without a newline is returned first.
//
// A line longer than MaxLineSize returns ErrLineTooLong together with the
// line's first MaxLineSize bytes (so that the caller can find out who sent
// it, and answer). The rest of that line is discarded, never held in memory,
// and the next call reads the line after it.
func (r *Reader) ReadLine() ([]byte, error) {
	for {
		line, err := r.readLine()
		if err != nil || !blank(line) {
			return line, err
		}
	}
}

func (r *Reader) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.br.ReadSlice('\n')
		switch {
		case err == nil:
			line = r.grow(line, chunk[:len(chunk)-1])
			return r.finish(line)
		case errors.Is(err, bufio.ErrBufferFull):
			// One byte over the cap is allowed for the "\r" of "\r\n".
			if len(line)+len(chunk) > r.max+1 {
				line = r.grow(line, chunk)
				r.discardLine()
				return line[:r.max], ErrLineTooLong
			}
			line = r.grow(line, chunk)
		case err == io.EOF && len(line)+len(chunk) > 0:
			line = r.grow(line, chunk)
			return r.finish(line)
		default:
			// A read error in the middle of a line loses the line: better
			// than handing out half a message.
			return nil, err
		}
	}
}

// grow appends to line what fits under the cap (plus one byte, which tells
// an overlong line from one at the cap), doubling its capacity but never
// beyond the cap: a long line costs about twice its size in allocations.
func (r *Reader) grow(line, chunk []byte) []byte {
	limit := r.max + 2
	chunk = chunk[:min(len(chunk), limit-len(line))]
	if need := len(line) + len(chunk); need > cap(line) {
		size := max(2*cap(line), need)
		if size >= r.max {
			size = limit
		}
		grown := make([]byte, len(line), size)
		copy(grown, line)
		line = grown
	}
	return append(line, chunk...)
}

func (r *Reader) finish(line []byte) ([]byte, error) {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if len(line) > r.max {
		return line[:r.max], ErrLineTooLong
	}
	return line, nil
}

// discardLine skips the rest of the current line. An error (the end of the
// input) is left for the next read to find.
func (r *Reader) discardLine() {
	for {
		_, err := r.br.ReadSlice('\n')
		if !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

func blank(line []byte) bool {
	for _, c := range line {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// Read reads the next line and decodes it (see DecodeMessage). A line that
// is not a valid message, or is too long, returns a *DecodeError that says
// how to answer it; for a line too long, it matches ErrLineTooLong and has
// the id read from the start of the line.
func (r *Reader) Read() (*Message, error) {
	line, err := r.ReadLine()
	if errors.Is(err, ErrLineTooLong) {
		id, isRequest, _ := peekEnvelope(line)
		return nil, r.tooLong(id, isRequest)
	}
	if err != nil {
		return nil, err
	}
	return DecodeMessage(line)
}

func (r *Reader) tooLong(id ID, isRequest bool) *DecodeError {
	return &DecodeError{
		Err:   NewError(CodeInvalidRequest, "invalid request: line longer than %d bytes", r.max),
		ID:    id,
		Reply: isRequest,
		cause: ErrLineTooLong,
	}
}

// A Writer writes one message per line. It is safe for concurrent use: each
// message goes out whole, with a single Write call that includes its "\n".
// After a write fails, every later write returns the same error.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	raw syscall.RawConn // w's descriptor, if it can be written without blocking (TryWrite)
	err error
}

// NewWriter returns a Writer that writes lines to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w, raw: trywrite.Raw(w)} }

// Buffers for encoding, so that a busy connection does not allocate one per
// message. Large ones are dropped rather than kept alive by the pool.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

const maxPooledBuf = 64 << 10

// Write writes m as one line.
func (w *Writer) Write(m *Message) error {
	bp := bufPool.Get().(*[]byte)
	b := m.AppendJSON((*bp)[:0])
	err := w.writeLine(b)
	if cap(b) <= maxPooledBuf {
		*bp = b[:0]
		bufPool.Put(bp)
	}
	return err
}

// WriteLine writes line, which must hold one JSON message, and a "\n".
func (w *Writer) WriteLine(line []byte) error {
	bp := bufPool.Get().(*[]byte)
	b := append((*bp)[:0], line...)
	err := w.writeLine(b)
	if cap(b) <= maxPooledBuf {
		*bp = b[:0]
		bufPool.Put(bp)
	}
	return err
}

// TryWrite writes m as Write does, if it can without waiting: no other
// write is under way, and the peer's input takes at least the start of the
// line now (then the rest, if any, is written by a goroutine of the
// Writer's, which holds every other write back until it is done, and ends
// when its write does). It reports whether it wrote, and Write's error if
// it did; it writes nothing, and reports false, when it would have to wait,
// or when w cannot be written without blocking (it has no descriptor in
// non-blocking mode: see trywrite.Raw).
func (w *Writer) TryWrite(m *Message) (wrote bool, err error) {
	if w.raw == nil || !w.mu.TryLock() {
		return false, nil
	}
	if w.err != nil {
		defer w.mu.Unlock()
		return true, w.err
	}
	bp := bufPool.Get().(*[]byte)
	b := line(m.AppendJSON((*bp)[:0]))
	defer func() {
		if cap(b) <= maxPooledBuf {
			*bp = b[:0]
			bufPool.Put(bp)
		}
	}()
	n, err := trywrite.Write(w.raw, b)
	switch {
	case err != nil:
		w.err = err
		w.mu.Unlock()
		return true, err
	case n == 0:
		w.mu.Unlock()
		return false, nil
	case n < len(b):
		// The line is begun: it must end before any other. The goroutine
		// ends when the peer has read it, or its input is closed.
		rest := bytes.Clone(b[n:])
		go func() {
			defer w.mu.Unlock()
			if _, err := w.w.Write(rest); err != nil {
				w.err = err
			}
		}()
		return true, nil
	}
	w.mu.Unlock()
	return true, nil
}

// line makes b, one JSON message, a line: its raw newlines blanks (in
// valid JSON a raw newline can only be white space between tokens, since
// strings cannot hold one, so a blank keeps the meaning and the framing:
// it happens when a caller hands us indented raw JSON), and a newline at
// its end.
func line(b []byte) []byte {
	if bytes.IndexByte(b, '\n') >= 0 {
		for i, c := range b {
			if c == '\n' {
				b[i] = ' '
			}
		}
	}
	return append(b, '\n')
}

// writeLine writes b, which it may modify, and a newline.
func (w *Writer) writeLine(b []byte) error {
	b = line(b)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	n, err := w.w.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	w.err = err
	return err
}
