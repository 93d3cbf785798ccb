package providers

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/mcpgen/mcpgen/manifest"
)

// A Provider is one agent: where it reads its MCP config, how mcpgen writes the manifest's
// servers there, and how it reads them back. Each agent is one package that provides one;
// the registry (providers/registry) lists them all.
type Provider interface {
	// Name is the provider's name in the manifest's providers = [...] and for --provider.
	Name() string
	// Title is the agent's name for people: "Gemini CLI".
	Title() string
	// Files says where the agent reads its config.
	Files() Files
	// Render returns the entries of m's servers meant for the agent, in its syntax and in
	// the manifest's order, and notes on what it left out and why. It reports every server
	// it cannot express at once.
	Render(m *manifest.Manifest, o Options) (entries []Rendered, notes []string, err error)
	// Merge writes entries into existing (the file's content, empty for none): the
	// manifest's entries are replaced, those it no longer has removed, everything else
	// kept (comments, other entries, key order), and what mcpgen wrote recorded.
	Merge(existing []byte, entries []Rendered, o MergeOptions) ([]byte, error)
	// Owners lists the entries of a config that mcpgen recorded, with their owners.
	Owners(data []byte) ([]Owned, error)
	// Import reads the servers of one of the agent's config files.
	Import(data []byte, file string) (*ImportedFile, error)
}

// Rendered is one server in a provider's own syntax: a JSON object, or a TOML table's
// body, or a YAML mapping.
type Rendered struct {
	Name  string
	Value []byte
	// Fingerprint, when the provider computed it as it rendered Value, is that of
	// Value's content (Fingerprint of its decoded value); empty: Merge computes it.
	Fingerprint string
}

// MergeOptions changes how a merge treats servers that mcpgen does not own.
type MergeOptions struct {
	// Force replaces or removes servers written or edited by hand, and overwrites those of
	// another manifest, instead of reporting them as conflicts.
	Force bool
	// Owner is the id of the manifest whose entries these are (manifest.OwnerID): the record
	// of each entry names it, and a merge replaces and removes only the entries it names
	// (see Ownership). Empty: records name no owner, and the entries recorded without one
	// are the caller's.
	Owner string
	// Aliases are other ids of the same manifest: their entries are its own too, and are
	// recorded anew with Owner.
	Aliases []string
}

// Files says where an agent reads its MCP config.
type Files struct {
	// Project is the project's config, relative to the project's root, with forward
	// slashes: the first is the one mcpgen writes, the others names the agent reads as
	// well (opencode.jsonc beside opencode.json). Empty: the agent has no project config.
	Project []string
	// User returns the user's config on the system goos (runtime.GOOS), from the home
	// directory and the environment; nil: the agent has no user config.
	User func(goos, home string, getenv func(string) string) (string, error)
	// Default is the scope that emit --write writes without --scope.
	Default Scope
}

// UserFile is p's user config on this system, or "" when p has none.
func UserFile(p Provider) (string, error) {
	f := p.Files()
	if f.User == nil {
		return "", nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the home directory: %w (use -o FILE)", err)
	}
	return f.User(runtime.GOOS, home, os.Getenv)
}

// ProjectFile is p's project config under root, or "" when p has none. Of the names the
// agent reads, the first that exists, else the first.
func ProjectFile(p Provider, root string) string {
	names := p.Files().Project
	if len(names) == 0 {
		return ""
	}
	for _, n := range names {
		path := filepath.Join(root, filepath.FromSlash(n))
		if _, err := os.Lstat(path); err == nil {
			return path
		}
	}
	return filepath.Join(root, filepath.FromSlash(names[0]))
}

// ConfigDir returns the directory of each OS's per-user application config: %APPDATA% on
// Windows (else the profile's AppData\Roaming), ~/Library/Application Support on macOS,
// $XDG_CONFIG_HOME (else ~/.config) elsewhere. VS Code, Claude Desktop and Zed keep theirs
// there.
func ConfigDir(goos, home string, getenv func(string) string) string {
	switch goos {
	case "windows":
		if appData := getenv("APPDATA"); appData != "" {
			return appData
		}
		return filepath.Join(home, "AppData", "Roaming")
	case "darwin":
		return filepath.Join(home, "Library", "Application Support")
	}
	return XDGConfig(home, getenv)
}

// XDGConfig is $XDG_CONFIG_HOME, else ~/.config: where the CLI agents that follow the XDG
// convention on every system (opencode, Crush, Goose on Unix, Amp) keep their config.
func XDGConfig(home string, getenv func(string) string) string {
	if dir := getenv("XDG_CONFIG_HOME"); dir != "" {
		return dir
	}
	return filepath.Join(home, ".config")
}

// InHome returns a User rule for a config at the same place under the home directory on
// every system: InHome(".gemini", "settings.json").
func InHome(elem ...string) func(goos, home string, getenv func(string) string) (string, error) {
	return func(_, home string, _ func(string) string) (string, error) {
		return filepath.Join(append([]string{home}, elem...)...), nil
	}
}
