package claude

import (
	"path/filepath"

	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/providers"
)

// The providers of this package: Claude Code and Claude Desktop.
var (
	CodeProvider    providers.Provider = provider{Code}
	DesktopProvider providers.Provider = provider{Desktop}
)

type provider struct{ name string }

func (p provider) Name() string { return p.name }

func (p provider) Title() string {
	if p.name == Desktop {
		return "Claude Desktop"
	}
	return "Claude Code"
}

// Files: Claude Code reads a project's .mcp.json (walking up from where it runs), and
// ~/.claude.json (in $CLAUDE_CONFIG_DIR when it is set); Claude Desktop reads one file, in
// the per-user application config of each system.
func (p provider) Files() providers.Files {
	if p.name == Desktop {
		return providers.Files{User: func(goos, home string, getenv func(string) string) (string, error) {
			return DesktopConfig(goos, home, getenv), nil
		}}
	}
	return providers.Files{
		Project: []string{".mcp.json"},
		User: func(_, home string, getenv func(string) string) (string, error) {
			if dir := getenv("CLAUDE_CONFIG_DIR"); dir != "" {
				return filepath.Join(dir, ".claude.json"), nil
			}
			return filepath.Join(home, ".claude.json"), nil
		},
		Default: providers.ScopeProject,
	}
}

// DesktopConfig is Claude Desktop's config file on the system goos: in
// ~/Library/Application Support/Claude on macOS, %APPDATA%\Claude on Windows (else the
// profile's AppData\Roaming), and $XDG_CONFIG_HOME/Claude (else ~/.config/Claude), where
// the community builds for Linux keep it.
func DesktopConfig(goos, home string, getenv func(string) string) string {
	return filepath.Join(providers.ConfigDir(goos, home, getenv), "Claude", "claude_desktop_config.json")
}

func (p provider) Render(m *manifest.Manifest, o providers.Options) ([]providers.Rendered, []string, error) {
	return Render(m, p.name, o)
}

func (p provider) Merge(existing []byte, entries []providers.Rendered, o providers.MergeOptions) ([]byte, error) {
	return Merge(existing, entries, o)
}

func (p provider) Owners(data []byte) ([]providers.Owned, error) { return Owners(data) }

// Import reads a Claude Desktop config, or a Claude Code file of the kind its name and
// content say (a project's .mcp.json when they say nothing).
func (p provider) Import(data []byte, file string) (*providers.ImportedFile, error) {
	kind := DesktopFile
	if p.name == Code {
		kind = Detect(file, data)
		if kind == "" || kind == DesktopFile {
			kind = ProjectFile
		}
	}
	return Import(data, file, ImportOptions{Kind: kind})
}
