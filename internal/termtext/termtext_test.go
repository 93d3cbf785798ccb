package termtext

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	tests := []struct {
		name, in, line, text string
	}{
		{"plain", "exited with status 1", "exited with status 1", "exited with status 1"},
		{"empty", "", "", ""},
		{"title, clear, colour, CR", "\x1b]0;TITLE\x07\x1b[2J\x1b[31mFAKE OK\rboom",
			`\x1b]0;TITLE\a\x1b[2J\x1b[31mFAKE OK\rboom`, `\x1b]0;TITLE\a\x1b[2J\x1b[31mFAKE OK\rboom`},
		{"tab and newline", "a\tb\nc", `a\tb\nc`, "a\tb\nc"},
		{"CRLF", "a\r\nb", `a\r\nb`, "a\\r\nb"},
		{"NUL, backspace, DEL", "a\x00b\x08\x7f", `a\x00b\b\x7f`, `a\x00b\b\x7f`},
		{"C1 CSI", "a\u009b2Jb", `a\u009b2Jb`, `a\u009b2Jb`},
		{"lone byte 0x9b", "a\x9b2Jb", `a\x9b2Jb`, `a\x9b2Jb`},
		{"invalid UTF-8", "a\xff\xfeb", `a\xff\xfeb`, `a\xff\xfeb`},
		{"cut UTF-8", "caf\xc3", `caf\xc3`, `caf\xc3`},
		{"bidi override", "good\u202edab", `good\u202edab`, `good\u202edab`},
		{"bidi isolate", "a\u2066b\u2069", `a\u2066b\u2069`, `a\u2066b\u2069`},
		{"line separator", "a\u2028b", `a\u2028b`, `a\u2028b`},
		{"text kept", "héllo wörld ✓ 日本 🙂 \u00a0", "héllo wörld ✓ 日本 🙂 \u00a0", "héllo wörld ✓ 日本 🙂 \u00a0"},
		{"replacement character as written", "a\uFFFDb", "a\uFFFDb", "a\uFFFDb"},
		{"backslashes kept", `C:\Users\x1b`, `C:\Users\x1b`, `C:\Users\x1b`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Line(tt.in); got != tt.line {
				t.Errorf("Line(%q) = %q, want %q", tt.in, got, tt.line)
			}
			if got := Text(tt.in); got != tt.text {
				t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.text)
			}
		})
	}
}

// TestEscapesAreGoQuotes checks that what Line escapes it shows as Go's
// quoted strings do (mcpgen's messages quote values with %q): one form.
func TestEscapesAreGoQuotes(t *testing.T) {
	var chars []string
	for r := rune(0); r < 0x3000; r++ {
		chars = append(chars, string(r))
	}
	for b := 0x80; b <= 0xff; b++ {
		chars = append(chars, string([]byte{byte(b)}))
	}
	escaped := 0
	for _, c := range chars {
		got := Line(c)
		if got == c {
			continue
		}
		escaped++
		if want := strings.Trim(strconv.Quote(c), `"`); got != want {
			t.Errorf("Line(%q) = %s, want %s as %%q shows it", c, got, want)
		}
	}
	if escaped < 0x20+1+0x20+0x80 {
		t.Errorf("escaped %d characters, want at least the C0 and C1 controls, DEL and the bytes that are not UTF-8", escaped)
	}
}

// safe reports whether s holds nothing a terminal acts on, for the tests.
func safe(s string, keepLines bool) bool {
	for i, r := range s {
		if r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD") {
			return false
		}
		if (r == '\n' || r == '\t') && keepLines {
			continue
		}
		if r < 0x20 || r >= 0x7f && r < 0xa0 || r == '\u202e' {
			return false
		}
	}
	return true
}

func FuzzEscape(f *testing.F) {
	for _, s := range []string{"\x1b]0;T\x07", "a\rb\n\tc", "\u009b\u202e", "\xff\xc3", "plain"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		line, text := Line(s), Text(s)
		if !safe(line, false) || strings.ContainsAny(line, "\n\t") {
			t.Errorf("Line(%q) = %q: not safe on one line", s, line)
		}
		if !safe(text, true) {
			t.Errorf("Text(%q) = %q: not safe", s, text)
		}
		if !utf8.ValidString(line) || !utf8.ValidString(text) {
			t.Errorf("Line or Text of %q is not valid UTF-8: %q, %q", s, line, text)
		}
		// Written in pieces, a stream is escaped as the whole is.
		var b bytes.Buffer
		w := NewWriter(&b)
		for i := 0; i < len(s); i += 2 {
			if _, err := w.Write([]byte(s[i:min(i+2, len(s))])); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if b.String() != text {
			t.Errorf("Writer of %q in pieces of 2 = %q, want Text's %q", s, b.String(), text)
		}
	})
}

func TestWriterHoldsACharacterCutBetweenWrites(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b)
	// U+009B (CSI) is \xc2\x9b: its two bytes come in two writes.
	for _, p := range []string{"a\xc2", "\x9b2J é", "\xc3"} {
		if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v; want %d, nil", p, n, err, len(p))
		}
	}
	if got, want := b.String(), `a\u009b2J é`; got != want {
		t.Errorf("before Flush: got %q, want %q", got, want)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), `a\u009b2J é\xc3`; got != want {
		t.Errorf("after Flush: got %q, want %q", got, want)
	}
}

func TestCut(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"a longer text", 8, "a longer..."},
		{"日本語のテキスト", 3, "日本語..."},
		{"", 3, ""},
	}
	for _, tt := range tests {
		if got := Cut(tt.in, tt.max); got != tt.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

func BenchmarkLine(b *testing.B) {
	plain := strings.Repeat("exited with status 1 before it was ready; ", 4)
	hostile := strings.Repeat("\x1b]0;TITLE\x07\x1b[2J\x1b[31mFAKE OK\rboom ", 4)
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			_ = Line(plain)
		}
	})
	b.Run("hostile", func(b *testing.B) {
		for b.Loop() {
			_ = Line(hostile)
		}
	})
}
