package providers

import (
	"testing"

	"github.com/mcpgen/mcpgen/manifest"
)

// TestInManifestDir: which command servers an emitted config sends
// through serve, so that their workspace is the manifest's directory and
// not where the agent happens to start.
func TestInManifestDir(t *testing.T) {
	root := t.TempDir()
	tests := []struct {
		name, text string
		o          func(*manifest.Manifest) Options
		want       bool
	}{
		{"no dir, no cwd", "[servers.s]\ncommand = \"srv\"\n", portable, true},
		{"a user config", "[servers.s]\ncommand = \"srv\"\n", userScope, false},
		{"dir = ${PWD}", "[workspace]\ndir = \"${PWD}\"\n[servers.s]\ncommand = \"srv\"\n", portable, false},
		{"an absolute dir", "[workspace]\ndir = \"/srv/ws\"\n[servers.s]\ncommand = \"srv\"\n", portable, false},
		{"its own cwd", "[servers.s]\ncommand = \"srv\"\ncwd = \"/srv\"\n", portable, false},
		{"context = false", "[servers.s]\ncommand = \"srv\"\ncontext = false\n", portable, false},
		{"--workspace, the manifest's directory", "[servers.s]\ncommand = \"srv\"\n", withDir(""), true},
		{"--workspace --dir elsewhere", "[servers.s]\ncommand = \"srv\"\n", withDir("/elsewhere"), false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := loadAt(t, root, string(rune('a'+i))+"/mcpgen.toml", tt.text)
			m.Searched = true
			if got := InManifestDir(m, m.Servers[0], tt.o(m)); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func portable(m *manifest.Manifest) Options {
	o, _ := Options{Scope: ScopeProject}.WithContext(m)
	return o
}

// userScope is a user config's: its entries name the manifest by its
// absolute path, and the workspace is where the agent starts them.
func userScope(m *manifest.Manifest) Options {
	o, _ := Options{}.WithContext(m)
	return o
}

func withDir(dir string) func(*manifest.Manifest) Options {
	return func(m *manifest.Manifest) Options {
		c, err := m.ContextTemplate(manifest.ContextOptions{WorkspaceID: "ws", Dir: dir, User: "u"})
		if err != nil {
			panic(err)
		}
		return Options{Context: c}
	}
}
