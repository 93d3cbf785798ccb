// Package qwen writes the MCP servers of Qwen Code, a fork of Gemini CLI that reads the
// same mcpServers shape (https://qwenlm.github.io/qwen-code-docs/en/users/mcp/: command,
// args, env, cwd, url for SSE, httpUrl for Streamable HTTP, headers, timeout in
// milliseconds, includeTools, excludeTools; $VAR and ${VAR} in values) from its own
// settings.json, with comments.
package qwen

import (
	"github.com/mcpgen/mcpgen/providers"
	"github.com/mcpgen/mcpgen/providers/gemini"
	"github.com/mcpgen/mcpgen/providers/jsonfile"
)

// Name is the provider's name in the manifest and on the command line.
const Name = "qwen"

// Provider is Qwen Code: .qwen/settings.json in a project, ~/.qwen/settings.json.
var Provider providers.Provider = &jsonfile.Agent{
	Format: jsonfile.Format{Agent: "Qwen Code", ServersKey: "mcpServers", JSONC: true},
	Shape:  shape(),
	Where: providers.Files{
		Project: []string{".qwen/settings.json"},
		User:    providers.InHome(".qwen", "settings.json"),
		Default: providers.ScopeProject,
	},
}

func shape() jsonfile.Shape {
	s := gemini.Shape
	s.Provider, s.Title = Name, "Qwen Code"
	return s
}
