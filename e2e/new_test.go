//go:build unix

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	json "github.com/goccy/go-json"
)

// TestNewJourney follows a user who scaffolds a server: mcpgen init, mcpgen
// new, mcpgen build, the scaffold's own tests, then both agents starting
// it from the emitted configs. It needs the Go module proxy (or a module
// cache that has the Go MCP SDK).
func TestNewJourney(t *testing.T) {
	sb := newSandbox(t)
	proj := sb.path("proj")
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	sb.mcpgen(proj, "init")
	sb.mcpgen(proj, "new", "greeter")
	for _, f := range []string{"main.go", "main_test.go", "go.mod", "go.sum", "README.md"} {
		if _, err := os.Stat(filepath.Join(proj, "greeter", f)); err != nil {
			t.Errorf("mcpgen new: %v", err)
		}
	}

	// mcpgen build: go build, then the server starts and lists its tool.
	var reports []struct {
		Name  string   `json:"name"`
		Build string   `json:"build"`
		Tools []string `json:"tools"`
		Error string   `json:"error"`
	}
	out := sb.mcpgen(proj, "build", "greeter", "--json").stdout
	if err := json.Unmarshal([]byte(out), &reports); err != nil {
		t.Fatalf("mcpgen build --json: %v\n%s", err, out)
	}
	if len(reports) != 1 || reports[0].Name != "greeter" || reports[0].Build != "built" ||
		len(reports[0].Tools) != 1 || reports[0].Tools[0] != "greet" || reports[0].Error != "" {
		t.Fatalf("mcpgen build greeter --json: got %+v, want greeter built, with the one tool greet", reports)
	}

	// The scaffold's own tests pass.
	sb.must(run{dir: proj, args: []string{"go", "-C", "greeter", "test", "./..."}})

	// The official TypeScript client calls greet on the built server.
	res := sb.must(run{env: []string{"WORKSPACE_ID=ws-new", "MCP_NODE_MODULES=" + os.Getenv("MCP_NODE_MODULES")}, args: []string{
		node, filepath.Join(testdata(t), "sdk-client.mjs"), `[{"tool":"greet","arguments":{"name":"Ada"}},{"tool":"greet","arguments":{"name":""}}]`,
		"--", filepath.Join(proj, "greeter", "bin", "greeter"),
	}})
	var called sdkOutput
	if err := json.Unmarshal([]byte(res.stdout), &called); err != nil || len(called.Results) != 2 {
		t.Fatalf("sdk-client.mjs: %v\n%s", err, res)
	}
	if r := called.Results[0]; r.IsError || !strings.Contains(r.Text, "Hello, Ada! (ws-new)") {
		t.Errorf("greet Ada: got isError=%v %q, want the greeting for workspace ws-new", r.IsError, r.Text)
	}
	if r := called.Results[1]; !r.IsError {
		t.Errorf("greet with an empty name: got %q, want an isError result", r.Text)
	}

	// Both agents start it, with the starter's servers, from the emitted configs.
	names := []string{"files", "git", "greeter"}
	ws := []string{"--workspace", "ws-new", "--dir", proj, "--user", "e2e"}
	codex := sb.write("codex.toml", sb.mcpgen(proj, append([]string{"emit", "-p", "codex", "--mcpgen-path", mcpgen}, ws...)...).stdout)
	claude := sb.write("claude.json", sb.mcpgen(proj, append([]string{"emit", "-p", "claude", "--mcpgen-path", mcpgen}, ws...)...).stdout)
	t.Run("codex", func(t *testing.T) {
		t.Parallel()
		sb := newSandbox(t)
		got, out := sb.validateCodex(nil, []string{"--health"}, codex, names...)
		if !sameSet(got, names) {
			t.Errorf("codex mcp list sees %q, want %q", got, names)
		}
		checkCodexHealth(t, out, names, map[string][]string{"files": {"read_file"}, "git": {"log", "status"}, "greeter": {"greet"}})
	})
	t.Run("claude", func(t *testing.T) {
		t.Parallel()
		sb := newSandbox(t)
		got, out := sb.validateClaude(nil, []string{"--health"}, claude)
		if !sameSet(got, names) {
			t.Errorf("claude mcp get accepted %q, want %q", got, names)
		}
		checkClaudeHealth(t, out, names)
	})
}
