package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	}
	for mname, text := range secretManifests {
		manifest := filepath.Join(dir, strings.ReplaceAll(mname, " ", "-")+".toml")
		if err := os.WriteFile(manifest, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, provider := range providerNames {
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
