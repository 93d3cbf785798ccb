// Command mcpgen builds standalone stdio MCP servers, emits their configs
// for Claude and Codex, and runs them for a workspace, all from one
// manifest, mcpgen.toml.
package main

import (
	"os"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/internal/sandbox"
)

func main() {
	// As a sandbox's setup step (started by sandbox.Prepare), mcpgen
	// confines itself and runs the server's command. First: in a PID
	// namespace of its own it is PID 1, and no container's init.
	if code, ok := sandbox.Main(); ok {
		os.Exit(code)
	}
	// As a container's entrypoint (PID 1 of its namespace), mcpgen runs
	// itself as init's one child: init reaps every orphan and passes
	// signals on.
	if code, ok := proc.Init(); ok {
		os.Exit(code)
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
