//go:build unix

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	json "github.com/goccy/go-json"
)

const writeManifest = `[servers.files]
builtin = "files"
read_only = true

[servers.shell.tools.echo]
run = ["echo", "{text}"]
args.text = { type = "string" }
`

// codexList runs the real codex mcp list --json in env and returns the
// servers it sees, by name, with their command.
func (sb *sandbox) codexList(env []string) map[string]string {
	sb.t.Helper()
	res := sb.must(run{env: env, args: offline(os.Getenv("CODEX_BIN"), "mcp", "list", "--json")})
	var list []struct {
		Name      string `json:"name"`
		Transport struct {
			Command string `json:"command"`
		} `json:"transport"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &list); err != nil {
		sb.t.Fatalf("codex mcp list --json: %v\n%s", err, res)
	}
	servers := map[string]string{}
	for _, s := range list {
		servers[s.Name] = s.Transport.Command
	}
	return servers
}

// TestWriteThenRealClientsRead writes with emit --write into a home of the
// test's own, then asks the real clients, pointed at that home, what they
// see.
func TestWriteThenRealClientsRead(t *testing.T) {
	t.Run("codex-user", func(t *testing.T) {
		t.Parallel()
		sb := newSandbox(t)
		manifest := sb.write("mcpgen.toml", writeManifest)
		// A config of the user's, with a server of their own.
		sb.write(filepath.Join(sb.home, ".codex", "config.toml"), "# mine\nmodel = \"o3\"\n\n[mcp_servers.mine]\ncommand = \"my-server\"\n")
		sb.mcpgen("", "emit", "-p", "codex", "--write", "--manifest", manifest, "--mcpgen-path", mcpgen)
		got := sb.codexList(nil)
		want := map[string]string{"mine": "my-server", "files": mcpgen, "shell": mcpgen}
		if !sameMap(got, want) {
			t.Errorf("codex mcp list (HOME=%s) sees %v, want %v", sb.home, got, want)
		}
		data, _ := os.ReadFile(filepath.Join(sb.home, ".codex", "config.toml"))
		if !strings.HasPrefix(string(data), "# mine\nmodel = \"o3\"\n") {
			t.Errorf("the user's config lost its head:\n%s", data)
		}
	})

	t.Run("codex-home", func(t *testing.T) {
		t.Parallel()
		sb := newSandbox(t)
		manifest := sb.write("mcpgen.toml", writeManifest)
		codexHome := sb.path("codex-home")
		if err := os.Mkdir(codexHome, 0o700); err != nil {
			t.Fatal(err)
		}
		env := []string{"CODEX_HOME=" + codexHome}
		sb.must(run{env: env, args: []string{mcpgen, "emit", "-p", "codex", "--write", "--manifest", manifest, "--mcpgen-path", mcpgen, "--workspace", "ws-1", "--dir", sb.dir}})
		if _, err := os.Stat(filepath.Join(sb.home, ".codex")); err == nil {
			t.Errorf("emit --write with CODEX_HOME set wrote to ~/.codex too")
		}
		got := sb.codexList(env)
		want := map[string]string{"files": mcpgen, "shell": mcpgen}
		if !sameMap(got, want) {
			t.Errorf("codex mcp list (CODEX_HOME=%s) sees %v, want %v", codexHome, got, want)
		}
		// Codex starts them from there.
		res := sb.must(run{env: env, args: offline(os.Getenv("CODEX_BIN"), "mcp", "get", "files", "--json")})
		if !strings.Contains(res.stdout, `"WORKSPACE_ID": "ws-1"`) {
			t.Errorf("codex mcp get files: want WORKSPACE_ID ws-1 in its env:\n%s", res.stdout)
		}
	})

	t.Run("claude-user", func(t *testing.T) {
		t.Parallel()
		sb := newSandbox(t)
		manifest := sb.write("mcpgen.toml", writeManifest)
		claudeJSON := filepath.Join(sb.home, ".claude.json")
		sb.write(claudeJSON, `{"numStartups": 42, "projects": {"/home/me/app": {"allowedTools": ["Bash"]}}, "mcpServers": {"mine": {"command": "my-server"}}}`)
		sb.mcpgen("", "emit", "-p", "claude", "--write", "--scope", "user", "--manifest", manifest, "--mcpgen-path", mcpgen, "--workspace", "ws-1", "--dir", sb.dir)

		var doc struct {
			NumStartups int                        `json:"numStartups"`
			Projects    map[string]json.RawMessage `json:"projects"`
			MCPServers  map[string]json.RawMessage `json:"mcpServers"`
		}
		data, err := os.ReadFile(claudeJSON)
		if err != nil || json.Unmarshal(data, &doc) != nil {
			t.Fatalf("~/.claude.json: %v\n%s", err, data)
		}
		if doc.NumStartups != 42 || doc.Projects["/home/me/app"] == nil {
			t.Errorf("~/.claude.json lost the user's keys:\n%s", data)
		}
		for _, name := range []string{"mine", "files", "shell"} {
			if doc.MCPServers[name] == nil {
				t.Errorf("~/.claude.json has no server %s:\n%s", name, data)
			}
		}
		// The real Claude Code reads them as user servers, and starts them.
		for _, name := range []string{"files", "shell"} {
			res := sb.must(run{args: offline(os.Getenv("CLAUDE_BIN"), "mcp", "get", name)})
			if !strings.Contains(res.stdout, "Scope: User config") || !strings.Contains(res.stdout, "✔ Connected") {
				t.Errorf("claude mcp get %s: want a connected user server:\n%s", name, res.stdout)
			}
		}
	})
}

func sameMap(got, want map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			return false
		}
	}
	return true
}
