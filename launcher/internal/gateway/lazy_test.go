package gateway

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/mcp"
)

// idle makes a server of the world idle, as a supervisor does for a lazy
// server: with the catalog of a process that ran before (preloaded, its
// lists too) when catalog is set. It returns what a request that needs the
// server closes.
func (w *world) idle(name string, catalog bool) <-chan struct{} {
	w.t.Helper()
	b := w.servers[name]
	if catalog {
		w.start(name)
		b.mu.Lock()
		p, up := b.proc, b.up
		b.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), waitLong)
		lists := up.Lists(ctx, b.hub.Catalog().Init)
		cancel()
		c := b.hub.Catalog()
		p.Kill()
		<-up.Done()
		b.hub.Detach(up)
		b.hub.Preload(c.Init, c.Tools, lists)
	}
	b.setState(State{State: "idle"})
	return b.hub.Idle()
}

// demanded waits until a request starts an idle server.
func demanded(t *testing.T, demand <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-demand:
	case <-time.After(waitLong):
		t.Fatalf("%s did not start the idle server", what)
	}
}

// notDemanded fails if a request started an idle server.
func notDemanded(t *testing.T, demand <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-demand:
		t.Fatalf("%s started the idle server", what)
	default:
	}
}

// TestGatewayLazy: an idle server's tools and prompts are listed from its
// catalog and logging/setLevel leaves it idle; a call to one of its tools
// starts it, waits until it is ready and is answered by the new process;
// a server that stays idle meanwhile is not started.
func TestGatewayLazy(t *testing.T) {
	w := newWorld(t)
	w.add("a", true, "MCPGEN_TESTSERVER_TOOLS=echo,slow")
	w.add("b", false, "MCPGEN_TESTSERVER_TOOLS=pid,log", "MCPGEN_TESTSERVER_CATALOG=1")
	w.add("c", false, "MCPGEN_TESTSERVER_TOOLS=crash")
	bDemand := w.idle("b", true)
	cDemand := w.idle("c", true)
	agent := w.client("agent", "")

	if got, want := listTools(t, agent), []string{"echo", "slow", "pid", "log", "crash"}; !slices.Equal(got, want) {
		t.Errorf("tools: got %q, want %q (the idle servers' from their catalogs)", got, want)
	}
	agent.Send(`{"jsonrpc":"2.0","id":"p","method":"prompts/list"}`)
	if got := string(next(t, agent, `"p"`).Result); !strings.Contains(got, `"name":"greet"`) {
		t.Errorf("prompts/list: got %s, want b's greet from its catalog", got)
	}
	agent.Send(`{"jsonrpc":"2.0","id":"l","method":"logging/setLevel","params":{"level":"error"}}`)
	next(t, agent, `"l"`)
	notDemanded(t, bDemand, "listing, and logging/setLevel,")

	agent.Call("1", "pid", `{}`)
	demanded(t, bDemand, "a call to one of its tools")
	w.start("b") // the supervisor's part
	if got, want := testserver.ResultText(t, next(t, agent, "1")), strconv.Itoa(w.servers["b"].pid()); got != want {
		t.Errorf("pid: got %s, want the process the call started, %s", got, want)
	}
	notDemanded(t, cDemand, "a call to another server")
}

// TestGatewayLazyStartFails: a call that starts an idle server whose start
// fails gets an error result (the model reads it) that says why; a later
// call tries again.
func TestGatewayLazyStartFails(t *testing.T) {
	w := newWorld(t)
	w.add("b", false, "MCPGEN_TESTSERVER_TOOLS=pid")
	demand := w.idle("b", true)
	agent := w.client("agent", "")
	agent.Call("1", "pid", `{}`)
	demanded(t, demand, "the call")
	b := w.servers["b"]
	b.hub.StartFailed(errors.New("exited with status 1; stderr: boom: cannot start")) // the supervisor's part
	demand = b.hub.Idle()
	m := next(t, agent, "1")
	var r mcp.CallToolResult
	if m.Error != nil || r.UnmarshalJSON(m.Result) != nil || !r.IsError {
		t.Fatalf("got %s, want an error result", m.AppendJSON(nil))
	}
	if got := testserver.ResultText(t, m); !strings.Contains(got, `server "b" did not start: exited with status 1; stderr: boom: cannot start`) {
		t.Errorf("got %q, want why the start failed", got)
	}
	agent.Call("2", "pid", `{}`)
	demanded(t, demand, "a call after the failed start")
	w.start("b")
	if got := testserver.ResultText(t, next(t, agent, "2")); got != strconv.Itoa(b.pid()) {
		t.Errorf("pid after the retry: got %s", got)
	}
}

// TestGatewayLazyNoCatalog: an idle server with no catalog is started by
// an agent's first list, which waits for its tools; one whose start fails
// leaves the list without its tools, not hanging.
func TestGatewayLazyNoCatalog(t *testing.T) {
	tests := []struct {
		name  string
		fails bool
		want  []string
	}{
		{"started", false, []string{"echo", "pid"}},
		{"its start fails", true, []string{"echo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			w.add("a", true, "MCPGEN_TESTSERVER_TOOLS=echo")
			w.add("b", false, "MCPGEN_TESTSERVER_TOOLS=pid")
			demand := w.idle("b", false)
			agent := w.client("agent", "")
			agent.Send(`{"jsonrpc":"2.0","id":"list","method":"tools/list"}`)
			demanded(t, demand, "the first list")
			b := w.servers["b"]
			if tt.fails {
				b.hub.StartFailed(errors.New("exited with status 1"))
				b.hub.Idle()
			} else {
				b.setState(State{State: "starting"})
				w.start("b")
			}
			if got := toolList(t, next(t, agent, `"list"`)); !slices.Equal(got, tt.want) {
				t.Errorf("the first list: got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestGatewayLazyCancel: a call cancelled while its idle server starts
// gets no answer, and the session goes on.
func TestGatewayLazyCancel(t *testing.T) {
	w := newWorld(t)
	w.add("b", false, "MCPGEN_TESTSERVER_TOOLS=echo,pid")
	demand := w.idle("b", true)
	agent := w.client("agent", "")
	agent.Call("1", "echo", `{"text":"cancelled"}`)
	demanded(t, demand, "the call")
	agent.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	agent.Send(`{"jsonrpc":"2.0","id":"ping","method":"ping"}`) // read after the cancellation
	next(t, agent, `"ping"`)
	w.start("b")
	agent.Call("2", "echo", `{"text":"after"}`)
	if m := agent.Next(); !m.IsResponse() || m.ID.String() != "2" || testserver.ResultText(t, m) != "after" {
		t.Errorf("got %s, want only the answer to 2", m.AppendJSON(nil))
	}
}

// toolList returns the names of a tools/list answer.
func toolList(t *testing.T, m *mcp.Message) []string {
	t.Helper()
	var r struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(m.Result, &r); err != nil {
		t.Fatalf("tools/list: %s", m.AppendJSON(nil))
	}
	var names []string
	for _, tool := range r.Tools {
		names = append(names, tool.Name)
	}
	return names
}
