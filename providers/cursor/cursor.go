// Package cursor writes the MCP servers of Cursor: the mcpServers object of its mcp.json.
//
// Checked against Cursor's docs (https://cursor.com/docs/context/mcp, "Using mcp.json" and
// "Config interpolation") and the shapes rulesync (src/features/mcp/cursor-mcp.ts) and
// ToolHive (pkg/client/config.go) write: command, args, env for stdio; url and headers for
// a remote server, whose transport Cursor finds itself; ${env:NAME} in values. Cursor has
// no per-server working directory, timeout or tool filter: a server with a cwd goes
// through mcpgen serve, and its tool filters apply through the launcher.
package cursor

import (
	"github.com/mcpgen/mcpgen/providers"
	"github.com/mcpgen/mcpgen/providers/jsonfile"
)

// Name is the provider's name in the manifest and on the command line.
const Name = "cursor"

// Provider is Cursor: .cursor/mcp.json in a project, ~/.cursor/mcp.json.
var Provider providers.Provider = &jsonfile.Agent{
	Format: jsonfile.Format{Agent: "Cursor", ServersKey: "mcpServers", JSONC: true},
	Shape: jsonfile.Shape{
		Provider: Name, Title: "Cursor",
		EnvKey: "env", URLKey: "url", HeadersKey: "headers",
		Ref: jsonfile.EnvColon, Clashes: jsonfile.HasDollarBrace, Parse: jsonfile.ParseBraced("${env:", "}"),
	},
	Where: providers.Files{
		Project: []string{".cursor/mcp.json"},
		User:    providers.InHome(".cursor", "mcp.json"),
		Default: providers.ScopeProject,
	},
}
