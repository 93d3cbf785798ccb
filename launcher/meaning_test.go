package launcher

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/mcp"

	json "github.com/goccy/go-json"
)

// meaningManifest has two servers, one of them declared with two tools and
// some env, in an order that the edits below change without changing what
// any of it means.
const meaningManifest = `[servers.slow]
env = { A = "1", B = "2" }

[servers.slow.tools.wait]
description = "Waits for the test"
run = ["sh", "-c", "touch started; i=0; while [ ! -e release ] && [ $i -lt 2000 ]; do sleep 0.05; i=$((i+1)); done; echo done"]

[servers.slow.tools.echo]
run = ["echo", "{text}", "{n}"]
args.text = { type = "string" }
args.n = { type = "integer", default = 1 }

`

// reordered is meaningManifest's slow server written the other way round:
// tools, env keys and arguments in another order.
const reordered = `[servers.slow.tools.echo]
run = ["echo", "{text}", "{n}"]
args.n = { type = "integer", default = 1 }
args.text = { type = "string" }

[servers.slow.tools.wait]
run = ["sh", "-c", "touch started; i=0; while [ ! -e release ] && [ $i -lt 2000 ]; do sleep 0.05; i=$((i+1)); done; echo done"]
description = "Waits for the test"

[servers.slow]
env = { B = "2", A = "1" }

`

// TestRestartKeyMeaning: what a server means decides whether it restarts,
// not where it stands in the file: a comment above it, another order of
// the servers, of a server's tools, env or a tool's arguments restart
// nothing; a changed tool does.
func TestRestartKeyMeaning(t *testing.T) {
	dir := t.TempDir()
	other := "[servers.other]\ncommand = \"srv\"\nargs = [\"-v\"]\nmemory_max = \"1G\"\ncpu_max = 0.5\n\n" +
		"[servers.docs]\nurl = \"https://mcp.example.com/mcp\"\nheaders = { X-A = \"a\", X-B = \"${WORKSPACE_ID}\" }\n\n"
	keys := func(text string) map[string]string {
		t.Helper()
		m, err := manifest.Parse([]byte(text), "mcpgen.toml", dir)
		if err != nil {
			t.Fatal(err)
		}
		c, err := m.Context(manifest.ContextOptions{WorkspaceID: "ws", Dir: dir, User: "u"})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, s := range m.Servers {
			if s.Kind == manifest.KindRemote {
				r, err := m.Remote(s, c, manifest.EnvLookup(nil))
				out[s.Name] = restartKey(s, nil, err) + remoteKey(r)
				continue
			}
			spec, err := serverSpec(m, s, c, "/bin/mcpgen", nil)
			out[s.Name] = restartKey(s, spec, err) + "\x00" + catalogKey(m, s, c, spec, nil, err)
		}
		return out
	}
	base := keys(meaningManifest + other)
	for name, text := range map[string]string{
		"a comment above":     "# a comment\n# and another\n\n" + meaningManifest + other,
		"servers reordered":   other + meaningManifest,
		"tools, env and args": reordered + other,
		"headers":             meaningManifest + strings.Replace(other, `X-A = "a", X-B = "${WORKSPACE_ID}"`, `X-B = "${WORKSPACE_ID}", X-A = "a"`, 1),
	} {
		got := keys(text)
		for server, key := range base {
			if got[server] != key {
				t.Errorf("%s: server %q would restart", name, server)
			}
		}
	}
	changed := keys(strings.Replace(meaningManifest, `"echo", "{text}"`, `"printf", "{text}"`, 1) + other)
	if changed["slow"] == base["slow"] {
		t.Error("a changed tool keeps its server's key")
	}
}

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
			if s := server(st, name); s.Pid != pid || s.Restarts != 0 || s.State != Ready {
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
