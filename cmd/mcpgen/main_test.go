package main

import (
	"flag"
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

var update = flag.Bool("update", false, "rewrite golden files and the expected output of scripts")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"mcpgen": func() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the CLI scripts in testdata/script: each is a txtar of
// commands (the real mcpgen, in-process) and the files they work on.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: *update,
		Setup: func(env *testscript.Env) error {
			// A home of their own, so that --write never touches the real one.
			env.Setenv("HOME", env.WorkDir+"/home")
			env.Setenv("CODEX_HOME", "")
			env.Setenv("CLAUDE_CONFIG_DIR", "")
			env.Setenv("XDG_CONFIG_HOME", "")
			env.Setenv("USER", "tester")
			return os.MkdirAll(env.WorkDir+"/home", 0o700)
		},
	})
}
