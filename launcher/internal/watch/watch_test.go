package watch

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watchHang bounds every wait in these tests; reaching it is a failure,
// never a measurement.
const watchHang = 30 * time.Second

// A watchTest is a Watcher under test, with a sentinel to wait on: a file
// under sync/ that only the server "sync" watches. inotify keeps the order
// of events, so once the event that reports the sentinel has arrived, so
// has everything caused by what was done before it was written.
type watchTest struct {
	t    *testing.T
	w    *Watcher
	dir  string // the sources' directory
	errs chan error
	n    int
}

func startWatch(t *testing.T, manifestPath string, debounce time.Duration) *watchTest {
	t.Helper()
	w, err := New(manifestPath, debounce)
	if err != nil {
		t.Fatal(err)
	}
	wt := &watchTest{t: t, w: w, errs: make(chan error, 100)}
	drained := make(chan struct{})
	go func() { // ends when Close closes Errors
		defer close(drained)
		for err := range w.Errors() {
			t.Logf("watch error: %v", err)
			select {
			case wt.errs <- err:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		<-drained
	})
	return wt
}

// setSources watches sources, plus the sentinel, in dir.
func (wt *watchTest) setSources(dir string, sources map[string][]string) {
	wt.t.Helper()
	all := map[string][]string{"sync": {"sync/*"}}
	for s, globs := range sources {
		all[s] = globs
	}
	watchMkdir(wt.t, filepath.Join(dir, "sync"))
	if err := wt.w.SetSources(dir, all); err != nil {
		wt.t.Fatal(err)
	}
	wt.dir = dir
}

func (wt *watchTest) next() Event {
	wt.t.Helper()
	select {
	case ev, ok := <-wt.w.Events():
		if !ok {
			wt.t.Fatal("Events closed")
		}
		return ev
	case <-time.After(watchHang):
		wt.t.Fatalf("no event within %v", watchHang)
	}
	return Event{}
}

// syncEvents writes the sentinel and returns the events up to the one that
// reports it.
func (wt *watchTest) syncEvents() []Event {
	wt.t.Helper()
	wt.n++
	watchWrite(wt.t, filepath.Join(wt.dir, "sync", "s"), fmt.Sprint(wt.n))
	var evs []Event
	for {
		ev := wt.next()
		evs = append(evs, ev)
		if slices.Contains(ev.Sources, "sync") {
			return evs
		}
	}
}

// sync is syncEvents, summed up: whether any event was for the manifest,
// and every server reported, the sentinel left out.
func (wt *watchTest) sync() (manifest bool, sources []string) {
	wt.t.Helper()
	seen := map[string]bool{}
	for _, ev := range wt.syncEvents() {
		manifest = manifest || ev.Manifest
		for _, s := range ev.Sources {
			seen[s] = true
		}
	}
	delete(seen, "sync")
	return manifest, slices.Sorted(maps.Keys(seen))
}

// awaitManifest reads events until one reports the manifest changed and the
// manifest then reads want. It returns what each such event read.
func (wt *watchTest) awaitManifest(path, want string) []string {
	wt.t.Helper()
	var reads []string
	for {
		ev := wt.next()
		if !ev.Manifest || len(ev.Sources) > 0 {
			wt.t.Fatalf("got %+v, want an event for the manifest alone", ev)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			reads = append(reads, err.Error())
			continue
		}
		reads = append(reads, string(data))
		if string(data) == want {
			return reads
		}
	}
}

// manifestText is the manifest's n-th content. Each is as long as the
// others, so that writing one over another in place leaves nothing behind.
func manifestText(n int) string { return fmt.Sprintf("version = 1 # %04d\n", n) }

func watchWrite(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func watchMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func watchCheck(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A manifestSave is one way a manifest changes; each leaves path reading data.
type manifestSave func(t *testing.T, path, data string)

// saveRenameOver saves the way most editors do: a temporary file renamed
// over the original.
func saveRenameOver(t *testing.T, path, data string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	watchWrite(t, tmp, data)
	watchCheck(t, os.Rename(tmp, path))
}

// saveInPlace overwrites the bytes without truncating.
func saveInPlace(t *testing.T, path, data string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	watchCheck(t, err)
	_, err = f.WriteAt([]byte(data), 0)
	watchCheck(t, err)
	watchCheck(t, f.Close())
}

// saveTruncate empties the file, then writes it: two changes, the first
// of which leaves it empty.
func saveTruncate(t *testing.T, path, data string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	watchCheck(t, err)
	watchCheck(t, f.Truncate(0))
	_, err = f.Write([]byte(data))
	watchCheck(t, err)
	watchCheck(t, f.Close())
}

// saveBackup saves the way vim does by default: the original renamed to a
// backup, a new file written, the backup removed.
func saveBackup(t *testing.T, path, data string) {
	t.Helper()
	watchCheck(t, os.Rename(path, path+"~"))
	watchWrite(t, path, data)
	watchCheck(t, os.Remove(path+"~"))
}

// saveRetarget points path, a symbolic link, at a new file in a new
// directory beside path's own.
func saveRetarget(t *testing.T, path, data string) {
	t.Helper()
	dir := filepath.Join(filepath.Dir(filepath.Dir(path)), fmt.Sprintf("target-%d", time.Now().UnixNano()))
	watchMkdir(t, dir)
	watchWrite(t, filepath.Join(dir, "real.toml"), data)
	tmp := path + ".link"
	watchCheck(t, os.Symlink(filepath.Join(dir, "real.toml"), tmp))
	watchCheck(t, os.Rename(tmp, path))
}

// saveConfigMap updates path the way the kubelet updates a ConfigMap volume:
// path -> ..data/NAME, ..data -> a timestamped directory; the new data goes
// into a new timestamped directory, a ..data_tmp link to it is renamed over
// ..data, and the old directory is removed. It makes path that link first
// if it is not.
func saveConfigMap(t *testing.T, path, data string) {
	t.Helper()
	dir, name := filepath.Split(path)
	dataLink := filepath.Join(dir, "..data")
	old, _ := os.Readlink(dataLink)
	ts := ".." + time.Now().Format("2006_01_02_15_04_05.000000000")
	watchMkdir(t, filepath.Join(dir, ts))
	watchWrite(t, filepath.Join(dir, ts, name), data)
	tmp := filepath.Join(dir, "..data_tmp")
	watchCheck(t, os.Symlink(ts, tmp))
	watchCheck(t, os.Rename(tmp, dataLink))
	if target, _ := os.Readlink(path); target != filepath.Join("..data", name) {
		watchCheck(t, os.Symlink(filepath.Join("..data", name), path+".link"))
		watchCheck(t, os.Rename(path+".link", path))
	}
	if old != "" {
		watchCheck(t, os.RemoveAll(filepath.Join(dir, old)))
	}
}

// Layouts: each makes a manifest under root reading manifestText(0) and
// returns its path.

func plainManifest(t *testing.T, root string) string {
	t.Helper()
	path := filepath.Join(root, "proj", "mcpgen.toml")
	watchMkdir(t, filepath.Dir(path))
	watchWrite(t, path, manifestText(0))
	return path
}

// linkedManifest: proj/mcpgen.toml -> ../conf/real.toml.
func linkedManifest(t *testing.T, root string) string {
	t.Helper()
	path := filepath.Join(root, "proj", "mcpgen.toml")
	watchMkdir(t, filepath.Join(root, "proj"))
	watchMkdir(t, filepath.Join(root, "conf"))
	watchWrite(t, filepath.Join(root, "conf", "real.toml"), manifestText(0))
	watchCheck(t, os.Symlink(filepath.Join("..", "conf", "real.toml"), path))
	return path
}

func configMapManifest(t *testing.T, root string) string {
	t.Helper()
	path := filepath.Join(root, "cfg", "mcpgen.toml")
	watchMkdir(t, filepath.Dir(path))
	saveConfigMap(t, path, manifestText(0))
	return path
}

func TestWatchManifest(t *testing.T) {
	tests := []struct {
		name    string
		layout  func(*testing.T, string) string
		steps   []manifestSave
		sources map[string][]string
	}{
		{"rename over", plainManifest, []manifestSave{saveRenameOver, saveRenameOver}, nil},
		{"in place", plainManifest, []manifestSave{saveInPlace, saveInPlace}, nil},
		{"truncate and write", plainManifest, []manifestSave{saveTruncate, saveTruncate}, nil},
		{"editor backup", plainManifest, []manifestSave{saveBackup, saveBackup}, nil},
		// The link's target is in another directory, written in place.
		{"symlink target written", linkedManifest, []manifestSave{saveTruncate, saveInPlace}, nil},
		// Each retarget moves the file to a directory not watched before;
		// the in-place writes after it are seen only if it is watched now.
		{"symlink retargeted", linkedManifest, []manifestSave{saveRetarget, saveInPlace, saveRetarget, saveTruncate}, nil},
		{"configmap", configMapManifest, []manifestSave{saveConfigMap, saveConfigMap, saveConfigMap}, nil},
		// The timestamped directories are the manifest's, hidden: not
		// sources, even for a pattern that would match their files.
		{"configmap beside sources", configMapManifest, []manifestSave{saveConfigMap, saveConfigMap}, map[string][]string{"toml": {"**/*.toml"}}},
		{"plain file becomes configmap", plainManifest, []manifestSave{saveConfigMap, saveInPlace, saveRenameOver}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.layout(t, t.TempDir())
			wt := startWatch(t, path, 20*time.Millisecond)
			wt.setSources(filepath.Dir(path), tt.sources)
			for i, step := range tt.steps {
				want := manifestText(i + 1)
				step(t, path, want)
				wt.awaitManifest(path, want)
				// Drain what the step still has coming, so that the next
				// step's event is its own.
				if _, sources := wt.sync(); len(sources) > 0 {
					t.Errorf("step %d: got sources %q, want none", i+1, sources)
				}
			}
		})
	}
}

// TestWatchManifestNoise checks that what leaves the manifest's content as
// it was reports nothing.
func TestWatchManifestNoise(t *testing.T) {
	path := plainManifest(t, t.TempDir())
	dir := filepath.Dir(path)
	wt := startWatch(t, path, 20*time.Millisecond)
	wt.setSources(dir, nil)

	noise := []struct {
		name string
		do   func()
	}{
		{"unrelated file", func() { watchWrite(t, filepath.Join(dir, "notes.txt"), "x") }},
		{"unrelated file removed", func() { watchCheck(t, os.Remove(filepath.Join(dir, "notes.txt"))) }},
		{"chmod", func() { watchCheck(t, os.Chmod(path, 0o600)) }},
		{"touch", func() { now := time.Now(); watchCheck(t, os.Chtimes(path, now, now)) }},
		{"swap file", func() { watchWrite(t, filepath.Join(dir, ".mcpgen.toml.swp"), "x") }},
		{"same content renamed over", func() { saveRenameOver(t, path, manifestText(0)) }},
		{"same content in place", func() { saveInPlace(t, path, manifestText(0)) }},
	}
	for _, n := range noise {
		n.do()
		if manifest, sources := wt.sync(); manifest || len(sources) > 0 {
			t.Errorf("%s: got manifest %v, sources %q; want neither", n.name, manifest, sources)
		}
	}
}

// TestWatchManifestBurst mixes every way of saving, 50 times in a row, and
// checks that the watcher reports few events, the last of them after the
// final content.
func TestWatchManifestBurst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "proj", "mcpgen.toml")
	watchMkdir(t, filepath.Dir(path))
	watchWrite(t, path, manifestText(0))
	wt := startWatch(t, path, 100*time.Millisecond)
	wt.setSources(filepath.Dir(path), nil)

	ways := []manifestSave{saveRenameOver, saveInPlace, saveTruncate, saveBackup, saveRetarget, saveConfigMap}
	const writes = 50
	final := manifestText(9999)
	for i := 1; i <= writes; i++ {
		data := manifestText(i)
		if i == writes {
			data = final
		}
		ways[i%len(ways)](t, path, data)
	}
	reads := wt.awaitManifest(path, final)
	// What the burst still has coming arrives before the sentinel does.
	for _, ev := range wt.syncEvents() {
		if ev.Manifest {
			data, err := os.ReadFile(path)
			watchCheck(t, err)
			reads = append(reads, string(data))
		}
	}
	t.Logf("%d events for %d writes", len(reads), writes)
	if len(reads) == 0 || len(reads) >= writes {
		t.Errorf("got %d events for %d writes, want at least one and fewer than %d", len(reads), writes, writes)
	}
	if last := reads[len(reads)-1]; last != final {
		t.Errorf("the last event read %q, want %q", last, final)
	}
}

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
	wt.awaitManifest(manifestPath, manifestText(1))
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
	wt.w.maxDirs = 3
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

// TestWatchOverflow checks that lost events make the watcher report
// everything, to be safe.
func TestWatchOverflow(t *testing.T) {
	dir := t.TempDir()
	manifestPath := filepath.Join(dir, "mcpgen.toml")
	watchWrite(t, manifestPath, manifestText(0))
	watchMkdir(t, filepath.Join(dir, "cmd", "x"))
	wt := startWatch(t, manifestPath, 20*time.Millisecond)
	wt.setSources(dir, map[string][]string{"x": {"cmd/x/*.go"}, "y": {"go.mod"}})

	// fsnotify's reader sends on this channel too; the watcher cannot tell
	// the difference.
	select {
	case wt.w.notify.Errors <- fsnotify.ErrEventOverflow:
	case <-time.After(watchHang):
		t.Fatalf("the watcher took no error within %v", watchHang)
	}
	manifest, got := wt.sync()
	if !manifest || !slices.Equal(got, []string{"x", "y"}) {
		t.Errorf("got manifest %v, sources %q; want true, [x y]", manifest, got)
	}
	select {
	case err := <-wt.errs:
		if !strings.Contains(err.Error(), "too many changes") {
			t.Errorf("got error %v, want one about lost events", err)
		}
	case <-time.After(watchHang):
		t.Fatalf("no error about lost events within %v", watchHang)
	}
}

func TestWatchClose(t *testing.T) {
	dir := t.TempDir()
	manifestPath := filepath.Join(dir, "mcpgen.toml")
	watchWrite(t, manifestPath, manifestText(0))
	w, err := New(manifestPath, time.Millisecond)
	watchCheck(t, err)
	watchCheck(t, w.Close())
	watchCheck(t, w.Close())
	if _, ok := <-w.Events(); ok {
		t.Error("Events still open after Close")
	}
	if _, ok := <-w.Errors(); ok {
		t.Error("Errors still open after Close")
	}
	if err := w.SetSources(dir, nil); err == nil {
		t.Error("SetSources after Close: got no error")
	}
}

func TestWatchMissingDir(t *testing.T) {
	if _, err := New(filepath.Join(t.TempDir(), "nope", "mcpgen.toml"), time.Millisecond); err == nil {
		t.Error("got no error for a manifest in a missing directory")
	}
}

// TestWatchFilter checks which events concern the manifest, without the
// file system.
func TestWatchFilter(t *testing.T) {
	w := &Watcher{
		deps:    map[string]bool{"/cfg/mcpgen.toml": true, "/cfg/..data": true},
		srcDirs: map[string]bool{},
		dirty:   map[string]bool{},
	}
	tests := []struct {
		name string
		ev   fsnotify.Event
		want bool
	}{
		{"write", fsnotify.Event{Name: "/cfg/mcpgen.toml", Op: fsnotify.Write}, true},
		{"renamed over", fsnotify.Event{Name: "/cfg/mcpgen.toml", Op: fsnotify.Create}, true},
		{"renamed away", fsnotify.Event{Name: "/cfg/mcpgen.toml", Op: fsnotify.Rename}, true},
		{"removed", fsnotify.Event{Name: "/cfg/mcpgen.toml", Op: fsnotify.Remove}, true},
		{"chmod only", fsnotify.Event{Name: "/cfg/mcpgen.toml", Op: fsnotify.Chmod}, false},
		{"write and chmod", fsnotify.Event{Name: "/cfg/mcpgen.toml", Op: fsnotify.Write | fsnotify.Chmod}, true},
		{"configmap swap", fsnotify.Event{Name: "/cfg/..data", Op: fsnotify.Create}, true},
		{"configmap tmp link", fsnotify.Event{Name: "/cfg/..data_tmp", Op: fsnotify.Create}, false},
		{"unrelated", fsnotify.Event{Name: "/cfg/notes.txt", Op: fsnotify.Write}, false},
		{"same name elsewhere", fsnotify.Event{Name: "/other/mcpgen.toml", Op: fsnotify.Write}, false},
	}
	for _, tt := range tests {
		w.dirtyManifest = false
		if got := w.handle(tt.ev); got != tt.want || w.dirtyManifest != tt.want {
			t.Errorf("%s: got %v (dirty %v), want %v", tt.name, got, w.dirtyManifest, tt.want)
		}
	}
}

func TestWatchMayHold(t *testing.T) {
	tests := []struct {
		pattern, dir string
		want         bool
	}{
		{"*.go", "", true},
		{"*.go", "sub", false},
		{"go.mod", "", true},
		{"cmd/x/**/*.go", "", true},
		{"cmd/x/**/*.go", "cmd", true},
		{"cmd/x/**/*.go", "cmd/x", true},
		{"cmd/x/**/*.go", "cmd/x/a/b", true},
		{"cmd/x/**/*.go", "cmd/y", false},
		{"cmd/x/**/*.go", "bin", false},
		{"cmd/x/**/*.go", "cmd/x/.git", false},
		{"cmd/*/main.go", "cmd/x", true},
		{"cmd/*/main.go", "cmd/x/a", false},
		{"cmd/*/main.go", "cmd/.x", false},
		{"**/*.go", "a/b/c", true},
		{"**/*.go", "a/.git", false},
		{"**/.github/*.yml", "a/.github", true},
		{".github/**", ".github/workflows", true},
		{".github/**", ".git", false},
		{"a/b.go", "a/b.go", false},
	}
	for _, tt := range tests {
		if got := mayHold(strings.Split(tt.pattern, "/"), splitRel(tt.dir)); got != tt.want {
			t.Errorf("mayHold(%q, %q) = %v, want %v", tt.pattern, tt.dir, got, tt.want)
		}
	}
}

func TestWatchResolve(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	watchCheck(t, err)
	cfg := filepath.Join(root, "cfg")
	watchMkdir(t, cfg)
	saveConfigMap(t, filepath.Join(cfg, "mcpgen.toml"), manifestText(0))
	ts, err := os.Readlink(filepath.Join(cfg, "..data"))
	watchCheck(t, err)

	file, deps, err := resolveManifest(cfg, "mcpgen.toml")
	watchCheck(t, err)
	if want := filepath.Join(cfg, ts, "mcpgen.toml"); file != want {
		t.Errorf("got file %s, want %s", file, want)
	}
	want := []string{filepath.Join(cfg, "mcpgen.toml"), filepath.Join(cfg, "..data"), filepath.Join(cfg, ts, "mcpgen.toml")}
	if !slices.Equal(deps, want) {
		t.Errorf("got deps %q, want %q", deps, want)
	}

	watchCheck(t, os.Symlink("loop", filepath.Join(cfg, "loop")))
	if _, _, err := resolveManifest(cfg, "loop"); err == nil || !strings.Contains(err.Error(), "too many levels") {
		t.Errorf("a link to itself: got error %v, want too many levels", err)
	}
	_, deps, err = resolveManifest(cfg, "missing.toml")
	if !errors.Is(err, os.ErrNotExist) || !slices.Equal(deps, []string{filepath.Join(cfg, "missing.toml")}) {
		t.Errorf("a missing file: got deps %q, error %v; want the file and ErrNotExist", deps, err)
	}
}
