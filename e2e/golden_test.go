//go:build unix

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goldenDir holds the files that cmd/mcpgen's golden tests pin.
var goldenDir = filepath.Join("..", "cmd", "mcpgen", "testdata", "golden")

// The servers of testdata/golden/mcpgen.toml that each provider gets:
// Claude leaves out the server meant for Codex only and the disabled one,
// Claude Desktop the remote one too. Merged files keep the user's "mine".
var (
	codexServers   = []string{"memory", "search", "db", "files", "git", "docs", "legacy", "codex-only"}
	claudeServers  = []string{"memory", "search", "db", "files", "git", "docs"}
	desktopServers = []string{"memory", "search", "db", "files", "git"}
)

// goldenCases says, for every golden file, how to validate it and which
// servers the real client must see in it.
var goldenCases = map[string]struct {
	flags   []string
	servers []string
}{
	"codex.toml":                    {nil, codexServers},
	"codex-workspace.toml":          {nil, codexServers},
	"codex-merged.toml":             {nil, append([]string{"mine"}, codexServers...)},
	"claude.json":                   {nil, claudeServers},
	"claude-workspace.json":         {nil, claudeServers},
	"claude-merged.json":            {nil, append([]string{"mine"}, claudeServers...)},
	"claude-desktop-workspace.json": {[]string{"--desktop"}, desktopServers},
	// USER_ID from $USER, not written.
	"codex-workspace-env.toml":          {nil, codexServers},
	"claude-workspace-env.json":         {nil, claudeServers},
	"claude-desktop-workspace-env.json": {[]string{"--desktop"}, desktopServers},
	// emit --gateway: one entry for the workspace.
	"codex-gateway.toml":           {nil, []string{"mcpgen"}},
	"codex-gateway-workspace.toml": {nil, []string{"mcpgen"}},
	"claude-gateway.json":          {nil, []string{"workspace-tools"}},
	"claude-desktop-gateway.json":  {[]string{"--desktop"}, []string{"mcpgen"}},
	// emit --gateway-url: one entry for a launcher's gateway over HTTP.
	"codex-gateway-url.toml":          {nil, []string{"mcpgen"}},
	"codex-gateway-url-loopback.toml": {nil, []string{"team"}},
	"claude-gateway-url.json":         {nil, []string{"mcpgen"}},
	"claude-desktop-gateway-url.json": {[]string{"--desktop"}, []string{"mcpgen"}},
	// A project's config: parsed here in a copy, with no manifest to run;
	// team_test.go starts every server of one in a clone.
	"codex-project.toml":  {nil, codexServers},
	"claude-project.json": {nil, claudeServers},
}

// TestGoldensAcceptedByRealClients gives every golden file to the real
// client it is for: Codex's strict loader and Claude Code's own parsing
// must accept it, and see exactly the servers expected.
func TestGoldensAcceptedByRealClients(t *testing.T) {
	sb := newSandbox(t)
	dir, err := filepath.Abs(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "want", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files in %s: %v", dir, err)
	}
	for _, path := range files {
		name := filepath.Base(path)
		tc, ok := goldenCases[name]
		if !ok {
			if !strings.HasPrefix(name, "codex") && !strings.HasPrefix(name, "claude") {
				// Another agent's: its own CLI reads it where one
				// installs (agents_test.go); Codex and Claude do not.
				continue
			}
			t.Errorf("golden file %s has no case here: add it to goldenCases", name)
			continue
		}
		// The file as emit wrote it, in the place of the token that
		// keeps the golden independent of where the repository is.
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		file := sb.write(filepath.Join("golden", name), strings.ReplaceAll(string(data), "$GOLDEN_DIR", dir))

		if strings.HasSuffix(name, ".toml") {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				sb := newSandbox(t)
				got, out := sb.validateCodex(nil, tc.flags, file, tc.servers...)
				if !sameSet(got, tc.servers) {
					t.Errorf("codex mcp list sees %q, want %q\n%s", got, tc.servers, out)
				}
			})
			if name == "codex.toml" {
				// The same tables in a project's .codex/config.toml,
				// which Codex reads once the project is trusted.
				t.Run(name+"/project", func(t *testing.T) {
					t.Parallel()
					sb := newSandbox(t)
					got, out := sb.validateCodex(nil, []string{"--project"}, file, tc.servers...)
					if !sameSet(got, tc.servers) {
						t.Errorf("codex mcp list (project layer) sees %q, want %q\n%s", got, tc.servers, out)
					}
				})
			}
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t)
			got, out := sb.validateClaude(nil, tc.flags, file)
			if !sameSet(got, tc.servers) {
				t.Errorf("claude mcp get accepted %q, want %q\n%s", got, tc.servers, out)
			}
		})
	}
	for name := range goldenCases {
		if _, err := os.Stat(filepath.Join(dir, "want", name)); err != nil {
			t.Errorf("goldenCases names %s, which is not a golden file: %v", name, err)
		}
	}
}
