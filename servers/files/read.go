package files

import (
	"bufio"
	"bytes"
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
	text  []byte
	first int   // the number of the first line shown, from 1
	lines int   // how many lines are shown
	size  int64 // of the whole file
	more  bool  // the file goes on after the window
	full  bool  // the window stopped at readBudget, not at the line limit
	cut   bool  // the one line shown was longer than readBudget and was cut
}

// next returns the offset at which the following window starts.
func (win *window) next() int { return win.first + win.lines }

// read returns up to limit lines of the file name leads to, from line
// offset (the first line is 1), and never more than readBudget bytes.
func (w *workspace) read(name string, offset, limit int) (*window, error) {
	p, err := w.open(name)
	if err != nil {
		return nil, err
	}
	f, fi, err := w.openFile(name, p, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()

	r := bufio.NewReaderSize(f, 16<<10)
	head, _ := r.Peek(sniffLen)
	if binary(head) {
		return nil, fmt.Errorf("file %s is binary (%s, with NUL bytes in its first 8 KB); read_file shows text files only", shown(name), sizeText(fi.Size()))
	}
	for line := 1; line < offset; line++ {
		if _, _, err := nextLine(r, nil, 0); err != nil {
			if errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("file %s has %d lines; offset %d is past its end", shown(name), line-1, offset)
			}
			return nil, w.pathError(name, p, err)
		}
	}

	win := &window{first: offset, size: fi.Size(), text: make([]byte, 0, min(fi.Size(), readBudget))}
	for win.lines < limit {
		start := len(win.text)
		var long bool
		win.text, long, err = nextLine(r, win.text, readBudget-start)
		if errors.Is(err, io.EOF) {
			if win.lines == 0 && offset > 1 {
				return nil, fmt.Errorf("file %s has %d lines; offset %d is past its end", shown(name), offset-1, offset)
			}
			return win, nil
		}
		if err != nil {
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
	win.more = err == nil
	return win, nil
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
