//go:build unix

package e2e

// The gateway tests run the workspace gateway (mcpgen connect without a
// server) against real clients: the official TypeScript SDK client (eight
// agents at once, over three servers), the real Codex and Claude Code
// through one emit --gateway entry, and the reference server-everything
// reached over Streamable HTTP by the launcher, through connect NAME and
// through the gateway.
//
//	eval "$(e2e/clients/install.sh)"
//	MCPGEN_E2E=1 go test -count=1 -v -run Gateway ./e2e/

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestGateway(t *testing.T) {
	if !enabled {
		t.Skip(howToRun)
	}
	bin := shareBinary(t)
	t.Run("Remote", func(t *testing.T) { gatewayRemote(t, bin) })
	t.Run("EightAgents", func(t *testing.T) { gatewayEightAgents(t, bin) })
	t.Run("CodexClaude", func(t *testing.T) { gatewayCodexClaude(t, bin) })
}

// gatewayCmd is the command an agent runs to reach the world's gateway.
func (w *shareWorld) gatewayCmd() []string {
	return []string{w.bin, "connect", "--workspace", w.ws, "--manifest", w.manifest}
}

// gatewayStatus is the part of status --json these tests read.
type gatewayStatus struct {
	Servers []struct {
		Name  string `json:"name"`
		Kind  string `json:"kind"`
		State string `json:"state"`
		Pid   int    `json:"pid"`
	} `json:"servers"`
	Gateway struct {
		Tools []struct {
			Name, Server, Original string
		} `json:"tools"`
		Clients struct {
			Count int `json:"count"`
		} `json:"clients"`
	} `json:"gateway"`
}

func (w *shareWorld) gatewayStatus() *gatewayStatus {
	w.t.Helper()
	out, err := w.run("status", "--workspace", w.ws, "--json")
	if err != nil {
		w.t.Fatal(err)
	}
	var st gatewayStatus
	if err := json.Unmarshal(out, &st); err != nil {
		w.t.Fatalf("status --json: %v\n%s", err, out)
	}
	return &st
}

// gatewayTools returns the names `mcpgen tools ls --json` lists through
// the gateway.
func (w *shareWorld) gatewayTools() []string {
	w.t.Helper()
	out, err := w.run("tools", "ls", "--workspace", w.ws, "--json")
	if err != nil {
		w.t.Fatal(err)
	}
	var tools []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(out, &tools); err != nil {
		w.t.Fatalf("tools ls --json: %v\n%s", err, out)
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	return names
}

// 1. server-everything in its streamableHttp mode, a url server of the
// launcher: reached through connect web (a stdio endpoint for an HTTP
// server) and through the gateway, beside a stdio server; its session is
// deleted when the launcher stops.
func gatewayRemote(t *testing.T, bin string) {
	srv := startEverythingHTTP(t)
	w := newShareWorld(t, bin)
	w.writeManifest(w.echoServer("echo", map[string]string{"SHARE_NAME": "echo"}) +
		fmt.Sprintf("[servers.web]\nurl = %q\n", srv.url))
	l := w.launch()
	w.readyPid("echo")
	w.readyPid("web")
	for _, s := range w.gatewayStatus().Servers {
		if s.Name == "web" && (s.Kind != "remote" || s.Pid != 0) {
			t.Errorf("status of web: %+v", s)
		}
	}

	a := w.agents()
	r := a.connect("direct", w.connectCmd("web"))
	if r.ServerInfo.Name != "mcp-servers/everything" || !slices.Contains(r.Tools, "echo") {
		t.Fatalf("connect web: %+v", r)
	}
	if got := a.call("direct", "echo", map[string]any{"message": "over http"}); got != "Echo: over http" {
		t.Errorf("connect web, echo: %q", got)
	}
	// server-everything asks its client for roots: the hub answers with
	// the workspace, over the session's GET stream.
	root := (&url.URL{Scheme: "file", Path: w.wsDir}).String()
	deadline := time.Now().Add(shareWait)
	for got := ""; !strings.Contains(got, root); {
		if time.Now().After(deadline) {
			t.Fatalf("get-roots-list: %q; want %s in it", got, root)
		}
		got = a.call("direct", "get-roots-list", nil)
		time.Sleep(100 * time.Millisecond)
	}

	g := a.connect("gw", w.gatewayCmd())
	if g.ServerInfo.Name != "mcpgen" {
		t.Errorf("gateway serverInfo: %+v", g.ServerInfo)
	}
	for _, name := range []string{"web__echo", "echo__echo", "get-sum", "pid"} {
		if !slices.Contains(g.Tools, name) {
			t.Errorf("the gateway lists %q, want %s among them", g.Tools, name)
		}
	}
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"web__echo", map[string]any{"message": "via the gateway"}, "Echo: via the gateway"},
		{"echo__echo", map[string]any{"message": "stdio"}, "echo: stdio"},
		{"get-sum", map[string]any{"a": 2, "b": 3}, "The sum of 2 and 3 is 5."},
	} {
		if got := a.call("gw", c.tool, c.args); got != c.want {
			t.Errorf("gateway %s: %q, want %q", c.tool, got, c.want)
		}
	}
	out, err := w.run("tools", "call", "--workspace", w.ws, "web__echo", "message=from tools call")
	if err != nil || string(out) != "Echo: from tools call\n" {
		t.Errorf("tools call web__echo: %q, %v", out, err)
	}
	a.noTrouble()
	a.close()
	l.stop()
	w.nothingLeft()
	// The launcher's session was deleted when it stopped.
	sessions := strings.Count(srv.stdout(), "Session initialized with ID")
	deleted := strings.Count(srv.stdout(), "Received session termination request")
	if sessions == 0 || deleted != sessions {
		t.Errorf("sessions: %d initialized, %d deleted; want every one deleted\n%s", sessions, deleted, srv.stdout())
	}
}

// 2. Eight agents of the official SDK, each through its own gateway
// connect, 1000 calls each spread over three servers whose echo names
// itself: every answer is its caller's, from the server it called.
func gatewayEightAgents(t *testing.T, bin string) {
	w := newShareWorld(t, bin)
	var body string
	for _, s := range []string{"a", "b", "c"} {
		body += w.echoServer(s, map[string]string{"SHARE_NAME": s})
	}
	w.writeManifest(body)
	l := w.launch()
	pids := map[string]int{}
	for _, s := range []string{"a", "b", "c"} {
		pids[s] = w.readyPid(s)
	}
	a := w.agents()
	const clients, calls = 8, 1000
	tools := []string{"a__echo", "b__echo", "c__echo"}
	var names []string
	for i := range clients {
		name := fmt.Sprintf("g%d", i)
		names = append(names, name)
		r := a.connect(name, w.gatewayCmd())
		for _, tool := range tools {
			if !slices.Contains(r.Tools, tool) {
				t.Fatalf("%s: tools %q, want %s among them", name, r.Tools, tool)
			}
		}
	}
	var waits []<-chan json.RawMessage
	for _, name := range names {
		_, ch := a.start(map[string]any{"op": "echo", "client": name, "calls": calls, "concurrency": 4, "prefix": name, "tools": tools})
		waits = append(waits, ch)
	}
	for i, ch := range waits {
		var r shareEchoResult
		a.await(ch, &r)
		if r.Calls != calls || len(r.Errors) > 0 || len(r.Wrong) > 0 {
			t.Errorf("%s: %d of %d calls answered; %d errors, the first: %v; %d answers not its own, the first: %v",
				names[i], r.Calls, calls, len(r.Errors), r.Errors[:min(5, len(r.Errors))], len(r.Wrong), r.Wrong[:min(5, len(r.Wrong))])
		}
	}
	st := w.gatewayStatus()
	if st.Gateway.Clients.Count != clients {
		t.Errorf("gateway clients: %d, want %d", st.Gateway.Clients.Count, clients)
	}
	for _, s := range []string{"a", "b", "c"} {
		if procs := w.serverPids(s); len(procs) != 1 || procs[0] != pids[s] {
			t.Errorf("%s's processes: %s; want only %d", s, describePids(procs), pids[s])
		}
		w.clientCount(s, clients) // each agent is a member of every hub
	}
	a.noTrouble()
	a.close()
	for _, s := range []string{"a", "b", "c"} {
		w.clientCount(s, 0)
	}
	l.stop()
	w.nothingLeft()
}

// 3. The real Codex and Claude Code, each with one emit --gateway entry,
// list every tool of the workspace through it, with the launcher running
// and with the one that the entry's connect starts.
func gatewayCodexClaude(t *testing.T, bin string) {
	w := newShareWorld(t, bin)
	w.writeManifest(w.echoServer("echo", nil) +
		fmt.Sprintf("[servers.everything]\ncommand = \"node\"\nargs = [%q, \"stdio\", %q]\nstartup_timeout = \"30s\"\n\n", os.Getenv("SERVER_EVERYTHING"), w.marker("everything")) +
		"[servers.files]\nbuiltin = \"files\"\nread_only = true\n\n" +
		"[servers.shell.tools.echo]\nrun = [\"echo\", \"{text}\"]\nargs.text = { type = \"string\" }\n")

	files := map[string]string{}
	for _, provider := range []string{"codex", "claude"} {
		files[provider] = filepath.Join(w.dir, provider+"-gateway")
		if _, err := w.run("emit", "--provider", provider, "--gateway", "--manifest", w.manifest,
			"--workspace", w.ws, "--dir", w.wsDir, "-o", files[provider]); err != nil {
			t.Fatal(err)
		}
	}

	l := w.launch()
	for _, s := range []string{"echo", "everything", "files", "shell"} {
		w.readyPid(s)
	}
	want := w.gatewayTools()
	for _, name := range []string{"echo__echo", "everything__echo", "shell__echo", "get-sum", "read_file", "pid"} {
		if !slices.Contains(want, name) {
			t.Fatalf("the gateway lists %q, want %s among them", want, name)
		}
	}
	check := func(when string) {
		t.Helper()
		got := codexGatewayTools(t, w, files["codex"])
		if missing := missingFrom(got, want); len(missing) > 0 {
			t.Errorf("%s: codex lists %d tools through the gateway, missing %q", when, len(got), missing)
		}
		t.Logf("%s: codex lists %d tools through the gateway (the gateway has %d)", when, len(got), len(want))
		got = claudeGatewayTools(t, w, files["claude"])
		if missing := missingFrom(got, want); len(missing) > 0 {
			t.Errorf("%s: claude lists %d tools through the gateway, missing %q", when, len(got), missing)
		}
		t.Logf("%s: claude lists %d tools through the gateway", when, len(got))
		if v := validateClaudeFile(w.dir, w.env, []string{"--health"}, files["claude"]); v.err != nil || !slices.Equal(v.servers, []string{"mcpgen"}) {
			t.Errorf("%s: claude --health: servers %q, %v\n%s", when, v.servers, v.err, v.out)
		}
	}
	check("with a running launcher")
	l.stop()
	w.nothingLeft()

	// Without one: the entry's connect starts it (and waits for the
	// servers' first tools before the agent's first list).
	check("autostarted")
	st, err := w.status()
	if err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("kill", "-TERM", fmt.Sprint(st.Pid)).Run(); err != nil {
		t.Fatal(err)
	}
	if !waitProcessGone(st.Pid, shareWait) {
		t.Errorf("the autostarted launcher (pid %d) did not exit on SIGTERM", st.Pid)
	}
	w.nothingLeft()
}

func missingFrom(got, want []string) []string {
	var missing []string
	for _, name := range want {
		if !slices.Contains(got, name) {
			missing = append(missing, name)
		}
	}
	return missing
}

// codexStatusTools is the health line of the gateway's entry.
var codexStatusTools = regexp.MustCompile(`(?m)^OK mcpgen tools=\[(.*)\]$`)

// codexGatewayTools has the real Codex (a codex app-server asked for every
// server's status and tools) list the tools of the gateway entry.
func codexGatewayTools(t *testing.T, w *shareWorld, file string) []string {
	t.Helper()
	v := validateCodexFile(w.dir, w.env, []string{"--health"}, file, "mcpgen")
	if v.err != nil {
		t.Errorf("codex --health: %v\n%s", v.err, v.out)
		return nil
	}
	m := codexStatusTools.FindStringSubmatch(v.out)
	if m == nil {
		t.Errorf("codex --health: no tools for mcpgen\n%s", v.out)
		return nil
	}
	return strings.Fields(m[1])
}

// claudeGatewayTools has the real Claude Code start the gateway entry
// (claude -p, offline: its first event lists the tools it loaded, before
// it would ask a model) and returns the tools it took from it, without
// Claude's mcp__mcpgen__ prefix.
func claudeGatewayTools(t *testing.T, w *shareWorld, file string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := offline(os.Getenv("CLAUDE_BIN"), "-p", "list your tools", "--output-format", "stream-json", "--verbose",
		"--mcp-config", file, "--strict-mcp-config")
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(slices.Clip(w.env), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1")
	cmd.Dir = w.dir
	out, _ := cmd.Output() // it fails after the event: no model to ask, offline
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var ev struct {
			Type, Subtype string
			Tools         []string `json:"tools"`
			MCPServers    []struct {
				Name, Status string
			} `json:"mcp_servers"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Type != "system" || ev.Subtype != "init" {
			continue
		}
		if len(ev.MCPServers) != 1 || ev.MCPServers[0].Name != "mcpgen" || ev.MCPServers[0].Status != "connected" {
			t.Errorf("claude -p: MCP servers %+v, want mcpgen connected", ev.MCPServers)
		}
		var names []string
		for _, tool := range ev.Tools {
			if name, ok := strings.CutPrefix(tool, "mcp__mcpgen__"); ok {
				names = append(names, name)
			}
		}
		return names
	}
	t.Errorf("claude -p printed no init event:\n%.2000s", out)
	return nil
}
