//go:build unix

package launcher

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/mcp"
)

// gatewayAnswer sends a request through c and returns its answer.
func gatewayAnswer(t *testing.T, c *testserver.Client, id, method, params string) *mcp.Message {
	t.Helper()
	c.Send(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`)
	for {
		if m := c.Next(); m.IsResponse() && m.ID.String() == id {
			return m
		}
	}
}

// TestSessionGatewayLazy: lazy servers behind the workspace gateway. The
// first list of an agent starts the servers that have no catalog yet; an
// agent that stays connected keeps the launcher, not the servers, which
// stop once unused for their idle_timeout; then a new agent's startup
// (initialize, tools, prompts, resources) is answered from the catalogs,
// prompts and resources included, through the gateway and through
// connect NAME, and starts nothing; a call starts its server alone.
func TestSessionGatewayLazy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path,
		lazyTOML(t, "a", true, "100ms", "MCPGEN_TESTSERVER_TOOLS=echo,pid", "MCPGEN_TESTSERVER_CATALOG=1", "MCPGEN_TESTSERVER_NAME=a")+
			lazyTOML(t, "b", true, "100ms", "MCPGEN_TESTSERVER_TOOLS=slow"))
	ts := startSession(t, path, Options{IdleExit: 100 * time.Millisecond})
	ts.wait("idle", func(st *ctl.Status) bool {
		return server(st, "a").State == ctl.Idle && server(st, "b").State == ctl.Idle
	})

	// No catalog yet: the first list starts both, and waits for them.
	first := ts.gatewayClient("first")
	if got, want := gatewayTools(t, first, "1"), []string{"echo", "pid", "slow"}; !slices.Equal(got, want) {
		t.Errorf("the first list: got %q, want %q", got, want)
	}
	// Connected, and unused: both stop; the launcher stays.
	ts.wait("idle again, the agent connected", func(st *ctl.Status) bool {
		return server(st, "a").State == ctl.Idle && server(st, "b").State == ctl.Idle
	})
	time.Sleep(waitQuiet) // well past the idle exit: the agent holds the launcher
	select {
	case err := <-ts.done:
		ts.ended = true
		t.Fatalf("the launcher exited with a gateway agent connected: %v", err)
	default:
	}
	noProcess(t, ts, "a")
	noProcess(t, ts, "b")
	stateDir, err := StateDir("ws")
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(catalogPath(stateDir, "a")); err != nil || !strings.Contains(string(data), `"prompts":[`) || !strings.Contains(string(data), `"resource_templates":[`) {
		t.Errorf("a's catalog: got %s, %v; want its prompts and resources kept", data, err)
	}

	// An agent's startup, from the catalogs: nothing starts.
	agent := ts.gatewayClient("agent")
	if got, want := gatewayTools(t, agent, "1"), []string{"echo", "pid", "slow"}; !slices.Equal(got, want) {
		t.Errorf("tools from the catalogs: got %q, want %q", got, want)
	}
	for i, tt := range []struct{ method, want string }{
		{"prompts/list", `"name":"greet"`},
		{"resources/list", `"uri":"test://a/readme"`},
		{"resources/templates/list", `"uriTemplate":"test://a/item/{id}"`},
	} {
		if got := string(gatewayAnswer(t, agent, strconv.Itoa(10+i), tt.method, `{}`).AppendJSON(nil)); !strings.Contains(got, tt.want) {
			t.Errorf("gateway %s: got %s, want %s", tt.method, got, tt.want)
		}
	}
	direct := ts.connect("a", "direct") // initialize from the catalog
	for i, tt := range []struct{ method, want string }{
		{"tools/list", `"name":"pid"`},
		{"prompts/list", `"name":"greet"`},
		{"resources/list", `"uri":"test://a/readme"`},
		{"resources/templates/list", `"uriTemplate":"test://a/item/{id}"`},
	} {
		if got := string(gatewayAnswer(t, direct, strconv.Itoa(20+i), tt.method, `{}`).AppendJSON(nil)); !strings.Contains(got, tt.want) {
			t.Errorf("connect a, %s: got %s, want %s", tt.method, got, tt.want)
		}
	}
	noProcess(t, ts, "a")
	noProcess(t, ts, "b")
	direct.Close()

	// A call starts its server, and only it.
	m := gatewayAnswer(t, agent, "2", "tools/call", `{"name":"pid","arguments":{}}`)
	pid, err := strconv.Atoi(testserver.ResultText(t, m))
	// The server answered: it runs. Its supervisor may not have called it
	// ready yet (it lists the server's catalog first).
	if st := server(ts.status(), "a"); err != nil || st.Pid != pid || st.State != ctl.Ready && st.State != ctl.Starting {
		t.Errorf("the call: got pid %d (%v); a is %s with pid %d", pid, err, st.State, st.Pid)
	}
	if st := server(ts.status(), "b"); st.State != ctl.Idle || st.Pid != 0 {
		t.Errorf("b, after a call to a: got %s, pid %d; want idle, no process", st.State, st.Pid)
	}
	ts.wait("a idle once unused", serverIs("a", ctl.Idle))
	waitGone(t, "a, stopped for idleness", pid)
}

// TestSessionGatewayLazyFails: a call through the gateway to a lazy server
// that cannot start gets an error result that says why.
func TestSessionGatewayLazyFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	body := lazyTOML(t, "a", true, "", "MCPGEN_TESTSERVER_TOOLS=echo,pid")
	writeFile(t, path, body)
	ts := startSession(t, path, Options{})
	ts.wait("idle", serverIs("a", ctl.Idle))

	// boom joins the manifest with a catalog, as an earlier run of it
	// that worked would have kept. The catalog is kept before the manifest
	// names boom: the launcher, which may reload as soon as it sees the
	// new manifest, must find it then. Its key comes from the new manifest,
	// loaded from beside the one the launcher follows, then renamed over it.
	body += testServerTOML(t, "boom", "exit") + "start = \"lazy\"\n"
	next := filepath.Join(filepath.Dir(path), "next.toml")
	writeFile(t, next, body)
	m, err := manifest.Load(next)
	if err != nil {
		t.Fatal(err)
	}
	ts.s.mu.Lock()
	c := ts.s.ctx
	ts.s.mu.Unlock()
	cfg := ts.s.configure(m, c, m.Servers[1])
	init := &mcp.InitializeResult{Raw: []byte(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"boom","version":"1"}}`)}
	if err := json.Unmarshal(init.Raw, init); err != nil {
		t.Fatal(err)
	}
	tool := &mcp.Tool{}
	if err := tool.UnmarshalJSON([]byte(`{"name":"explode","inputSchema":{"type":"object"}}`)); err != nil {
		t.Fatal(err)
	}
	stateDir, err := StateDir("ws")
	if err != nil {
		t.Fatal(err)
	}
	if err := saveCatalog(stateDir, "boom", cfg.catKey, &catalog{init: init, tools: []*mcp.Tool{tool}}); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, path); err != nil {
		t.Fatal(err)
	}
	ts.wait("boom idle", serverIs("boom", ctl.Idle))

	agent := ts.gatewayClient("agent")
	if got := gatewayTools(t, agent, "1"); !slices.Contains(got, "explode") {
		t.Fatalf("tools: got %q, want boom's explode from its catalog", got)
	}
	msg := gatewayAnswer(t, agent, "2", "tools/call", `{"name":"explode","arguments":{}}`)
	var r mcp.CallToolResult
	if msg.Error != nil || r.UnmarshalJSON(msg.Result) != nil || !r.IsError {
		t.Fatalf("got %s, want an error result", msg.AppendJSON(nil))
	}
	if got := testserver.ResultText(t, msg); !strings.Contains(got, `server "boom" did not start`) || !strings.Contains(got, "boom: cannot start") {
		t.Errorf("got %q, want why boom did not start, with its stderr", got)
	}
	ts.wait("boom idle again", serverIs("boom", ctl.Idle))
}
