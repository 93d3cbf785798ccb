// Package gemini writes the MCP servers of Gemini CLI: the mcpServers object of its
// settings.json, which it reads with comments (strip-json-comments).
//
// Checked against Gemini CLI's source and docs (google-gemini/gemini-cli,
// docs/tools/mcp-server.md; packages/cli/src/config/settings.ts reads the file through
// strip-json-comments; packages/cli/src/utils/envVarResolver.ts expands $VAR and ${VAR},
// no default, an unset one kept as written): command, args, env, cwd; url is SSE and
// httpUrl Streamable HTTP, with headers; timeout in milliseconds; includeTools and
// excludeTools. It rejects unknown keys inside an entry, and accepts a top-level _mcpgen.
package gemini

import (
	"time"

	"github.com/mcpgen/mcpgen/providers"
	"github.com/mcpgen/mcpgen/providers/jsonfile"
)

// Name is the provider's name in the manifest and on the command line.
const Name = "gemini"

// Shape is how Gemini CLI spells a server; Qwen Code, its fork, spells them alike.
var Shape = jsonfile.Shape{
	Provider: Name, Title: "Gemini CLI",
	EnvKey: "env", URLKey: "httpUrl", HeadersKey: "headers", CwdKey: "cwd",
	TimeoutKey: "timeout", TimeoutUnit: time.Millisecond,
	IncludeToolsKey: "includeTools", ExcludeToolsKey: "excludeTools",
	Ref: jsonfile.Dollar, Clashes: jsonfile.HasDollar, Parse: jsonfile.ParseDollar,
}

// Provider is Gemini CLI: .gemini/settings.json in a project, ~/.gemini/settings.json.
var Provider providers.Provider = &jsonfile.Agent{
	Format: jsonfile.Format{Agent: "Gemini CLI", ServersKey: "mcpServers", JSONC: true},
	Shape:  Shape,
	Where: providers.Files{
		Project: []string{".gemini/settings.json"},
		User:    providers.InHome(".gemini", "settings.json"),
		Default: providers.ScopeProject,
	},
}
