// Package copilot writes the MCP servers of GitHub Copilot CLI: the mcpServers object of
// its mcp-config.json, in strict JSON (it refuses comments).
//
// Checked against GitHub's docs (github/docs, content/copilot/how-tos/use-copilot-agents/
// use-copilot-cli.md: ~/.copilot/mcp-config.json) and the shape rulesync writes
// (docs/reference/file-formats.md): "type" is required, "local" with command, args, env,
// or "http" with url and headers; "tools" lists the tools to allow, "*" for all. Copilot
// CLI 1.0.102 (copilot mcp --help) reads ~/.copilot/mcp-config.json and, in a trusted
// folder, .mcp.json or .github/mcp.json; it loads both files as emit writes them, a
// top-level _mcpgen included (e2e, TestCopilotWithRealClient). Its ${VAR} expansion is not
// documented.
package copilot

import (
	"github.com/mcpgen/mcpgen/providers"
	"github.com/mcpgen/mcpgen/providers/jsonfile"
)

// Name is the provider's name in the manifest and on the command line.
const Name = "copilot"

// Provider is Copilot CLI: .github/mcp.json in a project, ~/.copilot/mcp-config.json.
var Provider providers.Provider = &jsonfile.Agent{
	Format: jsonfile.Format{Agent: "Copilot CLI", ServersKey: "mcpServers"},
	Shape: jsonfile.Shape{
		Provider: Name, Title: "Copilot CLI",
		StdioType: "local", RemoteType: "http",
		EnvKey: "env", URLKey: "url", HeadersKey: "headers",
		IncludeToolsKey: "tools",
		Ref:             jsonfile.Dollar, Clashes: jsonfile.HasDollar, Parse: jsonfile.ParseDollar,
		Extra: func(e *providers.Entry, o *jsonfile.Object) {
			if e.Server.EnabledTools == nil {
				o.Add("tools", jsonfile.Strs([]string{"*"})) // required: every tool
			}
		},
	},
	Where: providers.Files{
		Project: []string{".github/mcp.json"},
		User:    providers.InHome(".copilot", "mcp-config.json"),
		Default: providers.ScopeProject,
	},
}
