package files

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestList(t *testing.T) {
	files := map[string]string{"empty/.keep": ""}
	for i := range MaxListEntries + 5 {
		files[fmt.Sprintf("many/f%04d", i)] = "x"
	}
	w := workspaceWith(t, files)
	os.Remove(filepath.Join(w.dir, "empty/.keep"))

	l, err := w.list(t.Context(), "many")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.entries) != MaxListEntries || l.total != MaxListEntries+5 {
		t.Errorf("listing holds %d of %d entries, want %d of %d", len(l.entries), l.total, MaxListEntries, MaxListEntries+5)
	}
	if l.entries[0].name != "f0000" || l.entries[MaxListEntries-1].name != "f0999" {
		t.Errorf("listing runs from %s to %s, want f0000 to f0999", l.entries[0].name, l.entries[MaxListEntries-1].name)
	}
	out := formatListing(w, l)
	if want := "[showing the first 1000 of 1005 entries, by name; search_files with match \"names\" finds the others]"; !strings.HasSuffix(out, want) {
		t.Errorf("listing ends %q, want %q", out[max(0, len(out)-200):], want)
	}
	if !strings.HasPrefix(out, `directory "many" holds 1005 entries:`+"\nf0000  1 byte\n") {
		t.Errorf("listing starts %q", out[:80])
	}

	l, err = w.list(t.Context(), "empty")
	if err != nil {
		t.Fatal(err)
	}
	if got := formatListing(w, l); got != `directory "empty" is empty` {
		t.Errorf("empty listing = %q", got)
	}
	if l, err = w.list(t.Context(), "."); err != nil {
		t.Fatal(err)
	}
	if got := formatListing(w, l); !strings.HasPrefix(got, "the workspace root "+w.dir+" holds 2 entries:\nempty/\nmany/") {
		t.Errorf("root listing = %q", got)
	}
}

// TestListSymlinks checks that a listing describes symlinks without
// following them, and says which ones lead out.
func TestListSymlinks(t *testing.T) {
	w, _ := fixture(t)
	l, err := w.list(t.Context(), ".")
	if err != nil {
		t.Fatal(err)
	}
	out := formatListing(w, l)
	for _, want := range []string{
		"\nlink-in-dir -> sub  (symlink)\n",
		"\nlink-out-dir -> ../outside/dir  (symlink; leads outside the workspace; not followed)\n",
		"\nloop1 -> loop2  (symlink; a symlink loop; not followed)\n",
		"\nsub/\n",
		"\na.txt  6 bytes\n",
		"\n\"new\\nline.txt\"  17 bytes\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("listing lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "inner.txt") || strings.Contains(out, "\nsecret.txt") {
		t.Errorf("listing shows what is outside:\n%s", out)
	}
}

func TestSearch(t *testing.T) {
	w, _ := fixture(t)
	tests := []struct {
		name string
		q    query
		want []string // the match lines, in order
	}{
		{"contents", query{base: ".", contents: true, pattern: "^hello"},
			[]string{"a.txt:1: hello", "readme.md:2: hello world"}},
		{"symlinks not followed", query{base: ".", contents: true, names: true, pattern: "bee|b\\.txt"},
			[]string{"sub/b.txt", "sub/b.txt:1: bee"}},
		{"below a symlinked dir inside", query{base: "link-in-dir", contents: true, pattern: "bee"},
			[]string{"sub/b.txt:1: bee"}},
		{"one file", query{base: "readme.md", contents: true, names: true, pattern: "readme"},
			[]string{"readme.md", "readme.md:1: # readme"}},
		{"names", query{base: "sub", names: true, pattern: "deep"},
			[]string{"sub/deep-out  (symlink)", "sub/deeper/", "sub/deeper/c.txt", "sub/deeper/d.bin"}},
		{"glob", query{base: ".", contents: true, names: true, glob: "*.md", pattern: "e"},
			[]string{"readme.md", "readme.md:1: # readme", "readme.md:2: hello world"}},
		{"case", query{base: ".", contents: true, pattern: "(?i)^SEA"},
			[]string{"sub/deeper/c.txt:1: sea"}},
		{"git skipped", query{base: ".", contents: true, pattern: "from git"}, nil},
		{"binary skipped", query{base: "sub/deeper", contents: true, pattern: "\x01"}, nil},
		{"odd names", query{base: ".", names: true, pattern: "line"},
			[]string{`"new\nline.txt"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.q.re = mustCompile(t, tt.q.pattern)
			f, err := w.search(t.Context(), tt.q)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range f.matches {
				got = append(got, matchLine(m))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("matches:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestSearchCaps(t *testing.T) {
	long := strings.Repeat("y", 1000)
	w := workspaceWith(t, map[string]string{
		"many.txt":    strings.Repeat("match\n", MaxSearchMatches+50),
		"huge.txt":    strings.Repeat("match\n", MaxSearchFileBytes/6+1),
		"bin.dat":     "match\x00",
		"long.txt":    "match " + long + "\n",
		"deep/x.txt":  "match\n",
		"z/after.txt": "match\n",
	})
	deep := filepath.Join(w.dir, "deep", strings.Repeat("d/", maxSearchDepth+2))
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(deep, "bottom.txt"), []byte("match\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	f, err := w.search(t.Context(), query{re: mustCompile(t, "match"), base: ".", contents: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.matches) != MaxSearchMatches || !f.limited {
		t.Errorf("%d matches, limited %v; want %d, limited", len(f.matches), f.limited, MaxSearchMatches)
	}
	out := formatFound("match", f)
	for _, want := range []string{
		"200 matches (the first ones) for \"match\" in the workspace",
		"[stopped at 200 matches; narrow the pattern, the path or the glob to see the rest]",
		"[skipped 1 file over 4 MiB, 1 binary file, ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("result lacks %q:\n%s", want, out[len(out)-300:])
		}
	}

	// Away from the big file: long lines are cut, deep trees are bounded.
	f, err = w.search(t.Context(), query{re: mustCompile(t, "match"), base: ".", contents: true, glob: "[^m]*.txt"})
	if err != nil {
		t.Fatal(err)
	}
	out = formatFound("match", f)
	for _, want := range []string{
		"long.txt:1: match " + long[:maxMatchText-6] + "…\n",
		"deep/x.txt:1: match\n",
		"z/after.txt:1: match\n",
		fmt.Sprintf("[skipped 1 file over 4 MiB, 1 directory deeper than %d levels]", maxSearchDepth),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("result lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "bottom.txt") {
		t.Errorf("search went deeper than %d levels", maxSearchDepth)
	}
	if len(out) > MaxResultBytes {
		t.Errorf("result of %d bytes", len(out))
	}
}

func TestSearchResultCap(t *testing.T) {
	line := "match " + strings.Repeat("z", 2000) + "\n"
	dir := strings.Repeat(strings.Repeat("p", 240)+"/", 6)
	files := map[string]string{}
	for i := range 10 {
		files[fmt.Sprintf("%s%d.txt", dir, i)] = strings.Repeat(line, 100)
	}
	w := workspaceWith(t, files)
	f, err := w.search(t.Context(), query{re: mustCompile(t, "match"), base: ".", contents: true})
	if err != nil {
		t.Fatal(err)
	}
	out := formatFound("match", f)
	if len(out) > MaxResultBytes {
		t.Errorf("result of %d bytes, more than %d", len(out), MaxResultBytes)
	}
	if !strings.Contains(out, "more matches not shown: the result is limited to 256 KiB") {
		t.Errorf("result does not say it was cut:\n%s", out[len(out)-300:])
	}
}
