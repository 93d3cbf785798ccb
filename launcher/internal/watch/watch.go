// Package watch follows what a workspace session depends on in the file
// system, and reports its changes: the manifest, through symbolic links and
// ConfigMap swaps, by its content (manifest.go), at once when it was
// replaced whole by valid content and debounced otherwise; and the sources
// that servers are built from, by their watch patterns, debounced
// (sources.go).
package watch

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// An Event says what changed since the previous one.
type Event struct {
	// Manifest, when not nil, is the manifest's new content: apply it.
	Manifest *Content
	Sources  []string // servers whose watched sources changed, sorted: rebuild, then restart them
}

// Content is the manifest's content as the Watcher read it: the bytes it
// hashed to tell a change. Parse these rather than read the file again: a
// read of one's own may see a later content, which the Watcher would then
// take for one reported already (X, then Y, then X again, around that
// read, would leave the caller on Y).
type Content struct {
	Data []byte
	// Seq orders the contents that one Watcher hands out, through Events
	// and Read: a later read has a greater Seq. A caller that loads the
	// manifest from both applies a content only if its Seq is above that
	// of the content it applied last.
	Seq uint64
}

// Options configure a Watcher.
type Options struct {
	// Debounce is the quiet time waited for after a change before it is
	// reported.
	Debounce time.Duration
	// Complete, if set, says whether content of the manifest is whole and
	// valid (it parses). The manifest replaced whole (a file renamed over
	// it, as editors save; a symbolic link swapped, as a ConfigMap is
	// updated) by content that Complete accepts is reported at once,
	// without the debounce. Writes in place, which may be read half done,
	// and content that Complete refuses wait for the debounce. It runs on
	// the Watcher's goroutine, for each such replacement.
	Complete func(data []byte) bool
}

// maxQueuedErrors bounds the errors kept for a reader of Errors that is
// slow or absent; later ones are dropped rather than block watching.
const maxQueuedErrors = 32

// A Watcher follows the manifest and the servers' watched sources and
// reports their changes, debounced: a burst of writes (an editor's save, a
// ConfigMap update, a git checkout) becomes one Event.
//
// It watches directories, never files: editors and Kubernetes replace a
// file by renaming another over it, which a watch on the file itself does
// not survive. Events are filtered by name, attribute-only changes are
// ignored, and a single timer, reset by every relevant event, settles them.
//
// One goroutine, started by New and ended by Close, owns the fields from
// dirs on; SetSources hands it work through setc.
type Watcher struct {
	notify   *fsnotify.Watcher
	debounce time.Duration
	complete func([]byte) bool

	eventc    chan Event
	errc      chan error
	setc      chan sourcesRequest
	readc     chan readRequest
	quit      chan struct{} // closed by Close
	done      chan struct{} // closed by run once eventc and errc are closed
	closeOnce sync.Once
	closeErr  error // written by run before done is closed

	dirs     *dirs     // the directories watched, for both parts
	manifest *follower // the manifest
	sources  *sources  // the servers' sources

	// Settled changes, waiting for the reader of eventc.
	pendManifest *Content
	pending      map[string]bool
	errq         []error
	seq          uint64 // the Seq of the last Content handed out
}

type readRequest struct {
	result *readResult
	done   chan struct{}
}

type readResult struct {
	content *Content
	err     error
}

type sourcesRequest struct {
	dir   string
	globs []glob
	done  chan struct{}
}

// New starts watching the manifest at manifestPath. Its content now is
// taken as the one the caller loaded: only a later change is reported. A
// caller that loaded it before should load it again through Read, which
// hands over the content the Watcher compares later ones with. Call Close
// to stop.
func New(manifestPath string, opts Options) (*Watcher, error) {
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
	d := &dirs{notify: notify, refs: map[string]int{}}
	if err := d.add(dir); err != nil {
		notify.Close()
		return nil, watchError(dir, err)
	}
	w := &Watcher{
		notify:   notify,
		debounce: max(opts.Debounce, 0),
		complete: opts.Complete,
		eventc:   make(chan Event),
		errc:     make(chan error),
		setc:     make(chan sourcesRequest),
		readc:    make(chan readRequest),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		dirs:     d,
		pending:  map[string]bool{},
	}
	w.manifest = newFollower(d, w.report, dir, filepath.Base(abs))
	w.sources = newSources(d, w.report)
	if snap, _, err := w.manifest.read(); err != nil {
		w.report(err)
	} else {
		w.manifest.last = snap
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
// relative to dir, as manifest.CheckGlob accepts them and manifest.MatchGlob
// matches them. It returns once the directories those patterns may reach
// are watched. Directories created later are watched as they appear; hidden
// ones only where a pattern names them.
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

// Read reads the manifest now and hands over its content, which the
// Watcher takes for the one the caller applies: only a later change is
// reported, and a change that was noted but not yet received is dropped
// (this read is as new). It fails when the manifest cannot be read, and
// after Close.
func (w *Watcher) Read() (*Content, error) {
	req := readRequest{result: &readResult{}, done: make(chan struct{})}
	select {
	case w.readc <- req:
	case <-w.done:
		return nil, errors.New("watch: watcher closed")
	}
	<-req.done // run always finishes a request it took
	return req.result.content, req.result.err
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
			w.pendManifest = nil
			clear(w.pending)
		case errc <- err:
			w.errq = w.errq[1:]
		case req := <-w.setc:
			keep := w.sources.set(req.dir, req.globs)
			// Changes noted for servers that are gone are dropped.
			maps.DeleteFunc(w.pending, func(s string, _ bool) bool { return !keep[s] })
			close(req.done)
		case req := <-w.readc:
			data, err := w.manifest.take()
			if err == nil {
				// The caller applies this: a change noted before is no
				// news any more.
				w.pendManifest = nil
				req.result.content = w.content(data)
			}
			req.result.err = err
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
	m := w.manifest.event(e)
	s := w.sources.event(e)
	if m && w.complete != nil && e.Has(fsnotify.Create) {
		// Renamed or linked over one of the manifest's paths: replaced
		// whole. Content that parses is news now; anything else (an
		// empty file that is being written) waits for the debounce.
		if data, ok := w.manifest.replaced(w.complete); ok {
			w.pendManifest = w.content(data)
		}
	}
	return m || s
}

// content numbers data as the next Content handed out.
func (w *Watcher) content(data []byte) *Content {
	w.seq++
	return &Content{Data: data, Seq: w.seq}
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
	w.report(errors.New("watch: too many changes at once, some went unseen: reloading the manifest and rebuilding every server to be safe" + overflowHint))
	w.manifest.lost()
	w.sources.lost()
	return true
}

// settle runs when the changes have quieted down: it reads the manifest if
// it may have changed, and makes the changes pending.
func (w *Watcher) settle() {
	if data, ok := w.manifest.settle(); ok {
		w.pendManifest = w.content(data)
	}
	for _, s := range w.sources.settle() {
		w.pending[s] = true
	}
}

func (w *Watcher) pendingEvent() (Event, bool) {
	if w.pendManifest == nil && len(w.pending) == 0 {
		return Event{}, false
	}
	return Event{Manifest: w.pendManifest, Sources: slices.Sorted(maps.Keys(w.pending))}, true
}

func (w *Watcher) report(err error) {
	if len(w.errq) < maxQueuedErrors {
		w.errq = append(w.errq, err)
	}
}

// dirs are the directories watched, with how many of the Watcher's two
// parts need each: the manifest's directory is often the sources' too, and
// a directory stays watched while either part needs it.
type dirs struct {
	notify *fsnotify.Watcher
	refs   map[string]int
}

// add watches dir, or counts one more user of its watch.
func (d *dirs) add(dir string) error {
	if d.refs[dir] == 0 {
		if err := d.notify.Add(dir); err != nil {
			return err
		}
	}
	d.refs[dir]++
	return nil
}

// drop counts one user fewer of dir's watch, and removes the watch when it
// was the last. The kernel drops the watch of a removed directory itself,
// so an error here says nothing useful.
func (d *dirs) drop(dir string) {
	switch d.refs[dir] {
	case 0:
	case 1:
		delete(d.refs, dir)
		_ = d.notify.Remove(dir)
	default:
		d.refs[dir]--
	}
}
