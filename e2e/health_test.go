//go:build unix

package e2e

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// runnableManifest is a manifest whose every server really runs here:
// third-party servers (memory, everything, filesystem) under node, the
// built-in files server, and tools declared in the manifest. fs has the
// workspace context inside its args and env, which Codex cannot express
// natively: portable Codex output runs it through mcpgen serve.
// memory and shell run in a sandbox (Linux: Landlock and namespaces),
// which their entries get through mcpgen serve: the real clients start
// them there.
func runnableManifest(wsRoot string) string {
	return fmt.Sprintf(`version = 1

[workspace]
dir = %[1]q

[servers.memory]
command = %[2]q
args = [%[3]q]
env = { MEMORY_FILE_PATH = "${WORKSPACE_DIR}/memory.json" }
startup_timeout = "30s"
sandbox.enabled = true

[servers.everything]
command = %[2]q
args = [%[4]q]
startup_timeout = "30s"

[servers.files]
builtin = "files"

[servers.shell]
description = "Everyday commands"
sandbox.enabled = true

[servers.shell.tools.echo]
description = "Say something back"
run = ["echo", "{text}"]
args.text = { type = "string" }

[servers.shell.tools.date]
run = ["date", "-u"]

[servers.shell.tools.ls]
run = ["ls", "-1", "{dir}"]
args.dir = { type = "string", default = "." }

[servers.fs]
command = %[2]q
args = [%[5]q, "${WORKSPACE_DIR}"]
env = { LABEL = "workspace ${WORKSPACE_ID} of ${USER_ID}" }
startup_timeout = "30s"
`, wsRoot+"/${WORKSPACE_ID}", node, os.Getenv("SERVER_MEMORY"), os.Getenv("SERVER_EVERYTHING"), os.Getenv("SERVER_FILESYSTEM"))
}

// runnableTools are tools that each server of runnableManifest must list.
var runnableTools = map[string][]string{
	"memory":     {"create_entities", "read_graph"},
	"everything": {"echo", "get-sum"},
	"files":      {"read_file", "list_directory", "write_file"},
	"shell":      {"date", "echo", "ls"},
	"fs":         {"read_text_file", "list_directory"},
}

// TestHealthWithRealClients emits the runnable manifest for Codex and
// Claude Code, portable and for one workspace, and has the real clients
// start every server: each must connect (Codex: and list its tools).
func TestHealthWithRealClients(t *testing.T) {
	sb := newSandbox(t)
	wsRoot := sb.path("workspaces")
	manifest := sb.write("mcpgen.toml", runnableManifest(wsRoot))
	ws := sb.path("workspaces", "ws-e2e")
	sb.write("workspaces/ws-e2e/notes.txt", "hello\n")
	// What an agent's environment holds when the output is portable.
	agentEnv := []string{"WORKSPACE_ID=ws-e2e", "WORKSPACE_DIR=" + ws, "USER_ID=e2e"}

	names := []string{"memory", "everything", "files", "shell", "fs"}
	for _, tc := range []struct {
		name     string
		provider string
		args     []string
		env      []string
	}{
		{"codex", "codex", nil, agentEnv},
		{"codex-workspace", "codex", []string{"--workspace", "ws-e2e", "--user", "e2e"}, nil},
		{"claude", "claude", nil, agentEnv},
		{"claude-workspace", "claude", []string{"--workspace", "ws-e2e", "--user", "e2e"}, nil},
		// Without --user, USER_ID comes from $USER, which emit never
		// writes: the agent's environment provides it at start.
		{"codex-workspace-env", "codex", []string{"--workspace", "ws-e2e"}, []string{"USER=e2e"}},
		{"claude-workspace-env", "claude", []string{"--workspace", "ws-e2e"}, []string{"USER=e2e"}},
	} {
		args := append([]string{"emit", "--manifest", manifest, "--provider", tc.provider, "--mcpgen-path", mcpgen}, tc.args...)
		out := sb.mcpgen("", args...).stdout
		file := sb.write("emitted/"+tc.name+map[string]string{"codex": ".toml", "claude": ".json"}[tc.provider], out)

		if tc.name == "codex" {
			// The case this manifest is here for: context inside a
			// value goes through mcpgen serve, resolved at spawn.
			for _, s := range []string{"memory", "fs"} { // memory: also for its sandbox
				if !strings.Contains(out, fmt.Sprintf(`args = ["serve", "--manifest", %q, %q]`, manifest, s)) {
					t.Errorf("portable Codex output does not run %s through mcpgen serve:\n%s", s, out)
				}
			}
		}
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t)
			switch tc.provider {
			case "codex":
				got, out := sb.validateCodex(tc.env, []string{"--health"}, file, names...)
				if !sameSet(got, names) {
					t.Errorf("codex mcp list sees %q, want %q", got, names)
				}
				checkCodexHealth(t, out, names, runnableTools)
			case "claude":
				got, out := sb.validateClaude(tc.env, []string{"--health"}, file)
				if !sameSet(got, names) {
					t.Errorf("claude mcp get accepted %q, want %q", got, names)
				}
				checkClaudeHealth(t, out, names)
			}
		})
	}
}

// codexStatusLine is validateCodex's line for a server that answered
// mcpServerStatus/list: "OK NAME tools=[TOOL TOOL ...]".
var codexStatusLine = regexp.MustCompile(`(?m)^OK (\S+) tools=\[(.*)\]$`)

// checkCodexHealth checks the live status that validateCodex --health
// printed: every server answered, listing (at least) the tools wanted.
func checkCodexHealth(t *testing.T, out string, names []string, want map[string][]string) {
	t.Helper()
	tools := map[string][]string{}
	for _, m := range codexStatusLine.FindAllStringSubmatch(out, -1) {
		tools[m[1]] = strings.Fields(m[2])
	}
	for _, name := range names {
		list, ok := tools[name]
		if !ok {
			t.Errorf("codex: server %s did not answer with its tools:\n%s", name, out)
			continue
		}
		for _, tool := range want[name] {
			if !slices.Contains(list, tool) {
				t.Errorf("codex: server %s lists %q, want %s among them", name, list, tool)
			}
		}
	}
}

// checkClaudeHealth checks that claude mcp list, with the servers approved,
// connected to every one of them.
func checkClaudeHealth(t *testing.T, out string, names []string) {
	t.Helper()
	health, err := section(out, "## health: claude mcp list, the servers approved")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var connected []string
	for _, line := range strings.Split(health, "\n") {
		name, rest, ok := strings.Cut(line, ": ")
		if ok && strings.HasSuffix(rest, "✔ Connected") {
			connected = append(connected, name)
		}
	}
	for _, name := range names {
		if !slices.Contains(connected, name) {
			t.Errorf("claude: server %s is not connected:\n%s", name, health)
		}
	}
}
