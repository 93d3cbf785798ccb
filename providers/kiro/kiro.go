// Package kiro writes the MCP servers of Kiro (IDE and CLI): the mcpServers object of its
// mcp.json.
//
// Checked against Kiro's docs (https://kiro.dev/docs/mcp/configuration and
// https://kiro.dev/docs/cli/mcp/configuration): command, args, env for a local server, url
// and headers for a remote one, ${NAME} expanded in values, "disabled", "autoApprove" and
// "disabledTools" (disabled_tools); .kiro/settings/mcp.json in a workspace,
// ~/.kiro/settings/mcp.json for the user.
package kiro

import (
	"github.com/mcpgen/mcpgen/providers"
	"github.com/mcpgen/mcpgen/providers/jsonfile"
)

// Name is the provider's name in the manifest and on the command line.
const Name = "kiro"

// Provider is Kiro.
var Provider providers.Provider = &jsonfile.Agent{
	Format: jsonfile.Format{Agent: "Kiro", ServersKey: "mcpServers"},
	Shape: jsonfile.Shape{
		Provider: Name, Title: "Kiro",
		EnvKey: "env", URLKey: "url", HeadersKey: "headers",
		ExcludeToolsKey: "disabledTools",
		Ref:             jsonfile.Dollar, Clashes: jsonfile.HasDollar, Parse: jsonfile.ParseDollar,
		Ignore: func(key string) bool { return key == "disabled" || key == "autoApprove" },
	},
	Where: providers.Files{
		Project: []string{".kiro/settings/mcp.json"},
		User:    providers.InHome(".kiro", "settings", "mcp.json"),
		Default: providers.ScopeProject,
	},
}
