package watch

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fsnotify/fsnotify"

	"github.com/mcpgen/mcpgen/manifest"
)

// maxLinks is how many symbolic links resolveManifest follows before it
// gives up.
const maxLinks = 40

// A follower follows the manifest: it resolves the manifest's symbolic
// links anew at every read (a ConfigMap volume swaps a link to update it),
// watches the directories they go through, and tells a change by the
// content's hash, not by the events, so that a save that leaves the content
// as it was reports nothing. The Watcher's goroutine owns it.
type follower struct {
	dirs   *dirs
	report func(error)

	path    string           // the manifest, in its directory as resolved once, at New
	dir     string           // that directory
	deps    map[string]bool  // the paths whose change may change what the manifest reads
	watched map[string]bool  // the directories of deps, and dir: watched
	last    manifestSnapshot // what was reported last; zero: nothing readable yet
	dirty   bool             // an event concerned it since the last settle
}

// A manifestSnapshot identifies what the manifest read: the file it
// resolved to and a hash of its content.
type manifestSnapshot struct {
	file string
	sum  [sha256.Size]byte
}

// newFollower returns the follower of dir/name; dir is watched already.
func newFollower(d *dirs, report func(error), dir, name string) *follower {
	return &follower{
		dirs:    d,
		report:  report,
		path:    filepath.Join(dir, name),
		dir:     dir,
		watched: map[string]bool{dir: true},
	}
}

// event notes whether e concerns the manifest, and reports it.
func (f *follower) event(e fsnotify.Event) bool {
	if f.deps[e.Name] {
		f.dirty = true
		return true
	}
	return false
}

// lost is told that events were lost: the manifest may have changed.
func (f *follower) lost() {
	f.last = manifestSnapshot{}
	f.dirty = true
}

// settle runs when the changes have quieted down, and returns what the
// manifest reads now if it differs from what was reported last. Comparing
// content rather than trusting events turns a burst of writes into few
// reports, and makes a save that leaves the content as it was (or a chmod,
// or a backup file) report nothing.
func (f *follower) settle() ([]byte, bool) {
	if !f.dirty {
		return nil, false
	}
	f.dirty = false
	snap, data, err := f.read()
	if err != nil {
		// Often a save in progress (the old file renamed away, the new one
		// not written yet); the event that completes it comes next.
		f.report(fmt.Errorf("%v (keeping the manifest loaded last)", err))
		return nil, false
	}
	if snap == f.last {
		return nil, false
	}
	f.last = snap
	return data, true
}

// replaced runs when one of the manifest's paths was replaced whole (a
// rename or a link over it), and returns what the manifest reads now if it
// differs from what was reported last and complete accepts it: then there
// is nothing to wait for. Otherwise the change is left to settle: a file
// created empty and then written, or a manifest that does not parse, may
// yet change within the debounce.
func (f *follower) replaced(complete func([]byte) bool) ([]byte, bool) {
	snap, data, err := f.read()
	if err != nil || snap == f.last || !complete(data) {
		return nil, false
	}
	f.last, f.dirty = snap, false
	return data, true
}

// take reads the manifest for a caller that applies it: what it reads is
// what later content is compared with.
func (f *follower) take() ([]byte, error) {
	snap, data, err := f.read()
	if err != nil {
		return nil, err
	}
	f.last = snap
	return data, nil
}

// read follows the manifest's symbolic links anew, watches the directories
// they go through, then reads it. Watching before reading means that a
// change made after the read is seen.
func (f *follower) read() (manifestSnapshot, []byte, error) {
	file, deps, err := resolveManifest(f.dir, filepath.Base(f.path))
	f.watch(deps)
	if err != nil {
		return manifestSnapshot{}, nil, err
	}
	// Read through the links rather than file: if they changed since they
	// were resolved, the content is current and the change has an event
	// coming.
	data, err := manifest.ReadFile(f.path)
	if err != nil {
		return manifestSnapshot{}, nil, err
	}
	return manifestSnapshot{file: file, sum: sha256.Sum256(data)}, data, nil
}

// watch makes deps the paths that concern the manifest, and watches their
// directories (and only those).
func (f *follower) watch(deps []string) {
	f.deps = make(map[string]bool, len(deps))
	want := map[string]bool{f.dir: true}
	for _, d := range deps {
		f.deps[d] = true
		want[filepath.Dir(d)] = true
	}
	for d := range f.watched {
		if !want[d] {
			delete(f.watched, d)
			f.dirs.drop(d)
		}
	}
	for d := range want {
		if f.watched[d] {
			continue
		}
		if err := f.dirs.add(d); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				f.report(watchError(d, err))
			}
			continue
		}
		f.watched[d] = true
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
