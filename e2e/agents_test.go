//go:build unix

package e2e

// The agents beyond Codex and Claude, with their real CLIs where npm has one:
// Gemini CLI's gemini mcp list loads a settings.json and starts every server,
// printing "- Connected" for each one that answered. It runs offline, in a
// home of its own, with the folder trusted (GEMINI_CLI_TRUST_WORKSPACE), as
// the Codex and Claude validators run theirs.
//
//	eval "$(e2e/clients/install.sh)"
//	MCPGEN_E2E=1 go test -count=1 -v -run Gemini ./e2e/

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// geminiConnected is gemini mcp list's line for a server that answered.
var geminiConnected = regexp.MustCompile(`(?m)^\S+ (\S+): .* - Connected$`)

// geminiList runs gemini mcp list in dir, offline, and returns the servers it
// connected to, and its output.
func geminiList(t *testing.T, dir string, env []string) ([]string, string) {
	t.Helper()
	c := client{dir: dir, netns: true, env: withEnv(env, nil, "GEMINI_CLI_TRUST_WORKSPACE=true", "NO_COLOR=1")}
	res := c.run(false, os.Getenv("GEMINI_BIN"), "mcp", "list")
	out := res.stdout + res.stderr
	if res.err != nil {
		t.Errorf("gemini mcp list in %s: %v\n%s", dir, res.err, out)
	}
	var names []string
	for _, m := range geminiConnected.FindAllStringSubmatch(out, -1) {
		names = append(names, m[1])
	}
	return names, out
}

// TestGeminiWithRealClient emits the runnable manifest for Gemini CLI, as a
// project's settings (portable: the agent's environment gives the context)
// and as the user's (for one workspace), and has the real gemini start every
// server: the built-in one, the declared tools, the npm servers, and those
// that go through mcpgen serve.
func TestGeminiWithRealClient(t *testing.T) {
	sb := newSandbox(t)
	wsRoot := sb.path("workspaces")
	sb.write("project/mcpgen.toml", runnableManifest(wsRoot))
	project := sb.path("project")
	ws := sb.path("workspaces", "ws-e2e")
	sb.write("workspaces/ws-e2e/notes.txt", "hello\n")
	names := []string{"memory", "everything", "files", "shell", "fs"}

	// The project's .gemini/settings.json, with a comment of the user's.
	sb.write("project/.gemini/settings.json", "{\n  // the user's own\n  \"ui\": {\"theme\": \"GitHub\"}\n}\n")
	sb.must(run{dir: project, args: []string{mcpgen, "emit", "--provider", "gemini", "--write", "--mcpgen-path", mcpgen}})
	settings, err := os.ReadFile(filepath.Join(project, ".gemini", "settings.json"))
	if err != nil || !strings.Contains(string(settings), "// the user's own") {
		t.Fatalf("the project's settings lost the user's comment (%v):\n%s", err, settings)
	}
	agentEnv := withEnv(sb.env, nil, "WORKSPACE_ID=ws-e2e", "WORKSPACE_DIR="+ws, "USER_ID=e2e")
	got, out := geminiList(t, project, agentEnv)
	if !sameSet(got, names) {
		t.Errorf("project: gemini connected to %q, want %q\n%s", got, names, out)
	}

	// The user's ~/.gemini/settings.json, for one workspace, read from a
	// directory without project settings.
	if err := os.MkdirAll(filepath.Join(sb.home, ".gemini"), 0o700); err != nil {
		t.Fatal(err)
	}
	sb.must(run{dir: project, args: []string{mcpgen, "emit", "--provider", "gemini", "--write", "--scope", "user", "--workspace", "ws-e2e", "--user", "e2e", "--mcpgen-path", mcpgen}})
	elsewhere := sb.path("elsewhere")
	if err := os.MkdirAll(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	got, out = geminiList(t, elsewhere, sb.env)
	if !sameSet(got, names) {
		t.Errorf("user: gemini connected to %q, want %q\n%s", got, names, out)
	}
}

// TestGeminiGateway: one emit --gateway entry, which starts the workspace's
// launcher through mcpgen connect when none runs; gemini connects to it.
func TestGeminiGateway(t *testing.T) {
	if !enabled {
		t.Skip(howToRun)
	}
	w := newShareWorld(t, shareBinary(t))
	w.writeManifest(w.echoServer("echo", nil) +
		fmt.Sprintf("[servers.everything]\ncommand = \"node\"\nargs = [%q, \"stdio\"]\nstartup_timeout = \"30s\"\n\n", os.Getenv("SERVER_EVERYTHING")) +
		"[servers.files]\nbuiltin = \"files\"\nread_only = true\n")
	project := filepath.Join(w.dir, "project")
	if _, err := w.run("emit", "--provider", "gemini", "--gateway", "--manifest", w.manifest,
		"--workspace", w.ws, "--dir", w.wsDir, "-o", filepath.Join(project, ".gemini", "settings.json"), "--scope", "project", "--mcpgen-path", w.bin); err != nil {
		t.Fatal(err)
	}
	got, out := geminiList(t, project, w.env)
	if !slices.Equal(got, []string{"mcpgen"}) {
		t.Errorf("gemini connected to %q, want the gateway, mcpgen\n%s", got, out)
	}
	// The launcher that connect started goes with the world (reap).
}

// ansi matches the color sequences that opencode prints even to a pipe.
var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// opencodeConnected is opencode mcp list's line for a server that answered.
var opencodeConnected = regexp.MustCompile(`(?m)✓ (\S+) +connected`)

// TestOpencodeWithRealClient emits the runnable manifest into a project's
// commented opencode.json (its records are comments) and has the real
// opencode start every server, offline, in a home of its own.
//
// install.sh pins opencode on linux-x64 only (see notPinnedHere); elsewhere,
// set OPENCODE_BIN to an opencode (npm install opencode-ai@1.18.33) to run it.
func TestOpencodeWithRealClient(t *testing.T) {
	sb := newSandbox(t)
	if os.Getenv("OPENCODE_BIN") == "" {
		t.Skip("OPENCODE_BIN is not set: " + notPinnedHere + "; npm install opencode-ai@1.18.33 and point OPENCODE_BIN at its bin/opencode to run this test")
	}
	sb.write("project/mcpgen.toml", runnableManifest(sb.path("workspaces")))
	project := sb.path("project")
	ws := sb.path("workspaces", "ws-e2e")
	sb.write("workspaces/ws-e2e/notes.txt", "hello\n")
	sb.write("project/opencode.json", "{\n  \"$schema\": \"https://opencode.ai/config.json\",\n  // the user's own\n  \"mcp\": {},\n}\n")
	sb.must(run{dir: project, args: []string{mcpgen, "emit", "--provider", "opencode", "--write", "--mcpgen-path", mcpgen}})
	data, err := os.ReadFile(filepath.Join(project, "opencode.json"))
	if err != nil || !strings.Contains(string(data), "// the user's own") || strings.Contains(string(data), `"_mcpgen"`) {
		t.Fatalf("opencode.json (%v):\n%s", err, data)
	}
	names := []string{"memory", "everything", "files", "shell", "fs"}
	env := withEnv(sb.env, []string{"XDG_CONFIG_HOME"}, "WORKSPACE_ID=ws-e2e", "WORKSPACE_DIR="+ws, "USER_ID=e2e", "NO_COLOR=1")
	c := client{dir: project, netns: true, env: env}
	res := c.run(false, os.Getenv("OPENCODE_BIN"), "mcp", "list")
	out := ansi.ReplaceAllString(res.stdout+res.stderr, "")
	if res.err != nil {
		t.Errorf("opencode mcp list: %v\n%s", res.err, out)
	}
	var got []string
	for _, m := range opencodeConnected.FindAllStringSubmatch(out, -1) {
		got = append(got, m[1])
	}
	if !sameSet(got, names) {
		t.Errorf("opencode connected to %q, want %q\n%s\n%s", got, names, out, data)
	}
}

// TestCopilotWithRealClient: the real Copilot CLI loads the project's
// .github/mcp.json (the folder trusted) and the user's mcp-config.json, with
// every entry; its mcp list stops at authentication before starting servers,
// so this is a check of what it reads, not of the servers.
func TestCopilotWithRealClient(t *testing.T) {
	sb := newSandbox(t)
	sb.write("project/mcpgen.toml", runnableManifest(sb.path("workspaces")))
	project := sb.path("project")
	sb.write("home/.copilot/config.json", fmt.Sprintf("{\"trusted_folders\": [%q]}\n", project))
	sb.must(run{dir: project, args: []string{mcpgen, "emit", "--provider", "copilot", "--write", "--mcpgen-path", mcpgen}})
	sb.must(run{dir: project, args: []string{mcpgen, "emit", "--provider", "copilot", "--write", "--scope", "user", "--workspace", "ws-e2e", "--user", "e2e", "--mcpgen-path", mcpgen}})
	c := client{dir: project, netns: true, env: sb.env}
	res := c.run(false, os.Getenv("COPILOT_BIN"), "mcp", "list", "--json")
	if res.err != nil {
		t.Fatalf("copilot mcp list --json: %v\n%s%s", res.err, res.stdout, res.stderr)
	}
	var listed struct {
		McpServers map[string]struct {
			Type   string   `json:"type"`
			Tools  []string `json:"tools"`
			Source string   `json:"source"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &listed); err != nil {
		t.Fatalf("copilot mcp list --json: %v\n%s", err, res.stdout)
	}
	for _, name := range []string{"memory", "everything", "files", "shell", "fs"} {
		s, ok := listed.McpServers[name]
		if !ok || s.Type != "local" || !slices.Equal(s.Tools, []string{"*"}) {
			t.Errorf("copilot lists %s as %+v (listed: %v), want a local server with every tool", name, s, ok)
		}
	}
	res = c.run(false, os.Getenv("COPILOT_BIN"), "mcp", "list")
	if !strings.Contains(res.stdout, "Workspace servers:") {
		t.Errorf("copilot did not read the project's .github/mcp.json:\n%s%s", res.stdout, res.stderr)
	}
}

// TestQwenWithRealClient: Qwen Code, Gemini CLI's fork, reads the project's
// .qwen/settings.json as emit writes it; once qwen mcp approve --all approved
// the project's servers, qwen mcp list starts each one. Like opencode, Qwen
// Code is pinned on linux-x64 only; elsewhere, set QWEN_BIN to run it.
func TestQwenWithRealClient(t *testing.T) {
	sb := newSandbox(t)
	if os.Getenv("QWEN_BIN") == "" {
		t.Skip("QWEN_BIN is not set: " + notPinnedHere + "; npm install @qwen-code/qwen-code@0.24.4 and point QWEN_BIN at its bin/qwen to run this test")
	}
	sb.write("project/mcpgen.toml", runnableManifest(sb.path("workspaces")))
	project := sb.path("project")
	ws := sb.path("workspaces", "ws-e2e")
	sb.write("workspaces/ws-e2e/notes.txt", "hello\n")
	sb.must(run{dir: project, args: []string{mcpgen, "emit", "--provider", "qwen", "--write", "--mcpgen-path", mcpgen}})
	env := withEnv(sb.env, nil, "WORKSPACE_ID=ws-e2e", "WORKSPACE_DIR="+ws, "USER_ID=e2e", "NO_COLOR=1")
	c := client{dir: project, netns: true, env: env}
	if res := c.run(false, os.Getenv("QWEN_BIN"), "mcp", "approve", "--all"); res.err != nil {
		t.Fatalf("qwen mcp approve --all: %v\n%s%s", res.err, res.stdout, res.stderr)
	}
	res := c.run(false, os.Getenv("QWEN_BIN"), "mcp", "list")
	out := ansi.ReplaceAllString(res.stdout+res.stderr, "")
	if res.err != nil {
		t.Errorf("qwen mcp list: %v\n%s", res.err, out)
	}
	var got []string
	for _, m := range geminiConnected.FindAllStringSubmatch(out, -1) {
		got = append(got, m[1])
	}
	if names := []string{"memory", "everything", "files", "shell", "fs"}; !sameSet(got, names) {
		t.Errorf("qwen connected to %q, want %q\n%s", got, names, out)
	}
}

// TestRulesyncReadsBack: for the agents without an installable CLI, an
// independent parser, rulesync import --targets T --features mcp (VS Code's
// is rulesync's "copilot", Copilot CLI's "copilotcli"), reads each
// project file that emit writes back to the same servers (command or url,
// and a secret as a reference), and Goose's user config.yaml (rulesync
// import --global). Junie, Warp, Zed, Amp and Antigravity have no reference
// syntax that mcpgen knows, so their entries with a secret run mcpgen serve.
func TestRulesyncReadsBack(t *testing.T) {
	sb := newSandbox(t)
	rulesync := os.Getenv("RULESYNC_BIN")
	project := sb.path("project")
	sb.write("project/mcpgen.toml", `version = 1

[servers.local]
command = "/opt/bin/local-mcp"
args = ["--stdio"]
env = { API_KEY = "${API_KEY}", MODE = "fast" }
context = false

[servers.docs]
url = "https://mcp.example.com/mcp"
bearer_token_env = "DOCS_TOKEN"
`)
	sb.must(run{dir: project, args: []string{"git", "init", "-q"}})
	native := map[string]string{"local": "/opt/bin/local-mcp", "docs": "https://mcp.example.com/mcp"}
	served := map[string]string{"local": mcpgen, "docs": mcpgen}
	for _, tc := range []struct {
		provider, target string
		want             map[string]string
		user             bool // the agent has a user config only: rulesync import --global
	}{
		{"cursor", "cursor", native, false}, {"vscode", "copilot", native, false}, {"copilot", "copilotcli", native, false}, {"kiro", "kiro", native, false},
		{"opencode", "opencode", native, false}, {"qwen", "qwencode", native, false}, {"crush", "crush", native, false},
		{"junie", "junie", served, false}, {"warp", "warp", served, false}, {"zed", "zed", served, false}, {"amp", "amp", served, false},
		{"antigravity", "antigravity-ide", served, false}, {"goose", "goose", native, true},
	} {
		emit := []string{mcpgen, "emit", "--provider", tc.provider, "--write", "--scope", "project", "--mcpgen-path", mcpgen}
		rulesyncArgs, where := []string{rulesync, "import", "--targets", tc.target, "--features", "mcp"}, project
		if tc.user {
			// Goose's one config, ~/.config/goose/config.yaml.
			emit, rulesyncArgs, where = slices.Delete(emit, 5, 7), append(rulesyncArgs, "--global"), sb.home
			if err := os.MkdirAll(filepath.Join(sb.home, ".config", "goose"), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		sb.must(run{dir: project, args: emit})
		if err := os.RemoveAll(filepath.Join(where, ".rulesync")); err != nil {
			t.Fatal(err)
		}
		res := sb.try(run{dir: project, args: rulesyncArgs})
		data, err := os.ReadFile(filepath.Join(where, ".rulesync", "mcp.jsonc"))
		if err != nil {
			t.Errorf("%s: rulesync wrote nothing (%v): %s", tc.provider, err, res)
			continue
		}
		// rulesync writes JSONC: comments on lines of their own.
		plain := regexp.MustCompile(`(?m)^\s*//.*$`).ReplaceAll(data, nil)
		var read struct {
			McpServers map[string]struct {
				Command string            `json:"command"`
				URL     string            `json:"url"`
				HTTPURL string            `json:"httpUrl"` // Qwen Code's, which rulesync keeps
				Env     map[string]string `json:"env"`
			} `json:"mcpServers"`
		}
		if err := json.Unmarshal(plain, &read); err != nil {
			t.Errorf("%s: rulesync's file: %v\n%s", tc.provider, err, data)
			continue
		}
		for name, want := range tc.want {
			s, ok := read.McpServers[name]
			got := s.Command + s.URL + s.HTTPURL
			if !ok || got != want {
				t.Errorf("%s: rulesync reads %s as %+v (there: %v), want %s\n%s", tc.provider, name, s, ok, want, data)
			}
		}
		// A reference, in rulesync's syntax or the agent's (it keeps VS Code's ${env:API_KEY}).
		// Goose names it in env_keys, which rulesync does not read: no value, and no key.
		if s := read.McpServers["local"]; tc.user {
			if _, ok := s.Env["API_KEY"]; ok || s.Env["MODE"] != "fast" {
				t.Errorf("%s: rulesync reads local's env as %v, want MODE alone (API_KEY is in env_keys)\n%s", tc.provider, s.Env, data)
			}
		} else if tc.want["local"] != mcpgen && !slices.Contains([]string{"${API_KEY}", "${env:API_KEY}"}, s.Env["API_KEY"]) {
			t.Errorf("%s: rulesync reads local's API_KEY as %q, want a reference to API_KEY\n%s", tc.provider, s.Env["API_KEY"], data)
		}
	}
}
