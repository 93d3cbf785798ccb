package codex

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/providers"
)

// Provider is Codex.
var Provider providers.Provider = provider{}

type provider struct{}

func (provider) Name() string  { return Name }
func (provider) Title() string { return "Codex" }

// Files: a project's .codex/config.toml (which Codex reads only in a trusted project), and
// $CODEX_HOME/config.toml, ~/.codex/config.toml by default. Codex requires CODEX_HOME, when
// set, to be a directory.
func (provider) Files() providers.Files {
	return providers.Files{
		Project: []string{".codex/config.toml"},
		User: func(_, home string, getenv func(string) string) (string, error) {
			dir := getenv("CODEX_HOME")
			if dir == "" {
				return filepath.Join(home, ".codex", "config.toml"), nil
			}
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				return "", fmt.Errorf("CODEX_HOME=%s is not a directory: Codex requires it to exist; create it or unset CODEX_HOME", dir)
			}
			return filepath.Join(dir, "config.toml"), nil
		},
		Default: providers.ScopeUser,
	}
}

func (provider) Render(m *manifest.Manifest, o providers.Options) ([]providers.Rendered, []string, error) {
	entries, err := Render(m, o)
	out := make([]providers.Rendered, len(entries))
	for i, e := range entries {
		out[i] = providers.Rendered{Name: e.Name, Value: e.Body}
	}
	return out, nil, err
}

func (provider) Merge(existing []byte, entries []providers.Rendered, o providers.MergeOptions) ([]byte, error) {
	in := make([]Entry, len(entries))
	for i, e := range entries {
		in[i] = Entry{Name: e.Name, Body: e.Value}
	}
	return Merge(existing, in, MergeOptions{Force: o.Force, Owner: o.Owner, Aliases: o.Aliases})
}

func (provider) Owners(data []byte) ([]providers.Owned, error) { return Owners(data) }

func (provider) Import(data []byte, file string) (*providers.ImportedFile, error) {
	return Import(data, file)
}
