//go:build unix

package launcher

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/launcher/ctl"
)

// TestSessionReloadAtOnce: a manifest replaced whole by content that
// parses (an editor's rename, a ConfigMap swap) is applied without the
// debounce, which here is longer than the test's hang guard; content that
// does not parse waits for it, and is not applied meanwhile.
func TestSessionReloadAtOnce(t *testing.T) {
	saves := []struct {
		name string
		save func(t *testing.T, path, data string, i int)
	}{
		{"rename", func(t *testing.T, path, data string, i int) {
			tmp := path + "." + strconv.Itoa(i)
			writeFile(t, tmp, data)
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"configmap", func(t *testing.T, path, data string, i int) {
			dir := filepath.Dir(path)
			ts := "..v" + strconv.Itoa(i)
			writeFile(t, filepath.Join(dir, ts, "mcpgen.toml"), data)
			if err := os.Symlink(ts, filepath.Join(dir, "..data_tmp")); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				if err := os.Symlink("..data/mcpgen.toml", path); err != nil {
					t.Fatal(err)
				}
			}
		}},
	}
	for _, tt := range saves {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mcpgen.toml")
			gen := func(i int) string { return testServerTOML(t, "srv", "echo", "X="+strconv.Itoa(i)) }
			tt.save(t, path, gen(0), 0)
			ts := startSession(t, path, Options{Debounce: time.Hour})
			pid := ts.wait("ready", allReady("srv")).Servers[0].Pid

			// Invalid content waits for the debounce: the server keeps its
			// process, and the valid content after it is applied at once.
			tt.save(t, path, "[servers.srv\n", 1)
			tt.save(t, path, gen(2), 2)
			st := ts.wait("a new process", func(st *ctl.Status) bool {
				s := server(st, "srv")
				return s.State == ctl.Ready && s.Pid != pid
			})
			if !st.Reload.OK {
				t.Errorf("got reload %+v, want the valid content applied", st.Reload)
			}
			if ts.events.has("reload failed") {
				t.Errorf("the invalid content was applied:\n%s", ts.events)
			}
		})
	}
}
