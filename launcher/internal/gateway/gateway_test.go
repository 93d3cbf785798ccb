package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/launcher/internal/hub"
	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/mcp"
)

// The test binary doubles as the servers the tests run (testserver.Main).
func TestMain(m *testing.M) {
	testserver.Main()
	os.Exit(m.Run())
}

const waitLong = testserver.WaitLong

// A world is a gateway over hubs of test server processes, each played by
// the test binary, with the states a supervisor would report.
type world struct {
	t       testing.TB
	g       *Gateway
	order   []string
	servers map[string]*backend
	always  bool
	search  bool     // [gateway] tools = "search"
	pin     []string // [gateway] pin
	reveal  bool     // [gateway] search_reveal
}

type backend struct {
	name string
	hub  *hub.Hub
	env  []string
	mode string // the test server's mode; "": echo

	mu    sync.Mutex
	proc  *proc.Process
	up    *hub.Upstream
	state State
}

func (b *backend) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}

func (b *backend) setState(st State) {
	b.mu.Lock()
	b.state = st
	b.mu.Unlock()
}

func newWorld(t testing.TB) *world {
	w := &world{t: t, g: New(slog.New(slog.DiscardHandler)), servers: map[string]*backend{}}
	t.Cleanup(func() {
		w.g.Close()
		for _, b := range w.servers {
			b.hub.Close()
			b.mu.Lock()
			p := b.proc
			b.mu.Unlock()
			if p == nil {
				continue
			}
			p.Kill()
			select {
			case <-p.Exited(): // nothing left: the test server has no children
			case <-time.After(waitLong):
				t.Errorf("server %s (pid %d) is still running", b.name, p.Pid)
			}
		}
	})
	return w
}

// add adds a server, started (ready) unless start is false, with its test
// server's environment ("K=V").
func (w *world) add(name string, start bool, env ...string) *backend {
	w.t.Helper()
	b := &backend{name: name, hub: hub.New(name, w.t.TempDir(), slog.New(slog.DiscardHandler)),
		env: append([]string{"MCPGEN_TESTSERVER_NAME=" + name}, env...), state: State{State: "starting"}}
	w.servers[name] = b
	w.order = append(w.order, name)
	w.set()
	if start {
		w.start(name)
	}
	return b
}

// set gives the gateway the world's servers, in order.
func (w *world) set() {
	var bs []Backend
	for _, name := range w.order {
		b := w.servers[name]
		bs = append(bs, Backend{Name: name, Hub: b.hub, State: b.State})
	}
	w.g.Set(bs, Options{Always: w.always, Search: w.search, Pin: w.pin, Reveal: w.reveal})
}

// start runs a new process of a server and attaches it, as a supervisor
// does.
func (w *world) start(name string) {
	w.t.Helper()
	b := w.servers[name]
	mode := b.mode
	if mode == "" {
		mode = "echo"
	}
	p, err := proc.Start(testserver.Spec(w.t, mode, b.env...))
	if err != nil {
		w.t.Fatal(err)
	}
	up := b.hub.NewUpstream(p.Stdout(), p.Stdin())
	go up.Run()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	init, tools, err := up.Initialize(ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	b.mu.Lock()
	b.proc, b.up = p, up
	b.state = State{State: "ready"}
	b.mu.Unlock()
	b.hub.Attach(up, init, tools)
}

// crash kills a server's process, as a crash would, and leaves it in
// backoff until retryAt.
func (w *world) crash(name string, retryAt time.Time) {
	b := w.servers[name]
	b.mu.Lock()
	p, up := b.proc, b.up
	b.mu.Unlock()
	p.Kill()
	<-up.Done()
	b.setState(State{State: "backoff", RetryAt: retryAt, LastError: "exited with status 3"})
	b.hub.Detach(up)
}

// client connects an agent to the gateway (servers: all when none) and
// initializes it with the capabilities caps.
func (w *world) client(name, caps string, servers ...string) *testserver.Client {
	w.t.Helper()
	ours, theirs := net.Pipe()
	served := make(chan struct{})
	go func() { defer close(served); w.g.Serve(context.Background(), theirs, servers) }()
	w.t.Cleanup(func() { ours.Close(); <-served })
	return testserver.NewClient(w.t, ours, name, caps)
}

// listTools returns the names a client's tools/list answers.
func listTools(t *testing.T, c *testserver.Client) []string {
	t.Helper()
	c.Send(`{"jsonrpc":"2.0","id":"list","method":"tools/list"}`)
	m := next(t, c, `"list"`)
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

// next returns the response with the given id, skipping notifications.
func next(t *testing.T, c *testserver.Client, id string) *mcp.Message {
	t.Helper()
	for {
		m := c.Next()
		if m.IsResponse() && m.ID.String() == id {
			return m
		}
		if m.IsResponse() {
			t.Fatalf("got the response to %s, want %s: %s", m.ID, id, m.AppendJSON(nil))
		}
	}
}

// waitFor returns the first message that ok accepts.
func waitFor(t *testing.T, c *testserver.Client, what string, ok func(*mcp.Message) bool) *mcp.Message {
	t.Helper()
	for {
		m := c.Next()
		if ok(m) {
			return m
		}
	}
}

func isMethod(method string) func(*mcp.Message) bool {
	return func(m *mcp.Message) bool { return m.Method == method }
}

func (b *backend) pid() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.proc.Pid
}

// TestGatewayTools: every server's tools in one list, named by the rule,
// each call routed to its owner under its own name, the same ids of two
// agents and of two servers kept apart.
func TestGatewayTools(t *testing.T) {
	w := newWorld(t)
	a := w.add("a", true, "MCPGEN_TESTSERVER_TOOLS=echo,pid,slow")
	b := w.add("b", true, "MCPGEN_TESTSERVER_TOOLS=echo,pid,add")
	c := w.client("agent", "")

	if got, want := listTools(t, c), []string{"a__echo", "a__pid", "slow", "b__echo", "b__pid", "add"}; !slices.Equal(got, want) {
		t.Errorf("tools: got %q, want %q", got, want)
	}
	for _, tt := range []struct {
		tool string
		want int
	}{{"a__pid", a.pid()}, {"b__pid", b.pid()}} {
		c.Call("1", tt.tool, `{}`)
		if got, _ := strconv.Atoi(testserver.ResultText(t, next(t, c, "1"))); got != tt.want {
			t.Errorf("%s: pid %d, want %d", tt.tool, got, tt.want)
		}
	}

	// One id for both servers at once, and a second agent with the same.
	d := w.client("other", "")
	c.Call("7", "slow", `{"ms":300}`)
	d.Call("7", "a__echo", `{"text":"d's"}`)
	c.Call("8", "b__echo", `{"text":"c's"}`)
	if got := testserver.ResultText(t, next(t, d, "7")); got != "d's" {
		t.Errorf("d: got %q", got)
	}
	if got := testserver.ResultText(t, next(t, c, "8")); got != "c's" {
		t.Errorf("c 8: got %q", got)
	}
	if got := testserver.ResultText(t, next(t, c, "7")); got != "slept" {
		t.Errorf("c 7: got %q", got)
	}

	c.Call("9", "echo", `{}`) // the bare name of a collision is gone
	if m := next(t, c, "9"); m.Error == nil || m.Error.Code != mcp.CodeInvalidParams {
		t.Errorf("echo: got %s, want -32602", m.AppendJSON(nil))
	}
	c.Send(`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"arguments":{}}}`)
	if m := next(t, c, "10"); m.Error == nil || m.Error.Code != mcp.CodeInvalidParams {
		t.Errorf("no name: got %s, want -32602", m.AppendJSON(nil))
	}
	c.Send(`{"jsonrpc":"2.0","id":11,"method":"no/such"}`)
	if m := next(t, c, "11"); m.Error == nil || m.Error.Code != mcp.CodeMethodNotFound {
		t.Errorf("no/such: got %s, want -32601", m.AppendJSON(nil))
	}

	// The agents show among each server's clients.
	if got := a.hub.Clients(); !slices.Contains(got, "agent 1.0 (gateway)") || !slices.Contains(got, "other 1.0 (gateway)") {
		t.Errorf("a's clients: %q", got)
	}
	if got := w.g.Clients(); !slices.Equal(got, []string{"agent 1.0", "other 1.0"}) {
		t.Errorf("gateway clients: %q", got)
	}
}

// TestGatewayAlwaysAndSubset: prefix "always", and a session limited to
// some servers (--servers), named among those only.
func TestGatewayAlwaysAndSubset(t *testing.T) {
	w := newWorld(t)
	w.add("a", true, "MCPGEN_TESTSERVER_TOOLS=echo,pid")
	w.add("b", true, "MCPGEN_TESTSERVER_TOOLS=echo")
	only := w.client("only-b", "", "b")
	if got := listTools(t, only); !slices.Equal(got, []string{"echo"}) {
		t.Errorf("--servers b: got %q", got)
	}
	only.Call("1", "echo", `{"text":"b alone"}`)
	if got := testserver.ResultText(t, next(t, only, "1")); got != "b alone" {
		t.Errorf("--servers b: echo %q", got)
	}
	if err := w.g.Check([]string{"b", "zz"}); err == nil || !strings.Contains(err.Error(), `no server "zz"; it has: a, b`) {
		t.Errorf("Check: %v", err)
	}

	w.always = true
	w.set()
	c := w.client("agent", "")
	if got := listTools(t, c); !slices.Equal(got, []string{"a__echo", "a__pid", "b__echo"}) {
		t.Errorf("always: got %q", got)
	}
	// The session limited to b is told that its names changed.
	waitFor(t, only, "list_changed", isMethod("notifications/tools/list_changed"))
	if got := listTools(t, only); !slices.Equal(got, []string{"b__echo"}) {
		t.Errorf("always, --servers b: got %q", got)
	}
}

// TestGatewayRemapping: progress under the agent's token, cancellation
// reaching the server, the servers' requests (sampling) routed to the
// agent under an id of the gateway's and answered back, roots answered
// by the hub.
func TestGatewayRemapping(t *testing.T) {
	w := newWorld(t)
	w.add("a", true, "MCPGEN_TESTSERVER_TOOLS=echo,progress,slow,sample,roots")
	w.add("b", true, "MCPGEN_TESTSERVER_TOOLS=echo,progress,sample")
	// An agent without sampling, alone: the server's request is refused,
	// and the call still ends.
	d := w.client("plain", "")
	d.Call("1", "a__sample", `{}`)
	if got := testserver.ResultText(t, next(t, d, "1")); !strings.Contains(got, "error") {
		t.Errorf("sample without sampling: got %q", got)
	}
	c := w.client("agent", `{"sampling":{}}`)

	c.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"b__progress","arguments":{"steps":3},"_meta":{"progressToken":"tok-1"}}}`)
	var progress []string
	for {
		m := c.Next()
		if m.Method == "notifications/progress" {
			var p struct {
				Token    json.RawMessage `json:"progressToken"`
				Progress float64         `json:"progress"`
			}
			_ = json.Unmarshal(m.Params, &p)
			progress = append(progress, fmt.Sprintf("%s:%v", p.Token, p.Progress))
			continue
		}
		if m.ID.String() != "1" || testserver.ResultText(t, m) != "done" {
			t.Fatalf("progress: got %s", m.AppendJSON(nil))
		}
		break
	}
	if want := []string{`"tok-1":1`, `"tok-1":2`, `"tok-1":3`}; !slices.Equal(progress, want) {
		t.Errorf("progress: got %q, want %q", progress, want)
	}

	c.Call("2", "slow", `{"ms":20000}`)
	c.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
	c.Call("3", "a__echo", `{"text":"after the cancel"}`)
	if got := testserver.ResultText(t, next(t, c, "3")); got != "after the cancel" {
		t.Errorf("after the cancel: %q", got)
	}
	c.Quiet() // the cancelled call gets no answer

	c.Call("4", "b__sample", `{}`)
	ask := waitFor(t, c, "sampling", isMethod("sampling/createMessage"))
	if !ask.IsRequest() {
		t.Fatalf("sampling: %s", ask.AppendJSON(nil))
	}
	c.Send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"model":"m","role":"assistant","content":{"type":"text","text":"sampled by the agent"}}}`, ask.ID))
	if got := testserver.ResultText(t, next(t, c, "4")); !strings.Contains(got, "sampled by the agent") {
		t.Errorf("b__sample: got %q", got)
	}

	c.Call("5", "roots", `{}`)
	if got := testserver.ResultText(t, next(t, c, "5")); !strings.Contains(got, `"name":"workspace"`) {
		t.Errorf("roots: got %q", got)
	}

}

// TestGatewayCatalog: prompts, resources, templates, completion and
// logging routed to their servers; URIs that two servers offer served by
// the first; initialize from the catalog.
func TestGatewayCatalog(t *testing.T) {
	w := newWorld(t)
	w.add("a", true, "MCPGEN_TESTSERVER_CATALOG=1", "MCPGEN_TESTSERVER_INSTRUCTIONS=Apples.")
	w.add("b", true, "MCPGEN_TESTSERVER_CATALOG=1", "MCPGEN_TESTSERVER_INSTRUCTIONS=Berries.")
	// The prompts and resources are listed once the gateway watches.
	deadline := time.Now().Add(waitLong)
	for len(w.g.Catalog().Prompts) < 2 || len(w.g.Catalog().Conflicts) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the catalog never had both servers' prompts and resources: %+v", w.g.Catalog())
		}
		time.Sleep(10 * time.Millisecond)
	}

	ours, theirs := net.Pipe()
	go w.g.Serve(context.Background(), theirs, nil)
	defer ours.Close()
	raw := mcp.NewWriter(ours)
	r := mcp.NewReader(ours)
	_ = raw.WriteLine([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
	m, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	var init struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		Instructions    string          `json:"instructions"`
		ServerInfo      mcp.Implementation
	}
	_ = json.Unmarshal(m.Result, &init)
	if init.ProtocolVersion != "2025-06-18" || init.Instructions != "## a\n\nApples.\n\n## b\n\nBerries." ||
		string(init.Capabilities) != `{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"logging":{},"completions":{}}` {
		t.Errorf("initialize: %s", m.Result)
	}
	ours.Close()

	c := w.client("agent", "")
	for _, tt := range []struct {
		req  string
		want string // in the result
	}{
		{`"method":"prompts/list"`, `"name":"a__greet"`},
		{`"method":"prompts/get","params":{"name":"b__greet","arguments":{"who":"you"}}`, `b greets you`},
		{`"method":"resources/read","params":{"uri":"test://b/readme"}`, `b reads test://b/readme`},
		{`"method":"resources/read","params":{"uri":"test://shared"}`, `a reads test://shared`},
		{`"method":"resources/read","params":{"uri":"test://b/item/42"}`, `b reads test://b/item/42`},
		{`"method":"resources/subscribe","params":{"uri":"test://a/readme"}`, `{}`},
		{`"method":"resources/templates/list"`, `test://b/item/{id}`},
		{`"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"b__greet"},"argument":{"name":"who","value":"y"}}`, `"values":["b"]`},
		{`"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"test://a/item/{id}"},"argument":{"name":"id","value":"1"}}`, `"values":["a"]`},
		{`"method":"logging/setLevel","params":{"level":"debug"}`, `{}`},
	} {
		c.Send(`{"jsonrpc":"2.0","id":"q",` + tt.req + `}`)
		if m := next(t, c, `"q"`); m.Error != nil || !strings.Contains(string(m.Result), tt.want) {
			t.Errorf("%s: got %s, want %s in the result", tt.req, m.AppendJSON(nil), tt.want)
		}
	}
	for _, tt := range []struct {
		req  string
		code int64
	}{
		{`"method":"resources/read","params":{"uri":"nobody://x"}`, -32002},
		{`"method":"prompts/get","params":{"name":"greet"}`, mcp.CodeInvalidParams},
		{`"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"nope"}}`, mcp.CodeInvalidParams},
	} {
		c.Send(`{"jsonrpc":"2.0","id":"e",` + tt.req + `}`)
		if m := next(t, c, `"e"`); m.Error == nil || m.Error.Code != tt.code {
			t.Errorf("%s: got %s, want error %d", tt.req, m.AppendJSON(nil), tt.code)
		}
	}

	c.Call(`"log"`, "b__log", `{"text":"hello"}`)
	logMsg := waitFor(t, c, "a log message", isMethod("notifications/message"))
	var p struct {
		Logger string `json:"logger"`
		Data   string `json:"data"`
	}
	_ = json.Unmarshal(logMsg.Params, &p)
	if p.Logger != "b/testlog" || p.Data != "hello" {
		t.Errorf("log: got %s, want logger b/testlog", logMsg.Params)
	}
	next(t, c, `"log"`)
}

// TestGatewayFaults: a server restarting answers with an error result
// that says when it is tried again, the others keep answering; a call in
// flight when it crashes ends in an error; a failed server's tools leave
// the list and come back when it recovers.
func TestGatewayFaults(t *testing.T) {
	w := newWorld(t)
	w.add("a", true, "MCPGEN_TESTSERVER_TOOLS=echo,slow")
	w.add("b", true, "MCPGEN_TESTSERVER_TOOLS=echo,pid")
	c := w.client("agent", "")
	if got := listTools(t, c); !slices.Equal(got, []string{"a__echo", "slow", "b__echo", "pid"}) {
		t.Fatalf("tools: %q", got)
	}

	c.Call("1", "slow", `{"ms":20000}`)
	c.Call("0", "a__echo", `{"text":"behind slow"}`) // answered: slow reached the server before it
	next(t, c, "0")
	retry := time.Now().Add(30 * time.Second)
	w.crash("a", retry)
	if m := next(t, c, "1"); m.Error == nil || m.Error.Code != CodeUnavailable {
		t.Errorf("in flight at the crash: got %s, want a %d error", m.AppendJSON(nil), CodeUnavailable)
	}
	c.Call("2", "a__echo", `{"text":"x"}`)
	m := next(t, c, "2")
	var res mcp.CallToolResult
	if err := json.Unmarshal(m.Result, &res); err != nil || !res.IsError || len(res.Content) == 0 {
		t.Fatalf("a call to a restarting server: got %s, want an error result", m.AppendJSON(nil))
	}
	for _, want := range []string{`server "a" is restarting`, "exited with status 3", retry.Format("15:04:05")} {
		if !strings.Contains(res.Content[0].Text, want) {
			t.Errorf("the error result %q lacks %q", res.Content[0].Text, want)
		}
	}
	c.Call("3", "b__echo", `{"text":"b still"}`)
	if got := testserver.ResultText(t, next(t, c, "3")); got != "b still" {
		t.Errorf("b while a restarts: %q", got)
	}
	// Restarting, a keeps its tools in the list.
	if got := listTools(t, c); !slices.Contains(got, "a__echo") {
		t.Errorf("tools while a restarts: %q", got)
	}

	// Failed: its tools leave the list, with list_changed; b's names stay.
	w.servers["a"].setState(State{State: "failed", LastError: "5 crashes within 5m0s"})
	w.servers["a"].hub.Fail(fmt.Errorf("server %q failed", "a"))
	waitFor(t, c, "list_changed", isMethod("notifications/tools/list_changed"))
	if got := listTools(t, c); !slices.Equal(got, []string{"b__echo", "pid"}) {
		t.Errorf("tools with a failed: %q", got)
	}
	c.Call("4", "a__echo", `{}`)
	if m := next(t, c, "4"); !strings.Contains(string(m.Result), `failed and is not running: 5 crashes`) {
		t.Errorf("a call to a failed server: %s", m.AppendJSON(nil))
	}

	// It recovers (a reload): its tools come back.
	w.start("a")
	waitFor(t, c, "list_changed", isMethod("notifications/tools/list_changed"))
	if got := listTools(t, c); !slices.Equal(got, []string{"a__echo", "slow", "b__echo", "pid"}) {
		t.Errorf("tools after a recovered: %q", got)
	}
	c.Call("5", "a__echo", `{"text":"back"}`)
	if got := testserver.ResultText(t, next(t, c, "5")); got != "back" {
		t.Errorf("a after it recovered: %q", got)
	}
}

// TestGatewayFilters: a tool hidden by the server's filter is neither
// listed nor callable, through the gateway as through the hub.
func TestGatewayFilters(t *testing.T) {
	w := newWorld(t)
	w.add("a", true, "MCPGEN_TESTSERVER_TOOLS=echo,pid")
	b := w.add("b", true, "MCPGEN_TESTSERVER_TOOLS=echo,add")
	c := w.client("agent", "")
	b.hub.SetFilter(func(tool string) bool { return tool != "echo" })
	waitFor(t, c, "list_changed", isMethod("notifications/tools/list_changed"))
	if got := listTools(t, c); !slices.Equal(got, []string{"echo", "pid", "add"}) {
		t.Errorf("tools: %q, want b's echo hidden (so a's keeps its name)", got)
	}
	c.Call("1", "b__echo", `{}`)
	if m := next(t, c, "1"); m.Error == nil || m.Error.Code != mcp.CodeInvalidParams {
		t.Errorf("a hidden tool: got %s, want -32602", m.AppendJSON(nil))
	}
}

// TestGatewayServersChange: a server added is joined and listed, one
// removed is left, its calls in flight answered.
func TestGatewayServersChange(t *testing.T) {
	w := newWorld(t)
	w.add("a", true, "MCPGEN_TESTSERVER_TOOLS=echo,slow")
	c := w.client("agent", "")
	if got := listTools(t, c); !slices.Equal(got, []string{"echo", "slow"}) {
		t.Fatalf("tools: %q", got)
	}
	w.add("b", true, "MCPGEN_TESTSERVER_TOOLS=echo,pid")
	waitFor(t, c, "list_changed", isMethod("notifications/tools/list_changed"))
	if got := listTools(t, c); !slices.Equal(got, []string{"a__echo", "slow", "b__echo", "pid"}) {
		t.Errorf("tools with b: %q", got)
	}
	c.Call("1", "pid", `{}`)
	next(t, c, "1")

	c.Call("2", "slow", `{"ms":20000}`)
	c.Call("0", "a__echo", `{"text":"behind slow"}`) // answered: slow reached the server before it
	next(t, c, "0")
	// a leaves the workspace: the gateway first, as a reload does after
	// the supervisor stopped it.
	w.order = []string{"b"}
	w.set()
	if m := next(t, c, "2"); m.Error == nil {
		t.Errorf("a call in flight to a removed server: got %s, want an error", m.AppendJSON(nil))
	}
	if got := listTools(t, c); !slices.Equal(got, []string{"echo", "pid"}) {
		t.Errorf("tools without a: %q", got)
	}
}

// TestGatewayFirstList: an agent's first tools/list waits for a server
// that is starting for the first time; later ones do not.
func TestGatewayFirstList(t *testing.T) {
	w := newWorld(t)
	w.add("a", true, "MCPGEN_TESTSERVER_TOOLS=echo")
	w.add("late", false, "MCPGEN_TESTSERVER_TOOLS=pid")
	c := w.client("agent", "")
	c.Send(`{"jsonrpc":"2.0","id":"list","method":"tools/list"}`)
	c.Quiet() // still waiting for late
	w.start("late")
	m := next(t, c, `"list"`)
	if !strings.Contains(string(m.Result), `"name":"pid"`) {
		t.Errorf("first list: %s, want late's pid in it", m.Result)
	}
}

// pipeConn is an agent's connection with a half close: the agent closes
// its input (in) and still reads the answers (out).
type pipeConn struct {
	in  *io.PipeReader
	out *io.PipeWriter
}

func (p pipeConn) Read(b []byte) (int, error)  { return p.in.Read(b) }
func (p pipeConn) Write(b []byte) (int, error) { return p.out.Write(b) }
func (p pipeConn) Close() error {
	p.in.Close()
	return p.out.Close()
}

// TestGatewayDrain: an agent that closes its input still gets the answers
// to what it asked, as MCP asks of a server, and then the gateway closes.
func TestGatewayDrain(t *testing.T) {
	w := newWorld(t)
	w.add("a", true, "MCPGEN_TESTSERVER_TOOLS=echo,slow")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() { defer close(done); w.g.Serve(context.Background(), pipeConn{inR, outW}, nil) }()
	wr := mcp.NewWriter(inW)
	_ = wr.WriteLine([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"ms":300}}}`))
	_ = wr.WriteLine([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"quick"}}}`))
	inW.Close()
	r := mcp.NewReader(outR)
	var ids []string
	for {
		m, err := r.Read()
		if err != nil {
			break // the gateway closed the connection
		}
		ids = append(ids, m.ID.String())
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"1", "2"}) {
		t.Errorf("answers after the input closed: %q, want 1 and 2", ids)
	}
	select {
	case <-done:
	case <-time.After(waitLong):
		t.Fatal("the session did not end")
	}
}

// TestGatewaySlowAgent: an agent that asks for large answers and never
// reads them is disconnected once they pass the byte bound, well before
// the message bound, and the servers go on answering another agent.
func TestGatewaySlowAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("an attack test: an agent that does not read: run without -short")
	}
	w := newWorld(t)
	w.add("a", true, "MCPGEN_TESTSERVER_TOOLS=echo")
	other := w.client("other", `{}`)

	// Each answer holds 1 MiB of text: with the bound at 8 MiB, it is
	// passed after about 8 of them, far fewer than sessionQueue messages.
	defer func(q int64) { maxQueued = q }(maxQueued)
	maxQueued = 8 << 20
	ours, theirs := net.Pipe()
	defer ours.Close()
	served := make(chan struct{})
	go func() { defer close(served); w.g.Serve(context.Background(), theirs, nil) }()
	text := strings.Repeat("x", 1<<20)
	calls := int(2 * maxQueued >> 20)
	if calls >= sessionQueue {
		t.Fatalf("%d calls reach the message bound (%d): the test would not check the byte bound", calls, sessionQueue)
	}
	wrote := make(chan error, 1)
	go func() {
		_, err := io.WriteString(ours, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`+"\n"+
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
		for i := 1; err == nil && i <= calls; i++ {
			_, err = fmt.Fprintf(ours, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":%q}}}`+"\n", i, text)
		}
		wrote <- err
	}()
	select {
	case <-served:
	case <-time.After(waitLong):
		t.Fatalf("an agent that reads nothing of %d answers of 1 MiB is still connected after %v", calls, waitLong)
	}
	<-wrote // its writes fail once it is closed, if they had not all gone

	other.Call("1", "echo", `{"text":"still here"}`)
	if m := next(t, other, "1"); m.Error != nil || !strings.Contains(string(m.Result), "still here") {
		t.Fatalf("the other agent's call: %s", m.AppendJSON(nil))
	}
}
