// Package zed writes the MCP servers of Zed: the context_servers object of its
// settings.json, a JSONC file that holds every other setting of the editor too.
//
// Checked against Zed's docs (zed-industries/zed, docs/src/ai/mcp.md: a custom server is
// {"command", "args", "env"} under context_servers; a remote one {"url", "headers"}), its
// source (ContextServerSettingsContent is untagged: Stdio, Http or Extension; the args of
// ContextServerCommand have no default, so an entry without them does not load) and
// rulesync's file-formats reference. Zed before the untagged form read {"source":
// "custom", "command", ...} (and {"source": "extension", "settings"}); the untagged form
// ignores a "source" it finds. mcpgen writes the current form, always with args, and
// import reads both. Zed expands no variable in settings that its docs name: a value that
// needs one goes through mcpgen serve.
package zed

import (
	"path/filepath"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/providers"
	"github.com/mcpgen/mcpgen/providers/jsonfile"
)

// Name is the provider's name in the manifest and on the command line.
const Name = "zed"

// Provider is Zed: .zed/settings.json in a project, and the user's settings.json.
var Provider providers.Provider = &jsonfile.Agent{
	Format: jsonfile.Format{Agent: "Zed", ServersKey: "context_servers", JSONC: true},
	Shape: jsonfile.Shape{
		Provider: Name, Title: "Zed",
		EnvKey: "env", URLKey: "url", HeadersKey: "headers",
		ArgsAlways: true,
		Parse:      jsonfile.ParseLiteral,
		Ignore:     func(key string) bool { return key == "source" || key == "enabled" || key == "remote" },
		Unheld:     extensionServer,
	},
	Where: providers.Files{
		Project: []string{".zed/settings.json"},
		User:    UserConfig,
		Default: providers.ScopeProject,
	},
}

// UserConfig is Zed's settings.json on the system goos: %APPDATA%\Zed on Windows,
// $XDG_CONFIG_HOME/zed (else ~/.config/zed) elsewhere, macOS included.
func UserConfig(goos, home string, getenv func(string) string) (string, error) {
	if goos == "windows" {
		return filepath.Join(providers.ConfigDir(goos, home, getenv), "Zed", "settings.json"), nil
	}
	return filepath.Join(providers.XDGConfig(home, getenv), "zed", "settings.json"), nil
}

// extensionServer says why an entry that names a server of a Zed extension (its settings,
// or "source": "extension") stays in the file.
func extensionServer(fields []jsonfile.Member) string {
	source := ""
	if m := jsonfile.Last(fields, "source"); m != nil {
		_ = json.Unmarshal(m.Value, &source)
	}
	if source == "extension" || jsonfile.Last(fields, "settings") != nil && jsonfile.Last(fields, "command") == nil {
		return "a server that a Zed extension provides (its settings): Zed installs and runs it; keep it in this file"
	}
	return ""
}
