package watch

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestWatchSources(t *testing.T) {
	dir := t.TempDir()
	manifestPath := filepath.Join(dir, "mcpgen.toml")
	watchWrite(t, manifestPath, manifestText(0))
	for _, f := range []string{"cmd/x/main.go", "cmd/y/main.go", "cmd/y/internal/z.go", "tmp-y/internal/z.go", "go.mod", "main.go"} {
		watchMkdir(t, filepath.Dir(filepath.Join(dir, f)))
		watchWrite(t, filepath.Join(dir, f), "package main\n")
	}
	watchMkdir(t, filepath.Join(dir, "bin"))
	watchMkdir(t, filepath.Join(dir, "sub"))

	wt := startWatch(t, manifestPath, 20*time.Millisecond)
	wt.setSources(dir, map[string][]string{
		"x":   {"cmd/x/**/*.go", "go.mod"},
		"y":   {"cmd/y/**/*.go", "go.mod"},
		"top": {"*.go"}, // no literal directory
		"web": {"web/dist/**"},
	})
	at := func(rel string) string { return filepath.Join(dir, filepath.FromSlash(rel)) }

	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"under cmd/x", func() { watchWrite(t, at("cmd/x/main.go"), "package main // x\n") }, []string{"x"}},
		{"shared file", func() { watchWrite(t, at("go.mod"), "module m\n") }, []string{"x", "y"}},
		{"build output", func() { watchWrite(t, at("bin/x"), "ELF") }, nil},
		{"top level", func() { watchWrite(t, at("main.go"), "package main // top\n") }, []string{"top"}},
		{"top-level pattern, lower file", func() { watchWrite(t, at("sub/z.go"), "package sub\n") }, nil},
		{"not a match", func() { watchWrite(t, at("cmd/x/README.md"), "x") }, nil},
		{"new directories", func() {
			watchMkdir(t, at("cmd/x/a/b"))
			watchWrite(t, at("cmd/x/a/b/c.go"), "package b\n")
		}, []string{"x"}},
		// Seen only if the new directory is watched, not merely walked.
		{"file in a new directory", func() { watchWrite(t, at("cmd/x/a/b/c.go"), "package b // 2\n") }, []string{"x"}},
		{"hidden directory", func() {
			watchMkdir(t, at("cmd/x/.cache"))
			watchWrite(t, at("cmd/x/.cache/z.go"), "package z\n")
		}, nil},
		{"directory removed", func() { watchCheck(t, os.RemoveAll(at("cmd/x/a"))) }, []string{"x"}},
		{"directory renamed away", func() { watchCheck(t, os.Rename(at("cmd/y"), at("old-y"))) }, []string{"y"}},
		// The watches below it went with it, under their old names.
		{"file in the renamed-away directory", func() { watchWrite(t, at("old-y/internal/z.go"), "package internal // 2\n") }, nil},
		{"directory made again", func() {
			watchMkdir(t, at("cmd/y/internal"))
			watchWrite(t, at("cmd/y/internal/z.go"), "package internal // 3\n")
		}, []string{"y"}},
		{"file in the directory made again", func() { watchWrite(t, at("cmd/y/internal/z.go"), "package internal // 4\n") }, []string{"y"}},
		{"directory replaced by one moved in", func() {
			watchCheck(t, os.RemoveAll(at("cmd/y")))
			watchCheck(t, os.Rename(at("tmp-y"), at("cmd/y")))
		}, []string{"y"}},
		// Seen only if the watches were set up again under the right names.
		{"file in the moved-in directory", func() { watchWrite(t, at("cmd/y/internal/z.go"), "package internal // 5\n") }, []string{"y"}},
		{"literal directory created late", func() {
			watchMkdir(t, at("web/dist/css"))
			watchWrite(t, at("web/dist/css/a.css"), "a{}")
		}, []string{"web"}},
		{"file in the late directory", func() { watchWrite(t, at("web/dist/css/a.css"), "b{}") }, []string{"web"}},
	}
	for _, s := range steps {
		s.do()
		manifest, got := wt.sync()
		if manifest || !slices.Equal(got, s.want) {
			t.Errorf("%s: got manifest %v, sources %q; want false, %q", s.name, manifest, got, s.want)
		}
	}

	watched := wt.w.notify.WatchList()
	for _, d := range []string{"bin", "sub", "cmd/x/a", "cmd/x/.cache", "old-y"} {
		if slices.Contains(watched, at(d)) {
			t.Errorf("%s is watched, want it not", d)
		}
	}
	for _, d := range []string{"cmd", "cmd/x", "cmd/y", "cmd/y/internal", "web/dist/css"} {
		if !slices.Contains(watched, at(d)) {
			t.Errorf("%s is not watched, want it watched", d)
		}
	}
}

func TestWatchSetSourcesReplaces(t *testing.T) {
	dir := t.TempDir()
	manifestPath := filepath.Join(dir, "mcpgen.toml")
	watchWrite(t, manifestPath, manifestText(0))
	for _, f := range []string{"cmd/x/main.go", "cmd/y/main.go"} {
		watchMkdir(t, filepath.Dir(filepath.Join(dir, f)))
		watchWrite(t, filepath.Join(dir, f), "package main\n")
	}
	wt := startWatch(t, manifestPath, 20*time.Millisecond)
	wt.setSources(dir, map[string][]string{"x": {"cmd/x/**/*.go"}})
	wt.setSources(dir, map[string][]string{"y": {"cmd/y/**/*.go"}})

	watchWrite(t, filepath.Join(dir, "cmd/x/main.go"), "package main // x\n")
	watchWrite(t, filepath.Join(dir, "cmd/y/main.go"), "package main // y\n")
	if manifest, got := wt.sync(); manifest || !slices.Equal(got, []string{"y"}) {
		t.Errorf("got manifest %v, sources %q; want false, [y]", manifest, got)
	}
	if slices.Contains(wt.w.notify.WatchList(), filepath.Join(dir, "cmd", "x")) {
		t.Errorf("cmd/x is still watched")
	}
	// The manifest's directory is also the sources' one: dropping every
	// source must not stop watching the manifest.
	watchCheck(t, wt.w.SetSources(dir, nil))
	if !slices.Contains(wt.w.notify.WatchList(), dir) {
		t.Fatalf("the manifest's directory is no longer watched")
	}
	saveRenameOver(t, manifestPath, manifestText(1))
	wt.awaitManifest(manifestText(1))
}

func TestWatchSetSourcesBadPattern(t *testing.T) {
	dir := t.TempDir()
	manifestPath := filepath.Join(dir, "mcpgen.toml")
	watchWrite(t, manifestPath, manifestText(0))
	wt := startWatch(t, manifestPath, 20*time.Millisecond)
	for _, p := range []string{"", "/abs/*.go", "../up/*.go", "cmd/[x"} {
		err := wt.w.SetSources(dir, map[string][]string{"x": {p}})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("server %q: watch pattern %q", "x", p)) {
			t.Errorf("pattern %q: got error %v, want one that names the server and pattern", p, err)
		}
	}
}

func TestWatchCap(t *testing.T) {
	dir := t.TempDir()
	manifestPath := filepath.Join(dir, "mcpgen.toml")
	watchWrite(t, manifestPath, manifestText(0))
	for _, d := range []string{"a", "b", "c", "d", "e"} {
		watchMkdir(t, filepath.Join(dir, "src", d))
	}
	wt := startWatch(t, manifestPath, 20*time.Millisecond)
	// Safe to set here: run reads maxDirs only while it handles SetSources.
	wt.w.sources.maxDirs = 3
	watchCheck(t, wt.w.SetSources(dir, map[string][]string{"x": {"src/**/*.go"}}))
	select {
	case err := <-wt.errs:
		if !strings.Contains(err.Error(), "3 directories watched, the most allowed") {
			t.Errorf("got error %v, want one about the cap", err)
		}
	case <-time.After(watchHang):
		t.Fatalf("no error about the cap within %v", watchHang)
	}
	if n := len(wt.w.notify.WatchList()); n > 3 {
		t.Errorf("%d directories watched, want at most 3", n)
	}
}
