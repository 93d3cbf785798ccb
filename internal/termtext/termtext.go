// Package termtext makes text that mcpgen did not write safe to print on a
// terminal: what a server wrote to stderr, a tool's name or description, an
// error a server or a remote peer sent, a string of a manifest. Such text
// may hold escape sequences that set the window's title, clear the screen,
// move the cursor or forge what the user sees; printed as it is, the
// terminal obeys them.
//
// Every character that a terminal may act on is shown escaped, in the form
// Go's quoted strings use, which mcpgen's messages use for the values they
// quote (%q): ESC as \x1b, BEL as \a, CR as \r, DEL as \x7f, a C1 control
// such as CSI as \u009b, a bidirectional override that reorders what is
// shown as \u202e, the Unicode line and paragraph separators, and each byte
// that is not valid UTF-8 as \xNN. Line escapes tabs and newlines too, for
// text that must stay on one line (a table cell); Text keeps them, for
// text that is several lines by design (a log, an error that lists
// problems, a tool's result). Backslashes are left as they are, so that
// paths and messages read as written.
//
// JSON output needs none of this: JSON escapes control characters itself,
// and mcpgen's --json output stays as the data was.
package termtext

import (
	"io"
	"unicode"
	"unicode/utf8"
)

// Line returns s with every character a terminal may act on escaped,
// tabs and newlines included: for text that must stay on one line.
func Line(s string) string { return escape(s, false) }

// Text returns s with every character a terminal may act on escaped, but
// tabs and newlines: for text of several lines.
func Text(s string) string { return escape(s, true) }

func escape(s string, keepLines bool) string {
	i := firstUnsafe(s, keepLines)
	if i < 0 {
		return s // the common case: nothing to escape, nothing allocated
	}
	b := make([]byte, 0, len(s)+16)
	b = append(b, s[:i]...)
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unsafe(r, size, keepLines) {
			b = appendEscaped(b, r, s[i:i+size])
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(b)
}

// firstUnsafe returns the index of the first character of s to escape,
// or -1.
func firstUnsafe(s string, keepLines bool) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if unsafe(r, size, keepLines) {
			return i
		}
		i += size
	}
	return -1
}

// unsafe reports whether the character r, encoded in size bytes, is one
// to escape.
func unsafe(r rune, size int, keepLines bool) bool {
	switch {
	case r == utf8.RuneError && size <= 1:
		return true // not UTF-8: a lone byte 0x9b is CSI to some terminals
	case r == '\t' || r == '\n':
		return !keepLines
	case r < 0x20 || r >= 0x7f && r < 0xa0:
		return true // C0, DEL and C1 controls
	case r == '\u2028' || r == '\u2029':
		return true // line and paragraph separators
	case r > 0x7f && unicode.Is(unicode.Bidi_Control, r):
		return true
	}
	return false
}

const hex = "0123456789abcdef"

// appendEscaped appends the character r, encoded as enc, escaped as Go
// quotes it: \a \b \f \n \r \t \v by name, another ASCII control as \xNN,
// a Unicode one as \uNNNN, and each byte of enc that is not UTF-8 (r is
// utf8.RuneError) as \xNN.
func appendEscaped(b []byte, r rune, enc string) []byte {
	switch r {
	case '\a':
		return append(b, `\a`...)
	case '\b':
		return append(b, `\b`...)
	case '\f':
		return append(b, `\f`...)
	case '\n':
		return append(b, `\n`...)
	case '\r':
		return append(b, `\r`...)
	case '\t':
		return append(b, `\t`...)
	case '\v':
		return append(b, `\v`...)
	}
	if r < utf8.RuneSelf || r == utf8.RuneError && len(enc) == 1 {
		for i := 0; i < len(enc); i++ {
			b = append(b, '\\', 'x', hex[enc[i]>>4], hex[enc[i]&0xf])
		}
		return b
	}
	return append(b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
}

// Cut returns s cut to at most max characters (runes, never within
// one), ending in "..." when it was cut. It escapes nothing: cut the text
// as it was written, then escape what is shown.
func Cut(s string, max int) string {
	n := 0
	for i := range s {
		if n == max {
			return s[:i] + "..."
		}
		n++
	}
	return s
}

// A Writer writes what it is given to another writer as Text escapes it,
// for a stream such as a log being followed: a character whose bytes
// come in two writes is escaped, or not, as a whole. Flush writes what is
// left of a character cut short at the end.
type Writer struct {
	w       io.Writer
	pending []byte // the start of a character whose end has not come yet
	buf     []byte
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes p escaped. It reports all of p written unless w fails.
func (w *Writer) Write(p []byte) (int, error) {
	data := p
	if len(w.pending) > 0 {
		data = append(w.pending, p...)
		w.pending = w.pending[:0]
	}
	end := len(data)
	// What may be the start of a character that the next write ends
	// (at most utf8.UTFMax-1 bytes) waits for it.
	for i := max(0, len(data)-(utf8.UTFMax-1)); i < len(data); i++ {
		if utf8.RuneStart(data[i]) && !utf8.FullRune(data[i:]) {
			end = i
			break
		}
	}
	w.buf = append(w.buf[:0], escape(string(data[:end]), true)...)
	w.pending = append(w.pending, data[end:]...)
	if _, err := w.w.Write(w.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what is left of a character cut short, escaped: no more
// of it will come.
func (w *Writer) Flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	var b []byte
	for i := range w.pending {
		b = appendEscaped(b, utf8.RuneError, string(w.pending[i:i+1]))
	}
	w.pending = w.pending[:0]
	_, err := w.w.Write(b)
	return err
}
