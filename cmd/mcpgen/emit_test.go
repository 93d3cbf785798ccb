package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/providers/registry"
)

// sentinels are values of mcpgen's environment that no emitted byte may
// hold: the manifests below reach each of them through the workspace
// context (workspace.dir, workspace.user, [workspace.vars], the default
// USER_ID from $USER), through a server's own env and args, and through a
// remote server's headers.
var sentinels = map[string]string{
	"GITHUB_TOKEN":   "sentinel-github-token-4f1d",
	"OPENAI_API_KEY": "sentinel-openai-key-9c2e",
	"DATA_ROOT":      "/sentinel-data-root-77a0",
	"USER":           "sentinel-user-31b5",
	"SEARCH_API_KEY": "sentinel-search-key-0d4c",
}

var secretManifests = map[string]string{
	// Every context variable from the environment.
	"context from env": `[workspace]
dir = "${DATA_ROOT}/ws/${WORKSPACE_ID}"
user = "${GITHUB_TOKEN}"

[workspace.vars]
API_KEY = "${OPENAI_API_KEY}"
TENANT = "acme"

[servers.native]
command = "npx"
args = ["-y", "server-x", "--user", "${USER_ID}"]
env = { MEMORY = "${WORKSPACE_DIR}/memory.json", KEY = "${API_KEY}" }

[servers.cwd]
command = "srv"
cwd = "${WORKSPACE_DIR}/sub"

[servers.files]
builtin = "files"

[servers.tools.tools.hi]
run = ["echo", "${API_KEY}"]

[servers.docs]
url = "https://mcp.example.com/mcp"
headers = { X-User = "${USER_ID}", X-Key = "${API_KEY}" }
`,
	// Nothing in the manifest comes from the environment but USER_ID,
	// from $USER by default, and a secret of a server's own.
	"default user": `[servers.native]
command = "npx"
args = ["-y", "server-x"]

[servers.search]
command = "search-mcp"
env = { SEARCH_API_KEY = "${SEARCH_API_KEY}", WHO = "${USER_ID}" }

[servers.files]
builtin = "files"
`,
}

// TestEmitWritesNoEnvironmentValue is the regression test for secrets
// written into configs (issue 8, item 1): for every provider and mode,
// printed and merged into a file, no value of mcpgen's environment
// appears in any byte that emit writes, stdout, stderr and file alike.
func TestEmitWritesNoEnvironmentValue(t *testing.T) {
	for name, value := range sentinels {
		t.Setenv(name, value)
	}
	dir := t.TempDir()
	modes := map[string][]string{
		"portable":                       nil,
		"workspace":                      {"--workspace", "ws-1"},
		"launcher":                       {"--launcher"},
		"launcher, workspace":            {"--launcher", "--workspace", "ws-1"},
		"workspace, flag dir":            {"--workspace", "ws-1", "--dir", "/srv/ws-1"},
		"launcher, workspace, flag user": {"--launcher", "--workspace", "ws-1", "--user", "alice"},
		"workspace, both flag":           {"--workspace", "ws-1", "--dir", "/srv/ws-1", "--user", "alice"},
		"gateway":                        {"--gateway"},
		"gateway, workspace":             {"--gateway", "--workspace", "ws-1"},
	}
	for mname, text := range secretManifests {
		manifest := filepath.Join(dir, strings.ReplaceAll(mname, " ", "-")+".toml")
		if err := os.WriteFile(manifest, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, provider := range registry.Names() {
			for mode, flags := range modes {
				t.Run(mname+"/"+provider+"/"+mode, func(t *testing.T) {
					args := append([]string{"emit", "--manifest", manifest, "-p", provider, "--mcpgen-path", "/usr/local/bin/mcpgen"}, flags...)
					var out, errOut bytes.Buffer
					code := run(args, strings.NewReader(""), &out, &errOut)
					// Claude Desktop expands nothing, so portable output
					// is refused; every other case is written.
					wantCode := 0
					if provider == "claude-desktop" && !strings.Contains(mode, "workspace") {
						wantCode = 1
					}
					if code != wantCode {
						t.Fatalf("mcpgen %s: exit %d, want %d\n%s", strings.Join(args, " "), code, wantCode, errOut.String())
					}
					file := filepath.Join(t.TempDir(), "config")
					if code == 0 && run(append(args, "-o", file), strings.NewReader(""), new(bytes.Buffer), new(bytes.Buffer)) != 0 {
						t.Fatalf("mcpgen %s -o FILE failed", strings.Join(args, " "))
					}
					written, _ := os.ReadFile(file)
					for what, b := range map[string][]byte{"stdout": out.Bytes(), "stderr": errOut.Bytes(), "the file": written} {
						for name, value := range sentinels {
							if bytes.Contains(b, []byte(value)) {
								t.Errorf("%s holds the value of $%s:\n%s", what, name, b)
							}
						}
					}
				})
			}
		}
	}
}

// TestEmitGateway: emit --gateway replaces the entries mcpgen wrote for
// each server (with the approval tables Codex wrote for them) by one
// entry for the workspace; what the user wrote stays; an agent gets the
// servers meant for it.
func TestEmitGateway(t *testing.T) {
	dir := t.TempDir()
	manifest := filepath.Join(dir, "mcpgen.toml")
	if err := os.WriteFile(manifest, []byte(`[servers.a]
command = "a-mcp"

[servers.b]
command = "b-mcp"
tool_timeout = "5m"

[servers.web]
url = "https://mcp.example.com/mcp"
bearer_token_env = "WEB_TOKEN"
providers = ["claude", "claude-desktop"]

[servers.off]
command = "off-mcp"
enabled = false
`), 0o600); err != nil {
		t.Fatal(err)
	}
	emit := func(file string, extra ...string) (string, string) {
		t.Helper()
		args := append([]string{"emit", "--manifest", manifest, "--mcpgen-path", "/usr/local/bin/mcpgen", "-o", file}, extra...)
		var out, errOut bytes.Buffer
		if code := run(args, strings.NewReader(""), &out, &errOut); code != 0 {
			t.Fatalf("mcpgen %s: exit %d\n%s", strings.Join(args, " "), code, errOut.String())
		}
		b, _ := os.ReadFile(file)
		return string(b), errOut.String()
	}

	codexFile := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(codexFile, []byte("[mcp_servers.mine]\ncommand = \"mine\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	emit(codexFile, "-p", "codex")
	f, err := os.OpenFile(codexFile, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n[mcp_servers.a.tools.x]\napproval_mode = \"approve\"\n") // as Codex writes it
	f.Close()
	got, _ := emit(codexFile, "-p", "codex", "--gateway", "--workspace", "ws-1", "--dir", "/srv/ws-1")
	for _, want := range []string{
		"[mcp_servers.mine]\ncommand = \"mine\"",
		"[mcp_servers.mcpgen]",
		`args = ["connect", "--workspace", "ws-1", "--dir", "/srv/ws-1", "--manifest", ` + tomlQuote(manifest) + `, "--servers", "a,b"]`,
		`tool_timeout_sec = 300`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("codex: lacks %s:\n%s", want, got)
		}
	}
	for _, gone := range []string{"[mcp_servers.a]", "[mcp_servers.b]", "mcp_servers.a.tools", "a-mcp", "off-mcp"} {
		if strings.Contains(got, gone) {
			t.Errorf("codex: still holds %s:\n%s", gone, got)
		}
	}

	claudeFile := filepath.Join(dir, "mcp.json")
	emit(claudeFile, "-p", "claude")
	got, _ = emit(claudeFile, "-p", "claude", "--gateway", "--gateway-name", "tools")
	var parsed struct {
		MCPServers map[string]struct {
			Args []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(got), &parsed); err != nil {
		t.Fatal(err)
	}
	if len(parsed.MCPServers) != 1 || parsed.MCPServers["tools"].Args == nil {
		t.Errorf("claude: want one entry, tools:\n%s", got)
	}
	// Every enabled server is meant for Claude: no --servers.
	if args := parsed.MCPServers["tools"].Args; slices.Contains(args, "--servers") {
		t.Errorf("claude: args %q", args)
	}
	// The remote server is reached by the launcher: Claude Desktop gets it too.
	desktop, stderr := emit(filepath.Join(dir, "desktop.json"), "-p", "claude-desktop", "--gateway", "--workspace", "ws-1", "--user", "u")
	if strings.Contains(stderr, "left out") || strings.Contains(desktop, `"type"`) {
		t.Errorf("claude-desktop: %s\n%s", stderr, desktop)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--gateway-name", "x"}, "--gateway-name names the entry of --gateway"},
		{[]string{"--gateway", "--gateway-name", "a b"}, "1 to 64 characters"},
		{[]string{"--gateway", "--gateway-name", "workspace"}, "reserved by Claude Code"},
		{[]string{"--gateway", "-p", "claude-desktop"}, "pass --workspace ID with --gateway"},
	} {
		args := append([]string{"emit", "--manifest", manifest, "-p", "claude"}, tc.args...)
		var out, errOut bytes.Buffer
		if code := run(args, strings.NewReader(""), &out, &errOut); code == 0 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("mcpgen %s: exit %d, stderr %q; want an error with %q", strings.Join(args, " "), code, errOut.String(), tc.want)
		}
	}
}

func tomlQuote(s string) string { return strconv.Quote(s) }
