//go:build unix

package launcher

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/mcp"
)

// TestSessionKeepsDeclaredServer: a declared server whose manifest gets a
// comment at its top, then its servers and tools in another order, keeps
// its process, and a call that runs meanwhile completes with its result,
// not "context canceled". This runs the real mcpgen serve.
func TestSessionKeepsDeclaredServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds mcpgen")
	}
	dir := t.TempDir()
	bin := buildMcpgen(t, dir)
	work := t.TempDir()
	path := filepath.Join(dir, "mcpgen.toml")
	other := testServerTOML(t, "other", "echo")
	writeFile(t, path, meaningManifest+other)
	ts := startSession(t, path, Options{Self: bin, Context: manifest.ContextOptions{Dir: work}})
	st := ts.wait("ready", allReady("slow", "other"))
	pids := map[string]int{"slow": server(st, "slow").Pid, "other": server(st, "other").Pid}

	edits := []struct{ name, text string }{
		{"a comment at the top", "# Tools for the team.\n# Ask before adding one.\n\n" + meaningManifest + other},
		{"servers, tools and env reordered", other + reordered},
	}
	for i, edit := range edits {
		c := ts.connect("slow", "c")
		id := string(rune('1' + i))
		os.Remove(filepath.Join(work, "started"))
		os.Remove(filepath.Join(work, "release"))
		c.Call(id, "wait", `{}`)
		waitFile(t, filepath.Join(work, "started"))

		writeFile(t, path, edit.text)
		ts.s.reloadNow(false, nil) // returns once changed servers have stopped
		st := ts.status()
		for name, pid := range pids {
			if s := server(st, name); s.Pid != pid || s.Restarts != 0 || s.State != ctl.Ready {
				t.Errorf("%s: %s: got pid %d, %d restarts, %s; want pid %d, ready", edit.name, name, s.Pid, s.Restarts, s.State, pid)
			}
		}
		writeFile(t, filepath.Join(work, "release"), "")
		m := c.Next()
		var r mcp.CallToolResult
		if m.Error != nil || json.Unmarshal(m.Result, &r) != nil || r.IsError || len(r.Content) != 1 || r.Content[0].Text != "done\n" {
			t.Errorf("%s: the call in flight: got %s, want the result \"done\"", edit.name, m.AppendJSON(nil))
		}
		c.Close()
	}
	if exited(pids["slow"]) {
		t.Errorf("slow's process %d is gone", pids["slow"])
	}
}

// waitFile waits until path exists; a hang guard, not a timing check.
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within %s", path, waitLong)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
