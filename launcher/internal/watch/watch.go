// Package watch follows what a workspace session depends on in the file
// system, and reports its changes, debounced: the manifest, through
// symbolic links and ConfigMap swaps, by its content; and the sources that
// servers are built from, by their watch patterns.
package watch

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/mcpgen/mcpgen/manifest"
)

// A Event says what changed since the previous one.
type Event struct {
	Manifest bool     // the manifest's content may have changed: reload it
	Sources  []string // servers whose watched sources changed, sorted: rebuild, then restart them
}

const (
	// maxSourceDirs caps the directories watched for sources: each costs an
	// inotify watch, and a pattern such as "**/*.go" in a large tree could
	// otherwise use up the user's whole allowance (fs.inotify.max_user_watches).
	maxSourceDirs = 4096
	// maxQueuedErrors bounds the errors kept for a reader of Errors that
	// is slow or absent; later ones are dropped rather than block watching.
	maxQueuedErrors = 32
	// maxLinks is how many symbolic links resolveManifest follows before it
	// gives up.
	maxLinks = 40
)

// A Watcher follows the manifest and the servers' watched sources and
// reports their changes, debounced: a burst of writes (an editor's save, a
// ConfigMap update, a git checkout) becomes one Event.
//
// It watches directories, never files: editors and Kubernetes replace a
// file by renaming another over it, which a watch on the file itself does
// not survive. Events are filtered by name, attribute-only changes are
// ignored, and a single timer, reset by every relevant event, settles them.
//
// One goroutine, started by New and ended by Close, owns the fields
// from manifest on; SetSources hands it work through setc.
type Watcher struct {
	notify   *fsnotify.Watcher
	debounce time.Duration
	maxDirs  int

	eventc    chan Event
	errc      chan error
	setc      chan sourcesRequest
	quit      chan struct{} // closed by Close
	done      chan struct{} // closed by run once eventc and errc are closed
	closeOnce sync.Once
	closeErr  error // written by run before done is closed

	// The manifest: its path, in its directory as resolved once, at
	// New.
	manifest string
	manDir   string
	deps     map[string]bool  // the paths whose change may change what manifest reads
	manDirs  map[string]bool  // the directories of deps, watched
	last     manifestSnapshot // what was reported last; zero: nothing readable yet

	// The sources.
	srcDir  string // absolute, symbolic links resolved
	globs   []watchGlob
	srcDirs map[string]bool // the directories that globs may reach, watched
	capHit  bool            // maxDirs was reported since the last SetSources

	// Changes seen while the debounce timer runs, then settled ones that
	// wait for the reader of eventc.
	dirtyManifest bool
	dirty         map[string]bool
	pendManifest  bool
	pending       map[string]bool
	errq          []error
}

// A manifestSnapshot identifies what the manifest read: the file it
// resolved to and a hash of its content.
type manifestSnapshot struct {
	file string
	sum  [sha256.Size]byte
}

// A watchGlob is one watch pattern of one server.
type watchGlob struct {
	server  string
	pattern string
	elems   []string
}

type sourcesRequest struct {
	dir   string
	globs []watchGlob
	done  chan struct{}
}

// New starts watching the manifest at manifestPath. Its content now
// is taken as the one the caller loaded: only a later change is reported.
// So start it before loading the manifest, not after: a change in between
// then costs a reload that changes nothing, instead of going unseen.
// Call Close to stop.
func New(manifestPath string, debounce time.Duration) (*Watcher, error) {
	abs, err := filepath.Abs(manifestPath)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %v", manifestPath, err)
	}
	// The directory is resolved once: its own symbolic links are not
	// followed for changes, which would mean watching its parents.
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return nil, fmt.Errorf("watch %s: %v", manifestPath, err)
	}
	notify, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, watchError(dir, err)
	}
	if err := notify.Add(dir); err != nil {
		notify.Close()
		return nil, watchError(dir, err)
	}
	w := &Watcher{
		notify:   notify,
		debounce: max(debounce, 0),
		maxDirs:  maxSourceDirs,
		eventc:   make(chan Event),
		errc:     make(chan error),
		setc:     make(chan sourcesRequest),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		manifest: filepath.Join(dir, filepath.Base(abs)),
		manDir:   dir,
		manDirs:  map[string]bool{dir: true},
		srcDirs:  map[string]bool{},
		dirty:    map[string]bool{},
		pending:  map[string]bool{},
	}
	if snap, err := w.readManifest(); err != nil {
		w.report(err)
	} else {
		w.last = snap
	}
	go w.run()
	return w, nil
}

// Events delivers what changed. A change that arrives before the previous
// event was received is merged into it, so a slow reader gets fewer events,
// never stale ones. Events is closed after Close.
func (w *Watcher) Events() <-chan Event { return w.eventc }

// Errors delivers problems worth logging; none of them stops the Watcher.
// Reading it is optional: up to 32 wait for a reader, later ones are
// dropped. Errors is closed after Close.
func (w *Watcher) Errors() <-chan error { return w.errc }

// SetSources replaces the watched sources: each server's watch patterns,
// relative to dir (slash-separated, path.Match per element, "**" for any
// number of directories). It returns once the directories those patterns may
// reach are watched. Directories created later are watched as they appear;
// hidden ones are skipped unless a pattern names them.
func (w *Watcher) SetSources(dir string, sources map[string][]string) error {
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return fmt.Errorf("watch %s: %v", dir, err)
	}
	globs, err := compileGlobs(sources)
	if err != nil {
		return err
	}
	req := sourcesRequest{dir: abs, globs: globs, done: make(chan struct{})}
	select {
	case w.setc <- req:
	case <-w.done:
		return errors.New("watch: watcher closed")
	}
	<-req.done // run always finishes a request it took
	return nil
}

// Close stops watching and waits until Events and Errors are closed. It is
// safe to call more than once.
func (w *Watcher) Close() error {
	w.closeOnce.Do(func() { close(w.quit) })
	<-w.done
	return w.closeErr
}

// run is the Watcher's goroutine. It ends when Close closes quit (or, should
// fsnotify fail, when its channels close) and then closes eventc and errc.
func (w *Watcher) run() {
	defer close(w.done)
	defer close(w.errc)
	defer close(w.eventc)
	defer func() { w.closeErr = w.notify.Close() }()

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		// Offer what is pending, without ever blocking on the reader.
		var eventc chan<- Event
		ev, ok := w.pendingEvent()
		if ok {
			eventc = w.eventc
		}
		var errc chan<- error
		var err error
		if len(w.errq) > 0 {
			errc, err = w.errc, w.errq[0]
		}

		select {
		case <-w.quit:
			return
		case e, ok := <-w.notify.Events:
			if !ok {
				return
			}
			if w.handle(e) {
				timer.Reset(w.debounce)
			}
		case e, ok := <-w.notify.Errors:
			if !ok {
				return
			}
			if w.fail(e) {
				timer.Reset(w.debounce)
			}
		case <-timer.C:
			w.settle()
		case eventc <- ev:
			w.pendManifest = false
			clear(w.pending)
		case errc <- err:
			w.errq = w.errq[1:]
		case req := <-w.setc:
			w.setSources(req.dir, req.globs)
			close(req.done)
		}
	}
}

// handle notes what e may have changed and reports whether it was relevant.
func (w *Watcher) handle(e fsnotify.Event) bool {
	// Attribute changes (chmod, touch, a link count that drops when another
	// file is renamed over this one) change no content.
	if e.Op&^fsnotify.Chmod == 0 {
		return false
	}
	relevant := false
	if w.deps[e.Name] {
		w.dirtyManifest = true
		relevant = true
	}
	if w.sourceEvent(e) {
		relevant = true
	}
	return relevant
}

// fail handles an error from fsnotify and reports whether it marked
// anything changed.
func (w *Watcher) fail(err error) bool {
	if !errors.Is(err, fsnotify.ErrEventOverflow) {
		w.report(fmt.Errorf("watch: %v", err))
		return false
	}
	// Some events were lost: assume everything changed, and look again for
	// directories that appeared or went unseen.
	w.report(errors.New("watch: too many changes at once, some went unseen: reloading the manifest and rebuilding every server to be safe (raise fs.inotify.max_queued_events)"))
	w.last = manifestSnapshot{}
	w.dirtyManifest = true
	w.syncSources()
	for _, g := range w.globs {
		w.dirty[g.server] = true
	}
	return true
}

// settle runs when the changes have quiet down: it reads the manifest if it
// may have changed, and makes the changes pending.
func (w *Watcher) settle() {
	if w.dirtyManifest {
		w.dirtyManifest = false
		if w.checkManifest() {
			w.pendManifest = true
		}
	}
	for s := range w.dirty {
		w.pending[s] = true
	}
	clear(w.dirty)
}

func (w *Watcher) pendingEvent() (Event, bool) {
	if !w.pendManifest && len(w.pending) == 0 {
		return Event{}, false
	}
	return Event{Manifest: w.pendManifest, Sources: slices.Sorted(maps.Keys(w.pending))}, true
}

func (w *Watcher) report(err error) {
	if len(w.errq) < maxQueuedErrors {
		w.errq = append(w.errq, err)
	}
}

// checkManifest reports whether what the manifest reads now differs from
// what was reported last. Comparing content rather than trusting events
// turns a burst of writes into few reports, and makes a save that leaves
// the content as it was (or a chmod, or a backup file) report nothing.
func (w *Watcher) checkManifest() bool {
	snap, err := w.readManifest()
	if err != nil {
		// Often a save in progress (the old file renamed away, the new one
		// not written yet); the event that completes it comes next.
		w.report(fmt.Errorf("%v (keeping the manifest loaded last)", err))
		return false
	}
	if snap == w.last {
		return false
	}
	w.last = snap
	return true
}

// readManifest follows the manifest's symbolic links anew, watches the
// directories they go through, then reads it. Watching before reading means
// that a change made after the read is seen.
func (w *Watcher) readManifest() (manifestSnapshot, error) {
	file, deps, err := resolveManifest(w.manDir, filepath.Base(w.manifest))
	w.watchManifest(deps)
	if err != nil {
		return manifestSnapshot{}, err
	}
	// Read through the links rather than file: if they changed since they
	// were resolved, the content is current and the change has an event
	// coming.
	data, err := os.ReadFile(w.manifest)
	if err != nil {
		return manifestSnapshot{}, err
	}
	return manifestSnapshot{file: file, sum: sha256.Sum256(data)}, nil
}

// watchManifest makes deps the paths that concern the manifest, and
// watches their directories (and only those).
func (w *Watcher) watchManifest(deps []string) {
	w.deps = make(map[string]bool, len(deps))
	want := map[string]bool{w.manDir: true}
	for _, d := range deps {
		w.deps[d] = true
		want[filepath.Dir(d)] = true
	}
	for d := range w.manDirs {
		if !want[d] {
			delete(w.manDirs, d)
			w.unwatch(d)
		}
	}
	for d := range want {
		if w.manDirs[d] {
			continue
		}
		if !w.srcDirs[d] {
			if err := w.notify.Add(d); err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					w.report(watchError(d, err))
				}
				continue
			}
		}
		w.manDirs[d] = true
	}
}

// resolveManifest follows dir/name to the file it reads, one path element at a
// time, and returns that file and every path whose change may change what
// dir/name reads: dir/name itself, each symbolic link on the way, and the
// file. For a Kubernetes ConfigMap volume, where mcpgen.toml ->
// ..data/mcpgen.toml and ..data -> ..2026_11_22_10_00_00.123, that is the
// manifest, ..data and the file in the timestamped directory; an update
// renames a new link over ..data. On error, the paths found so far are
// returned, the missing one included.
func resolveManifest(dir, name string) (string, []string, error) {
	at := dir
	var deps []string
	add := func(p string) {
		if !slices.Contains(deps, p) {
			deps = append(deps, p)
		}
	}
	add(filepath.Join(dir, name))
	todo := []string{name}
	for links := 0; len(todo) > 0; {
		elem := todo[0]
		todo = todo[1:]
		switch elem {
		case "", ".":
			continue
		case "..":
			at = filepath.Dir(at)
			continue
		}
		p := filepath.Join(at, elem)
		info, err := os.Lstat(p)
		if err != nil {
			add(p)
			return "", deps, err
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			at = p
			continue
		}
		add(p)
		if links++; links > maxLinks {
			return "", deps, fmt.Errorf("%s: too many levels of symbolic links", filepath.Join(dir, name))
		}
		target, err := os.Readlink(p)
		if err != nil {
			return "", deps, err
		}
		if filepath.IsAbs(target) {
			at = "/"
		}
		todo = append(strings.Split(filepath.ToSlash(target), "/"), todo...)
	}
	add(at)
	return at, deps, nil
}

// setSources replaces the sources and watches what the new patterns may
// reach; changes noted for servers that are gone are dropped.
func (w *Watcher) setSources(dir string, globs []watchGlob) {
	w.srcDir, w.globs, w.capHit = dir, globs, false
	keep := map[string]bool{}
	for _, g := range globs {
		keep[g.server] = true
	}
	maps.DeleteFunc(w.dirty, func(s string, _ bool) bool { return !keep[s] })
	maps.DeleteFunc(w.pending, func(s string, _ bool) bool { return !keep[s] })
	w.syncSources()
}

// syncSources makes the watched source directories those that the
// patterns may reach now.
func (w *Watcher) syncSources() {
	// Drop what the patterns no longer reach first, so that the cap counts
	// only directories that stay.
	for d := range w.srcDirs {
		if rel, ok := w.rel(d); !ok || !w.mayHold(rel) {
			w.dropSourceDir(d)
		}
	}
	seen := map[string]bool{}
	if len(w.globs) > 0 {
		w.addTree(w.srcDir, false, seen)
	}
	for d := range w.srcDirs {
		if !seen[d] {
			w.dropSourceDir(d) // gone, or beyond the cap
		}
	}
}

// sourceEvent notes which servers e concerns, keeps the watched directories
// in step with directories created, removed and renamed, and reports
// whether it marked a server.
func (w *Watcher) sourceEvent(e fsnotify.Event) bool {
	if w.srcDirs[e.Name] && e.Has(fsnotify.Remove|fsnotify.Rename) {
		w.dropTree(e.Name)
		if !e.Has(fsnotify.Rename) {
			return false // its files were removed first, each with an event
		}
		// Moved away: the files below went with it, and no event says so.
		rel, ok := w.rel(e.Name)
		if !ok {
			return false
		}
		marked := false
		for _, g := range w.globs {
			if mayHold(g.elems, splitRel(rel)) {
				w.dirty[g.server] = true
				marked = true
			}
		}
		return marked
	}
	// Only directories watched for sources count: the manifest's own
	// directories (a ConfigMap's timestamped ones) are not sources.
	if !w.srcDirs[filepath.Dir(e.Name)] {
		return false
	}
	rel, ok := w.rel(e.Name)
	if !ok {
		return false
	}
	if e.Has(fsnotify.Create) {
		if info, err := os.Lstat(e.Name); err == nil && info.IsDir() {
			if !w.mayHold(rel) {
				return false
			}
			// Created or moved in, perhaps with files already: watch it and
			// everything below, and count the files found.
			return w.addTree(e.Name, true, nil)
		}
	}
	return w.markFile(rel)
}

// addTree watches root and the directories below it that a pattern may
// reach. With mark, it marks the servers whose patterns match a file found;
// seen, if not nil, collects the directories visited.
func (w *Watcher) addTree(root string, mark bool, seen map[string]bool) bool {
	marked := false
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone, or unreadable: nothing to watch there
		}
		rel, ok := w.rel(p)
		if !ok {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			if mark && w.markFile(rel) {
				marked = true
			}
			return nil
		}
		if !w.mayHold(rel) {
			return filepath.SkipDir
		}
		// Watch before the walk reads the directory: a file created in
		// between is then both seen by the walk and reported, never missed.
		if !w.addSourceDir(p) {
			return filepath.SkipAll
		}
		if seen != nil {
			seen[p] = true
		}
		return nil
	})
	return marked
}

// addSourceDir watches dir for sources and reports whether the walk that
// found it should go on.
func (w *Watcher) addSourceDir(dir string) bool {
	if w.srcDirs[dir] {
		return true
	}
	if len(w.srcDirs) >= w.maxDirs {
		if !w.capHit {
			w.capHit = true
			w.report(fmt.Errorf("watch %s: %d directories watched, the most allowed: changes in the rest go unseen (narrow the watch patterns)", dir, w.maxDirs))
		}
		return false
	}
	if !w.manDirs[dir] {
		if err := w.notify.Add(dir); err != nil {
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return true
			case errors.Is(err, syscall.ENOSPC):
				w.report(watchError(dir, err))
				return false // every further one would fail too
			}
			w.report(watchError(dir, err))
			return true
		}
	}
	w.srcDirs[dir] = true
	return true
}

// dropTree stops watching dir and the watched directories below it. A
// directory renamed away keeps its watches under the old names, so they
// must go before a directory of that name is watched again.
func (w *Watcher) dropTree(dir string) {
	for d := range w.srcDirs {
		if d == dir || strings.HasPrefix(d, dir+string(filepath.Separator)) {
			w.dropSourceDir(d)
		}
	}
}

func (w *Watcher) dropSourceDir(dir string) {
	delete(w.srcDirs, dir)
	w.unwatch(dir)
}

// unwatch removes the watch on dir unless the manifest or the sources still
// need it. The kernel drops the watch of a removed directory itself, so an
// error here says nothing useful.
func (w *Watcher) unwatch(dir string) {
	if !w.srcDirs[dir] && !w.manDirs[dir] {
		_ = w.notify.Remove(dir)
	}
}

// markFile marks the servers with a pattern that matches rel, a file's
// slash-separated path relative to the sources' directory.
func (w *Watcher) markFile(rel string) bool {
	marked := false
	for _, g := range w.globs {
		if manifest.MatchGlob(g.pattern, rel) {
			w.dirty[g.server] = true
			marked = true
		}
	}
	return marked
}

// mayHold reports whether a pattern may match a file below the directory
// rel (relative to the sources' directory; "" for that directory itself).
func (w *Watcher) mayHold(rel string) bool {
	elems := splitRel(rel)
	for _, g := range w.globs {
		if mayHold(g.elems, elems) {
			return true
		}
	}
	return false
}

// rel returns p relative to the sources' directory, slash-separated.
func (w *Watcher) rel(p string) (string, bool) {
	if w.srcDir == "" {
		return "", false
	}
	r, err := filepath.Rel(w.srcDir, p)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", false
	}
	if r == "." {
		return "", true
	}
	return filepath.ToSlash(r), true
}

func splitRel(rel string) []string {
	if rel == "" {
		return nil
	}
	return strings.Split(rel, "/")
}

// mayHold reports whether the pattern pat may match a file below the
// directory dir (both split into elements). A hidden directory is reached
// only by a pattern element that names it, starting with a dot itself:
// neither "*" nor "**" walks into .git.
func mayHold(pat, dir []string) bool {
	if len(dir) == 0 {
		return len(pat) > 0 // an element is left for the file
	}
	if len(pat) == 0 {
		return false
	}
	if pat[0] == "**" {
		return mayHold(pat[1:], dir) || (!isHidden(dir[0]) && mayHold(pat, dir[1:]))
	}
	if isHidden(dir[0]) && !isHidden(pat[0]) {
		return false
	}
	ok, _ := path.Match(pat[0], dir[0])
	return ok && mayHold(pat[1:], dir[1:])
}

func isHidden(name string) bool { return strings.HasPrefix(name, ".") }

// compileGlobs checks every server's patterns and orders them by server.
func compileGlobs(sources map[string][]string) ([]watchGlob, error) {
	var globs []watchGlob
	for _, server := range slices.Sorted(maps.Keys(sources)) {
		for _, p := range sources[server] {
			if err := checkWatchPattern(p); err != nil {
				return nil, fmt.Errorf("server %q: watch pattern %q: %v", server, p, err)
			}
			globs = append(globs, watchGlob{server: server, pattern: p, elems: strings.Split(p, "/")})
		}
	}
	return globs, nil
}

func checkWatchPattern(p string) error {
	if p == "" {
		return errors.New("empty pattern")
	}
	if strings.HasPrefix(p, "/") || p == ".." || strings.HasPrefix(p, "../") {
		return errors.New("patterns are relative to the manifest's directory and stay inside it")
	}
	for _, elem := range strings.Split(p, "/") {
		if _, err := path.Match(elem, ""); err != nil {
			return errors.New("malformed pattern (use *, ?, [a-z] within a name and ** for any directories)")
		}
	}
	return nil
}

// watchError describes a failure to watch dir, with the limit to raise
// when it is one.
func watchError(dir string, err error) error {
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return fmt.Errorf("watch %s: %v (raise fs.inotify.max_user_watches)", dir, err)
	case errors.Is(err, syscall.EMFILE):
		return fmt.Errorf("watch %s: %v (raise fs.inotify.max_user_instances)", dir, err)
	}
	return fmt.Errorf("watch %s: %v", dir, err)
}
