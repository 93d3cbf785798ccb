package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"github.com/mcpgen/mcpgen/internal/sandbox"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	json "github.com/goccy/go-json"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/spf13/cobra"

	"github.com/mcpgen/mcpgen/templates"
)

var update = flag.Bool("update", false, "rewrite golden files and the expected output of scripts")

func TestMain(m *testing.M) {
	testscript.Main(cleanupM{m}, map[string]func(){
		"mcpgen": func() {
			// As main does: a sandbox's setup step first.
			if code, ok := sandbox.Main(); ok {
				os.Exit(code)
			}
			os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
		},
	})
}

// cleanupM runs the tests, then removes what they left for the whole run
// (the mcpgen binary that BenchmarkEmitProcess builds), and fails the run
// when a process that a script started runs on (see leftovers).
type cleanupM struct{ m *testing.M }

func (c cleanupM) Run() int {
	// testscript.Main put the directory of the programs that scripts run
	// first in PATH.
	scriptBin, _, _ := strings.Cut(os.Getenv("PATH"), string(os.PathListSeparator))
	code := c.m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	if left := leftovers(scriptBin); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: processes that scripts started were still running after the tests (now ended):\n\t%s\n", strings.Join(left, "\n\t"))
		if code == 0 {
			code = 1
		}
	}
	return code
}

// TestScripts runs the CLI scripts in testdata/script: each is a txtar of
// commands (the real mcpgen, in-process) and the files they work on.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			// A home of their own, so that --write never touches the real one.
			env.Setenv("HOME", env.WorkDir+"/home")
			env.Setenv("CODEX_HOME", "")
			env.Setenv("CLAUDE_CONFIG_DIR", "")
			env.Setenv("XDG_CONFIG_HOME", "")
			// mcpgen's state (logs, and the backups of project files) in
			// that home too, unless a script says otherwise.
			env.Setenv("XDG_STATE_HOME", "")
			env.Setenv("MCPGEN_STATE_DIR", "")
			env.Setenv("USER", "tester")
			// The search for mcpgen.toml stops at $WORK: a stray one in
			// the temporary directory must not change what scripts see.
			env.Setenv("MCPGEN_CEILING_DIRECTORIES", filepath.Dir(env.WorkDir))
			// The go command, for mcpgen new and the servers that scripts
			// build, uses the caches and proxy of the one running the
			// tests: the home above is empty.
			for k, v := range goEnv() {
				env.Setenv(k, v)
			}
			// Under the race detector, every mcpgen that a script runs
			// would sleep a second at exit (atexit_sleep_ms defaults to
			// 1000); a race still fails it, with exit status 66.
			env.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
			return os.MkdirAll(env.WorkDir+"/home", 0o700)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"fileinfo": cmdFileinfo,
			"backdate": cmdBackdate,
			"mcp":      cmdMCP,
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "goproxy":
				return goProxyOK(), nil
			case "sandbox":
				// Landlock and namespaces: a sandbox that confines files
				// and hides other processes.
				r := sandbox.Inspect(&sandbox.Policy{Network: sandbox.Network{Mode: sandbox.NetNone}})
				return strings.Contains(r.Platform, "landlock") && strings.Contains(r.Platform, "pid"), nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}

// cmdFileinfo prints what identifies a version of each file: inode, size,
// mode and modification time to the nanosecond. A file that was rewritten
// (even with the same bytes, even within one clock tick) gets a new inode
// from the atomic rename, so comparing two outputs tells whether anything
// wrote it.
//
//	fileinfo FILE...
func cmdFileinfo(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: fileinfo FILE...")
	}
	for _, name := range args {
		fi, err := os.Stat(ts.MkAbs(name))
		ts.Check(err)
		ino, ok := inode(fi)
		if !ok {
			ts.Fatalf("fileinfo: no inode for %s on this system", name)
		}
		fmt.Fprintf(ts.Stdout(), "%s inode=%d size=%d mode=%v mtime=%s\n", name, ino, fi.Size(), fi.Mode(), fi.ModTime().Format(time.RFC3339Nano))
	}
}

// cmdBackdate sets the modification time of files to 2000-01-01, so that
// whatever is written next is newer, however coarse the clock.
//
//	backdate FILE...
func cmdBackdate(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: backdate FILE...")
	}
	old := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, name := range args {
		ts.Check(os.Chtimes(ts.MkAbs(name), old, old))
	}
}

// goEnvVars are the go command's settings that scripts inherit.
var goEnvVars = []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOPROXY", "GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GONOPROXY", "GOFLAGS", "GOTOOLCHAIN"}

var goEnv = sync.OnceValue(func() map[string]string {
	out, err := exec.Command("go", append([]string{"env", "-json"}, goEnvVars...)...).Output()
	if err != nil {
		return nil // no go command: the scripts that need it skip
	}
	var env map[string]string
	if json.Unmarshal(out, &env) != nil {
		return nil
	}
	return env
})

// goProxyOK reports whether the go command can get the Go MCP SDK that
// scaffolds use: from the module cache, else from the proxy. mcpgen new
// needs it.
var goProxyOK = sync.OnceValue(func() bool {
	if goEnv() == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "github.com/modelcontextprotocol/go-sdk@"+templates.SDKVersion)
	cmd.Dir = os.TempDir() // outside any module
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "the Go module proxy is out of reach, scripts that need it skip: %v\n%s", err, out.String())
		return false
	}
	return true
})

// TestEveryCommandHasAnExample checks the help of every command that
// mcpgen defines, including those added later: each shows an example.
func TestEveryCommandHasAnExample(t *testing.T) {
	a := &app{}
	root := a.rootCommand(nil)
	var walk func(path string, cmds []*cobra.Command)
	n := 0
	walk = func(path string, cmds []*cobra.Command) {
		for _, c := range cmds {
			name := strings.TrimSpace(path + " " + c.Name())
			n++
			if strings.TrimSpace(c.Example) == "" {
				t.Errorf("mcpgen %s --help shows no example: set its Example", name)
			}
			walk(name, c.Commands())
		}
	}
	walk("", []*cobra.Command{root})
	if n < 7 {
		t.Errorf("walked %d commands, want at least 7 (root, init, validate, emit, serve, build, new)", n)
	}
}
