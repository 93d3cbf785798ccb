// Package crush writes the MCP servers of Crush (Charm): the mcp object of crush.json.
//
// Checked against Crush's configuration docs (its README's "MCPs" section, and
// https://mintlify.com/charmbracelet/crush/configuration/mcp): "type" is "stdio" with
// command, args, env, or "http" with url and headers; "timeout" in seconds;
// "disabled_tools"; values expand $NAME and ${NAME} (and $(command), so a literal "$" is
// not written as is). Project .crush.json or crush.json; ~/.config/crush/crush.json, in
// %LOCALAPPDATA%\crush on Windows.
package crush

import (
	"path/filepath"
	"time"

	"github.com/mcpgen/mcpgen/providers"
	"github.com/mcpgen/mcpgen/providers/jsonfile"
)

// Name is the provider's name in the manifest and on the command line.
const Name = "crush"

// Provider is Crush.
var Provider providers.Provider = &jsonfile.Agent{
	Format: jsonfile.Format{Agent: "Crush", ServersKey: "mcp"},
	Shape: jsonfile.Shape{
		Provider: Name, Title: "Crush",
		StdioType: "stdio", RemoteType: "http",
		EnvKey: "env", URLKey: "url", HeadersKey: "headers",
		TimeoutKey: "timeout", TimeoutUnit: time.Second,
		ExcludeToolsKey: "disabled_tools",
		Ref:             jsonfile.Dollar, Clashes: jsonfile.HasDollar, Parse: jsonfile.ParseDollar,
		Ignore: func(key string) bool { return key == "disabled" },
	},
	Where: providers.Files{
		Project: []string{".crush.json", "crush.json"},
		User:    UserConfig,
		Default: providers.ScopeProject,
	},
}

// UserConfig is Crush's global config on the system goos.
func UserConfig(goos, home string, getenv func(string) string) (string, error) {
	if goos == "windows" {
		dir := getenv("LOCALAPPDATA")
		if dir == "" {
			dir = filepath.Join(home, "AppData", "Local")
		}
		return filepath.Join(dir, "crush", "crush.json"), nil
	}
	return filepath.Join(providers.XDGConfig(home, getenv), "crush", "crush.json"), nil
}
