package launcher

import (
	"strings"
	"testing"

	"github.com/mcpgen/mcpgen/manifest"
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
