package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"
)

// howToRun is what a skipped test says.
const howToRun = `end-to-end tests against the real Codex, Claude Code and MCP SDK: run eval "$(../shared/clients/install.sh)", then MCPGEN_E2E=1 go test -count=1 -v ./e2e/`

// clientVars are the variables that ../shared/clients/install.sh exports.
var clientVars = []string{"CODEX_BIN", "CLAUDE_BIN", "MCP_BENCH", "MCP_NODE_MODULES", "SERVER_EVERYTHING", "SERVER_FILESYSTEM", "SERVER_MEMORY"}

// validators is where validate-codex.sh and validate-claude.sh are: the
// shared directory beside the repository.
var validators = filepath.Join("..", "..", "shared", "clients")

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
	var missing []string
	for _, v := range clientVars {
		if os.Getenv(v) == "" {
			missing = append(missing, v)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("MCPGEN_E2E=1 but %s not set: run eval \"$(../shared/clients/install.sh)\" from the repository first", strings.Join(missing, ", "))
	}
	for _, v := range clientVars {
		if _, err := os.Stat(os.Getenv(v)); err != nil {
			return "", fmt.Errorf("%s: %v: re-run ../shared/clients/install.sh", v, err)
		}
	}
	// Absolute: the validators run in the tests' own directories.
	abs, err := filepath.Abs(validators)
	if err != nil {
		return "", err
	}
	validators = abs
	for _, s := range []string{"validate-codex.sh", "validate-claude.sh"} {
		if _, err := os.Stat(filepath.Join(validators, s)); err != nil {
			return "", fmt.Errorf("the validators are missing: %v (the shared directory must be beside the repository)", err)
		}
	}
	if node, err = exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("node is not on PATH: %v", err)
	}
	if exec.Command("unshare", "-n", "true").Run() == nil {
		unshare = []string{"unshare", "-n"}
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

// validateCodex runs validate-codex.sh (the real Codex strict loader, then
// codex mcp list) on file and returns the names of the servers Codex sees.
// names are also checked one by one with codex mcp get.
func (sb *sandbox) validateCodex(env []string, flags []string, file string, names ...string) (servers []string, out string) {
	sb.t.Helper()
	args := append([]string{"bash", filepath.Join(validators, "validate-codex.sh")}, flags...)
	res := sb.must(run{env: env, args: append(append(args, file), names...)})
	list, err := section(res.stdout, "## 2. codex mcp list --json")
	if err != nil {
		sb.t.Fatalf("validate-codex.sh %s: %v\n%s", file, err, res.stdout)
	}
	var parsed []struct {
		Name string `json:"name"`
	}
	if err := json.NewDecoder(strings.NewReader(list)).Decode(&parsed); err != nil {
		sb.t.Fatalf("validate-codex.sh %s: codex mcp list --json: %v\n%s", file, err, list)
	}
	for _, s := range parsed {
		servers = append(servers, s.Name)
	}
	return servers, res.stdout
}

// validateClaude runs validate-claude.sh (the real Claude Code: claude mcp
// list, then claude mcp get for every server of the file) and returns the
// names of the servers that claude mcp get accepted.
func (sb *sandbox) validateClaude(env []string, flags []string, file string) (servers []string, out string) {
	sb.t.Helper()
	args := append([]string{"bash", filepath.Join(validators, "validate-claude.sh")}, flags...)
	res := sb.must(run{env: env, args: append(args, file)})
	for _, line := range strings.Split(res.stdout, "\n") {
		if name, ok := strings.CutPrefix(line, "## 2. claude mcp get "); ok {
			servers = append(servers, name)
		}
	}
	return servers, res.stdout
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
