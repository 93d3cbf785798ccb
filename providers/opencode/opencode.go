// Package opencode writes the MCP servers of opencode: the mcp object of opencode.json or
// opencode.jsonc, which opencode reads as JSONC.
//
// Checked against opencode's docs (https://opencode.ai/docs/mcp-servers/) and its config
// schema (packages/opencode/src/config/config.ts): a local server is {"type": "local",
// "command": [cmd, ...args], "environment": {...}}, a remote one {"type": "remote", "url",
// "headers"}; {env:NAME} in values. Its schema in source is strict at every level, the
// top one included (opencode 1.18.33's mcp list lets an unknown key pass; its forks and
// other versions refuse it), so mcpgen records what it owns in a comment above each
// entry, not under "_mcpgen": opencode reads comments in opencode.json too (e2e,
// TestOpencodeWithRealClient). No working directory or tool filter per server: a server with a cwd goes
// through mcpgen serve, and its tool filters apply through the launcher. Its "timeout" has
// meant a connection timeout in some versions and a request timeout in others: mcpgen
// writes none.
package opencode

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpgen/mcpgen/providers"
	"github.com/mcpgen/mcpgen/providers/jsonfile"
)

// Name is the provider's name in the manifest and on the command line.
const Name = "opencode"

// Provider is opencode: opencode.json (or opencode.jsonc) in a project, and
// ~/.config/opencode/opencode.json.
var Provider providers.Provider = &jsonfile.Agent{
	Format: jsonfile.Format{Agent: "opencode", ServersKey: "mcp", JSONC: true, CommentRecord: true},
	Shape: jsonfile.Shape{
		Provider: Name, Title: "opencode",
		StdioType: "local", RemoteType: "remote", CommandArray: true,
		EnvKey: "environment", URLKey: "url", HeadersKey: "headers",
		Ref:     func(name string) string { return "{env:" + name + "}" },
		Clashes: func(text string) bool { return strings.Contains(text, "{env:") || strings.Contains(text, "{file:") },
		Parse:   jsonfile.ParseBraced("{env:", "}"),
		Ignore:  func(key string) bool { return key == "enabled" },
	},
	Where: providers.Files{
		Project: []string{"opencode.json", "opencode.jsonc"},
		User:    UserConfig,
		Default: providers.ScopeProject,
	},
}

// UserConfig is opencode's global config: opencode.json in $XDG_CONFIG_HOME/opencode (else
// ~/.config/opencode) on every system, or the opencode.jsonc there when that is the one.
func UserConfig(_, home string, getenv func(string) string) (string, error) {
	dir := filepath.Join(providers.XDGConfig(home, getenv), "opencode")
	jsonc := filepath.Join(dir, "opencode.jsonc")
	if _, err := os.Lstat(jsonc); err == nil {
		return jsonc, nil
	}
	return filepath.Join(dir, "opencode.json"), nil
}
