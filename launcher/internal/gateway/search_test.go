package gateway

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/mcp"
)

// joined connects an agent to the gateway as j asks, initializes it, and
// returns it with the instructions its initialize was answered with.
func (w *world) joined(name string, j Join) (*testserver.Client, string) {
	w.t.Helper()
	ours, theirs := net.Pipe()
	served := make(chan struct{})
	go func() { defer close(served); w.g.ServeJoin(context.Background(), theirs, j) }()
	w.t.Cleanup(func() { ours.Close(); <-served })
	c := testserver.NewStatelessClient(w.t, ours)
	c.Send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"` + name + `","version":"1.0"}}}`)
	m := next(w.t.(*testing.T), c, "0")
	var r struct {
		Instructions string `json:"instructions"`
	}
	if m.Error != nil || json.Unmarshal(m.Result, &r) != nil {
		w.t.Fatalf("initialize: %s", m.AppendJSON(nil))
	}
	c.Send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c, r.Instructions
}

// found is what search_tools answered: the tools' names and servers, and
// the text as it was.
type found struct {
	names, servers []string
	text           string
	isError        bool
}

func search(t *testing.T, c *testserver.Client, id, args string) found {
	t.Helper()
	c.Call(id, SearchTool, args)
	return foundOf(t, next(t, c, id))
}

func foundOf(t *testing.T, m *mcp.Message) found {
	t.Helper()
	var r mcp.CallToolResult
	if m.Error != nil || r.UnmarshalJSON(m.Result) != nil {
		t.Fatalf("search_tools: %s, want a result", m.AppendJSON(nil))
	}
	f := found{text: testserver.ResultText(t, m), isError: r.IsError}
	if f.isError {
		return f
	}
	var list struct {
		Tools []struct {
			Name        string          `json:"name"`
			Server      string          `json:"server"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(f.text), &list); err != nil {
		t.Fatalf("search_tools: %q is not its JSON: %v", f.text, err)
	}
	for _, tool := range list.Tools {
		if len(tool.InputSchema) == 0 {
			t.Errorf("search_tools: %s has no inputSchema", tool.Name)
		}
		f.names, f.servers = append(f.names, tool.Name), append(f.servers, tool.Server)
	}
	return f
}

// TestGatewaySearch: in search mode the gateway lists search_tools,
// call_tool and the pinned tools, says what lies behind them, finds tools
// (never a filtered one) and calls them as a direct call would.
func TestGatewaySearch(t *testing.T) {
	w := newWorld(t)
	w.search, w.pin = true, []string{"slow", "nosuch"}
	a := w.add("a", true, "MCPGEN_TESTSERVER_TOOLS=echo,pid,slow")
	b := w.add("b", true, "MCPGEN_TESTSERVER_TOOLS=echo,pid,add")
	c, instructions := w.joined("agent", Join{})

	if got, want := listTools(t, c), []string{SearchTool, CallTool, "slow"}; !slices.Equal(got, want) {
		t.Errorf("tools: got %q, want %q (an unknown pin left out)", got, want)
	}
	for _, want := range []string{"search_tools", "- a (3 tools); e.g. a__echo, a__pid, slow", "- b (3 tools); e.g. b__echo, b__pid, add"} {
		if !strings.Contains(instructions, want) {
			t.Errorf("instructions: %q, want %q in it", instructions, want)
		}
	}
	c.Send(`{"jsonrpc":"2.0","id":"list","method":"tools/list"}`)
	if got := string(next(t, c, `"list"`).Result); !strings.Contains(got, `- a (3 tools); e.g. a__echo, a__pid, slow`) {
		t.Errorf("search_tools' description does not say the servers: %s", got)
	}

	f := search(t, c, "1", `{"query":"echo"}`)
	if f.isError || !slices.Equal(f.names[:2], []string{"a__echo", "b__echo"}) || !slices.Equal(f.servers[:2], []string{"a", "b"}) {
		t.Errorf("echo: got %q of %q (%s), want a__echo, b__echo first", f.names, f.servers, f.text)
	}
	if f := search(t, c, "2", `{"query":"pid","server":"b","limit":5}`); !slices.Equal(f.names, []string{"b__pid"}) {
		t.Errorf("pid on b: got %q, want b__pid alone", f.names)
	}
	if f := search(t, c, "3", `{"query":"sleep","limit":1}`); len(f.names) > 1 {
		t.Errorf("limit 1: got %q", f.names)
	}

	// call_tool routes as a direct call does; a found tool is called by
	// its name too.
	c.Call("4", CallTool, `{"name":"b__pid","arguments":{}}`)
	if got := testserver.ResultText(t, next(t, c, "4")); got != strconv.Itoa(b.pid()) {
		t.Errorf("call_tool b__pid: got %s, want %d", got, b.pid())
	}
	c.Call("5", CallTool, `{"name":"a__echo","arguments":{"text":"through call_tool"}}`)
	if got := testserver.ResultText(t, next(t, c, "5")); got != "through call_tool" {
		t.Errorf("call_tool a__echo: got %q", got)
	}
	c.Call("6", "a__pid", `{}`)
	if got := testserver.ResultText(t, next(t, c, "6")); got != strconv.Itoa(a.pid()) {
		t.Errorf("a__pid by its name: got %s, want %d", got, a.pid())
	}
	// Progress goes through call_tool's _meta, as a direct call's does.
	c.Send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"slow","arguments":{"ms":10}},"_meta":{"progressToken":"p7"}}}`)
	if got := testserver.ResultText(t, next(t, c, "7")); got != "slept" {
		t.Errorf("call_tool slow: got %q", got)
	}

	// A filtered tool is found by no search, and call_tool refuses it as it
	// refuses a tool that does not exist.
	b.hub.SetFilter(func(tool string) bool { return tool != "add" })
	waitFor(t, c, "list_changed", isMethod("notifications/tools/list_changed"))
	if f := search(t, c, "8", `{"query":"add"}`); slices.Contains(f.names, "add") {
		t.Errorf("a filtered tool was found: %q", f.names)
	}
	for _, name := range []string{"add", "nosuch", SearchTool} {
		c.Call("9", CallTool, `{"name":"`+name+`","arguments":{}}`)
		m := next(t, c, "9")
		if f := foundOf(t, m); !f.isError || !strings.Contains(f.text, `no tool "`+name+`" in this workspace`) {
			t.Errorf("call_tool %s: got %s, want an error result", name, m.AppendJSON(nil))
		}
	}

	// A server that cannot take the call: call_tool says what the direct
	// call says.
	w.crash("a", time.Now().Add(time.Hour))
	c.Call("10", "a__echo", `{"text":"x"}`)
	direct := testserver.ResultText(t, next(t, c, "10"))
	c.Call("11", CallTool, `{"name":"a__echo","arguments":{"text":"x"}}`)
	if got := testserver.ResultText(t, next(t, c, "11")); got != direct || !strings.Contains(got, `server "a" is restarting`) {
		t.Errorf("call_tool of a crashed server: got %q, want the direct call's %q", got, direct)
	}
}

// TestGatewaySearchBadInput: what search_tools and call_tool refuse, each
// with an error result that says what to do; the session goes on.
func TestGatewaySearchBadInput(t *testing.T) {
	w := newWorld(t)
	w.search = true
	w.add("a", true, "MCPGEN_TESTSERVER_TOOLS=echo,pid")
	c, _ := w.joined("agent", Join{})
	for i, tt := range []struct {
		tool, args, want string
	}{
		{SearchTool, `{"query":""}`, "query is empty"},
		{SearchTool, `{"query":"   "}`, "query is empty"},
		{SearchTool, `{}`, "query is empty"},
		{SearchTool, `{"query":"` + strings.Repeat("a", 10<<10) + `"}`, "query is 10240 bytes, more than 1024"},
		{SearchTool, `{"query":"echo","limit":0}`, "limit is 0; give a whole number from 1 to 50"},
		{SearchTool, `{"query":"echo","limit":10000}`, "limit is 10000"},
		{SearchTool, `{"query":"echo","limit":2.5}`, "limit is 2.5"},
		{SearchTool, `{"query":"echo","limit":"8"}`, `limit is "8"`},
		{SearchTool, `{"query":"echo","server":"zz"}`, `no server "zz" in this workspace; its servers are: a`},
		{SearchTool, `{"query":7}`, "the arguments are not an object"},
		{SearchTool, `[]`, "the arguments are not an object"},
		{CallTool, `{}`, "name the tool to call"},
		{CallTool, `{"name":""}`, "name the tool to call"},
		{CallTool, `{"name":"echo","arguments":[1]}`, `the arguments of "echo" are not a JSON object`},
		{CallTool, `{"name":"nosuch","arguments":{}}`, `no tool "nosuch" in this workspace`},
		{CallTool, `{"name":"` + strings.Repeat("n", 10<<10) + `"}`, `no tool "` + strings.Repeat("n", 50)},
		{SearchTool, `{"query":"echo","limit":"` + strings.Repeat("9", 10<<10) + `"}`, `limit is "999`},
	} {
		id := strconv.Itoa(i)
		c.Call(id, tt.tool, tt.args)
		m := next(t, c, id)
		if f := foundOf(t, m); !f.isError || !strings.Contains(f.text, tt.want) || len(f.text) > 1000 {
			t.Errorf("%s %.60s: got %.300s, want an error result with %q, short", tt.tool, tt.args, m.AppendJSON(nil), tt.want)
		}
	}
	// Nothing found is no error: a hint, and the servers.
	if f := search(t, c, "100", `{"query":"xyzzy plugh"}`); f.isError || len(f.names) != 0 || !strings.Contains(f.text, "no tool matches") {
		t.Errorf("no match: got %+v", f)
	}
	c.Call("101", "echo", `{"text":"still here"}`)
	if got := testserver.ResultText(t, next(t, c, "101")); got != "still here" {
		t.Errorf("after the bad input: %q", got)
	}
}

// TestGatewaySearchModes: connect --tools chooses for one agent; a server
// that joins changes the summary, and the agent is told.
func TestGatewaySearchModes(t *testing.T) {
	w := newWorld(t)
	w.add("a", true, "MCPGEN_TESTSERVER_TOOLS=echo,pid")
	all, _ := w.joined("all", Join{})
	searching, instructions := w.joined("searching", Join{Tools: ToolsSearch})
	if got := listTools(t, all); !slices.Equal(got, []string{"echo", "pid"}) {
		t.Errorf("the workspace's mode (all): %q", got)
	}
	if got := listTools(t, searching); !slices.Equal(got, []string{SearchTool, CallTool}) {
		t.Errorf("--tools search: %q", got)
	}
	if !strings.Contains(instructions, "- a (2 tools); e.g. echo, pid") {
		t.Errorf("--tools search: instructions %q", instructions)
	}
	all.Call("1", SearchTool, `{"query":"echo"}`) // not a tool in all mode
	if m := next(t, all, "1"); m.Error == nil || m.Error.Code != mcp.CodeInvalidParams {
		t.Errorf("search_tools in all mode: %s, want unknown tool", m.AppendJSON(nil))
	}

	w.add("b", true, "MCPGEN_TESTSERVER_TOOLS=add")
	waitFor(t, searching, "list_changed", isMethod("notifications/tools/list_changed"))
	searching.Send(`{"jsonrpc":"2.0","id":"list","method":"tools/list"}`)
	if got := string(next(t, searching, `"list"`).Result); !strings.Contains(got, "- b (1 tool); e.g. add") {
		t.Errorf("after b joined: %s", got)
	}

	// The workspace turns to search mode: an agent that chose all stays.
	w.search = true
	w.set()
	stays, _ := w.joined("stays", Join{Tools: ToolsAll})
	if got := listTools(t, stays); !slices.Equal(got, []string{"echo", "pid", "add"}) {
		t.Errorf("--tools all in a search workspace: %q", got)
	}
	waitFor(t, all, "list_changed", isMethod("notifications/tools/list_changed"))
	if got := listTools(t, all); !slices.Equal(got, []string{SearchTool, CallTool}) {
		t.Errorf("the workspace's mode, now search: %q", got)
	}
}

// TestGatewaySearchReveal: with search_reveal, the tools an agent found
// are listed from then on, and it is told; without, its list stays.
func TestGatewaySearchReveal(t *testing.T) {
	for _, reveal := range []bool{false, true} {
		t.Run("reveal="+strconv.FormatBool(reveal), func(t *testing.T) {
			w := newWorld(t)
			w.search, w.reveal = true, reveal
			w.add("a", true, "MCPGEN_TESTSERVER_TOOLS=echo,pid,slow")
			c, _ := w.joined("agent", Join{})
			listTools(t, c)
			search(t, c, "1", `{"query":"pid","limit":1}`)
			want := []string{SearchTool, CallTool}
			if reveal {
				waitFor(t, c, "list_changed", isMethod("notifications/tools/list_changed"))
				want = append(want, "pid")
			}
			if got := listTools(t, c); !slices.Equal(got, want) {
				t.Errorf("tools after the search: %q, want %q", got, want)
			}
			search(t, c, "2", `{"query":"pid","limit":1}`) // found again: no change
			c.Send(`{"jsonrpc":"2.0","id":"ping","method":"ping"}`)
			if m := c.Next(); !m.IsResponse() || m.ID.String() != `"ping"` {
				t.Errorf("after finding pid again: got %s, want no list_changed", m.AppendJSON(nil))
			}
		})
	}
}

// TestGatewaySearchLazy: an idle server's tools are found from its
// catalog without starting it; call_tool starts it, as a direct call does.
func TestGatewaySearchLazy(t *testing.T) {
	w := newWorld(t)
	w.search = true
	w.add("b", false, "MCPGEN_TESTSERVER_TOOLS=pid,echo")
	demand := w.idle("b", true)
	c, _ := w.joined("agent", Join{})
	if f := search(t, c, "1", `{"query":"pid"}`); len(f.names) == 0 || f.names[0] != "pid" {
		t.Errorf("pid: got %q", f.names)
	}
	notDemanded(t, demand, "a search")
	c.Call("2", CallTool, `{"name":"pid"}`)
	demanded(t, demand, "call_tool")
	w.start("b")
	if got := testserver.ResultText(t, next(t, c, "2")); got != strconv.Itoa(w.servers["b"].pid()) {
		t.Errorf("call_tool pid: got %s, want the process it started", got)
	}
}
