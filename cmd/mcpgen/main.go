// Command mcpgen builds standalone stdio MCP servers, emits their configs
// for Claude and Codex, and runs them for a workspace, all from one
// manifest, mcpgen.toml.
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
