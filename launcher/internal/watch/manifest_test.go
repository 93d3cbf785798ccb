package watch

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

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
				wt.awaitManifest(want)
				// Drain what the step still has coming, so that the next
				// step's event is its own.
				if _, sources := wt.sync(); len(sources) > 0 {
					t.Errorf("step %d: got sources %q, want none", i+1, sources)
				}
			}
		})
	}
}

// TestWatchManifestAtOnce checks which changes are reported without the
// debounce: the manifest replaced whole by content that Complete accepts.
// The debounce is longer than the test's hang guard, so any event that
// comes was not debounced, and one that would have been never comes; each
// step ends with a save that is reported at once, and what the step saved
// before it must not show.
func TestWatchManifestAtOnce(t *testing.T) {
	const valid = "version = 1 # "
	tests := []struct {
		name   string
		layout func(*testing.T, string) string
		before manifestSave // saved first: never reported at once
		data   string       // ... with this content
		then   manifestSave // then this save, of valid content: at once
	}{
		{"rename over", plainManifest, nil, "", saveRenameOver},
		{"configmap swap", configMapManifest, nil, "", saveConfigMap},
		{"symlink retargeted", linkedManifest, nil, "", saveRetarget},
		{"in place, then renamed over", plainManifest, saveInPlace, valid + "in place", saveRenameOver},
		{"truncated, then configmap", configMapManifest, saveTruncate, valid + "truncated", saveConfigMap},
		{"invalid renamed over, then renamed over", plainManifest, saveRenameOver, "not valid", saveRenameOver},
		{"invalid configmap, then configmap", configMapManifest, saveConfigMap, "not valid", saveConfigMap},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.layout(t, t.TempDir())
			wt := startWatchOpts(t, path, Options{
				Debounce: time.Hour,
				Complete: func(data []byte) bool { return strings.HasPrefix(string(data), valid) },
			})
			for i := 1; i <= 3; i++ {
				if tt.before != nil {
					tt.before(t, path, tt.data)
				}
				want := manifestText(i)
				tt.then(t, path, want)
				if reads := wt.awaitManifest(want); len(reads) != 1 {
					t.Errorf("step %d: got events with %q, want one, with %q", i, reads, want)
				}
			}
		})
	}
}

// TestWatchManifestRead checks that a content the caller read through
// Read is what later changes are compared with: the manifest changed to Y
// and back to X around the caller's read of Y still reports X.
func TestWatchManifestRead(t *testing.T) {
	x, y := manifestText(1), manifestText(2)
	tests := []struct {
		name string
		save manifestSave
	}{
		{"in place", saveInPlace},
		{"renamed over", saveRenameOver},
		{"configmap", saveConfigMap},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			layout := plainManifest
			if tt.name == "configmap" {
				layout = configMapManifest
			}
			path := layout(t, t.TempDir())
			tt.save(t, path, x)
			wt := startWatchOpts(t, path, Options{Debounce: 20 * time.Millisecond})
			tt.save(t, path, y)
			got, err := wt.w.Read()
			watchCheck(t, err)
			if string(got.Data) != y {
				t.Fatalf("Read: got %q, want %q", got.Data, y)
			}
			tt.save(t, path, x)
			for {
				ev := wt.next()
				if ev.Manifest == nil || ev.Manifest.Seq <= got.Seq {
					t.Fatalf("got %+v after Read's content number %d, want a later content of the manifest", ev, got.Seq)
				}
				if d := string(ev.Manifest.Data); d != x {
					t.Errorf("got an event with %q after Read returned %q, want %q alone", d, y, x)
				} else {
					break
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
	reads := wt.awaitManifest(final)
	// What the burst still has coming arrives before the sentinel does.
	for _, ev := range wt.syncEvents() {
		if ev.Manifest != nil {
			reads = append(reads, string(ev.Manifest.Data))
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

// TestWatchFilter checks which events concern the manifest, without the
// file system.
func TestWatchFilter(t *testing.T) {
	w := &Watcher{
		manifest: &follower{deps: map[string]bool{"/cfg/mcpgen.toml": true, "/cfg/..data": true}},
		sources:  newSources(nil, nil),
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
		w.manifest.dirty = false
		if got := w.handle(tt.ev); got != tt.want || w.manifest.dirty != tt.want {
			t.Errorf("%s: got %v (dirty %v), want %v", tt.name, got, w.manifest.dirty, tt.want)
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
