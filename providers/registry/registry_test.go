package registry

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/providers"
)

// TestNames: every provider is one the manifest's providers = [...] accepts, and every
// name it accepts has a provider, once.
func TestNames(t *testing.T) {
	names := Names()
	if got, want := slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(manifest.Providers)); !slices.Equal(got, want) {
		t.Errorf("registry %v, manifest.Providers %v", got, want)
	}
	for _, p := range All() {
		if got, ok := Lookup(p.Name()); !ok || got != p {
			t.Errorf("Lookup(%q) = %v, %v", p.Name(), got, ok)
		}
		if p.Title() == "" || len(p.Files().Project) == 0 && p.Files().User == nil {
			t.Errorf("%s: no title, or no file", p.Name())
		}
	}
}

// roundTrip is a manifest whose servers every provider with a file of its own can hold
// natively: what emit writes, import reads back the same.
const roundTrip = `version = 1

[servers.local]
command = "/opt/bin/local-mcp"
args = ["--stdio", "--level", "2"]
env = { API_KEY = "${API_KEY}", MODE = "fast" }
context = false
tool_timeout = "30s"

[servers.docs]
url = "https://mcp.example.com/mcp"
bearer_token_env = "DOCS_TOKEN"
headers = { X-Team = "core" }
`

// TestRoundTrip: for every provider, import reads back what emit wrote into an empty
// file: the same servers, with the same command, arguments, environment (secrets as
// references), url, headers and token variable.
func TestRoundTrip(t *testing.T) {
	m, err := manifest.Parse([]byte(roundTrip), "m.toml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range All() {
		if slices.Contains([]string{"claude-desktop", "junie", "warp", "amp", "cline", "zed", "antigravity"}, p.Name()) {
			continue // expand no ${VAR}: a secret goes through mcpgen serve (TestNoReferences)
		}
		t.Run(p.Name(), func(t *testing.T) {
			entries, _, err := p.Render(m, providers.Options{Mcpgen: "/usr/bin/mcpgen"})
			if err != nil {
				t.Fatal(err)
			}
			file, err := p.Merge(nil, entries, providers.MergeOptions{Owner: "m"})
			if err != nil {
				t.Fatal(err)
			}
			f, err := p.Import(file, "config")
			if err != nil {
				t.Fatalf("%v\n%s", err, file)
			}
			if len(f.Skipped) > 0 {
				t.Errorf("skipped %v\n%s", f.Skipped, file)
			}
			var got []string
			for _, s := range f.Servers {
				got = append(got, describe(s.Server))
			}
			var want []string
			for _, s := range m.Servers {
				c := *s
				if noTimeout[p.Name()] {
					c.ToolTimeout = 0
				}
				want = append(want, describe(&c))
			}
			if !slices.Equal(got, want) {
				t.Errorf("imported\n%s\nwant\n%s\nfrom\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), file)
			}
		})
	}
}

// noTimeout are the agents without a per-server tool timeout.
var noTimeout = map[string]bool{"cursor": true, "vscode": true, "copilot": true, "opencode": true, "windsurf": true, "kiro": true}

// describe writes what a round trip keeps of s.
func describe(s *manifest.Server) string {
	var env []string
	for _, v := range s.Env {
		env = append(env, v.Name+"="+v.Value.String())
	}
	slices.Sort(env)
	var headers []string
	for _, h := range s.Headers {
		headers = append(headers, h.Name+"="+h.Value.String())
	}
	args := make([]string, len(s.Args))
	for i, a := range s.Args {
		args[i] = a.String()
	}
	return fmt.Sprintf("%s: kind %v command %q args %q env %q url %q headers %q token %q tool_timeout %v",
		s.Name, s.Kind, s.Command.String(), args, env, s.URL.String(), headers, s.BearerTokenEnv, s.ToolTimeout)
}

// TestNoReferences: for an agent without a reference syntax, a value with a secret, and a
// remote server with a token, go through mcpgen serve, and no "${" reaches the file.
func TestNoReferences(t *testing.T) {
	m, err := manifest.Parse([]byte(roundTrip), "m.toml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"junie", "warp", "amp", "cline", "zed", "antigravity"} {
		p, _ := Lookup(name)
		entries, _, err := p.Render(m, providers.Options{Mcpgen: "/usr/bin/mcpgen"})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.Contains(string(e.Value), "${") || !strings.Contains(string(e.Value), `"serve"`) {
				t.Errorf("%s: entry %s: %s", name, e.Name, e.Value)
			}
		}
		gw, _, err := p.Render(m, providers.Options{Gateway: "mcpgen", GatewayURL: "https://x/mcp", GatewayTokenEnv: "TOK"})
		if err != nil || len(gw) != 1 || strings.Contains(string(gw[0].Value), "${") || !strings.Contains(string(gw[0].Value), `"--bearer-token-env","TOK"`) {
			t.Errorf("%s: gateway %s, %v", name, gw, err)
		}
	}
}

// TestCacheRendersAlike: a Cache shared by every provider, as emit --provider all shares
// one, changes no byte of what they render, in any mode: what one provider makes of a
// prepared server reaches no other.
func TestCacheRendersAlike(t *testing.T) {
	m, err := manifest.Parse([]byte(roundTrip+`
[servers.ctx]
command = "ctx-mcp"
args = ["--root", "${WORKSPACE_DIR}/data"]
env = { TOKEN = "${TOKEN}" }

[servers.files]
builtin = "files"
`), "m.toml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	modes := map[string]providers.Options{
		"portable": {},
		"launcher": {Launcher: true},
		"project":  {Scope: providers.ScopeProject, Root: t.TempDir()},
	}
	for mode, o := range modes {
		o.Mcpgen = "/usr/bin/mcpgen"
		c := providers.NewCache()
		ctx, err := c.Context(m, manifest.ContextOptions{WorkspaceID: "ws-1", Project: o.Scope == providers.ScopeProject})
		if err != nil {
			t.Fatal(err)
		}
		for round := range 2 {
			for _, p := range All() {
				plain, cached := o, o
				plain.Context, cached.Context, cached.Cache = ctx, ctx, c
				want, _, werr := p.Render(m, plain)
				got, _, gerr := p.Render(m, cached)
				if (werr == nil) != (gerr == nil) || len(want) != len(got) {
					t.Fatalf("%s, %s, round %d: %d entries (%v), want %d (%v)", mode, p.Name(), round, len(got), gerr, len(want), werr)
				}
				for i := range want {
					if string(want[i].Value) != string(got[i].Value) || want[i].Fingerprint != got[i].Fingerprint {
						t.Errorf("%s, %s, round %d, %s:\n%s\nwant\n%s", mode, p.Name(), round, want[i].Name, got[i].Value, want[i].Value)
					}
				}
			}
		}
	}
}
