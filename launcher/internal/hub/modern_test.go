package hub

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/mcp"
)

// The hub with a server of the modern revision only (the test server's
// modern mode) behind it, and legacy clients.

// methodsLog returns a file for the test server's notes of what it reads
// ($MCPGEN_TESTSERVER_METHODS), and a function that reads them: one line
// each, "METHOD VERSION CLIENT".
func methodsLog(t *testing.T) (env string, read func() []string) {
	path := filepath.Join(t.TempDir(), "methods")
	return "MCPGEN_TESTSERVER_METHODS=" + path, func() []string {
		b, _ := os.ReadFile(path)
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
}

// waitFor polls read until a line satisfies ok; a hang guard.
func waitFor(t *testing.T, read func() []string, what string, ok func(string) bool) {
	t.Helper()
	for deadline := time.Now().Add(waitLong); ; time.Sleep(5 * time.Millisecond) {
		if slices.ContainsFunc(read(), ok) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server never read %s; it read:\n%s", what, strings.Join(read(), "\n"))
		}
	}
}

// TestHubModern: a legacy client of a modern server gets its initialize
// answered from the server's discover result, and its requests reach the
// server with the modern _meta that names it; the server is never sent
// initialize, notifications/initialized or ping, and the hub keeps a
// subscription to its list changes.
func TestHubModern(t *testing.T) {
	env, methods := methodsLog(t)
	th := newTestHub(t, "modern", env, "MCPGEN_TESTSERVER_INSTRUCTIONS=Be modern.")
	if th.up.Era() != mcp.EraModern || th.init.Era != mcp.EraModern || th.init.Discover == nil {
		t.Fatalf("upstream era %v, init %s; want modern", th.up.Era(), th.init.Raw)
	}
	ours, theirs := net.Pipe()
	go th.hub.Serve(context.Background(), theirs)
	w, r := mcp.NewWriter(ours), mcp.NewReader(ours)
	_ = w.WriteLine([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"3"}}}`))
	m, err := r.Read()
	ours.Close()
	if err != nil || m.Error != nil {
		t.Fatalf("initialize: %v, %v", m, err)
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Tools struct {
				ListChanged bool `json:"listChanged"`
			} `json:"tools"`
		} `json:"capabilities"`
		ServerInfo   mcp.Implementation `json:"serverInfo"`
		Instructions string             `json:"instructions"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatal(err)
	}
	if res.ProtocolVersion != "2025-06-18" || !res.Capabilities.Tools.ListChanged || res.ServerInfo.Name != "testserver-modern" || res.Instructions != "Be modern." {
		t.Errorf("initialize: got %s; want the discover result as a legacy answer, at the agent's version", m.Result)
	}

	c := th.client("legacy-agent", `{"elicitation":{}}`)
	c.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if m := c.Next(); !strings.Contains(string(m.Result), `"name":"echo"`) || !strings.Contains(string(m.Result), `"nextCursor"`) {
		t.Errorf("tools/list: got %s", m.AppendJSON(nil))
	}
	c.Send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":"p"}}}`)
	// A legacy answer: without what only the modern revision has.
	if m := c.Next(); testserver.ResultText(t, m) != "hi" || string(m.Result) != `{"content":[{"text":"hi","type":"text"}]}` {
		t.Errorf("echo: got %s", m.Result)
	}
	// Its request carried the agent's _meta, and its own progress token.
	waitFor(t, methods, "the call with the agent's _meta", func(l string) bool { return l == "tools/call 2026-07-28 legacy-agent" })
	waitFor(t, methods, "the subscription", func(l string) bool { return l == "subscriptions/listen 2026-07-28 mcpgen" })
	for i, l := range methods() {
		// Only the probe's hedge may be initialize (a server slower to
		// answer than the grace gets it): nothing else of the legacy era.
		method, version, _ := strings.Cut(l, " ")
		if method == "notifications/initialized" || method == "ping" || !strings.HasPrefix(version, mcp.ModernVersion) && !(method == "initialize" && i == 1) {
			t.Errorf("the server read %q; a modern server gets modern requests only", l)
		}
	}

	// Liveness: server/discover, not ping.
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := th.up.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if n := count(methods(), "server/discover 2026-07-28 mcpgen"); n != 2 {
		t.Errorf("server/discover: read %d times, want 2 (the probe, the ping)", n)
	}
}

// TestHubModernListChanged: a modern server's list change, told on the
// hub's subscription, reaches the legacy clients as list_changed, without
// the subscription's tag; a new process is subscribed anew.
func TestHubModernListChanged(t *testing.T) {
	th := newTestHub(t, "modern")
	a, b := th.client("a", ""), th.client("b", "")
	a.Call("1", "add", `{}`)
	var sawResult, sawChange bool
	for !(sawResult && sawChange) {
		m := a.Next()
		sawResult = sawResult || m.IsResponse()
		if m.Method == "notifications/tools/list_changed" {
			sawChange = true
			if len(m.Params) > 0 {
				t.Errorf("list_changed: got %s, want no params (the subscription is the hub's)", m.AppendJSON(nil))
			}
		}
	}
	if m := b.Next(); m.Method != "notifications/tools/list_changed" {
		t.Errorf("b: got %s", m.AppendJSON(nil))
	}
	if got := th.hub.Tools(); !slices.Contains(got, "extra") {
		t.Errorf("tools after list_changed: %v", got)
	}

	// A new process: its own subscription tells of its changes. (It has
	// other tools than the last catalog: list_changed at once, first.)
	th.crash()
	th.start("modern")
	if m := a.Next(); m.Method != "notifications/tools/list_changed" {
		t.Errorf("after the restart: got %s", m.AppendJSON(nil))
	}
	a.Call("2", "add", `{}`)
	sawResult, sawChange = false, false
	for !(sawResult && sawChange) {
		m := a.Next()
		sawResult = sawResult || m.IsResponse()
		sawChange = sawChange || m.Method == "notifications/tools/list_changed"
	}
}

// TestHubModernUnknownSubscription: a notification tagged with a
// subscription that is not the hub's is nobody's: dropped.
func TestHubModernUnknownSubscription(t *testing.T) {
	th := newTestHub(t, "modern")
	u := th.up
	deadline := time.Now().Add(waitLong)
	for {
		u.mu.Lock()
		known := u.sub.id.IsValid() && u.sub.acked
		u.mu.Unlock()
		if known {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the subscription was never acknowledged")
		}
		time.Sleep(5 * time.Millisecond)
	}
	other := &mcp.Message{Method: "notifications/tools/list_changed", Params: json.RawMessage(`{"_meta":{"io.modelcontextprotocol/subscriptionId":"not-ours"}}`)}
	if _, ok := u.subscribed(other); ok {
		t.Error("a notification of another subscription was passed on")
	}
	u.mu.Lock()
	id := u.sub.id
	u.mu.Unlock()
	mine := &mcp.Message{Method: "notifications/prompts/list_changed", Params: json.RawMessage(`{"_meta":{"io.modelcontextprotocol/subscriptionId":` + id.String() + `}}`)}
	if m, ok := u.subscribed(mine); !ok || len(m.Params) > 0 {
		t.Errorf("the hub's own: got %v, %v; want it passed on, untagged", m, ok)
	}
	progress := &mcp.Message{Method: "notifications/progress", Params: json.RawMessage(`{"progressToken":"x","progress":1}`)}
	if m, ok := u.subscribed(progress); !ok || m != progress {
		t.Error("a notification of no subscription was not passed on as it is")
	}
}

func count(lines []string, line string) int {
	n := 0
	for _, l := range lines {
		if l == line {
			n++
		}
	}
	return n
}

func TestLegacyResult(t *testing.T) {
	const info = `"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}`
	for _, tt := range []struct{ in, want string }{
		{`{"content":[]}`, `{"content":[]}`},
		{`{"resultType":"complete","_meta":{` + info + `},"content":[{"type":"text","text":"x"}]}`, `{"content":[{"type":"text","text":"x"}]}`},
		{`{"resultType":"complete","_meta":{` + info + `},"tools":[],"nextCursor":"2","ttlMs":0,"cacheScope":"private"}`, `{"tools":[],"nextCursor":"2"}`},
		{`{"_meta":{"progressToken":1,` + info + `},"content":[]}`, `{"_meta":{"progressToken":1},"content":[]}`},
		{`{"_meta":{},"resultType":"complete"}`, `{"_meta":{}}`},
		// Not complete: translation's, as it is.
		{`{"resultType":"input_required","requestState":"s","_meta":{` + info + `}}`, `{"resultType":"input_required","requestState":"s","_meta":{` + info + `}}`},
		{`[1]`, `[1]`},
	} {
		if got := string(legacyResult(json.RawMessage(tt.in))); got != tt.want {
			t.Errorf("legacyResult(%s):\n got %s\nwant %s", tt.in, got, tt.want)
		}
	}
}

// TestModernTestServerElicit: the test server's modern mode asks for input
// as the modern revision does: its elicit tool returns input_required with
// an elicitation and a requestState, and completes on the retry that
// carries the answer and the state; a client that did not declare
// elicitation is refused (-32021), and a state of another call (-32602).
func TestModernTestServerElicit(t *testing.T) {
	p, err := proc.Start(testserver.Spec(t, "modern"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	c := mcp.NewClient(ctx, p.Stdout(), p.Stdin(), mcp.ClientOptions{Capabilities: json.RawMessage(`{"elicitation":{}}`)})
	defer c.Close()
	if _, err := c.Open(ctx, mcp.OpenOptions{Version: mcp.ModernVersion}); err != nil {
		t.Fatal(err)
	}
	var first json.RawMessage
	if err := c.Call(ctx, "tools/call", map[string]any{"name": "elicit", "arguments": map[string]string{"text": "deploy"}}, &first); err != nil {
		t.Fatal(err)
	}
	ir, err := mcp.ParseInputRequired(first)
	if mcp.ResultType(first) != mcp.ResultInputRequired || err != nil || ir.InputRequests["confirm"].Method != "elicitation/create" || !ir.HasState {
		t.Fatalf("the first call: got %s (%v), want input_required asking elicitation/create, with a state", first, err)
	}
	var final mcp.CallToolResult
	err = c.Call(ctx, "tools/call", map[string]any{"name": "elicit", "arguments": map[string]string{"text": "deploy"},
		"inputResponses": map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]bool{"ok": true}}},
		"requestState":   ir.RequestState}, &final)
	if err != nil || len(final.Content) == 0 || final.Content[0].Text != `deploy: confirm={"action":"accept","content":{"ok":true}}` {
		t.Fatalf("the retry: got %+v, %v", final, err)
	}
	err = c.Call(ctx, "tools/call", map[string]any{"name": "elicit", "arguments": map[string]string{"text": "other"},
		"inputResponses": map[string]any{"confirm": map[string]any{"action": "accept"}}, "requestState": ir.RequestState}, nil)
	if !errors.Is(err, mcp.ErrInvalidParams) {
		t.Errorf("a retry with another call's state: got %v, want -32602", err)
	}

	// A client that cannot answer an elicitation is not asked one.
	p2, err := proc.Start(testserver.Spec(t, "modern"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p2.Kill)
	c2 := mcp.NewClient(ctx, p2.Stdout(), p2.Stdin(), mcp.ClientOptions{})
	defer c2.Close()
	if _, err := c2.Open(ctx, mcp.OpenOptions{}); err != nil {
		t.Fatal(err)
	}
	var werr *mcp.Error
	if err := c2.Call(ctx, "tools/call", map[string]any{"name": "elicit", "arguments": map[string]string{"text": "x"}}, nil); !errors.As(err, &werr) || werr.Code != mcp.CodeMissingRequiredCapability {
		t.Errorf("without elicitation: got %v, want -32021", err)
	}
}
