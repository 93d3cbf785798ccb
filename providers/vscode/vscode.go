// Package vscode writes the MCP servers of VS Code (GitHub Copilot's agent mode): the
// servers object (not mcpServers) of its mcp.json, a JSONC file.
//
// Checked against VS Code's reference (microsoft/vscode-docs,
// docs/agents/reference/mcp-configuration.md): "type" is required, "stdio" with command,
// args, env (and envFile), or "http" with url and headers; "inputs" beside "servers",
// which a merge keeps; ${env:NAME} among the predefined variables
// (docs/reference/variables-reference.md). No working directory, timeout or tool filter
// per server: a server with a cwd goes through mcpgen serve, and its tool filters apply
// through the launcher.
package vscode

import (
	"path/filepath"

	"github.com/mcpgen/mcpgen/providers"
	"github.com/mcpgen/mcpgen/providers/jsonfile"
)

// Name is the provider's name in the manifest and on the command line.
const Name = "vscode"

// Provider is VS Code: .vscode/mcp.json in a project, and the mcp.json of the user's
// profile, in Code/User of each system's per-user application config.
var Provider providers.Provider = &jsonfile.Agent{
	Format: jsonfile.Format{Agent: "VS Code", ServersKey: "servers", JSONC: true},
	Shape: jsonfile.Shape{
		Provider: Name, Title: "VS Code",
		StdioType: "stdio", RemoteType: "http",
		EnvKey: "env", URLKey: "url", HeadersKey: "headers",
		Ref: jsonfile.EnvColon, Clashes: jsonfile.HasDollarBrace, Parse: jsonfile.ParseBraced("${env:", "}"),
	},
	Where: providers.Files{
		Project: []string{".vscode/mcp.json"},
		User:    UserConfig,
		Default: providers.ScopeProject,
	},
}

// UserConfig is the mcp.json of VS Code's default profile on the system goos:
// %APPDATA%\Code\User, ~/Library/Application Support/Code/User, ~/.config/Code/User.
func UserConfig(goos, home string, getenv func(string) string) (string, error) {
	return filepath.Join(providers.ConfigDir(goos, home, getenv), "Code", "User", "mcp.json"), nil
}
