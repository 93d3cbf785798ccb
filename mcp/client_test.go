package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	json "github.com/goccy/go-json"
)

// connect starts s and a client over pipes. At the end of the test the
// client is closed, and the server must see the end of its input and return.
func connect(t *testing.T, s *Server, opts ClientOptions) *Client {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	p := newPipes()
	// Not t.Context(): it is cancelled before the cleanup below, which is
	// there to see both ends stop on their own.
	ctx := context.Background()
	served := serve(ctx, s, p)
	c := NewClient(ctx, p.clientR, p.clientW, opts)
	t.Cleanup(func() {
		c.Close()
		waitDone(t, c.Done(), "client")
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve = %v, want nil at the end of its input", err)
			}
		case <-time.After(hangGuard):
			t.Error("Serve did not return at the end of its input")
		}
	})
	return c
}

func TestClientServer(t *testing.T) {
	checkGoroutines(t)
	s := testServer(t, &ServerOptions{PageSize: 2, Instructions: "Use echo."})
	c := connect(t, s, ClientOptions{Info: Implementation{Name: "tester", Version: "0.1"}})
	ctx := t.Context()

	init, err := c.Initialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if init.ProtocolVersion != LatestVersion || init.ServerInfo.Name != "test-server" || init.Instructions != "Use echo." ||
		string(init.Capabilities) != `{"tools":{"listChanged":true}}` || !strings.Contains(string(init.Raw), `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("Initialize = %+v (raw %s)", init, init.Raw)
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}

	tools, err := c.ListTools(ctx) // three pages
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
		if !strings.HasPrefix(string(tool.Raw), `{"name":"`+tool.Name+`"`) {
			t.Errorf("tool %s: Raw = %s", tool.Name, tool.Raw)
		}
	}
	if got := strings.Join(names, " "); got != "echo fail noop progress slow" {
		t.Fatalf("ListTools = %s", got)
	}
	if noop := tools[2]; noop.Title != "No-op" || string(noop.InputSchema) != `{"type":"object","additionalProperties":false}` {
		t.Errorf("noop = %+v", noop)
	}
	if fail := tools[1]; fail.Annotations == nil || fail.Annotations.ReadOnlyHint == nil || !*fail.Annotations.ReadOnlyHint {
		t.Errorf("fail annotations = %+v", fail.Annotations)
	}

	res, err := c.CallTool(ctx, "echo", map[string]string{"text": "hi <there>"})
	if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].Type != "text" || res.Content[0].Text != "hi <there>" {
		t.Fatalf("CallTool(echo) = %+v, %v", res, err)
	}
	res, err = c.CallTool(ctx, "progress", map[string]int{"steps": 1})
	if err != nil || string(res.StructuredContent.(json.RawMessage)) != `{"steps":1}` {
		t.Fatalf("CallTool(progress) = %+v, %v", res, err)
	}
	res, err = c.CallTool(ctx, "fail", nil)
	if err != nil || !res.IsError || res.Content[0].Text != "fail: the disk is on fire" {
		t.Fatalf("CallTool(fail) = %+v, %v", res, err)
	}
	_, err = c.CallTool(ctx, "nope", nil)
	if !errors.Is(err, ErrInvalidParams) || err.Error() != `tools/call: unknown tool "nope" (jsonrpc error -32602)` {
		t.Fatalf("CallTool(nope) = %v", err)
	}
}

func TestClientConcurrentCalls(t *testing.T) {
	checkGoroutines(t)
	c := connect(t, testServer(t, nil), ClientOptions{})
	if _, err := c.Initialize(t.Context()); err != nil {
		t.Fatal(err)
	}
	const goroutines, each = 8, 200
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				text := fmt.Sprintf("g%d-i%d", g, i)
				res, err := c.CallTool(t.Context(), "echo", map[string]string{"text": text})
				if err != nil || len(res.Content) != 1 || res.Content[0].Text != text {
					t.Errorf("CallTool(%s) = %+v, %v", text, res, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// blockingServer has one tool, "block", which runs until cancelled and then
// reports it on cancelled.
func blockingServer(t *testing.T) (*Server, <-chan string) {
	cancelled := make(chan string, 10)
	s := NewServer(Implementation{Name: "blocking", Version: "1"}, &ServerOptions{Logger: testLogger(t)})
	err := s.AddTool(&Tool{Name: "block", Handler: func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		<-ctx.Done()
		cancelled <- string(req.Arguments)
		return nil, ctx.Err()
	}})
	if err != nil {
		t.Fatal(err)
	}
	return s, cancelled
}

func TestClientTimeoutCancels(t *testing.T) {
	checkGoroutines(t)
	s, cancelled := blockingServer(t)
	c := connect(t, s, ClientOptions{Timeout: 50 * time.Millisecond})

	_, err := c.CallTool(t.Context(), "block", map[string]int{"n": 1})
	if !errors.Is(err, context.DeadlineExceeded) || err.Error() != "tools/call: no response within 50ms: context deadline exceeded" {
		t.Fatalf("CallTool = %v, want a timeout", err)
	}
	// The server heard notifications/cancelled and stopped the tool.
	select {
	case args := <-cancelled:
		if args != `{"n":1}` {
			t.Fatalf("cancelled the call with %s", args)
		}
	case <-time.After(hangGuard):
		t.Fatal("the server's handler was not cancelled")
	}
	// The client carries on.
	if err := c.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestClientPeerExit(t *testing.T) {
	checkGoroutines(t)
	peer, r, w := newFakePeer(t)
	c := NewClient(t.Context(), r, w, ClientOptions{Logger: testLogger(t), Timeout: -1})

	const calls = 4
	errc := make(chan error, calls)
	for i := range calls {
		go func() { _, err := c.CallTool(t.Context(), "slow", i); errc <- err }()
	}
	for range calls {
		peer.recv()
	}
	if c.Err() != nil {
		t.Fatalf("Err() = %v before the end", c.Err())
	}
	peer.send(`panic: runtime error: invalid memory address or nil pointer dereference`)
	peer.w.Close() // the server process exits
	for range calls {
		if err := <-errc; !errors.Is(err, ErrClosed) {
			t.Fatalf("pending CallTool = %v, want ErrClosed", err)
		}
	}
	waitDone(t, c.Done(), "client")
	want := `connection closed by peer; its last output was not JSON-RPC: "panic: runtime error: invalid memory address or nil pointer dereference"`
	if err := c.Err(); !errors.Is(err, ErrClosed) || err.Error() != want {
		t.Fatalf("Err() = %v\nwant %s", err, want)
	}
	if err := c.Ping(t.Context()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Ping after exit = %v, want ErrClosed", err)
	}
	c.Close()
}

func TestClientContextEndsIt(t *testing.T) {
	checkGoroutines(t)
	_, r, w := newFakePeer(t)
	ctx, cancel := context.WithCancel(t.Context())
	c := NewClient(ctx, r, w, ClientOptions{Logger: testLogger(t)})
	cancel()
	waitDone(t, c.Done(), "client")
	if err := c.Err(); !errors.Is(err, ErrClosed) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Err() = %v", err)
	}
	c.Close()
}

func TestClientAnswersServerRequests(t *testing.T) {
	tests := []struct {
		name    string
		handler Handler
		line    string
		want    string
	}{
		{"ping", nil, `{"jsonrpc":"2.0","id":"s1","method":"ping"}`,
			`{"jsonrpc":"2.0","id":"s1","result":{}}`},
		{"roots/list rejected", nil, `{"jsonrpc":"2.0","id":2,"method":"roots/list"}`,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"method not found: roots/list (this client answers no server requests)"}}`},
		{"sampling rejected", nil, `{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{}}`,
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"method not found: sampling/createMessage (this client answers no server requests)"}}`},
		{"roots/list by the handler", HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
			return json.RawMessage(`{"roots":[{"uri":"file:///w"}]}`), nil
		}), `{"jsonrpc":"2.0","id":4,"method":"roots/list"}`,
			`{"jsonrpc":"2.0","id":4,"result":{"roots":[{"uri":"file:///w"}]}}`},
		{"ping despite the handler", HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
			return nil, errors.New("not me")
		}), `{"jsonrpc":"2.0","id":5,"method":"ping"}`,
			`{"jsonrpc":"2.0","id":5,"result":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			peer, r, w := newFakePeer(t)
			c := NewClient(t.Context(), r, w, ClientOptions{Handler: tt.handler, Logger: testLogger(t)})
			defer func() { c.Close(); <-c.Done() }()
			peer.send(tt.line)
			if got := dump(peer.recv()); got != tt.want {
				t.Fatalf("client answered %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestClientInitializeChecksVersion(t *testing.T) {
	peer, r, w := newFakePeer(t)
	c := NewClient(t.Context(), r, w, ClientOptions{Logger: testLogger(t), Capabilities: json.RawMessage(`{"roots":{}}`)})
	defer func() { c.Close(); <-c.Done() }()
	errc := make(chan error, 1)
	go func() { _, err := c.Initialize(t.Context()); errc <- err }()
	req := peer.recv()
	want := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{}},"clientInfo":{"name":"mcpgen","version":"devel"}}}`
	if got := dump(req); got != want {
		t.Fatalf("initialize request %s\nwant %s", got, want)
	}
	peer.send(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2099-01-01","capabilities":{},"serverInfo":{"name":"x","version":"1"}}}`)
	if err := <-errc; err == nil || !strings.Contains(err.Error(), `server answered protocol version "2099-01-01"`) {
		t.Fatalf("Initialize = %v", err)
	}
}

func TestListToolsStopsLoopingServer(t *testing.T) {
	peer, r, w := newFakePeer(t)
	c := NewClient(t.Context(), r, w, ClientOptions{Logger: testLogger(t)})
	defer func() { c.Close(); <-c.Done() }()
	errc := make(chan error, 1)
	go func() { _, err := c.ListTools(t.Context()); errc <- err }()
	for page := range 2 {
		req := peer.recv()
		if page == 1 && string(req.Params) != `{"cursor":"again"}` {
			t.Fatalf("page 2 params = %s", req.Params)
		}
		peer.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"t","inputSchema":{}}],"nextCursor":"again"}}`, req.ID))
	}
	if err := <-errc; err == nil || !strings.Contains(err.Error(), `cursor "again" twice`) {
		t.Fatalf("ListTools = %v", err)
	}
}

func TestServerListChanged(t *testing.T) {
	checkGoroutines(t)
	s := testServer(t, nil)
	notes := make(chan string, 10)
	c := connect(t, s, ClientOptions{OnNotification: func(ctx context.Context, msg *Message) { notes <- msg.Method }})

	// Before the handshake ends, changes are not announced.
	noop := func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) { return nil, nil }
	if err := s.AddTool(&Tool{Name: "early", Handler: noop}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(t.Context()); err != nil { // notifications/initialized has been read
		t.Fatal(err)
	}
	if err := s.AddTool(&Tool{Name: "late", Handler: noop}); err != nil {
		t.Fatal(err)
	}
	s.RemoveTool("echo")
	s.RemoveTool("no-such-tool") // no change, no notification
	if err := c.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Notifications are handled in order, so both came before the answer
	// to the ping.
	var got []string
	for len(notes) > 0 {
		got = append(got, <-notes)
	}
	if want := "[notifications/tools/list_changed notifications/tools/list_changed]"; fmt.Sprint(got) != want {
		t.Fatalf("notifications = %v, want %s", got, want)
	}
	tools, err := c.ListTools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	if got := strings.Join(names, " "); got != "early fail late noop progress slow" {
		t.Fatalf("tools = %s", got)
	}
}

func TestAddToolChecks(t *testing.T) {
	noop := func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) { return nil, nil }
	tests := []struct {
		tool    *Tool
		wantErr string
	}{
		{&Tool{Name: "ok_name-1.2", Handler: noop}, ""},
		{&Tool{Name: strings.Repeat("a", 128), Handler: noop}, ""},
		{&Tool{Name: "", Handler: noop}, "1 to 128 characters"},
		{&Tool{Name: strings.Repeat("a", 129), Handler: noop}, "1 to 128 characters"},
		{&Tool{Name: "has space", Handler: noop}, `not ' '`},
		{&Tool{Name: "slash/name", Handler: noop}, `not '/'`},
		{&Tool{Name: "nohandler"}, "no handler"},
		{&Tool{Name: "schema", Handler: noop, InputSchema: json.RawMessage(`[]`)}, "input schema must be a JSON object"},
		{&Tool{Name: "schema", Handler: noop, InputSchema: json.RawMessage(`{"type":`)}, "input schema must be a JSON object"},
		{&Tool{Name: "schema", Handler: noop, OutputSchema: json.RawMessage(`"x"`)}, "output schema must be a JSON object"},
	}
	s := NewServer(Implementation{Name: "s", Version: "1"}, nil)
	for _, tt := range tests {
		err := s.AddTool(tt.tool)
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("AddTool(%.20q) = %v, want %q", tt.tool.Name, err, tt.wantErr)
		}
	}
}

func TestNegotiateVersion(t *testing.T) {
	for _, v := range SupportedVersions {
		if got := NegotiateVersion(v); got != v {
			t.Errorf("NegotiateVersion(%s) = %s", v, got)
		}
	}
	for _, v := range []string{"", "2026-07-28", "2024-10-07", "garbage"} {
		if got := NegotiateVersion(v); got != LatestVersion {
			t.Errorf("NegotiateVersion(%q) = %s, want %s", v, got, LatestVersion)
		}
	}
}

func TestContentJSON(t *testing.T) {
	tests := []struct {
		content Content
		want    string
	}{
		{TextContent("a\"<b>"), `{"type":"text","text":"a\"<b>"}`},
		{TextContent(""), `{"type":"text","text":""}`},
		{ImageContent([]byte{1, 2, 3}, "image/png"), `{"type":"image","data":"AQID","mimeType":"image/png"}`},
		{Content{Raw: json.RawMessage(`{"type":"resource_link","uri":"file:///x"}`)}, `{"type":"resource_link","uri":"file:///x"}`},
	}
	for _, tt := range tests {
		b, err := tt.content.MarshalJSON()
		if err != nil || string(b) != tt.want {
			t.Errorf("MarshalJSON = %s, %v; want %s", b, err, tt.want)
			continue
		}
		var back Content
		if err := json.Unmarshal(b, &back); err != nil || back.Type == "" || string(back.Raw) != tt.want {
			t.Errorf("round trip of %s: %+v, %v", b, back, err)
		}
	}
	if _, err := (Content{Type: "video"}).MarshalJSON(); err == nil {
		t.Error("MarshalJSON of an unknown type without Raw: no error")
	}
	b, err := json.Marshal(&CallToolResult{})
	if err != nil || string(b) != `{"content":[]}` {
		t.Errorf("empty result = %s, %v", b, err)
	}
	b, err = json.Marshal(ErrorResult("no %s", "luck"))
	if err != nil || string(b) != `{"content":[{"type":"text","text":"no luck"}],"isError":true}` {
		t.Errorf("ErrorResult = %s, %v", b, err)
	}
}

func TestClientIgnoresGarbage(t *testing.T) {
	peer, r, w := newFakePeer(t)
	c := NewClient(t.Context(), r, w, ClientOptions{Logger: testLogger(t)})
	defer func() { c.Close(); <-c.Done() }()
	errc := make(chan error, 1)
	go func() { errc <- c.Ping(t.Context()) }()
	req := peer.recv()
	peer.send("> my-server@1.0.0 start")
	peer.send("\x1b[32mready\x1b[0m")
	peer.send(`{"jsonrpc":"2.0","id":12345,"result":{}}`)
	peer.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, req.ID))
	if err := <-errc; err != nil {
		t.Fatalf("Ping through garbage = %v", err)
	}
	if err := c.Err(); err != nil {
		t.Fatalf("Err() = %v after garbage, want nil: the connection goes on", err)
	}
}

func TestServeReadError(t *testing.T) {
	s := testServer(t, nil)
	var out strings.Builder
	in := io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"), iotest.ErrReader(errors.New("boom")))
	err := s.Serve(t.Context(), in, &out)
	if err == nil || err.Error() != "mcp: read: boom" {
		t.Fatalf("Serve = %v, want the read error", err)
	}
	if got := out.String(); got != `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n" {
		t.Fatalf("Serve wrote %q", got)
	}
}
