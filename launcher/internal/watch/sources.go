package watch

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/fsnotify/fsnotify"

	"github.com/mcpgen/mcpgen/manifest"
)

// maxSourceDirs caps the directories watched for sources: each costs an
// inotify watch, and a pattern such as "**/*.go" in a large tree could
// otherwise use up the user's whole allowance (fs.inotify.max_user_watches).
const maxSourceDirs = 4096

// sources watches the files that servers are built from: every directory
// that one of their watch patterns may reach, kept in step as directories
// are created, removed and renamed, and it marks the servers whose
// patterns match a file that changed. The Watcher's goroutine owns it.
type sources struct {
	dirs    *dirs
	report  func(error)
	maxDirs int

	dir     string          // absolute, symbolic links resolved
	globs   []glob          // every server's patterns
	watched map[string]bool // the directories that globs may reach, watched
	capHit  bool            // maxDirs was reported since the last set
	dirty   map[string]bool // servers marked since the last settle
}

// A glob is one watch pattern of one server.
type glob struct {
	server  string
	pattern string // as manifest.CheckGlob accepts it
}

func newSources(d *dirs, report func(error)) *sources {
	return &sources{dirs: d, report: report, maxDirs: maxSourceDirs, watched: map[string]bool{}, dirty: map[string]bool{}}
}

// compileGlobs checks every server's patterns and orders them by server.
func compileGlobs(sources map[string][]string) ([]glob, error) {
	var globs []glob
	for _, server := range slices.Sorted(maps.Keys(sources)) {
		for _, p := range sources[server] {
			if err := manifest.CheckGlob(p); err != nil {
				return nil, fmt.Errorf("server %q: watch pattern %q: %v", server, p, err)
			}
			globs = append(globs, glob{server: server, pattern: p})
		}
	}
	return globs, nil
}

// set replaces the patterns and watches what the new ones may reach;
// changes noted for servers that are gone are dropped. It returns the
// servers that have patterns.
func (s *sources) set(dir string, globs []glob) map[string]bool {
	s.dir, s.globs, s.capHit = dir, globs, false
	keep := map[string]bool{}
	for _, g := range globs {
		keep[g.server] = true
	}
	maps.DeleteFunc(s.dirty, func(server string, _ bool) bool { return !keep[server] })
	s.sync()
	return keep
}

// lost is told that events were lost: any source may have changed, and
// directories may have come and gone unseen.
func (s *sources) lost() {
	s.sync()
	for _, g := range s.globs {
		s.dirty[g.server] = true
	}
}

// settle returns the servers marked since it was last called.
func (s *sources) settle() []string {
	marked := slices.Collect(maps.Keys(s.dirty))
	clear(s.dirty)
	return marked
}

// sync makes the watched directories those that the patterns may reach
// now.
func (s *sources) sync() {
	// Drop what the patterns no longer reach first, so that the cap counts
	// only directories that stay.
	for d := range s.watched {
		if rel, ok := s.rel(d); !ok || !s.mayHold(rel) {
			s.dropDir(d)
		}
	}
	seen := map[string]bool{}
	if len(s.globs) > 0 {
		s.addTree(s.dir, false, seen)
	}
	for d := range s.watched {
		if !seen[d] {
			s.dropDir(d) // gone, or beyond the cap
		}
	}
}

// event notes which servers e concerns, keeps the watched directories in
// step with directories created, removed and renamed, and reports whether
// it marked a server.
func (s *sources) event(e fsnotify.Event) bool {
	if s.watched[e.Name] && e.Has(fsnotify.Remove|fsnotify.Rename) {
		s.dropTree(e.Name)
		if !e.Has(fsnotify.Rename) {
			return false // its files were removed first, each with an event
		}
		// Moved away: the files below went with it, and no event says so.
		rel, ok := s.rel(e.Name)
		if !ok {
			return false
		}
		marked := false
		for _, g := range s.globs {
			if manifest.GlobMayHold(g.pattern, rel) {
				s.dirty[g.server] = true
				marked = true
			}
		}
		return marked
	}
	// Only directories watched for sources count: the manifest's own
	// directories (a ConfigMap's timestamped ones) are not sources.
	if !s.watched[filepath.Dir(e.Name)] {
		return false
	}
	rel, ok := s.rel(e.Name)
	if !ok {
		return false
	}
	if e.Has(fsnotify.Create) {
		if info, err := os.Lstat(e.Name); err == nil && info.IsDir() {
			if !s.mayHold(rel) {
				return false
			}
			// Created or moved in, perhaps with files already: watch it and
			// everything below, and count the files found.
			return s.addTree(e.Name, true, nil)
		}
	}
	return s.markFile(rel)
}

// addTree watches root and the directories below it that a pattern may
// reach. With mark, it marks the servers whose patterns match a file found;
// seen, if not nil, collects the directories visited.
func (s *sources) addTree(root string, mark bool, seen map[string]bool) bool {
	marked := false
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone, or unreadable: nothing to watch there
		}
		rel, ok := s.rel(p)
		if !ok {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			if mark && s.markFile(rel) {
				marked = true
			}
			return nil
		}
		if !s.mayHold(rel) {
			return filepath.SkipDir
		}
		// Watch before the walk reads the directory: a file created in
		// between is then both seen by the walk and reported, never missed.
		if !s.addDir(p) {
			return filepath.SkipAll
		}
		if seen != nil {
			seen[p] = true
		}
		return nil
	})
	return marked
}

// addDir watches dir for sources and reports whether the walk that found
// it should go on.
func (s *sources) addDir(dir string) bool {
	if s.watched[dir] {
		return true
	}
	if len(s.watched) >= s.maxDirs {
		if !s.capHit {
			s.capHit = true
			s.report(fmt.Errorf("watch %s: %d directories watched, the most allowed: changes in the rest go unseen (narrow the watch patterns)", dir, s.maxDirs))
		}
		return false
	}
	if err := s.dirs.add(dir); err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return true
		case errors.Is(err, syscall.ENOSPC):
			s.report(watchError(dir, err))
			return false // every further one would fail too
		}
		s.report(watchError(dir, err))
		return true
	}
	s.watched[dir] = true
	return true
}

// dropTree stops watching dir and the watched directories below it. A
// directory renamed away keeps its watches under the old names, so they
// must go before a directory of that name is watched again.
func (s *sources) dropTree(dir string) {
	for d := range s.watched {
		if d == dir || strings.HasPrefix(d, dir+string(filepath.Separator)) {
			s.dropDir(d)
		}
	}
}

func (s *sources) dropDir(dir string) {
	delete(s.watched, dir)
	s.dirs.drop(dir)
}

// markFile marks the servers with a pattern that matches rel, a file's
// slash-separated path relative to the sources' directory.
func (s *sources) markFile(rel string) bool {
	marked := false
	for _, g := range s.globs {
		if manifest.MatchGlob(g.pattern, rel) {
			s.dirty[g.server] = true
			marked = true
		}
	}
	return marked
}

// mayHold reports whether a pattern may match a file below the directory
// rel (relative to the sources' directory; "" for that directory itself).
func (s *sources) mayHold(rel string) bool {
	for _, g := range s.globs {
		if manifest.GlobMayHold(g.pattern, rel) {
			return true
		}
	}
	return false
}

// rel returns p relative to the sources' directory, slash-separated.
func (s *sources) rel(p string) (string, bool) {
	if s.dir == "" {
		return "", false
	}
	r, err := filepath.Rel(s.dir, p)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", false
	}
	if r == "." {
		return "", true
	}
	return filepath.ToSlash(r), true
}
