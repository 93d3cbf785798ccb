package files

import (
	"context"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// longName is the longest name Linux allows (255 bytes).
var longName = strings.Repeat("n", 251) + ".txt"

// oddNames are file names that must not break anything.
var oddNames = []string{
	"with space.txt",
	" leading space.txt",
	"new\nline.txt",
	"100%d%s%%.txt",
	"bad\xff\xfe.txt",
	"tab\there.txt",
	`"quoted".txt`,
	"ünïcødé.txt",
	longName,
}

// fixture builds, in a fresh temporary directory, a workspace "root" and,
// beside it, a directory "outside" that no tool may reach, then opens the
// workspace. It returns the workspace and the directory holding both.
//
//	outside/secret.txt, outside/dir/inner.txt
//	root/a.txt ("hello\n"), root/sub/b.txt, root/sub/deeper/c.txt
//	symlinks in root: see below
func fixture(t testing.TB) (*workspace, string) {
	t.Helper()
	top := t.TempDir()
	root := filepath.Join(top, "root")
	outside := filepath.Join(top, "outside")
	files := map[string]string{
		"outside/secret.txt":     "secret\n",
		"outside/dir/inner.txt":  "inner\n",
		"root/a.txt":             "hello\n",
		"root/sub/b.txt":         "bee\n",
		"root/sub/deeper/c.txt":  "sea\n",
		"root/sub/deeper/d.bin":  "\x00\x01\x02",
		"root/readme.md":         "# readme\nhello world\n",
		"root/.git/config":       "hello from git\n",
		"root/sub/mode-0600.txt": "private\n",
	}
	for name, content := range files {
		p := filepath.Join(top, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(root, "sub/mode-0600.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range oddNames {
		if err := os.WriteFile(filepath.Join(root, name), []byte("odd "+name+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"link-in-file":  "a.txt",
		"link-in-dir":   "sub",
		"abs-in":        filepath.Join(root, "a.txt"),
		"abs-in-dir":    filepath.Join(root, "sub"),
		"chain-in1":     "chain-in2",
		"chain-in2":     "sub/../a.txt",
		"dangling":      "no-such-file",
		"link-out-file": "../outside/secret.txt",
		"link-out-dir":  "../outside/dir",
		"abs-out":       filepath.Join(outside, "secret.txt"),
		"abs-out-dir":   outside,
		"chain-out1":    "chain-out2",
		"chain-out2":    "sub/up-out",
		"loop1":         "loop2",
		"loop2":         "loop1",
		"self":          "self",
		"sub/up":        "..",
		"sub/up-out":    "../..",
		"sub/deep-out":  "deeper/../../../outside/secret.txt",
		"root-slash":    "/",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	w, err := openWorkspace(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.root.Close() })
	return w, top
}

// snapshot records every entry below dir: content for files, target for
// symlinks, and mode, so that a test can tell that nothing changed.
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	snap := make(map[string]string)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		v := fi.Mode().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			v += " -> " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += " " + string(b)
		}
		snap[p] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// diffSnapshots lists what differs between two snapshots.
func diffSnapshots(before, after map[string]string) []string {
	var diff []string
	for _, k := range slices.Sorted(maps.Keys(before)) {
		if a, ok := after[k]; !ok {
			diff = append(diff, "removed "+k)
		} else if a != before[k] {
			diff = append(diff, "changed "+k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[k]; !ok {
			diff = append(diff, "added "+k)
		}
	}
	return diff
}

// An op is one tool's core operation on one path, for the batteries.
type op struct {
	name   string
	writes bool
	run    func(w *workspace, path string) error
}

var ops = []op{
	{"read", false, func(w *workspace, p string) error { _, err := w.read(context.Background(), p, 1, 10); return err }},
	{"write", true, func(w *workspace, p string) error {
		_, err := w.write(context.Background(), p, []byte("pwned\n"))
		return err
	}},
	{"edit", true, func(w *workspace, p string) error {
		_, err := w.edit(context.Background(), p, "e", "E", true)
		return err
	}},
	{"info", false, func(w *workspace, p string) error { _, err := w.info(p); return err }},
	{"list", false, func(w *workspace, p string) error { _, err := w.list(context.Background(), p); return err }},
	{"search", false, func(w *workspace, p string) error {
		_, err := w.search(context.Background(), query{re: regexp.MustCompile("e"), base: p, names: true, contents: true})
		return err
	}},
}
