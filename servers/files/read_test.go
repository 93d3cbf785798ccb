package files

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// workspaceWith opens a fresh workspace holding the given files.
func workspaceWith(t testing.TB, files map[string]string) *workspace {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w, err := openWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.root.Close() })
	return w
}

func numberedLines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestReadPaging(t *testing.T) {
	w := workspaceWith(t, map[string]string{
		"ten.txt":     numberedLines(10),
		"no-eol.txt":  "one\ntwo",
		"empty.txt":   "",
		"crlf.txt":    "a\r\nb\r\n",
		"blanks.txt":  "\n\n\n",
		"latin1.txt":  "caf\xe9\n",
		"one-eol.txt": "\n",
	})
	tests := []struct {
		path          string
		offset, limit int
		want          string // the file text shown
		note          string // in the second block; "" for none
		err           string
	}{
		{path: "ten.txt", offset: 1, limit: DefaultReadLines, want: numberedLines(10)},
		{path: "ten.txt", offset: 1, limit: 3, want: "line 1\nline 2\nline 3\n", note: "lines 1-3 of \"ten.txt\" (71 bytes) shown; the file goes on: read_file with offset 4 reads on"},
		{path: "ten.txt", offset: 4, limit: 3, want: "line 4\nline 5\nline 6\n", note: "with offset 7 reads on"},
		{path: "ten.txt", offset: 9, limit: 5, want: "line 9\nline 10\n", note: "lines 9-10 of \"ten.txt\" shown; this is the end of the file"},
		{path: "ten.txt", offset: 10, limit: 1, want: "line 10\n", note: "line 10 of \"ten.txt\" shown; this is the end"},
		{path: "ten.txt", offset: 1, limit: 10, want: numberedLines(10)},
		{path: "ten.txt", offset: 11, limit: 1, err: `file "ten.txt" has 10 lines; offset 11 is past its end`},
		{path: "no-eol.txt", offset: 2, limit: 1, want: "two", note: "end of the file"},
		{path: "no-eol.txt", offset: 1, limit: 1, want: "one\n", note: "offset 2"},
		{path: "no-eol.txt", offset: 3, limit: 1, err: "has 2 lines"},
		{path: "empty.txt", offset: 1, limit: 5, want: `[file "empty.txt" is empty]`},
		{path: "empty.txt", offset: 2, limit: 5, err: "has 0 lines"},
		{path: "crlf.txt", offset: 2, limit: 1, want: "b\r\n", note: "end of the file"},
		{path: "blanks.txt", offset: 2, limit: 1, want: "\n", note: "offset 3"},
		{path: "blanks.txt", offset: 4, limit: 1, err: "has 3 lines"},
		{path: "one-eol.txt", offset: 1, limit: 1, want: "\n"},
		{path: "latin1.txt", offset: 1, limit: 1, want: "caf\xe9\n"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s@%d+%d", tt.path, tt.offset, tt.limit), func(t *testing.T) {
			win, err := w.read(t.Context(), tt.path, tt.offset, tt.limit)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("read = %v, want an error with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			res := windowResult(tt.path, win)
			if got := res.Content[0].Text; got != tt.want {
				t.Errorf("text = %q, want %q", got, tt.want)
			}
			var note string
			if len(res.Content) > 1 {
				note = res.Content[1].Text
			}
			if (tt.note == "") != (note == "") || !strings.Contains(note, tt.note) {
				t.Errorf("note = %q, want one with %q", note, tt.note)
			}
		})
	}
}

// TestReadByteCap pages through a file larger than a result can hold and
// checks that the windows stay under the cap and join up to the file.
func TestReadByteCap(t *testing.T) {
	line := strings.Repeat("x", 199) + "\n"
	content := strings.Repeat(line, 3000) // 600 KB, 3000 lines
	w := workspaceWith(t, map[string]string{"big.txt": content})
	var got strings.Builder
	offset, calls := 1, 0
	for {
		win, err := w.read(t.Context(), "big.txt", offset, DefaultReadLines)
		if err != nil {
			t.Fatalf("read at offset %d: %v", offset, err)
		}
		calls++
		if len(win.text) > readBudget {
			t.Fatalf("window at offset %d holds %d bytes, more than %d", offset, len(win.text), readBudget)
		}
		if win.more && !win.full {
			t.Errorf("window at offset %d stopped before the byte cap without reaching the limit: %d lines", offset, win.lines)
		}
		got.Write(win.text)
		if !win.more {
			break
		}
		if res := windowResult("big.txt", win); !strings.Contains(res.Content[1].Text, fmt.Sprintf("cut at the 256 KiB result limit; read_file with offset %d", win.next())) {
			t.Errorf("note = %q", res.Content[1].Text)
		}
		offset = win.next()
	}
	if got.String() != content {
		t.Errorf("the windows joined hold %d bytes, want the file's %d", got.Len(), len(content))
	}
	if calls != 3 {
		t.Errorf("paged in %d calls, want 3 (256 KiB each)", calls)
	}
}

func TestReadLongLine(t *testing.T) {
	long := strings.Repeat("é", 300<<10) // 600 KiB on one line; the cut falls inside a rune
	w := workspaceWith(t, map[string]string{
		"long.txt": long + "\nnext\n",
		"last.txt": "first\n" + long,
	})
	win, err := w.read(t.Context(), "long.txt", 1, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !win.cut || !win.more || win.lines != 1 || win.next() != 2 {
		t.Errorf("window = cut %v, more %v, lines %d, next %d; want a cut line, more, next 2", win.cut, win.more, win.lines, win.next())
	}
	if !utf8.Valid(win.text) || len(win.text) > readBudget || len(win.text) < readBudget-4 {
		t.Errorf("cut line: %d bytes, valid UTF-8 %v; want about %d", len(win.text), utf8.Valid(win.text), readBudget)
	}
	if note := windowResult("long.txt", win).Content[1].Text; !strings.Contains(note, "offset 2 reads on") {
		t.Errorf("note = %q", note)
	}
	if win, err := w.read(t.Context(), "long.txt", 2, 10); err != nil || string(win.text) != "next\n" {
		t.Errorf("read at offset 2 = %v, %v; want \"next\\n\"", win, err)
	}

	// A long line after others ends the window before it.
	win, err = w.read(t.Context(), "last.txt", 1, 10)
	if err != nil {
		t.Fatal(err)
	}
	if string(win.text) != "first\n" || !win.more || !win.full || win.next() != 2 {
		t.Errorf("window = %q more %v full %v next %d; want the first line, then offset 2", win.text, win.more, win.full, win.next())
	}
	win, err = w.read(t.Context(), "last.txt", 2, 10)
	if err != nil || !win.cut || win.more {
		t.Fatalf("read at offset 2 = %v, %v; want the cut last line", win, err)
	}
	if note := windowResult("last.txt", win).Content[1].Text; !strings.Contains(note, "it is the last line of the file") {
		t.Errorf("note = %q", note)
	}
}

func TestReadRefuses(t *testing.T) {
	w := workspaceWith(t, map[string]string{
		"image.png": "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
		"dir/x":     "x",
	})
	fifo := mkfifo(t, filepath.Join(w.dir, "fifo"))
	tests := []struct{ path, want string }{
		{"image.png", `file "image.png" is binary (16 bytes, with NUL bytes in its first 8 KB); read_file shows text files only`},
		{"dir", `path "dir" is a directory, not a file (list_directory shows what it holds)`},
		{"fifo", `path "fifo" is a named pipe, not a regular file`},
		{"missing.txt", `path "missing.txt" does not exist (list_directory shows what the workspace root holds)`},
		{"dir/missing/x.txt", `path "dir/missing/x.txt" does not exist (list_directory "dir" shows what is there)`},
		{"dir/x/y", `path "dir/x/y": a component of it is a file, not a directory`},
		{"", `path is empty; use "." for the workspace root`},
	}
	for _, tt := range tests {
		if tt.path == "fifo" && !fifo {
			continue
		}
		done := make(chan error, 1)
		go func() {
			_, err := w.read(t.Context(), tt.path, 1, 10)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || err.Error() != tt.want {
				t.Errorf("read(%q) error:\n got %v\nwant %s", tt.path, err, tt.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("read(%q) hangs", tt.path)
		}
	}
}
