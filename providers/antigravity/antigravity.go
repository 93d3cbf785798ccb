// Package antigravity writes the MCP servers of Google Antigravity (the IDE and its CLI,
// agy): the mcpServers object of its mcp_config.json.
//
// What was checked, and against what (Google's own page, antigravity.google/docs/mcp, was
// not reachable from here): rulesync's Antigravity writers (dyoshikawa/rulesync,
// src/features/mcp/antigravity-mcp.ts and antigravity-ide-mcp.ts, which say that from
// Antigravity 2.0 the IDE and the CLI read ~/.gemini/config/mcp_config.json, no longer
// ~/.gemini/antigravity/mcp_config.json, and a project's .agents/mcp_config.json), and
// several vendors' setup pages: command, args, env for stdio; a remote server's url is
// "serverUrl", with headers; disabledTools per server. Not verified: whether Antigravity
// expands any variable reference in values (none is documented; one page says it does not
// expand ${workspaceFolder}), whether it reads comments, and whether it keeps a top-level
// key it does not know. So mcpgen writes strict JSON and no reference: a value that needs
// one (a secret, context left to the agent) goes through mcpgen serve, which reads it from
// the environment Antigravity gives it.
package antigravity

import (
	"github.com/mcpgen/mcpgen/providers"
	"github.com/mcpgen/mcpgen/providers/jsonfile"
)

// Name is the provider's name in the manifest and on the command line.
const Name = "antigravity"

// Provider is Google Antigravity: .agents/mcp_config.json in a project,
// ~/.gemini/config/mcp_config.json (%USERPROFILE%\.gemini\config on Windows).
var Provider providers.Provider = &jsonfile.Agent{
	Format: jsonfile.Format{Agent: "Antigravity", ServersKey: "mcpServers"},
	Shape: jsonfile.Shape{
		Provider: Name, Title: "Antigravity",
		EnvKey: "env", URLKey: "serverUrl", HeadersKey: "headers",
		ExcludeToolsKey: "disabledTools",
		Parse:           jsonfile.ParseLiteral,
		Ignore:          func(key string) bool { return key == "disabled" },
	},
	Where: providers.Files{
		Project: []string{".agents/mcp_config.json"},
		User:    providers.InHome(".gemini", "config", "mcp_config.json"),
		Default: providers.ScopeProject,
	},
}
