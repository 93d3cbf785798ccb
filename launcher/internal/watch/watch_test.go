package watch

import (
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
	return startWatchOpts(t, manifestPath, Options{Debounce: debounce})
}

func startWatchOpts(t *testing.T, manifestPath string, opts Options) *watchTest {
	t.Helper()
	w, err := New(manifestPath, opts)
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
		manifest = manifest || ev.Manifest != nil
		for _, s := range ev.Sources {
			seen[s] = true
		}
	}
	delete(seen, "sync")
	return manifest, slices.Sorted(maps.Keys(seen))
}

// awaitManifest reads events until one reports the manifest changed to
// want. It returns the content each such event carried. Each event carries
// what the manifest read when the Watcher looked, never an older content
// than the event before.
func (wt *watchTest) awaitManifest(want string) []string {
	wt.t.Helper()
	var reads []string
	var seq uint64
	for {
		ev := wt.next()
		if ev.Manifest == nil || len(ev.Sources) > 0 {
			wt.t.Fatalf("got %+v, want an event for the manifest alone", ev)
		}
		if ev.Manifest.Seq <= seq {
			wt.t.Fatalf("got content number %d after %d, want ever greater numbers", ev.Manifest.Seq, seq)
		}
		seq = ev.Manifest.Seq
		reads = append(reads, string(ev.Manifest.Data))
		if string(ev.Manifest.Data) == want {
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

func TestWatchClose(t *testing.T) {
	dir := t.TempDir()
	manifestPath := filepath.Join(dir, "mcpgen.toml")
	watchWrite(t, manifestPath, manifestText(0))
	w, err := New(manifestPath, Options{Debounce: time.Millisecond})
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
	if _, err := New(filepath.Join(t.TempDir(), "nope", "mcpgen.toml"), Options{Debounce: time.Millisecond}); err == nil {
		t.Error("got no error for a manifest in a missing directory")
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
