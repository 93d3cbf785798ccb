//go:build unix

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"
)

// teamManifest is a project's manifest as a team commits it: a built-in
// server, a declared one, and a server of the project's own, run by a path
// relative to the manifest (./bin/hello, committed beside it).
const teamManifest = `name = "team-e2e"

[servers.files]
builtin = "files"
read_only = true

[servers.git]
description = "Read-only git"

[servers.git.tools.status]
run = ["git", "status", "--short"]

[servers.hello]
command = "./bin/hello"
`

// helloServer is the project's own server: a stdio MCP server in plain
// node, one tool, no dependencies.
const helloServer = `#!/usr/bin/env node
const readline = require("readline");
const rl = readline.createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
rl.on("line", (line) => {
  let m;
  try { m = JSON.parse(line); } catch { return; }
  if (m.id === undefined) return;
  switch (m.method) {
  case "initialize":
    return send({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "hello", version: "1" } } });
  case "tools/list":
    return send({ jsonrpc: "2.0", id: m.id, result: { tools: [{ name: "hello", description: "Say hello", inputSchema: { type: "object" } }] } });
  case "ping":
    return send({ jsonrpc: "2.0", id: m.id, result: {} });
  default:
    return send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "no such method" } });
  }
});
`

// teamServers are the servers of teamManifest, and a tool each must list.
var teamServers = map[string]string{"files": "read_file", "git": "status", "hello": "hello"}

// withMcpgenOnPath is the sandbox's environment with the built mcpgen on
// PATH, as on a teammate's machine: a project's config runs "mcpgen".
func (sb *sandbox) withMcpgenOnPath() []string {
	return []string{"PATH=" + filepath.Dir(mcpgen) + string(os.PathListSeparator) + os.Getenv("PATH")}
}

// git runs git in dir, with an identity of the test's own.
func (sb *sandbox) git(dir string, args ...string) result {
	sb.t.Helper()
	return sb.must(run{dir: dir, args: append([]string{"git", "-c", "user.name=e2e", "-c", "user.email=e2e@example.com", "-c", "init.defaultBranch=main"}, args...)})
}

// TestTeamProjectConfigInAClone commits a project with its emitted
// .mcp.json and .codex/config.toml, clones it to another path, and checks
// that the configs are up to date there (emit --check, as CI runs it) and
// that the real Claude Code and Codex start every server from the clone:
// from its root and from a directory inside it, where the agents start
// project servers.
func TestTeamProjectConfigInAClone(t *testing.T) {
	sb := newSandbox(t)
	onPath := sb.withMcpgenOnPath()
	origin := sb.path("origin")
	sb.write("origin/mcpgen.toml", teamManifest)
	hello := sb.write("origin/bin/hello", helloServer)
	if err := os.Chmod(hello, 0o755); err != nil {
		t.Fatal(err)
	}
	sb.write("origin/src/app.txt", "the project's files\n")
	sb.git("", "init", "-q", origin)
	for _, args := range [][]string{
		{"emit", "-p", "claude", "--write"},
		{"emit", "-p", "codex", "--write", "--scope", "project"},
	} {
		sb.must(run{dir: origin, env: onPath, args: append([]string{mcpgen}, args...)})
	}
	for _, f := range []string{".mcp.json", ".codex/config.toml"} {
		data, err := os.ReadFile(filepath.Join(origin, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), sb.dir) || strings.Contains(string(data), mcpgen) {
			t.Errorf("%s names a path of the checkout or of the mcpgen binary:\n%s", f, data)
		}
	}
	sb.git(origin, "add", "-A")
	sb.git(origin, "commit", "-q", "-m", "mcpgen configs")

	clone := sb.path("elsewhere", "team", "clone")
	sb.git("", "clone", "-q", origin, clone)
	if err := os.RemoveAll(origin); err != nil { // nothing may point back to it
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"emit", "-p", "claude", "--write", "--check"},
		{"emit", "-p", "codex", "--write", "--scope", "project", "--check"},
	} {
		res := sb.must(run{dir: clone, env: onPath, args: append([]string{mcpgen}, args...)})
		if !strings.Contains(res.stderr, "is up to date") {
			t.Errorf("mcpgen %s in the clone: %s", strings.Join(args, " "), res)
		}
	}
	names := []string{"files", "git", "hello"}
	sub := filepath.Join(clone, "src")

	t.Run("claude", func(t *testing.T) {
		// validate-claude.sh runs Claude Code in the clone itself.
		got, out := sb.validateClaude(onPath, []string{"--in-project", clone, "--health"}, filepath.Join(clone, ".mcp.json"))
		if !sameSet(got, names) {
			t.Errorf("claude mcp get accepted %q, want %q", got, names)
		}
		checkClaudeHealth(t, out, names)
		// Claude Code started in a directory of the project finds its
		// .mcp.json above, and starts the servers there: mcpgen serve
		// finds mcpgen.toml above too.
		checkConnected(t, sb.claudeList(onPath, sub), names)
		sb.nothingRunsIn(clone)
	})

	t.Run("codex", func(t *testing.T) {
		// Codex's strict loader and its parsed view of the project layer.
		got, _ := sb.validateCodex(onPath, []string{"--in-project", clone}, filepath.Join(clone, ".codex", "config.toml"), names...)
		if !sameSet(got, names) {
			t.Errorf("codex mcp list sees %q, want %q", got, names)
		}
		// A Codex session in the clone, and in a directory of it, starts
		// every server (a thread is what loads a project's config: without
		// one, app-server lists only the user's servers).
		home := sb.codexHome(fmt.Sprintf("[projects.%q]\ntrust_level = \"trusted\"\n", clone))
		for _, dir := range []string{clone, sub} {
			status := sb.codexSession(append(onPath, "CODEX_HOME="+home), dir)
			checkCodexSession(t, dir, status, teamServers)
		}
		sb.nothingRunsIn(clone)
	})
}

// TestTeamTwoProjectsOneUserConfig writes two projects' servers into one
// ~/.codex/config.toml and one ~/.claude.json with emit --write: the real
// clients see both sets; removing a server from one project leaves the
// other's; a name the other project owns is a conflict until a prefix.
func TestTeamTwoProjectsOneUserConfig(t *testing.T) {
	sb := newSandbox(t)
	onPath := sb.withMcpgenOnPath()
	alpha := sb.path("alpha")
	beta := sb.path("beta")
	sb.write("alpha/mcpgen.toml", "[servers.files]\nbuiltin = \"files\"\nread_only = true\n\n[servers.notes.tools.list]\nrun = [\"ls\", \"-1\"]\n")
	sb.write("alpha/README", "alpha\n")
	sb.write("beta/mcpgen.toml", "[servers.files]\nbuiltin = \"files\"\n\n[servers.todo.tools.list]\nrun = [\"ls\"]\n")
	sb.write("beta/README", "beta\n")
	emit := func(dir string, args ...string) result {
		t.Helper()
		return sb.try(run{dir: dir, env: onPath, args: append([]string{mcpgen, "emit", "--write", "--mcpgen-path", mcpgen}, args...)})
	}
	for _, p := range [][]string{{"-p", "codex"}, {"-p", "claude", "--scope", "user"}} {
		if res := emit(alpha, p...); res.err != nil {
			t.Fatalf("alpha: %s", res)
		}
		// beta's files would replace alpha's: refused, naming alpha.
		res := emit(beta, p...)
		if res.err == nil || !strings.Contains(res.stderr, `server "files" belongs to another manifest, `+filepath.Join(alpha, "mcpgen.toml")) {
			t.Errorf("beta over alpha's files (%s): want a conflict naming alpha's manifest, got %s", p[1], res)
		}
	}
	sb.write("beta/mcpgen.toml", "prefix = \"beta-\"\n\n[servers.files]\nbuiltin = \"files\"\n\n[servers.todo.tools.list]\nrun = [\"ls\"]\n")
	for _, p := range [][]string{{"-p", "codex"}, {"-p", "claude", "--scope", "user"}} {
		if res := emit(beta, p...); res.err != nil || !strings.Contains(res.stderr, "kept 2 servers of other manifests: files, notes") {
			t.Errorf("beta with a prefix (%s): %s", p[1], res)
		}
	}
	both := []string{"files", "notes", "beta-files", "beta-todo"}
	if got := sb.codexList(nil); !sameSet(keysOf(got), both) {
		t.Errorf("codex mcp list sees %v, want %v", keysOf(got), both)
	}
	home := filepath.Join(sb.home, ".codex")
	status := sb.codexSession(append(onPath, "CODEX_HOME="+home), sb.path())
	checkCodexSession(t, "a session of the user's", status, map[string]string{"files": "read_file", "notes": "list", "beta-files": "write_file", "beta-todo": "list"})
	checkConnected(t, sb.claudeList(onPath, sb.path()), both)

	// beta drops todo: only beta's entry goes.
	sb.write("beta/mcpgen.toml", "prefix = \"beta-\"\n\n[servers.files]\nbuiltin = \"files\"\n")
	for _, p := range [][]string{{"-p", "codex"}, {"-p", "claude", "--scope", "user"}} {
		if res := emit(beta, p...); res.err != nil {
			t.Errorf("beta without todo (%s): %s", p[1], res)
		}
	}
	left := []string{"files", "notes", "beta-files"}
	if got := sb.codexList(nil); !sameSet(keysOf(got), left) {
		t.Errorf("codex mcp list sees %v after beta dropped todo, want %v", keysOf(got), left)
	}
	checkConnected(t, sb.claudeList(onPath, sb.path()), left)
	sb.nothingRunsIn(sb.dir)
}

// claudeList runs the real claude mcp list in dir, the project's servers
// approved, and returns each server's line: what a Claude Code session
// started in dir starts.
func (sb *sandbox) claudeList(env []string, dir string) map[string]string {
	sb.t.Helper()
	settings := filepath.Join(sb.home, ".claude", "settings.json")
	if err := os.MkdirAll(filepath.Dir(settings), 0o700); err != nil {
		sb.t.Fatal(err)
	}
	if err := os.WriteFile(settings, []byte(`{"enableAllProjectMcpServers": true}`+"\n"), 0o600); err != nil {
		sb.t.Fatal(err)
	}
	res := sb.must(run{dir: dir, env: env, args: offline(os.Getenv("CLAUDE_BIN"), "mcp", "list")})
	lines := map[string]string{}
	for _, line := range strings.Split(res.stdout, "\n") {
		if name, rest, ok := strings.Cut(line, ": "); ok && !strings.Contains(name, " ") {
			lines[name] = rest
		}
	}
	return lines
}

// checkConnected requires that Claude Code connected to every server named.
func checkConnected(t *testing.T, lines map[string]string, names []string) {
	t.Helper()
	for _, name := range names {
		if !strings.HasSuffix(lines[name], "✔ Connected") {
			t.Errorf("claude: server %s is not connected: %q (all: %v)", name, lines[name], lines)
		}
	}
}

// codexHome makes a CODEX_HOME holding config.
func (sb *sandbox) codexHome(config string) string {
	sb.t.Helper()
	dir, err := os.MkdirTemp(sb.dir, "codex-home-")
	if err != nil {
		sb.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(config), 0o600); err != nil {
		sb.t.Fatal(err)
	}
	return dir
}

// codexServerStatus is one server of mcpServerStatus/list.
type codexServerStatus struct {
	Name       string                     `json:"name"`
	ServerInfo *struct{ Name string }     `json:"serverInfo"`
	Tools      map[string]json.RawMessage `json:"tools"`
	ToolsError *string                    `json:"toolsError"`
}

// codexSession starts the real codex app-server, offline, opens an
// ephemeral thread in dir (what a Codex session started in dir does: it is
// what loads a trusted project's .codex/config.toml, and the thread's
// directory is where Codex starts stdio servers that set no cwd), and
// returns the live status of every MCP server of that thread.
func (sb *sandbox) codexSession(env []string, dir string) []codexServerStatus {
	sb.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := offline(os.Getenv("CODEX_BIN"), "app-server")
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = sb.dir
	cmd.Env = append(slices.Clip(sb.env), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		sb.t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		sb.t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		sb.t.Fatal(err)
	}
	// Closing stdin ends app-server, which stops the servers it started;
	// Wait reaps it (the context kills it if it hangs).
	defer func() {
		stdin.Close()
		_ = cmd.Wait()
	}()
	in := bufio.NewScanner(stdout)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	send := func(m map[string]any) {
		b, _ := json.Marshal(m)
		if _, err := stdin.Write(append(b, '\n')); err != nil {
			sb.t.Fatalf("codex app-server: %v\n%s", err, stderr.String())
		}
	}
	// call sends a request and reads up to its answer, skipping
	// notifications. The scanner ends at EOF, when app-server exits or the
	// context kills it.
	call := func(id int, method string, params any) json.RawMessage {
		send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		for in.Scan() {
			var m struct {
				ID     *int            `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal(in.Bytes(), &m) != nil || m.ID == nil || *m.ID != id {
				continue
			}
			if m.Error != nil {
				sb.t.Fatalf("codex app-server %s: %s\n%s", method, m.Error, stderr.String())
			}
			return m.Result
		}
		sb.t.Fatalf("codex app-server ended before answering %s: %v\n%s", method, in.Err(), stderr.String())
		return nil
	}
	call(1, "initialize", map[string]any{"clientInfo": map[string]any{"name": "mcpgen-e2e", "version": "1"}})
	send(map[string]any{"jsonrpc": "2.0", "method": "initialized"})
	var thread struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if err := json.Unmarshal(call(2, "thread/start", map[string]any{"cwd": dir, "ephemeral": true}), &thread); err != nil || thread.Thread.ID == "" {
		sb.t.Fatalf("codex thread/start in %s: %v", dir, err)
	}
	var list struct {
		Data []codexServerStatus `json:"data"`
	}
	raw := call(3, "mcpServerStatus/list", map[string]any{"threadId": thread.Thread.ID, "detail": "toolsAndAuthOnly"})
	if err := json.Unmarshal(raw, &list); err != nil {
		sb.t.Fatalf("codex mcpServerStatus/list: %v\n%s", err, raw)
	}
	go io.Copy(io.Discard, stdout) // until app-server exits
	return list.Data
}

// checkCodexSession requires that every server of want answered the Codex
// session in where, listing the tool want names, and that no other server
// is there.
func checkCodexSession(t *testing.T, where string, status []codexServerStatus, want map[string]string) {
	t.Helper()
	var got []string
	for _, s := range status {
		got = append(got, s.Name)
		tool, wanted := want[s.Name]
		switch {
		case !wanted:
		case s.ServerInfo == nil || s.ToolsError != nil:
			t.Errorf("codex session in %s: server %s did not start: %v", where, s.Name, deref(s.ToolsError))
		case s.Tools[tool] == nil:
			t.Errorf("codex session in %s: server %s lists %v, want %s among them", where, s.Name, keysOf(s.Tools), tool)
		}
	}
	if !sameSet(got, keysOf(want)) {
		t.Errorf("codex session in %s: servers %v, want %v", where, got, keysOf(want))
	}
}

func deref(s *string) string {
	if s == nil {
		return "no error"
	}
	return *s
}

func keysOf[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// nothingRunsIn requires that no process runs in dir or below it once the
// clients are gone: every server they started ended with them.
func (sb *sandbox) nothingRunsIn(dir string) {
	sb.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		left := processesIn(dir)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			sb.t.Errorf("processes left running in %s: %s", dir, describePids(left))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// processesIn returns the processes whose working directory is dir or
// below it.
func processesIn(dir string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+string(filepath.Separator))) {
			pids = append(pids, pid)
		}
	}
	return pids
}
