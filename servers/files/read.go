package files

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// sniffLen is how much of a file is checked for NUL bytes to call it binary,
// as git does.
const sniffLen = 8000

// readBudget is the most file text one read_file result holds, leaving room
// under MaxResultBytes for the note that says how to read on.
const readBudget = MaxResultBytes - 1<<10

// A window is the part of a file that read_file shows.
type window struct {
	text   []byte
	first  int   // the number of the first line shown, from 1
	lines  int   // how many lines are shown
	size   int64 // of the whole file
	more   bool  // the file goes on after the window
	full   bool  // the window stopped at readBudget, not at the line limit
	cut    bool  // the one line shown was longer than readBudget and was cut
	spent  bool  // the read stopped at its scan budget
	budget int64 // the scan budget: how much of the file a read may read
}

// next returns the offset at which the following window starts.
func (win *window) next() int { return win.first + win.lines }

// read returns up to limit lines of the file name leads to, from line
// offset (the first line is 1), and never more than readBudget bytes. It
// reads at most w.scanBudget bytes of the file, lines skipped included, and
// stops when ctx ends: a line offset deep into a huge (or sparse) file must
// not hold a CPU for minutes.
func (w *workspace) read(ctx context.Context, name string, offset, limit int) (*window, error) {
	p, err := w.open(name)
	if err != nil {
		return nil, err
	}
	f, fi, err := w.openFile(name, p, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()

	r := bufio.NewReaderSize(&meter{ctx: ctx, r: f, left: w.scanBudget}, 16<<10)
	head, err := r.Peek(sniffLen)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if binary(head) {
		return nil, fmt.Errorf("file %s is binary (%s, with NUL bytes in its first 8 KB); read_file shows text files only", shown(name), sizeText(fi.Size()))
	}
	for line := 1; line < offset; line++ {
		if _, _, err := nextLine(r, nil, 0); err != nil {
			switch {
			case ctx.Err() != nil:
				return nil, ctx.Err()
			case errors.Is(err, errBudget):
				return nil, fmt.Errorf("file %s (%s): read_file reads at most %s of a file per call, and line %d goes on past that, so line %d cannot be reached; read from offset %d or before",
					shown(name), sizeText(fi.Size()), sizeText(w.scanBudget), line, offset, line)
			case errors.Is(err, io.EOF):
				return nil, fmt.Errorf("file %s has %d lines; offset %d is past its end", shown(name), line-1, offset)
			}
			return nil, w.pathError(name, p, err)
		}
	}

	win := &window{first: offset, size: fi.Size(), budget: w.scanBudget, text: make([]byte, 0, min(fi.Size(), readBudget))}
	for win.lines < limit {
		start := len(win.text)
		var long bool
		win.text, long, err = nextLine(r, win.text, readBudget-start)
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, errBudget):
			win.spent, win.more = true, true
			if win.lines > 0 {
				// The next call reaches the line that did not fit.
				win.text = win.text[:start]
				return win, nil
			}
			// The line at offset runs past the budget: show its start.
			win.text, win.cut, win.lines = trimPartialRune(win.text), true, 1
			return win, nil
		case errors.Is(err, io.EOF):
			if win.lines == 0 && offset > 1 {
				return nil, fmt.Errorf("file %s has %d lines; offset %d is past its end", shown(name), offset-1, offset)
			}
			return win, nil
		case err != nil:
			return nil, w.pathError(name, p, err)
		}
		if long {
			if win.lines > 0 {
				win.text, win.more, win.full = win.text[:start], true, true
				return win, nil
			}
			win.text, win.cut = trimPartialRune(win.text), true
		}
		win.lines++
		if len(win.text) >= readBudget {
			win.full = true
			break
		}
	}
	_, err = r.Peek(1)
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, errBudget):
		win.more, win.spent = true, true
	default:
		win.more = err == nil
	}
	return win, nil
}

// errBudget ends a read or a search that has read its budget of bytes.
var errBudget = errors.New("scan budget spent")

// A meter reads from r until ctx ends or left bytes have been read: every
// chunk that a read or a search reads from a file goes through one, so that
// neither can run on for long once its call is cancelled, nor read without
// bound.
type meter struct {
	ctx  context.Context
	r    io.Reader
	left int64
}

func (m *meter) Read(p []byte) (int, error) {
	if err := m.ctx.Err(); err != nil {
		return 0, err
	}
	if m.left <= 0 {
		return 0, errBudget
	}
	if int64(len(p)) > m.left {
		p = p[:m.left]
	}
	n, err := m.r.Read(p)
	m.left -= int64(n)
	return n, err
}

// nextLine appends the next line of r, with its "\n", to buf, keeping at
// most keep bytes of it: a longer line is cut and its rest skipped, and long
// is true. At the end of the input it returns io.EOF, and no line.
func nextLine(r *bufio.Reader, buf []byte, keep int) (_ []byte, long bool, err error) {
	start, seen := len(buf), 0
	for {
		frag, err := r.ReadSlice('\n')
		seen += len(frag)
		if !long {
			if room := keep - (len(buf) - start); len(frag) > room {
				buf, long = append(buf, frag[:room]...), true
			} else {
				buf = append(buf, frag...)
			}
		}
		switch {
		case err == nil:
			return buf, long, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && seen > 0:
			return buf, long, nil
		default:
			return buf, long, err
		}
	}
}

// binary reports whether the start of a file holds a NUL byte.
func binary(head []byte) bool {
	return bytes.IndexByte(head, 0) >= 0
}

// trimPartialRune drops an incomplete UTF-8 sequence from the end of b, left
// by cutting a line.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

// sizeText writes a size for people: 512 bytes, 1.5 KiB, 3.2 MiB.
func sizeText(n int64) string {
	const unit = 1024
	if n < unit {
		if n == 1 {
			return "1 byte"
		}
		return fmt.Sprintf("%d bytes", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
