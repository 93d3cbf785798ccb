package files

import (
	"errors"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestEscapes is the path-escape battery: every path below leads out of the
// workspace (or loops), and every tool must refuse it with a message that
// says so, and change nothing anywhere.
func TestEscapes(t *testing.T) {
	w, top := fixture(t)
	outside := filepath.Join(top, "outside")
	tests := []struct {
		name string
		path string
		want string // in the error
	}{
		{"parent", "..", "is outside the workspace"},
		{"parent file", "../outside/secret.txt", "is outside the workspace"},
		{"climb after descent", "a/../../x", "is outside the workspace"},
		{"climb deep", "sub/deeper/../../../outside/secret.txt", "is outside the workspace"},
		{"many climbs", strings.Repeat("../", 50) + "etc/passwd", "is outside the workspace"},
		{"absolute outside", filepath.Join(outside, "secret.txt"), "is outside the workspace"},
		{"absolute system", "/etc/passwd", "is outside the workspace"},
		{"absolute sibling prefix", w.dir + "-other/x", "is outside the workspace"},
		{"absolute climbing out", w.dir + "/../outside/secret.txt", "is outside the workspace"},
		{"quoted climb", `"../outside/secret.txt"`, "is outside the workspace"},
		{"symlinked file", "link-out-file", `"link-out-file" is a symlink to "../outside/secret.txt"`},
		{"symlinked dir", "link-out-dir", `"link-out-dir" is a symlink to "../outside/dir"`},
		{"inside symlinked dir", "link-out-dir/inner.txt", `"link-out-dir" is a symlink`},
		{"new file in symlinked dir", "link-out-dir/new.txt", `"link-out-dir" is a symlink`},
		{"new dir in symlinked dir", "link-out-dir/x/y/new.txt", `"link-out-dir" is a symlink`},
		{"absolute symlink", "abs-out", "is a symlink to " + `"` + filepath.Join(outside, "secret.txt")},
		{"absolute symlinked dir", "abs-out-dir/secret.txt", `"abs-out-dir" is a symlink`},
		{"symlink to /", "root-slash/etc/passwd", `"root-slash" is a symlink to "/"`},
		{"chain", "chain-out1", `"sub/up-out" is a symlink to "../.."`},
		{"chain then climb", "chain-out1/outside/secret.txt", "is outside the workspace"},
		{"symlink climbing", "sub/up-out", "is outside the workspace"},
		{"symlink to inside then out", "sub/up/link-out-file", `"link-out-file" is a symlink`},
		{"symlink with climb in target", "sub/deep-out", `"sub/deep-out" is a symlink`},
		{"inside symlinked dir climbing", "link-in-dir/../..", "is outside the workspace"},
		{"loop", "loop1", "symlink loop"},
		{"loop below", "loop1/x", "symlink loop"},
		{"self loop", "self", "symlink loop"},
	}
	for _, tt := range tests {
		for _, o := range ops {
			t.Run(tt.name+"/"+o.name, func(t *testing.T) {
				before := snapshot(t, top)
				err := o.run(w, tt.path)
				if err == nil {
					t.Fatalf("%s(%q) succeeded, want an error with %q", o.name, tt.path, tt.want)
				}
				if !strings.Contains(err.Error(), tt.want) {
					t.Errorf("%s(%q) error:\n got %v\nwant it to contain %q", o.name, tt.path, err, tt.want)
				}
				if !strings.Contains(tt.want, "loop") {
					var outside *outsideError
					if !errors.As(err, &outside) {
						t.Errorf("%s(%q) error is %T, want *outsideError", o.name, tt.path, err)
					}
					if !strings.Contains(err.Error(), w.dir) {
						t.Errorf("%s(%q) error %q does not name the workspace %s", o.name, tt.path, err, w.dir)
					}
				}
				if diff := diffSnapshots(before, snapshot(t, top)); len(diff) > 0 {
					t.Errorf("%s(%q) changed the tree: %v", o.name, tt.path, diff)
				}
			})
		}
	}
}

// TestInside checks that paths which stay inside, symlinks included, reach
// the file they name.
func TestInside(t *testing.T) {
	w, top := fixture(t)
	real, err := filepath.EvalSymlinks(w.dir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want string // content of the file reached
	}{
		{"a.txt", "hello\n"},
		{"./a.txt", "hello\n"},
		{"sub/../a.txt", "hello\n"},
		{"sub//b.txt", "bee\n"},
		{"sub/deeper/../b.txt", "bee\n"},
		{filepath.Join(w.dir, "a.txt"), "hello\n"},
		{filepath.Join(real, "sub/b.txt"), "bee\n"},
		{w.dir + "/sub/../a.txt", "hello\n"},
		{"link-in-file", "hello\n"},
		{"link-in-dir/b.txt", "bee\n"},
		{"abs-in", "hello\n"},
		{"abs-in-dir/deeper/c.txt", "sea\n"},
		{"chain-in1", "hello\n"},
		{"sub/up/a.txt", "hello\n"},
		{"sub/up/sub/up/link-in-dir/b.txt", "bee\n"},
		{`"a.txt"`, "hello\n"},
		{`"sub/b\x2etxt"`, "bee\n"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			win, err := w.read(t.Context(), tt.path, 1, 10)
			if err != nil {
				t.Fatalf("read(%q): %v", tt.path, err)
			}
			if got := string(win.text); got != tt.want {
				t.Errorf("read(%q) = %q, want %q", tt.path, got, tt.want)
			}
			if _, err := w.info(tt.path); err != nil {
				t.Errorf("info(%q): %v", tt.path, err)
			}
			before := snapshot(t, filepath.Join(top, "outside"))
			if _, err := w.edit(t.Context(), tt.path, tt.want, "changed\n", false); err != nil {
				t.Fatalf("edit(%q): %v", tt.path, err)
			}
			if _, err := w.write(t.Context(), tt.path, []byte(tt.want)); err != nil {
				t.Fatalf("write(%q): %v", tt.path, err)
			}
			if win, _ := w.read(t.Context(), tt.path, 1, 10); win == nil || string(win.text) != tt.want {
				t.Errorf("after edit and write, read(%q) = %v, want %q", tt.path, win, tt.want)
			}
			if diff := diffSnapshots(before, snapshot(t, filepath.Join(top, "outside"))); len(diff) > 0 {
				t.Errorf("changed outside: %v", diff)
			}
		})
	}
}

// TestSymlinksKept checks that writing through a symlink replaces the file
// it leads to and keeps the link.
func TestSymlinksKept(t *testing.T) {
	w, _ := fixture(t)
	for _, p := range []string{"link-in-file", "abs-in", "chain-in1"} {
		if _, err := w.write(t.Context(), p, []byte("via "+p+"\n")); err != nil {
			t.Fatalf("write(%q): %v", p, err)
		}
		in, err := w.info(p)
		if err != nil {
			t.Fatal(err)
		}
		if in.target == "" || in.resolved != "a.txt" {
			t.Errorf("after write(%q): info says target %q resolved %q, want a symlink to a.txt", p, in.target, in.resolved)
		}
		if win, _ := w.read(t.Context(), "a.txt", 1, 1); win == nil || string(win.text) != "via "+p+"\n" {
			t.Errorf("after write(%q), a.txt = %v", p, win)
		}
	}
	// A dangling symlink inside: writing creates its target.
	if created, err := w.write(t.Context(), "dangling", []byte("now here\n")); err != nil || !created {
		t.Fatalf("write(dangling) = %v, %v; want created", created, err)
	}
	if win, _ := w.read(t.Context(), "no-such-file", 1, 1); win == nil || string(win.text) != "now here\n" {
		t.Errorf("dangling target = %v", win)
	}
}

func TestResolve(t *testing.T) {
	w, _ := fixture(t)
	tests := []struct {
		path, want, err string
	}{
		{".", ".", ""},
		{"", "", "path is empty"},
		{"a", "a", ""},
		{"a/", "a", ""},
		{"a/b/../c", "a/c", ""},
		{w.dir, ".", ""},
		{w.dir + "/", ".", ""},
		{w.dir + "/x/y", "x/y", ""},
		{"..", "", "outside"},
		{"/", "", "outside"},
		{"a\x00b", "", "NUL byte"},
		{`"a\nb"`, "a\nb", ""},
		{`"a\xffb"`, "a\xffb", ""},
		{`"not closed`, `"not closed`, ""},
		{`"bad \q escape"`, `"bad \q escape"`, ""},
		{`"../x"`, "", "outside"},
		// ".." applies to the text, before symlinks, as filepath.Clean does.
		{"sub/up/..", "sub", ""},
		{strings.Repeat("./", 5000) + "a", "a", ""},
		{strings.Repeat("d/", 2048) + "a", "", "longer than 4096 bytes"},
	}
	for _, tt := range tests {
		got, err := w.resolve(tt.path)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("resolve(%q) = %q, %v; want an error with %q", tt.path, got, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("resolve(%q) = %q, %v; want %q", tt.path, got, err, tt.want)
		}
	}
}

// TestOddNames checks that names with odd bytes work in every tool and are
// shown in a form that can be passed back.
func TestOddNames(t *testing.T) {
	w, _ := fixture(t)
	l, err := w.list(t.Context(), ".")
	if err != nil {
		t.Fatal(err)
	}
	listed := formatListing(w, l)
	for _, name := range oddNames {
		t.Run(quote(name), func(t *testing.T) {
			shown := quote(name)
			if !strings.Contains(listed, "\n"+shown+"  ") {
				t.Errorf("listing does not show %s:\n%s", shown, listed)
			}
			if strings.ContainsAny(shown, "\n\t") {
				t.Errorf("quote(%q) = %q holds a control character", name, shown)
			}
			for _, p := range []string{name, shown} {
				win, err := w.read(t.Context(), p, 1, 10)
				if err != nil {
					t.Fatalf("read(%q): %v", p, err)
				}
				if want := "odd " + name + "\n"; string(win.text) != want {
					t.Errorf("read(%q) = %q, want %q", p, win.text, want)
				}
				if _, err := w.info(p); err != nil {
					t.Errorf("info(%q): %v", p, err)
				}
			}
			if _, err := w.edit(t.Context(), shown, "odd", "even", false); err != nil {
				t.Errorf("edit(%q): %v", shown, err)
			}
			copied := name[:min(len(name), 200)] + ".copy"
			if _, err := w.write(t.Context(), copied, []byte("x")); err != nil {
				t.Errorf("write(%q): %v", copied, err)
			}
		})
	}
	f, err := w.search(t.Context(), query{re: mustCompile(t, `^even `), base: ".", contents: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(f.matches); got != len(oddNames) {
		t.Errorf("search found %d edited files, want %d:\n%s", got, len(oddNames), formatFound("^even ", f))
	}
}

func TestLongNames(t *testing.T) {
	w, top := fixture(t)
	deep := strings.Repeat(strings.Repeat("d", 250)+"/", 16) + "x" // 4017 bytes
	tests := []struct {
		path string
		ok   []string // the ops that succeed; the others fail cleanly
	}{
		{strings.Repeat("x", 256), nil},
		{strings.Repeat("dir/", 1025) + "x", nil},
		{strings.Repeat("./", 5000) + "a.txt", []string{"read", "write", "edit", "info", "search"}},
		{deep, []string{"read", "write", "edit", "info", "search"}},
	}
	if _, err := w.write(t.Context(), deep, []byte("deep\n")); err != nil {
		t.Fatalf("write(%d-byte path): %v", len(deep), err)
	}
	for _, tt := range tests {
		for _, o := range ops {
			before := snapshot(t, filepath.Join(top, "outside"))
			err := o.run(w, tt.path)
			switch ok := slices.Contains(tt.ok, o.name); {
			case ok && err != nil:
				t.Errorf("%s(%d-byte path): %v", o.name, len(tt.path), err)
			case !ok && err == nil:
				t.Errorf("%s(%d-byte path) succeeded, want an error", o.name, len(tt.path))
			case !ok && len(err.Error()) > 500:
				t.Errorf("%s(%d-byte path): error of %d bytes", o.name, len(tt.path), len(err.Error()))
			}
			if diff := diffSnapshots(before, snapshot(t, filepath.Join(top, "outside"))); len(diff) > 0 {
				t.Errorf("%s(%d-byte path) changed outside: %v", o.name, len(tt.path), diff)
			}
		}
	}
}

func TestQuote(t *testing.T) {
	w := &workspace{dir: "/w", real: "/w"}
	tests := []struct{ name, want string }{
		{"plain.txt", "plain.txt"},
		{"with space.txt", "with space.txt"},
		{" lead", `" lead"`},
		{"trail ", `"trail "`},
		{"new\nline", `"new\nline"`},
		{"bad\xff", `"bad\xff"`},
		{`"q"`, `"\"q\""`},
		{`mid"q`, `mid"q`},
		{"ünï", "ünï"},
		{"nb\u00a0sp", `"nb\u00a0sp"`},
		{"", `""`},
	}
	for _, tt := range tests {
		got := quote(tt.name)
		if got != tt.want {
			t.Errorf("quote(%q) = %s, want %s", tt.name, got, tt.want)
		}
		if tt.name == "" {
			continue
		}
		if back, err := w.resolve(got); err != nil || back != tt.name {
			t.Errorf("resolve(quote(%q)) = %q, %v; want the name back", tt.name, back, err)
		}
	}
}

func mustCompile(t testing.TB, pattern string) *regexp.Regexp {
	t.Helper()
	re, err := compilePattern(pattern)
	if err != nil {
		t.Fatal(err)
	}
	return re
}
