// Package junie writes the MCP servers of JetBrains Junie: the mcpServers object of its
// mcp.json, in Claude's shape (command, args, env; url, headers), as rulesync and the
// issue's research describe it (.junie/mcp/mcp.json in a project, ~/.junie/mcp/mcp.json).
// Whether Junie expands variables in values is not documented: mcpgen writes no
// reference, and a value that needs one goes through mcpgen serve, which reads it from the
// environment Junie gives it.
package junie

import (
	"github.com/mcpgen/mcpgen/providers"
	"github.com/mcpgen/mcpgen/providers/jsonfile"
)

// Name is the provider's name in the manifest and on the command line.
const Name = "junie"

// Provider is JetBrains Junie.
var Provider providers.Provider = &jsonfile.Agent{
	Format: jsonfile.Format{Agent: "Junie", ServersKey: "mcpServers"},
	Shape: jsonfile.Shape{
		Provider: Name, Title: "JetBrains Junie",
		EnvKey: "env", URLKey: "url", HeadersKey: "headers",
		Parse: jsonfile.ParseLiteral,
	},
	Where: providers.Files{
		Project: []string{".junie/mcp/mcp.json"},
		User:    providers.InHome(".junie", "mcp", "mcp.json"),
		Default: providers.ScopeProject,
	},
}
