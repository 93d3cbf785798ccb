package zed

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/providers"
)

// Zed's settings name a custom server both ways: "source": "custom" beside the command
// (Zed before its context_servers became untagged, and what older docs show), and without
// it (current Zed). Import reads both the same; a server that a Zed extension provides
// ("source": "extension", or its settings alone) stays in the file, with the reason.
func TestImportBothForms(t *testing.T) {
	const settings = `// Zed settings
{
  "context_servers": {
    "old": {"source": "custom", "command": "old-mcp", "args": ["--stdio"], "env": {"MODE": "x"}},
    "new": {"command": "new-mcp", "args": ["--stdio"], "env": {"MODE": "x"}},
    "bare": {"command": "bare-mcp"},
    "remote": {"url": "https://mcp.example.com/mcp", "headers": {"X-Tenant": "acme"}},
    "postgres": {"source": "extension", "settings": {"database_url": "postgres://localhost/db"}},
    "ext": {"settings": {}},
  },
}`
	f, err := Provider.Import([]byte(settings), "settings.json")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*manifest.Server{}
	for _, s := range f.Servers {
		got[s.Server.Name] = s.Server
		if len(s.Notes) > 0 {
			t.Errorf("%s: notes %v", s.Server.Name, s.Notes)
		}
	}
	for _, name := range []string{"old", "new"} {
		s := got[name]
		if s == nil || s.Command.String() != name+"-mcp" || len(s.Args) != 1 || len(s.Env) != 1 {
			t.Errorf("%s: %+v", name, s)
		}
	}
	if got["bare"] == nil || got["remote"] == nil || got["remote"].URL.String() != "https://mcp.example.com/mcp" {
		t.Errorf("servers %v", got)
	}
	skipped := map[string]string{}
	for _, s := range f.Skipped {
		skipped[s.Name] = s.Reason
	}
	for _, name := range []string{"postgres", "ext"} {
		if !strings.Contains(skipped[name], "Zed extension") {
			t.Errorf("%s: skipped %q, want a Zed extension's server", name, skipped[name])
		}
	}
}

// Zed's settings require args beside command (its ContextServerCommand has no default for
// them): a server without arguments gets "args": [].
func TestRenderArgsAlways(t *testing.T) {
	m, err := manifest.Parse([]byte("[servers.bare]\ncommand = \"bare-mcp\"\ncontext = false\n"), "mcpgen.toml", "")
	if err != nil {
		t.Fatal(err)
	}
	entries, _, err := Provider.Render(m, providers.Options{Mcpgen: "mcpgen"})
	if err != nil || len(entries) != 1 {
		t.Fatalf("Render: %v, %d entries", err, len(entries))
	}
	var e struct {
		Command string    `json:"command"`
		Args    *[]string `json:"args"`
	}
	if err := json.Unmarshal(entries[0].Value, &e); err != nil {
		t.Fatal(err)
	}
	if e.Command != "bare-mcp" || e.Args == nil {
		t.Errorf("entry %s, want command bare-mcp and args []", entries[0].Value)
	}
}
