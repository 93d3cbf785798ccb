package providers

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mcpgen/mcpgen/manifest"
)

// loadAt writes a manifest at root/rel and loads it.
func loadAt(t *testing.T, root, rel, text string) *manifest.Manifest {
	t.Helper()
	path := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestScopes checks what a config may name, by scope: the flags that find
// the manifest, the owner that marks entries, and entry names.
func TestScopes(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	plain := loadAt(t, root, "app/mcpgen.toml", "prefix = \"acme-\"\n[servers.files]\nbuiltin = \"files\"\n")
	named := loadAt(t, root, "app/deploy/tools.toml", "name = \"team\"\n[servers.files]\nbuiltin = \"files\"\n")
	app := filepath.Join(root, "app")
	tests := []struct {
		name        string
		m           *manifest.Manifest
		o           Options
		flags       []string
		owner       string
		aliases     []string
		entryPrefix string
	}{
		{"user", plain, Options{}, []string{"--manifest", plain.Path}, plain.Path, nil, "acme-"},
		{"project root", plain, Options{Scope: ScopeProject, Root: app}, nil, "mcpgen.toml", nil, ""},
		{"project below the manifest", plain, Options{Scope: ScopeProject, Root: filepath.Join(app, "sub")}, []string{"--manifest", "../mcpgen.toml"}, "../mcpgen.toml", nil, ""},
		{"user, named", named, Options{}, []string{"--manifest", named.Path}, "team", []string{named.Path}, ""},
		{"project, named, below the root", named, Options{Scope: ScopeProject, Root: app}, []string{"--manifest", "deploy/tools.toml"}, "team", []string{"deploy/tools.toml"}, ""},
	}
	s := plain.Servers[0]
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ManifestFlags(tt.m, tt.o); !slices.Equal(got, tt.flags) {
				t.Errorf("ManifestFlags: got %q, want %q", got, tt.flags)
			}
			owner, aliases := Owner(tt.m, tt.o)
			if owner != tt.owner || !slices.Equal(aliases, tt.aliases) {
				t.Errorf("Owner: got %q %q, want %q %q", owner, aliases, tt.owner, tt.aliases)
			}
			if got, want := tt.o.EntryName(tt.m, s), tt.entryPrefix+"files"; tt.m == plain && got != want {
				t.Errorf("EntryName: got %q, want %q", got, want)
			}
		})
	}
}

// TestNativeInCheckout: a relative command or cwd names the checkout.
func TestNativeInCheckout(t *testing.T) {
	m, err := manifest.Parse([]byte(`[servers.rel]
command = "./bin/tool"
[servers.path]
command = "npx"
[servers.abs]
command = "/usr/bin/tool"
[servers.cwd]
command = "tool"
cwd = "data"
`), "m.toml", "/srv/app")
	if err != nil {
		t.Fatal(err)
	}
	o, err := Options{}.WithContext(m)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"rel": true, "path": false, "abs": false, "cwd": true} {
		if got := Native(m, m.Server(name), o).InCheckout(); got != want {
			t.Errorf("server %s: InCheckout got %v, want %v", name, got, want)
		}
	}
}

func TestEmbedsAgentContext(t *testing.T) {
	for in, want := range map[string]bool{
		"${WORKSPACE_DIR}/.memory.json":   true,
		"${WORKSPACE_DIR}":                false, // empty when unset, not a path
		"${WORKSPACE_DIR:-/tmp}/x":        false, // a default the user chose
		"ws-${WORKSPACE_ID}":              true,
		"${TOKEN}/x":                      false, // a secret: the agent's own
		"/srv/${TENANT}/${WORKSPACE_DIR}": true,
		"plain text":                      false,
	} {
		tpl, err := manifest.ParseTemplate(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := EmbedsAgentContext(tpl); got != want {
			t.Errorf("EmbedsAgentContext(%q): got %v, want %v", in, got, want)
		}
	}
}
