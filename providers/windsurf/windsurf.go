// Package windsurf writes the MCP servers of Windsurf (Devin Desktop): the mcpServers
// object of its mcp_config.json.
//
// Checked against Windsurf's docs (https://docs.windsurf.com/windsurf/cascade/mcp, as
// quoted by vendors' setup pages) and ToolHive's pkg/client/config.go: command, args, env
// for stdio; a remote server's url is "serverUrl" (a Cursor "url" does not connect), with
// headers; ${env:NAME} in values. Its project file (.windsurf/mcp_config.json) is what
// rulesync and ruler write; Windsurf's own docs name only the user file.
package windsurf

import (
	"github.com/mcpgen/mcpgen/providers"
	"github.com/mcpgen/mcpgen/providers/jsonfile"
)

// Name is the provider's name in the manifest and on the command line.
const Name = "windsurf"

// Provider is Windsurf: .windsurf/mcp_config.json, ~/.codeium/windsurf/mcp_config.json.
var Provider providers.Provider = &jsonfile.Agent{
	Format: jsonfile.Format{Agent: "Windsurf", ServersKey: "mcpServers", JSONC: true},
	Shape: jsonfile.Shape{
		Provider: Name, Title: "Windsurf",
		EnvKey: "env", URLKey: "serverUrl", HeadersKey: "headers",
		Ref: jsonfile.EnvColon, Clashes: jsonfile.HasDollarBrace, Parse: jsonfile.ParseBraced("${env:", "}"),
		Ignore: func(key string) bool { return key == "disabled" },
	},
	Where: providers.Files{
		Project: []string{".windsurf/mcp_config.json"},
		User:    providers.InHome(".codeium", "windsurf", "mcp_config.json"),
		Default: providers.ScopeUser,
	},
}
