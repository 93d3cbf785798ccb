// Package amp writes the MCP servers of Amp (Sourcegraph): the literal top-level key
// "amp.mcpServers" of its settings.json, a VS Code-style settings file.
//
// Checked against the shapes rulesync (src/features/mcp/amp-mcp.ts) and ToolHive write, and
// Amp's manual (https://ampcode.com/manual, "MCP"): command, args, env for a local server,
// url and headers for a remote one. How Amp expands variables in values is not settled
// there: mcpgen writes no reference, and a value that needs one goes through mcpgen serve,
// which reads it from the environment Amp gives it.
package amp

import (
	"path/filepath"

	"github.com/mcpgen/mcpgen/providers"
	"github.com/mcpgen/mcpgen/providers/jsonfile"
)

// Name is the provider's name in the manifest and on the command line.
const Name = "amp"

// Provider is Amp: .amp/settings.json in a project, ~/.config/amp/settings.json.
var Provider providers.Provider = &jsonfile.Agent{
	Format: jsonfile.Format{Agent: "Amp", ServersKey: "amp.mcpServers", JSONC: true},
	Shape: jsonfile.Shape{
		Provider: Name, Title: "Amp",
		EnvKey: "env", URLKey: "url", HeadersKey: "headers",
		Parse: jsonfile.ParseLiteral,
	},
	Where: providers.Files{
		Project: []string{".amp/settings.json"},
		User: func(_, home string, getenv func(string) string) (string, error) {
			return filepath.Join(providers.XDGConfig(home, getenv), "amp", "settings.json"), nil
		},
		Default: providers.ScopeUser,
	},
}
