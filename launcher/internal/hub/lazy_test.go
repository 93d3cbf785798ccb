package hub

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/mcp"
)

// idleHub is a hub whose server is idle, with what a supervisor does to
// start it: the test plays the supervisor.
type idleHub struct {
	*testHub
	demand <-chan struct{}
}

// newIdleHub returns a hub with no process, idle; with a catalog from a
// process that ran before (preloaded) when catalog is set.
func newIdleHub(t *testing.T, catalog bool) *idleHub {
	t.Helper()
	th := &testHub{t: t, hub: New("test", t.TempDir(), slog.New(slog.DiscardHandler))}
	t.Cleanup(func() {
		th.hub.Close()
		if th.proc != nil {
			th.proc.Kill()
		}
	})
	if catalog {
		// A process's handshake, as the launcher keeps it; the process
		// is gone.
		th.start("echo", "MCPGEN_TESTSERVER_TOOLS=echo,pid")
		th.crash()
		th.hub.Preload(th.init, th.tools, Lists{})
	}
	return &idleHub{testHub: th, demand: th.hub.Idle()}
}

// demanded reports whether a request asked the idle server to start.
func (ih *idleHub) demanded() bool {
	select {
	case <-ih.demand:
		return true
	default:
		return false
	}
}

// toolNames returns the names a tools/list answer lists; onePage: from the
// catalog, which lists every tool at once.
func toolNames(t *testing.T, m *mcp.Message, onePage bool) []string {
	t.Helper()
	if m.Error != nil {
		t.Fatalf("tools/list: %v", m.Error)
	}
	var r struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		NextCursor string `json:"nextCursor"`
	}
	if err := json.Unmarshal(m.Result, &r); err != nil {
		t.Fatal(err)
	}
	if onePage && r.NextCursor != "" {
		t.Errorf("tools/list from the catalog: got a next cursor %q, want every tool in one page", r.NextCursor)
	}
	var names []string
	for _, tool := range r.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// TestHubIdleCatalog: an idle server with a catalog answers initialize and
// tools/list from it, and starts for nothing else; the request that starts
// it waits until it is ready, and clients are told if its tools changed.
func TestHubIdleCatalog(t *testing.T) {
	ih := newIdleHub(t, true)
	c := ih.client("a", "") // initialize, answered from the catalog
	c.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if got := strings.Join(toolNames(t, c.Next(), true), ","); got != "echo,pid" {
		t.Errorf("tools/list: got %s, want the catalog's echo,pid", got)
	}
	if ih.demanded() {
		t.Fatal("initialize or tools/list started the idle server")
	}

	c.Call("2", "echo", `{"text":"hi"}`)
	select {
	case <-ih.demand:
	case <-time.After(waitLong):
		t.Fatal("a call did not start the idle server")
	}
	if ih.hub.IsIdle() {
		t.Error("the hub says idle after a request started the server")
	}
	// The supervisor starts it: another tool list than the catalog's.
	ih.start("echo", "MCPGEN_TESTSERVER_TOOLS=echo,slow")
	var gotAnswer, gotChanged bool
	for !gotAnswer || !gotChanged {
		m := c.Next()
		switch {
		case m.Method == "notifications/tools/list_changed":
			gotChanged = true
		case m.ID.String() == "2":
			if text := testserver.ResultText(t, m); text != "hi" {
				t.Errorf("the call: got %q, want hi", text)
			}
			gotAnswer = true
		default:
			t.Errorf("unexpected: %s", m.AppendJSON(nil))
		}
	}
	c.Send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if got := strings.Join(toolNames(t, c.Next(), false), ","); got != "echo,slow" {
		t.Errorf("tools/list once running: got %s, want the process's echo,slow", got)
	}
}

// TestHubIdleNoCatalog: with no catalog, initialize starts the server.
func TestHubIdleNoCatalog(t *testing.T) {
	ih := newIdleHub(t, false)
	ours, theirs := net.Pipe()
	go ih.hub.Serve(context.Background(), theirs)
	t.Cleanup(func() { ours.Close() })
	inited := make(chan *testserver.Client, 1)
	go func() { inited <- testserver.NewClient(t, ours, "a", "") }()
	select {
	case <-ih.demand:
	case <-time.After(waitLong):
		t.Fatal("initialize did not start an idle server that has no catalog")
	}
	ih.start("echo")
	c := <-inited
	c.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if names := toolNames(t, c.Next(), false); len(names) == 0 {
		t.Error("tools/list: no tools")
	}
}

// TestHubIdleIf: a stop for idleness takes effect only if no client came
// since the server was found quiet; once it has, a request waits for the
// next process.
func TestHubIdleIf(t *testing.T) {
	th := newTestHub(t, "echo")
	quiet, left, _ := th.hub.Quiet()
	if !quiet || !left.IsZero() {
		t.Fatalf("no client yet: got quiet %v since %v, want quiet since never", quiet, left)
	}
	c := th.client("a", "")
	if quiet, _, _ := th.hub.Quiet(); quiet {
		t.Fatal("a client is connected: got quiet")
	}
	before := time.Now()
	if _, ok := th.hub.IdleIf(th.up, before); ok {
		t.Fatal("IdleIf with a client connected: got the stop, want it off")
	}
	_, _, changed := th.hub.Quiet()
	c.Close()
	select {
	case <-changed:
	case <-time.After(waitLong):
		t.Fatal("the client left: Quiet's channel was not closed")
	}
	quiet, left, _ = th.hub.Quiet()
	if !quiet || !left.After(before) {
		t.Fatalf("the client left: got quiet %v since %v, want quiet since after %v", quiet, left, before)
	}
	if _, ok := th.hub.IdleIf(th.up, before); ok {
		t.Fatal("IdleIf since before the client left: got the stop, want it off")
	}
	demand, ok := th.hub.IdleIf(th.up, left)
	if !ok || !th.hub.IsIdle() {
		t.Fatalf("IdleIf since the client left: got ok %v, idle %v; want the stop", ok, th.hub.IsIdle())
	}
	if th.up.refuses() == false {
		t.Error("the process stopped for idleness still takes requests")
	}
	if _, ok := th.hub.IdleIf(th.up, left); ok {
		t.Error("IdleIf twice: got the stop again")
	}

	// A client now: answered from the catalog, and its call starts the
	// server, which the stopped process does not answer.
	c2 := th.client("b", "")
	c2.Call("1", "pid", `{}`)
	select {
	case <-demand:
	case <-time.After(waitLong):
		t.Fatal("a call did not start the server stopped for idleness")
	}
	old := th.proc
	old.Kill()
	th.start("echo")
	if pid := testserver.ResultText(t, c2.Next()); pid == "" || pid == strconv.Itoa(old.Pid) {
		t.Errorf("the call was answered by pid %s, want the new process", pid)
	}
}

// TestHubStartFailed: the requests waiting for a start that failed get
// why; a later request starts the server again.
func TestHubStartFailed(t *testing.T) {
	ih := newIdleHub(t, true)
	c := ih.client("a", "")
	c.Call("1", "echo", `{"text":"hi"}`)
	<-ih.demand
	ih.hub.StartFailed(errors.New("exited with status 1; stderr: boom"))
	m := c.Next()
	if m.Error == nil || m.Error.Code != CodeUnavailable || !strings.Contains(m.Error.Message, `server "test" did not start: exited with status 1; stderr: boom`) {
		t.Fatalf("got %s, want the start's failure", m.AppendJSON(nil))
	}
	demand := ih.hub.Idle()
	c.Call("2", "echo", `{"text":"again"}`)
	select {
	case <-demand:
	case <-time.After(waitLong):
		t.Fatal("a request after a failed start did not start the server again")
	}
	ih.start("echo", "MCPGEN_TESTSERVER_TOOLS=echo,pid") // the catalog's tools: no list_changed
	if text := testserver.ResultText(t, c.Next()); text != "again" {
		t.Errorf("got %q, want again", text)
	}
}

// TestHubIdleWaiters: a server made idle while requests wait for it starts
// at once.
func TestHubIdleWaiters(t *testing.T) {
	th := newTestHub(t, "echo")
	c := th.client("a", "")
	th.crash() // restarting, as far as the hub knows
	c.Call("1", "echo", `{"text":"hi"}`)
	deadline := time.Now().Add(waitLong)
	for {
		th.hub.mu.Lock()
		waiting := th.hub.idle.waiters
		th.hub.mu.Unlock()
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the call does not wait for the server")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case <-th.hub.Idle():
	default:
		t.Fatal("Idle with a request waiting: got a server that sleeps, want one that starts")
	}
	th.start("echo")
	if text := testserver.ResultText(t, c.Next()); text != "hi" {
		t.Errorf("got %q, want hi", text)
	}
}

// TestHubPreloadChanged: a catalog replaced (the server's configuration
// changed while it was idle) tells the clients when their tools changed.
func TestHubPreloadChanged(t *testing.T) {
	ih := newIdleHub(t, true)
	c := ih.client("a", "")
	ih.hub.Preload(ih.init, ih.tools, Lists{}) // the same
	c.Quiet()
	ih.hub.Preload(nil, nil, Lists{}) // none for the new configuration
	if m := c.Next(); m.Method != "notifications/tools/list_changed" {
		t.Fatalf("got %s, want tools/list_changed", m.AppendJSON(nil))
	}
	// No catalog now: tools/list starts the server.
	c.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	select {
	case <-ih.demand:
	case <-time.After(waitLong):
		t.Fatal("tools/list without a catalog did not start the server")
	}
}

// TestHubIdleLists: an idle server's catalog answers the lists an agent
// makes at its start, tools through the tool filter, and prompts and
// resources when the catalog has them; a list it does not have (nil)
// starts the server.
func TestHubIdleLists(t *testing.T) {
	th := &testHub{t: t, hub: New("test", t.TempDir(), slog.New(slog.DiscardHandler))}
	t.Cleanup(func() {
		th.hub.Close()
		th.proc.Kill()
	})
	th.start("echo", "MCPGEN_TESTSERVER_CATALOG=1", "MCPGEN_TESTSERVER_TOOLS=echo,pid")
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	lists := th.up.Lists(ctx, th.init)
	if lists.Prompts == nil || lists.Resources == nil || lists.Templates == nil {
		t.Fatalf("Upstream.Lists: got %+v, want every list of a server that has them", lists)
	}
	th.crash()
	lists.Templates = nil // as a catalog that did not keep them
	th.hub.Preload(th.init, th.tools, lists)
	demand := th.hub.Idle()
	th.hub.SetFilter(func(tool string) bool { return tool != "pid" })
	c := th.client("a", "")

	tests := []struct {
		method string
		want   string // what the answer holds
		starts bool
	}{
		{"tools/list", `"name":"echo"`, false},
		{"prompts/list", `"name":"greet"`, false},
		{"resources/list", `"uri":"test://test/readme"`, false},
		{"resources/templates/list", "", true},
	}
	for i, tt := range tests {
		c.Send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"` + tt.method + `"}`)
		if tt.starts {
			select {
			case <-demand:
			case <-time.After(waitLong):
				t.Fatalf("%s with no list kept: the server did not start", tt.method)
			}
			continue
		}
		m := c.Next()
		if got := string(m.AppendJSON(nil)); !strings.Contains(got, tt.want) || strings.Contains(got, `"pid"`) {
			t.Errorf("%s: got %s, want it to hold %s (and no hidden pid)", tt.method, got, tt.want)
		}
		select {
		case <-demand:
			t.Fatalf("%s started the idle server", tt.method)
		default:
		}
	}
}

// TestHubMemberUse: a member (a gateway session) keeps the server from its
// idle stop only while it has a request under way, and the quiet counts
// from its answer; a client connection keeps it for as long as it is
// connected.
func TestHubMemberUse(t *testing.T) {
	th := newTestHub(t, "echo")
	m, log := th.member("gateway", false)
	if quiet, _, _ := th.hub.Quiet(); !quiet {
		t.Fatal("a member with nothing under way: got not quiet")
	}
	before := time.Now()
	m.Handle(request("1", "tools/call", `{"name":"slow","arguments":{"ms":100}}`))
	if quiet, _, _ := th.hub.Quiet(); quiet {
		t.Fatal("a member's call under way: got quiet")
	}
	if _, ok := th.hub.IdleIf(th.up, time.Now()); ok {
		t.Fatal("IdleIf with a member's call under way: got the stop")
	}
	log.wait(t, "the answer", byID("1"))
	since := waitQuiet(t, th.hub)
	if !since.After(before) {
		t.Errorf("quiet since %v, want after the call began (%v)", since, before)
	}
	if _, ok := th.hub.IdleIf(th.up, before); ok {
		t.Error("IdleIf since before the member's call: got the stop, want it off")
	}

	c := th.client("agent", "")
	if quiet, _, _ := th.hub.Quiet(); quiet {
		t.Fatal("a client connected: got quiet")
	}
	c.Close()
	left := waitQuiet(t, th.hub)
	if _, ok := th.hub.IdleIf(th.up, left); !ok {
		t.Error("IdleIf since the client left, the member still joined: got it off, want the stop")
	}
}

// waitQuiet waits until nothing keeps the hub's server running, and
// returns since when.
func waitQuiet(t *testing.T, h *Hub) time.Time {
	t.Helper()
	deadline := time.After(waitLong)
	for {
		quiet, since, changed := h.Quiet()
		if quiet {
			return since
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("still not quiet")
		}
	}
}
