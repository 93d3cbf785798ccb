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
