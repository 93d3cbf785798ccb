package launcher

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/launcher/internal/watch"
	"github.com/mcpgen/mcpgen/manifest"
)

// TestGlobsAgree runs the same patterns and files through the three places
// that match watch patterns: manifest.MatchGlob, the source watcher (which
// reports a change to the file) and walkWatched (which build's up-to-date
// check walks). They must agree on every file: a file the watcher rebuilds
// for but the walk skips lets `build` call a stale binary up to date.
func TestGlobsAgree(t *testing.T) {
	tests := []struct {
		glob  string
		match []string // files it matches
		other []string // files it does not
	}{
		// A hidden directory named below a wildcard: walkWatched used to
		// skip it.
		{"src/*/.gen/*.go", []string{"src/a/.gen/x.go"}, []string{"src/a/gen/x.go", "src/.a/.gen/x.go", "src/a/.gen/sub/x.go"}},
		{"**/*.go", []string{"main.go", "a/b/c.go", "a/.x.go"}, []string{".git/x.go", "a/.cache/x.go", "a/b/c.txt"}},
		{"cmd/x/**", []string{"cmd/x/a.go", "cmd/x/a/b/c", "cmd/x/.env"}, []string{"cmd/x/.hidden/y", "cmd/y/a.go"}},
		{".github/**/*.yml", []string{".github/ci.yml", ".github/workflows/ci.yml"}, []string{".github/.x/ci.yml", "ci.yml"}},
		{"**/.gen/*.go", []string{".gen/x.go", "a/b/.gen/x.go"}, []string{"a/.b/.gen/x.go", "a/gen/x.go"}},
		{"*.go", []string{"main.go"}, []string{"sub/z.go"}},
	}
	for _, tt := range tests {
		t.Run(tt.glob, func(t *testing.T) {
			dir := t.TempDir()
			files := slices.Concat(tt.match, tt.other)
			for _, f := range files {
				writeFile(t, filepath.Join(dir, filepath.FromSlash(f)), "v1")
			}
			want := map[string]bool{}
			for _, f := range tt.match {
				want[f] = true
			}

			matched := map[string]bool{}
			for _, f := range files {
				matched[f] = manifest.MatchGlob(tt.glob, f)
			}

			walked := map[string]bool{}
			m := &manifest.Manifest{Dir: dir}
			s := &manifest.Server{Name: "s", Watch: []string{tt.glob}}
			err := walkWatched(m, s, func(path string, _ fs.FileInfo) bool {
				rel, _ := filepath.Rel(dir, path)
				walked[filepath.ToSlash(rel)] = true
				return true
			})
			if err != nil {
				t.Fatal(err)
			}

			watched := watchedFiles(t, dir, tt.glob, files)

			for _, f := range files {
				if matched[f] != want[f] || walked[f] != want[f] || watched[f] != want[f] {
					t.Errorf("%s: MatchGlob %v, walkWatched %v, the watcher %v; want %v", f, matched[f], walked[f], watched[f], want[f])
				}
			}
		})
	}
}

// watchedFiles rewrites each file in turn under a source watcher with glob
// as its one pattern, and returns those whose change it reported.
func watchedFiles(t *testing.T, dir, glob string, files []string) map[string]bool {
	t.Helper()
	manifestPath := filepath.Join(dir, "mcpgen.toml")
	writeFile(t, manifestPath, "version = 1\n")
	// A sentinel only "sync" watches: inotify keeps the order of events, so
	// once its change is reported, so is everything written before it. It
	// is created before the watcher: created after, its directory's
	// creation could be reported once the sources are set, and mark "sync"
	// before the first file's change, which would then count for the next.
	writeFile(t, filepath.Join(dir, "sync", "s"), "0")
	w, err := watch.New(manifestPath, watch.Options{Debounce: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	go func() { // ends when Close closes Errors
		for err := range w.Errors() {
			t.Logf("watch: %v", err)
		}
	}()
	if err := w.SetSources(dir, map[string][]string{"s": {glob}, "sync": {"sync/*"}}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, f := range files {
		writeFile(t, filepath.Join(dir, filepath.FromSlash(f)), fmt.Sprint("v2 ", i))
		writeFile(t, filepath.Join(dir, "sync", "s"), fmt.Sprint(i+1))
		for synced := false; !synced; {
			select {
			case ev := <-w.Events():
				seen[f] = seen[f] || slices.Contains(ev.Sources, "s")
				synced = slices.Contains(ev.Sources, "sync")
			case <-time.After(waitLong):
				t.Fatalf("%s: the watcher reported nothing", f)
			}
		}
	}
	return seen
}

// TestUpToDateHiddenSources: a source in a hidden directory that a pattern
// names makes the build's output stale when it changes.
func TestUpToDateHiddenSources(t *testing.T) {
	dir := t.TempDir()
	out, src := filepath.Join(dir, "bin", "srv"), filepath.Join(dir, "src", "a", ".gen", "x.go")
	writeFile(t, src, "package gen\n")
	writeFile(t, out, "#!/bin/sh\n")
	m := &manifest.Manifest{Dir: dir}
	cmd, err := manifest.ParseTemplate("./bin/srv")
	if err != nil {
		t.Fatal(err)
	}
	s := &manifest.Server{Name: "srv", Command: cmd, Watch: []string{"src/*/.gen/*.go"}}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(out, old, old); err != nil {
		t.Fatal(err)
	}
	if upToDate(m, s) {
		t.Errorf("the output is older than src/a/.gen/x.go, and upToDate says it is up to date")
	}
	if err := os.Chtimes(src, old.Add(-time.Hour), old.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if !upToDate(m, s) {
		t.Errorf("the output is newer than every source, and upToDate says it is stale")
	}
}

// TestBuildErrorExit: a failed build says how its step ended, a signal by
// its name.
func TestBuildErrorExit(t *testing.T) {
	tests := []struct {
		script string
		want   string
	}{
		{"echo broken >&2; exit 2", "server \"srv\": build failed: exit status 2\n    broken"},
		{"kill -9 $$", "server \"srv\": build failed: killed by SIGKILL"},
		{"kill -TERM $$", "server \"srv\": build failed: killed by SIGTERM"},
	}
	for _, tt := range tests {
		m := &manifest.Manifest{Dir: t.TempDir()}
		s := &manifest.Server{Name: "srv", Build: []string{"sh", "-c", tt.script}}
		_, _, err := Build(context.Background(), nil, m, s, nil, os.Environ(), true)
		if err == nil || err.Error() != tt.want {
			t.Errorf("build %q: got %v, want %q", tt.script, err, tt.want)
		}
	}
}
