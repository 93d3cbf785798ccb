// Package warp writes the MCP servers of Warp: the mcpServers object of .warp/.mcp.json
// (and ~/.warp/.mcp.json), in Claude's shape with the working directory spelled
// "working_directory", as rulesync's file-formats reference describes it. Whether Warp
// expands variables in values is not documented: mcpgen writes no reference, and a value
// that needs one goes through mcpgen serve.
package warp

import (
	"github.com/mcpgen/mcpgen/providers"
	"github.com/mcpgen/mcpgen/providers/jsonfile"
)

// Name is the provider's name in the manifest and on the command line.
const Name = "warp"

// Provider is Warp.
var Provider providers.Provider = &jsonfile.Agent{
	Format: jsonfile.Format{Agent: "Warp", ServersKey: "mcpServers"},
	Shape: jsonfile.Shape{
		Provider: Name, Title: "Warp",
		EnvKey: "env", URLKey: "url", HeadersKey: "headers", CwdKey: "working_directory",
		Parse: jsonfile.ParseLiteral,
	},
	Where: providers.Files{
		Project: []string{".warp/.mcp.json"},
		User:    providers.InHome(".warp", ".mcp.json"),
		Default: providers.ScopeProject,
	},
}
