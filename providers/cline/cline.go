// Package cline writes the MCP servers of Cline: the mcpServers object of its
// cline_mcp_settings.json, which has no project scope.
//
// Checked against the shapes rulesync (src/features/mcp/cline-mcp.ts, the CLI's
// ~/.cline/data/settings/cline_mcp_settings.json) and ToolHive (pkg/client/config.go)
// write: command, args, env, "disabled", "autoApprove" for a local server; "type":
// "streamableHttp" with url and headers for a remote one. The VS Code extension keeps the
// same file in its global storage; -o writes that one. Cline expands no variable that its
// docs name: a value that needs one goes through mcpgen serve.
package cline

import (
	"path/filepath"

	"github.com/mcpgen/mcpgen/providers"
	"github.com/mcpgen/mcpgen/providers/jsonfile"
)

// Name is the provider's name in the manifest and on the command line.
const Name = "cline"

// Provider is Cline.
var Provider providers.Provider = &jsonfile.Agent{
	Format: jsonfile.Format{Agent: "Cline", ServersKey: "mcpServers"},
	Shape: jsonfile.Shape{
		Provider: Name, Title: "Cline",
		RemoteType: "streamableHttp",
		EnvKey:     "env", URLKey: "url", HeadersKey: "headers",
		Parse:  jsonfile.ParseLiteral,
		Ignore: func(key string) bool { return key == "disabled" || key == "autoApprove" },
	},
	Where: providers.Files{
		User: func(_, home string, _ func(string) string) (string, error) {
			return filepath.Join(home, ".cline", "data", "settings", "cline_mcp_settings.json"), nil
		},
		Default: providers.ScopeUser,
	},
}
