package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goldenCases are the emitted files that the golden tests pin, and that the
// end-to-end tests give to the real Codex and Claude Code. Each runs mcpgen
// emit on testdata/golden/mcpgen.toml; with existing set, it merges into a
// copy of that file.
var goldenCases = []struct {
	golden   string
	args     []string
	existing string
}{
	{"codex.toml", []string{"--provider", "codex"}, ""},
	{"codex-workspace.toml", []string{"--provider", "codex", "--workspace", "ws-42", "--user", "alice"}, ""},
	{"codex-merged.toml", []string{"--provider", "codex"}, "existing-codex.toml"},
	{"claude.json", []string{"--provider", "claude"}, ""},
	{"claude-workspace.json", []string{"--provider", "claude", "--workspace", "ws-42", "--user", "alice"}, ""},
	{"claude-merged.json", []string{"--provider", "claude"}, "existing-claude.json"},
	{"claude-desktop-workspace.json", []string{"--provider", "claude-desktop", "--workspace", "ws-42", "--user", "alice"}, ""},
	// Without --user, USER_ID comes from $USER: it stays a reference, or
	// goes through mcpgen serve, which resolves it when the server starts.
	{"codex-workspace-env.toml", []string{"--provider", "codex", "--workspace", "ws-42"}, ""},
	{"claude-workspace-env.json", []string{"--provider", "claude", "--workspace", "ws-42"}, ""},
	{"claude-desktop-workspace-env.json", []string{"--provider", "claude-desktop", "--workspace", "ws-42"}, ""},
	// One entry for the workspace: the gateway.
	{"codex-gateway.toml", []string{"--provider", "codex", "--gateway"}, ""},
	{"codex-gateway-workspace.toml", []string{"--provider", "codex", "--gateway", "--workspace", "ws-42", "--user", "alice"}, ""},
	{"claude-gateway.json", []string{"--provider", "claude", "--gateway", "--gateway-name", "workspace-tools"}, ""},
	{"claude-desktop-gateway.json", []string{"--provider", "claude-desktop", "--gateway", "--workspace", "ws-42", "--user", "alice"}, ""},
	// One entry for a launcher's gateway served over HTTP, its token a
	// reference; Claude Desktop's through mcpgen serve --url.
	{"codex-gateway-url.toml", []string{"--provider", "codex", "--gateway-url", "https://mcp.example.com/mcp", "--gateway-token-env", "MCPGEN_TOKEN"}, ""},
	{"claude-gateway-url.json", []string{"--provider", "claude", "--gateway-url", "https://mcp.example.com/mcp", "--gateway-token-env", "MCPGEN_TOKEN"}, ""},
	{"claude-desktop-gateway-url.json", []string{"--provider", "claude-desktop", "--gateway-url", "https://mcp.example.com/mcp", "--gateway-token-env", "MCPGEN_TOKEN"}, ""},
	{"codex-gateway-url-loopback.toml", []string{"--provider", "codex", "--gateway-url", "http://127.0.0.1:8080/mcp", "--gateway-name", "team"}, ""},
	// A project's config, emitted in a copy of the manifest's directory:
	// no path of the checkout, mcpgen from PATH, the manifest found from
	// where the agent runs, relative commands through mcpgen serve. The
	// same bytes wherever the project is.
	{"codex-project.toml", []string{"--provider", "codex", "--scope", "project"}, projectCase},
	{"claude-project.json", []string{"--provider", "claude", "--scope", "project"}, projectCase},
	// Gemini CLI and Qwen Code: mcpServers in a settings.json with comments,
	// ${VAR} without defaults (so context left to the agent goes through
	// serve), cwd, httpUrl for Streamable HTTP.
	{"gemini.json", []string{"--provider", "gemini"}, ""},
	{"gemini-workspace.json", []string{"--provider", "gemini", "--workspace", "ws-42", "--user", "alice"}, ""},
	{"gemini-merged.json", []string{"--provider", "gemini", "--workspace", "ws-42", "--user", "alice"}, "existing-gemini.json"},
	{"gemini-gateway.json", []string{"--provider", "gemini", "--gateway"}, ""},
	{"gemini-gateway-url.json", []string{"--provider", "gemini", "--gateway-url", "https://mcp.example.com/mcp", "--gateway-token-env", "MCPGEN_TOKEN"}, ""},
	{"gemini-launcher.json", []string{"--provider", "gemini", "--launcher", "--workspace", "ws-42", "--user", "alice"}, ""},
	{"gemini-project.json", []string{"--provider", "gemini", "--scope", "project"}, projectCase},
	{"qwen-workspace.json", []string{"--provider", "qwen", "--workspace", "ws-42", "--user", "alice"}, ""},
	{"qwen-project.json", []string{"--provider", "qwen", "--scope", "project"}, projectCase},
	// opencode: mcp, type local with the command and its arguments in one
	// array, {env:NAME}; its records are comments above the entries.
	{"opencode-workspace.json", []string{"--provider", "opencode", "--workspace", "ws-42", "--user", "alice"}, ""},
	{"opencode-merged.jsonc", []string{"--provider", "opencode", "--workspace", "ws-42", "--user", "alice"}, "existing-opencode.jsonc"},
	{"opencode-project.json", []string{"--provider", "opencode", "--scope", "project"}, projectCase},
	// Cursor and VS Code: ${env:NAME}; VS Code's servers (with type) beside
	// its inputs; Copilot CLI: type local or http, and tools.
	{"cursor-workspace.json", []string{"--provider", "cursor", "--workspace", "ws-42", "--user", "alice"}, ""},
	{"cursor-project.json", []string{"--provider", "cursor", "--scope", "project"}, projectCase},
	{"vscode-workspace.json", []string{"--provider", "vscode", "--workspace", "ws-42", "--user", "alice"}, ""},
	{"vscode-merged.json", []string{"--provider", "vscode", "--workspace", "ws-42", "--user", "alice"}, "existing-vscode.json"},
	{"vscode-gateway-url.json", []string{"--provider", "vscode", "--gateway-url", "https://mcp.example.com/mcp", "--gateway-token-env", "MCPGEN_TOKEN"}, ""},
	{"copilot-workspace.json", []string{"--provider", "copilot", "--workspace", "ws-42", "--user", "alice"}, ""},
	{"copilot-project.json", []string{"--provider", "copilot", "--scope", "project"}, projectCase},
	// Windsurf's serverUrl, Kiro's disabledTools, Crush's mcp with type and
	// timeout in seconds; Junie and Warp, with no reference syntax, run every
	// value with a secret through mcpgen serve.
	{"windsurf-workspace.json", []string{"--provider", "windsurf", "--workspace", "ws-42", "--user", "alice"}, ""},
	{"kiro-workspace.json", []string{"--provider", "kiro", "--workspace", "ws-42", "--user", "alice"}, ""},
	{"crush-workspace.json", []string{"--provider", "crush", "--workspace", "ws-42", "--user", "alice"}, ""},
	{"junie-workspace.json", []string{"--provider", "junie", "--workspace", "ws-42", "--user", "alice"}, ""},
	{"warp-workspace.json", []string{"--provider", "warp", "--workspace", "ws-42", "--user", "alice"}, ""},
	{"warp-gateway-url.json", []string{"--provider", "warp", "--gateway-url", "https://mcp.example.com/mcp", "--gateway-token-env", "MCPGEN_TOKEN"}, ""},
	// Amp's literal "amp.mcpServers" key; Cline's streamableHttp.
	{"amp-workspace.json", []string{"--provider", "amp", "--workspace", "ws-42", "--user", "alice"}, ""},
	{"cline-workspace.json", []string{"--provider", "cline", "--workspace", "ws-42", "--user", "alice"}, ""},
	// Zed's context_servers, among the editor's other settings.
	{"zed-merged.json", []string{"--provider", "zed", "--workspace", "ws-42", "--user", "alice"}, "existing-zed.json"},
	// Goose's config.yaml: its extensions, each with every field Goose writes,
	// secrets named in env_keys; merged among Goose's own settings and
	// extensions, comments kept, and a file with a byte order mark and CRLF
	// kept so.
	{"goose.yaml", []string{"--provider", "goose"}, ""},
	{"goose-workspace.yaml", []string{"--provider", "goose", "--workspace", "ws-42", "--user", "alice"}, ""},
	{"goose-merged.yaml", []string{"--provider", "goose", "--workspace", "ws-42", "--user", "alice"}, "existing-goose.yaml"},
	{"goose-merged-crlf.yaml", []string{"--provider", "goose", "--workspace", "ws-42", "--user", "alice"}, "existing-goose-crlf.yaml"},
	{"goose-launcher.yaml", []string{"--provider", "goose", "--launcher", "--workspace", "ws-42", "--user", "alice"}, ""},
	{"goose-gateway.yaml", []string{"--provider", "goose", "--gateway"}, ""},
	// Antigravity: mcpServers with serverUrl, no reference syntax known, so
	// every value with a secret or context left to the agent goes through serve.
	{"antigravity-workspace.json", []string{"--provider", "antigravity", "--workspace", "ws-42", "--user", "alice"}, ""},
	{"antigravity-project.json", []string{"--provider", "antigravity", "--scope", "project"}, projectCase},
	{"goose-gateway-url.yaml", []string{"--provider", "goose", "--gateway-url", "https://mcp.example.com/mcp", "--gateway-token-env", "MCPGEN_TOKEN"}, ""},
}

// projectCase, as a golden case's existing file, runs emit in a copy of
// testdata/golden (the project), without --manifest and --mcpgen-path.
const projectCase = "(project)"

// goldenDirToken stands for the absolute path of testdata/golden in golden
// files, so that they do not depend on where the repository is.
const goldenDirToken = "$GOLDEN_DIR"

// fingerprintRE matches the fingerprints of managed entries. They hash an
// entry's content, absolute paths included, so they depend on where the
// repository is checked out: golden files compare them masked, and
// checkUpToDate makes sure that emit recognises its own entries instead (a
// wrong fingerprint makes an entry look edited by hand).
var fingerprintRE = regexp.MustCompile(`sha256:[0-9a-f]{12}`)

func maskFingerprints(b []byte) []byte {
	return fingerprintRE.ReplaceAll(b, []byte("sha256:<fingerprint>"))
}

// checkUpToDate runs the same emit with --check on a file holding what it
// produced: it must find the file up to date.
func checkUpToDate(t *testing.T, dir string, args []string, out []byte, project bool) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "emitted")
	if project {
		file = filepath.Join(dir, "emitted") // dir is the project's copy
	}
	if err := os.WriteFile(file, out, 0o600); err != nil {
		t.Fatal(err)
	}
	args = append(append(goldenArgs(dir, project), "-o", file, "--check"), args...)
	var o, e bytes.Buffer
	if code := run(args, strings.NewReader(""), &o, &e); code != 0 {
		t.Errorf("mcpgen %s: exit %d, want 0: emit does not recognise its own output\n%s%s", strings.Join(args, " "), code, o.String(), e.String())
	}
}

func TestGolden(t *testing.T) {
	dir, err := filepath.Abs("testdata/golden")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("USER", "tester")
	for _, tc := range goldenCases {
		t.Run(tc.golden, func(t *testing.T) {
			project := tc.existing == projectCase
			raw, stderr := emitGolden(t, dir, tc.args, tc.existing)
			if project {
				checkUpToDate(t, projectCopy(t, dir), tc.args, raw, true)
			} else {
				checkUpToDate(t, dir, tc.args, raw, false)
			}
			got := bytes.ReplaceAll(raw, []byte(dir), []byte(goldenDirToken))
			path := filepath.Join(dir, "want", tc.golden) // absolute: a project case changes directory
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGolden -update)", err)
			}
			if !bytes.Equal(maskFingerprints(got), maskFingerprints(want)) {
				t.Errorf("emit %s differs from %s (-want +got):\n%s\nstderr: %s", strings.Join(tc.args, " "), path, unifiedDiff(path, want, got), stderr)
			}
		})
	}
}

// goldenArgs are the arguments of every golden emit: the golden manifest and
// a fixed mcpgen, or, for a project, nothing but the working directory:
// the manifest is the project's mcpgen.toml, and mcpgen the one on PATH.
func goldenArgs(dir string, project bool) []string {
	if project {
		return []string{"emit"}
	}
	return []string{"emit", "--manifest", filepath.Join(dir, "mcpgen.toml"), "--mcpgen-path", "/usr/local/bin/mcpgen"}
}

// projectCopy copies the golden manifest into a new directory, the
// project, and makes it the working directory for the rest of the test.
func projectCopy(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "mcpgen.toml"))
	if err != nil {
		t.Fatal(err)
	}
	proj := t.TempDir()
	if err := os.WriteFile(filepath.Join(proj, "mcpgen.toml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(proj)
	return proj
}

// emitGolden runs mcpgen emit for a golden case and returns the file it
// produced (stdout, or the merged copy of existing).
func emitGolden(t *testing.T, dir string, args []string, existing string) (out []byte, stderr string) {
	t.Helper()
	project := existing == projectCase
	if project {
		dir = projectCopy(t, dir)
	}
	args = append(goldenArgs(dir, project), args...)
	var target string
	if existing != "" && !project {
		data, err := os.ReadFile(filepath.Join(dir, existing))
		if err != nil {
			t.Fatal(err)
		}
		target = filepath.Join(t.TempDir(), existing)
		if err := os.WriteFile(target, data, 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-o", target)
	}
	var o, e bytes.Buffer
	if code := run(args, strings.NewReader(""), &o, &e); code != 0 {
		t.Fatalf("mcpgen %s: exit %d\n%s", strings.Join(args, " "), code, e.String())
	}
	if target == "" {
		return o.Bytes(), e.String()
	}
	data, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	return data, e.String()
}
