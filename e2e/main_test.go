//go:build unix

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// howToRun is what a skipped test says.
const howToRun = `end-to-end tests against the real Codex, Claude Code and MCP SDK: run eval "$(e2e/clients/install.sh)" from the repository, then MCPGEN_E2E=1 go test -count=1 -v ./e2e/`

// clientVars are the variables of e2e/clients/install.sh that the tests use.
var clientVars = []string{"CODEX_BIN", "CLAUDE_BIN", "GEMINI_BIN", "COPILOT_BIN", "RULESYNC_BIN", "MCP_BENCH", "MCP_NODE_MODULES", "SERVER_EVERYTHING", "SERVER_FILESYSTEM", "SERVER_MEMORY"}

// platformVars are install.sh's variables for the clients pinned on one
// platform only (e2e/clients/linux-x64): required there, so that a client
// missing on it fails the run rather than skipping its test; elsewhere
// absent, and those tests skip.
var platformVars = map[string][]string{"linux/amd64": {"OPENCODE_BIN", "QWEN_BIN"}}

// notPinnedHere is what a test of a platform-pinned client says when it skips.
const notPinnedHere = "e2e/clients/install.sh pins it for linux-x64 only (e2e/clients/linux-x64: npm's lockfile of it holds that platform's binaries alone, and npm ci refuses it elsewhere)"

var (
	enabled bool
	mcpgen  string   // the binary that TestMain built
	node    string   // node, absolute
	unshare []string // the prefix that keeps a client off the network, if it works here
	goEnv   []string // the go command's caches, for a HOME of the test's own
)

func TestMain(m *testing.M) {
	enabled = os.Getenv("MCPGEN_E2E") == "1"
	if !enabled {
		os.Exit(m.Run()) // every test skips, saying how to run them
	}
	dir, err := setup()
	code := 1
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
	} else {
		code = m.Run()
	}
	if dir != "" {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// setup checks that the clients are installed and builds mcpgen into a
// temporary directory, which it returns for removal.
func setup() (string, error) {
	clientVars = append(clientVars, platformVars[runtime.GOOS+"/"+runtime.GOARCH]...)
	var missing []string
	for _, v := range clientVars {
		if os.Getenv(v) == "" {
			missing = append(missing, v)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("MCPGEN_E2E=1 but %s not set: run eval \"$(e2e/clients/install.sh)\" from the repository first", strings.Join(missing, ", "))
	}
	for _, v := range clientVars {
		if _, err := os.Stat(os.Getenv(v)); err != nil {
			return "", fmt.Errorf("%s: %v: run e2e/clients/install.sh again", v, err)
		}
	}
	var err error
	if node, err = exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("node is not on PATH: %v", err)
	}
	// A network namespace of its own, as root or, failing that, as an
	// unprivileged user mapped to root.
	for _, prefix := range [][]string{{"unshare", "-n"}, {"unshare", "-rn"}} {
		if exec.Command(prefix[0], append(prefix[1:], "true")...).Run() == nil {
			unshare = prefix
			break
		}
	}
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		return "", fmt.Errorf("go env: %v", err)
	}
	for i, v := range strings.Fields(string(out)) {
		goEnv = append(goEnv, []string{"GOCACHE", "GOMODCACHE", "GOPATH"}[i]+"="+v)
	}

	dir, err := os.MkdirTemp("", "mcpgen-e2e-")
	if err != nil {
		return "", err
	}
	mcpgen = filepath.Join(dir, "mcpgen")
	start := time.Now()
	if out, err := exec.Command("go", "build", "-o", mcpgen, "github.com/mcpgen/mcpgen/cmd/mcpgen").CombinedOutput(); err != nil {
		return dir, fmt.Errorf("go build ./cmd/mcpgen: %v\n%s", err, out)
	}
	fmt.Fprintf(os.Stderr, "e2e: built %s in %s\n", mcpgen, time.Since(start).Round(time.Millisecond))
	return dir, nil
}

// A sandbox is one test's world: a home of its own and an environment
// without the variables that would lead to the real one.
type sandbox struct {
	t    *testing.T
	dir  string // a temporary directory for the test's files
	home string
	env  []string
}

// newSandbox skips the test unless MCPGEN_E2E=1, and returns its sandbox.
func newSandbox(t *testing.T) *sandbox {
	t.Helper()
	if !enabled {
		t.Skip(howToRun)
	}
	dir := t.TempDir()
	sb := &sandbox{t: t, dir: dir, home: filepath.Join(dir, "home")}
	if err := os.Mkdir(sb.home, 0o700); err != nil {
		t.Fatal(err)
	}
	drop := []string{"HOME", "CODEX_HOME", "CLAUDE_CONFIG_DIR", "XDG_CONFIG_HOME", "WORKSPACE_ID", "WORKSPACE_DIR", "USER_ID", "GOCACHE", "GOMODCACHE", "GOPATH"}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(drop, k) {
			sb.env = append(sb.env, kv)
		}
	}
	sb.env = append(sb.env, "HOME="+sb.home, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1")
	sb.env = append(sb.env, goEnv...)
	return sb
}

// path returns a path inside the sandbox's directory.
func (sb *sandbox) path(elem ...string) string {
	return filepath.Join(append([]string{sb.dir}, elem...)...)
}

// write writes a file of the sandbox, making its directory.
func (sb *sandbox) write(name, content string) string {
	sb.t.Helper()
	path := name
	if !filepath.IsAbs(path) {
		path = sb.path(name)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		sb.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		sb.t.Fatal(err)
	}
	return path
}

// A run is one command to run in a sandbox.
type run struct {
	dir  string   // working directory; default the sandbox's
	env  []string // added to the sandbox's environment
	args []string
}

// result is what a command did.
type result struct {
	stdout, stderr string
	err            error
	took           time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("error: %v\nstdout:\n%s\nstderr:\n%s", r.err, r.stdout, r.stderr)
}

// try runs r and returns what it did; the test goes on.
func (sb *sandbox) try(r run) result {
	sb.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.args[0], r.args[1:]...)
	cmd.Dir = r.dir
	if cmd.Dir == "" {
		cmd.Dir = sb.dir
	}
	cmd.Env = append(slices.Clip(sb.env), r.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	return result{stdout: stdout.String(), stderr: stderr.String(), err: err, took: time.Since(start)}
}

// must runs r and fails the test, showing everything, unless it succeeds.
func (sb *sandbox) must(r run) result {
	sb.t.Helper()
	res := sb.try(r)
	if res.err != nil {
		dir := r.dir
		if dir == "" {
			dir = sb.dir
		}
		sb.t.Fatalf("%s (in %s): %s", strings.Join(r.args, " "), dir, res)
	}
	return res
}

// mcpgen runs the built mcpgen in dir ("" for the sandbox's directory).
func (sb *sandbox) mcpgen(dir string, args ...string) result {
	sb.t.Helper()
	return sb.must(run{dir: dir, args: append([]string{mcpgen}, args...)})
}

// offline prefixes a client's command line with unshare -n where that
// works, as the validators do: nothing leaves the machine.
func offline(args ...string) []string {
	return append(slices.Clip(unshare), args...)
}

// validateCodex checks file with the real Codex (validateCodexFile: its
// strict loader, codex mcp list and codex mcp get for each of names; flags
// --project, --in-project DIR, --health, --no-netns) and returns the names
// of the servers Codex sees, and the transcript. The test fails unless the
// file is valid. env is added to the sandbox's.
func (sb *sandbox) validateCodex(env []string, flags []string, file string, names ...string) (servers []string, out string) {
	sb.t.Helper()
	v := validateCodexFile(sb.dir, append(slices.Clip(sb.env), env...), flags, file, names...)
	if v.err != nil {
		sb.t.Fatalf("the real Codex %v: %v\n%s", flags, v.err, v.out)
	}
	return v.servers, v.out
}

// validateClaude checks file with the real Claude Code (validateClaudeFile:
// claude mcp list, then claude mcp get for every server of the file; flags
// --health, --desktop, --strict-warnings, --in-project DIR, --no-netns) and
// returns the names of the servers that claude mcp get accepted, and the
// transcript. The test fails unless the file is valid.
func (sb *sandbox) validateClaude(env []string, flags []string, file string) (servers []string, out string) {
	sb.t.Helper()
	v := validateClaudeFile(sb.dir, append(slices.Clip(sb.env), env...), flags, file)
	if v.err != nil {
		sb.t.Fatalf("the real Claude Code %v: %v\n%s", flags, v.err, v.out)
	}
	return v.servers, v.out
}

// section returns the text of out after the line header, up to the next
// "## " header.
func section(out, header string) (string, error) {
	_, rest, ok := strings.Cut(out, header+"\n")
	if !ok {
		return "", errors.New("no " + header + " in the output")
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest, nil
}

// sameSet reports whether got and want hold the same names, in any order.
func sameSet(got, want []string) bool {
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	return slices.Equal(g, w)
}
