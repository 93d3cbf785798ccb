package files

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

func readDisk(t testing.TB, w *workspace, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(w.dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestEdit(t *testing.T) {
	const three = "alpha\nbeta\nalpha\ngamma\n"
	tests := []struct {
		name     string
		content  string
		old, new string
		all      bool
		want     string // the file afterwards; the content itself when refused
		line     int
		count    int
		err      string
	}{
		{name: "one match", content: three, old: "beta", new: "BETA", want: "alpha\nBETA\nalpha\ngamma\n", line: 2, count: 1},
		{name: "one match with context", content: three, old: "alpha\ngamma", new: "omega", want: "alpha\nbeta\nomega\n", line: 3, count: 1},
		{name: "delete", content: three, old: "beta\n", new: "", want: "alpha\nalpha\ngamma\n", line: 2, count: 1},
		{name: "two matches", content: three, old: "alpha", new: "x", want: three,
			err: `old_text occurs 2 times in "f.txt" (at lines 1 and 3); add surrounding lines to old_text so that it occurs once, or set replace_all to replace every occurrence`},
		{name: "two matches, replace all", content: three, old: "alpha", new: "x", all: true, want: "x\nbeta\nx\ngamma\n", line: 1, count: 2},
		{name: "no match", content: three, old: "delta", new: "x", want: three,
			err: `old_text was not found in "f.txt"; it must match the file exactly, whitespace and indentation included: read_file the lines and copy them`},
		{name: "no match, first line found", content: three, old: "  beta\nGAMMA", new: "x", want: three,
			err: `old_text was not found in "f.txt", but its first line appears at line 2; the text differs after it`},
		{name: "no match, indentation", content: "func f() {\n\treturn\n}\n", old: "func f() {\n    return\n}", new: "x", want: "func f() {\n\treturn\n}\n",
			err: "its first line appears at line 1"},
		{name: "empty old", content: three, old: "", new: "x", want: three, err: "old_text is empty"},
		{name: "same texts", content: three, old: "beta", new: "beta", want: three, err: "old_text and new_text are the same"},
		{name: "crlf file", content: "one\r\ntwo\r\nthree\r\n", old: "one\ntwo", new: "1\n2", want: "1\r\n2\r\nthree\r\n", line: 1, count: 1},
		{name: "crlf exact", content: "one\r\ntwo\r\n", old: "one\r\n", new: "1\r\n", want: "1\r\ntwo\r\n", line: 1, count: 1},
		{name: "many matches listed", content: strings.Repeat("x\n", 12), old: "x", new: "y", want: strings.Repeat("x\n", 12),
			err: "occurs 12 times in \"f.txt\" (at lines 1, 2, 3, 4, 5, 6, 7, 8 and 4 more)"},
		{name: "overlapping", content: "aaa\n", old: "aa", new: "b", want: "ba\n", line: 1, count: 1},
		{name: "binary", content: "a\x00b", old: "a", new: "b", want: "a\x00b", err: "binary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := workspaceWith(t, map[string]string{"f.txt": tt.content})
			e, err := w.edit(t.Context(), "f.txt", tt.old, tt.new, tt.all)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("edit error:\n got %v\nwant %s", err, tt.err)
				}
			} else if err != nil {
				t.Fatalf("edit: %v", err)
			} else if e.line != tt.line || e.count != tt.count {
				t.Errorf("edit = line %d count %d, want line %d count %d", e.line, e.count, tt.line, tt.count)
			}
			if got := readDisk(t, w, "f.txt"); got != tt.want {
				t.Errorf("file = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEditTooLarge(t *testing.T) {
	w := workspaceWith(t, map[string]string{"big.txt": strings.Repeat("x", MaxEditBytes+1)})
	_, err := w.edit(t.Context(), "big.txt", "x", "y", false)
	if err == nil || !strings.Contains(err.Error(), "more than edit_file's limit of 1.0 MiB; use write_file") {
		t.Errorf("edit of a large file = %v", err)
	}
}

// TestWriteKeepsMode checks that replacing a file, by write or edit, keeps
// its permission bits but drops setuid and setgid, as the kernel does when
// a program writes to a file (a model must not be able to put its own code
// in someone's setuid program), and that a new file gets the usual ones.
func TestWriteKeepsMode(t *testing.T) {
	tests := []struct {
		mode, want fs.FileMode
	}{
		{0o755, 0o755},
		{0o600, 0o600},
		{0o640 | fs.ModeSetgid, 0o640},
		{0o750 | fs.ModeSetgid, 0o750},
		{0o755 | fs.ModeSetuid, 0o755},
		{0o755 | fs.ModeSetuid | fs.ModeSetgid, 0o755},
		{0o644 | fs.ModeSticky, 0o644 | fs.ModeSticky},
	}
	tools := map[string]func(w *workspace, name string) error{
		"write": func(w *workspace, name string) error {
			_, err := w.write(t.Context(), name, []byte("edited\n"))
			return err
		},
		"edit": func(w *workspace, name string) error {
			_, err := w.edit(t.Context(), name, "original", "edited", false)
			return err
		},
	}
	for tool, run := range tools {
		for _, tt := range tests {
			t.Run(tool+"/"+tt.mode.String(), func(t *testing.T) {
				w := workspaceWith(t, map[string]string{"f": "original\n"})
				if err := os.Chmod(filepath.Join(w.dir, "f"), tt.mode); err != nil {
					t.Fatal(err)
				}
				if fi, err := os.Stat(filepath.Join(w.dir, "f")); err != nil || fi.Mode() != tt.mode {
					t.Skipf("cannot set mode %v here: got %v, %v", tt.mode, fi.Mode(), err)
				}
				if err := run(w, "f"); err != nil {
					t.Fatal(err)
				}
				fi, err := os.Stat(filepath.Join(w.dir, "f"))
				if err != nil {
					t.Fatal(err)
				}
				if got := fi.Mode(); got != tt.want {
					t.Errorf("mode after %s: got %v, want %v", tool, got, tt.want)
				}
				if got := readDisk(t, w, "f"); got != "edited\n" {
					t.Errorf("content after %s: got %q, want %q", tool, got, "edited\n")
				}
			})
		}
	}
}

// TestNewFileMode checks that a new file gets the default mode less the
// umask, and that no temporary file is left behind.
func TestNewFileMode(t *testing.T) {
	w := workspaceWith(t, map[string]string{"f": "x"})
	umask := currentUmask()
	if _, err := w.write(t.Context(), "new/file.txt", []byte("x")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(w.dir, "new/file.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if want := fs.FileMode(0o666) &^ fs.FileMode(umask); fi.Mode().Perm() != want {
		t.Errorf("new file mode %v, want %v", fi.Mode().Perm(), want)
	}

	// No temporary file is left behind.
	for _, dir := range []string{".", "new"} {
		entries, err := os.ReadDir(filepath.Join(w.dir, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".mcpgen-write-") {
				t.Errorf("temporary file %s left in %s", e.Name(), dir)
			}
		}
	}
}

// TestWriteAtomic reads a file while it is being replaced: every read must
// see one whole version, never a mix or a truncated file.
func TestWriteAtomic(t *testing.T) {
	versions := [][]byte{bytes.Repeat([]byte("a"), 256<<10), bytes.Repeat([]byte("b"), 128<<10)}
	w := workspaceWith(t, map[string]string{"f": string(versions[0])})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var bad []int
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			got, err := os.ReadFile(filepath.Join(w.dir, "f"))
			if err != nil {
				bad = append(bad, -1)
				continue
			}
			if !bytes.Equal(got, versions[0]) && !bytes.Equal(got, versions[1]) {
				bad = append(bad, len(got))
			}
		}
	})
	for i := range 40 {
		if _, err := w.write(t.Context(), "f", versions[i%2]); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if len(bad) > 0 {
		t.Errorf("readers saw %d partial versions (sizes %v)", len(bad), bad[:min(len(bad), 5)])
	}
}

func TestWriteRefuses(t *testing.T) {
	w := workspaceWith(t, map[string]string{"file": "x", "dir/inner": "y"})
	fifo := mkfifo(t, filepath.Join(w.dir, "fifo"))
	tests := []struct{ path, want string }{
		{".", `path "." is the workspace root, a directory; name a file in it`},
		{"dir", `path "dir" is a directory; name a file`},
		{"dir/", `path "dir/" is a directory; name a file`},
		{"fifo", `path "fifo" is a named pipe; only regular files can be written`},
		{"file/sub", `path "file/sub": a component of it is a file, not a directory`},
		{"file/a/b", `path "file/a/b": a component of it is a file, not a directory`},
	}
	for _, tt := range tests {
		if tt.path == "fifo" && !fifo {
			continue
		}
		before := snapshot(t, w.dir)
		_, err := w.write(t.Context(), tt.path, []byte("new"))
		if err == nil || err.Error() != tt.want {
			t.Errorf("write(%q) error:\n got %v\nwant %s", tt.path, err, tt.want)
		}
		if diff := diffSnapshots(before, snapshot(t, w.dir)); len(diff) > 0 {
			t.Errorf("write(%q) changed the tree: %v", tt.path, diff)
		}
	}
}

// TestEditsInParallel edits one file from many goroutines, as a model
// calling tools in parallel does: no edit may be lost.
func TestEditsInParallel(t *testing.T) {
	const n = 20
	var content strings.Builder
	for i := range n {
		fmt.Fprintf(&content, "slot %02d\n", i)
	}
	w := workspaceWith(t, map[string]string{"f": content.String()})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, err := w.edit(t.Context(), "f", fmt.Sprintf("slot %02d", i), fmt.Sprintf("done %02d", i), false); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got, want := readDisk(t, w, "f"), strings.ReplaceAll(content.String(), "slot", "done"); got != want {
		t.Errorf("after parallel edits:\n%s\nwant\n%s", got, want)
	}
}

// TestEditChangedUnderneath: a program that takes no lock (an editor, a
// tool) changes the file while edit_file works on it. Its change must not
// be lost: a change after the edit has read the file makes the edit write
// nothing and say to read the file again; a change before the read is
// simply edited.
func TestEditChangedUnderneath(t *testing.T) {
	inPlace := func(p string) error { return os.WriteFile(p, []byte("one\nTWO by hand\n"), 0o644) }
	sameLength := func(p string) error { return os.WriteFile(p, []byte("one\nTWO\n"), 0o644) }
	renamed := func(p string) error {
		if err := os.WriteFile(p+".new", []byte("one\nTWO by hand\n"), 0o644); err != nil {
			return err
		}
		return os.Rename(p+".new", p)
	}
	const changed = `file "f" changed while edit_file was working on it (another program wrote or replaced it); nothing was written: read_file it again and redo the edit`
	tests := []struct {
		name   string
		at     int // the hook's call for "f": 2 between open and read, 3 between read and rename
		change func(path string) error
		err    string
		want   string // the file afterwards
	}{
		{"rewritten in place after the read", 3, inPlace, changed, "one\nTWO by hand\n"},
		{"same length, in place, after the read", 3, sameLength, changed, "one\nTWO\n"},
		{"replaced by a rename after the read", 3, renamed, changed, "one\nTWO by hand\n"},
		{"replaced by a rename before the read", 2, renamed, changed, "one\nTWO by hand\n"},
		{"rewritten in place before the read", 2, inPlace, "", "ONE\nTWO by hand\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := workspaceWith(t, map[string]string{"f": "one\ntwo\n"})
			calls := 0
			testHookChecked = func(p string) {
				if p != "f" {
					return
				}
				if calls++; calls == tt.at {
					if err := tt.change(filepath.Join(w.dir, "f")); err != nil {
						t.Error(err)
					}
				}
			}
			defer func() { testHookChecked = nil }()
			_, err := w.edit(t.Context(), "f", "one", "ONE", false)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || err.Error() != tt.err) {
				t.Errorf("edit: got %v, want %q", err, tt.err)
			}
			if calls < tt.at {
				t.Errorf("the hook saw \"f\" %d times, want at least %d", calls, tt.at)
			}
			if got := readDisk(t, w, "f"); got != tt.want {
				t.Errorf("file = %q, want %q", got, tt.want)
			}
		})
	}
}

// BenchmarkEditFile edits a 100 KiB source file through the edit_file
// handler, back and forth: the locks, the read, the check before the rename
// and the atomic write (with its fsync) are all in the loop.
func BenchmarkEditFile(b *testing.B) {
	var content strings.Builder
	for content.Len() < 100<<10 {
		content.WriteString("\tif err := w.root.Rename(tmp, p); err != nil { return err } // 64b\n")
	}
	w := workspaceWith(b, map[string]string{"src/big.go": "package big\n" + content.String()[:100<<10]})
	handler := editTool(w).Handler
	reqs := [2]*mcp.CallToolRequest{
		{Name: "edit_file", Arguments: json.RawMessage(`{"path":"src/big.go","old_text":"package big\n","new_text":"package large\n"}`)},
		{Name: "edit_file", Arguments: json.RawMessage(`{"path":"src/big.go","old_text":"package large\n","new_text":"package big\n"}`)},
	}
	b.SetBytes(100 << 10)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		res, err := handler(b.Context(), reqs[i%2])
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
		i++
	}
}
