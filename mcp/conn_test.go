package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	json "github.com/goccy/go-json"
)

// A fakePeer is the far end of a connection, driven line by line by a test.
type fakePeer struct {
	t     *testing.T
	w     *io.PipeWriter // to the Conn
	r     *io.PipeReader // from the Conn
	lines chan string
}

// newFakePeer returns a peer and the reader and writer for the Conn under
// test. Its reading goroutine ends when the Conn's writer is closed.
func newFakePeer(t *testing.T) (p *fakePeer, connR *io.PipeReader, connW *io.PipeWriter) {
	p = &fakePeer{t: t, lines: make(chan string, 100)}
	connR, p.w = io.Pipe()
	p.r, connW = io.Pipe()
	go func() {
		defer close(p.lines)
		r := NewReader(p.r)
		for {
			line, err := r.ReadLine()
			if err != nil {
				return
			}
			p.lines <- string(line)
		}
	}()
	t.Cleanup(func() {
		p.w.Close()
		p.r.Close()
	})
	return p, connR, connW
}

func (p *fakePeer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.w, line+"\n"); err != nil {
		p.t.Fatalf("send %s: %v", line, err)
	}
}

// recv returns the next message the Conn wrote.
func (p *fakePeer) recv() *Message {
	p.t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			p.t.Fatal("recv: the connection closed its output")
		}
		msg, err := DecodeMessage([]byte(line))
		if err != nil {
			p.t.Fatalf("recv: the connection wrote %q: %v", line, err)
		}
		return msg
	case <-time.After(hangGuard):
		p.t.Fatal("recv: nothing written")
		return nil
	}
}

// waitDone waits for a channel that must close.
func waitDone(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(hangGuard):
		t.Fatalf("%s: still running", what)
	}
}

// startConn runs a Conn until the test ends.
func startConn(t *testing.T, r io.Reader, w io.Writer, opts ConnOptions) *Conn {
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	c := NewConn(r, w, opts)
	go c.Run(t.Context())
	t.Cleanup(func() {
		c.Close()
		<-c.Done()
	})
	return c
}

// connPair connects two Conns in memory: a serves with h, b calls.
func connPair(t *testing.T, h Handler) (a, b *Conn) {
	ar, bw := io.Pipe()
	br, aw := io.Pipe()
	a = startConn(t, ar, aw, ConnOptions{Handler: h})
	b = startConn(t, br, bw, ConnOptions{})
	return a, b
}

func TestConnHandlerResults(t *testing.T) {
	checkGoroutines(t)
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		switch req.Method {
		case "nil":
			return nil, nil
		case "raw":
			return json.RawMessage("{\n  \"a\": 1\n}"), nil
		case "badraw":
			return json.RawMessage(`{"a":`), nil
		case "struct":
			return struct {
				Text string `json:"text"`
			}{"<&>"}, nil
		case "typednil":
			var p *struct{}
			return p, nil
		case "unencodable":
			return func() {}, nil
		case "wire":
			return nil, fmt.Errorf("wrapped: %w", NewError(CodeInvalidParams, "bad %s", "thing"))
		case "plain":
			return nil, errors.New("it broke")
		case "panic":
			panic("oops")
		case "params":
			return req.Params, nil
		}
		return nil, NewError(CodeMethodNotFound, "method not found: %s", req.Method)
	})
	_, b := connPair(t, h)
	ctx := t.Context()

	tests := []struct {
		method   string
		params   any
		want     string // the raw result
		wantCode int64  // or the error code
		wantText string // and a substring of its text
	}{
		{method: "nil", want: `{}`},
		{method: "raw", want: `{   "a": 1 }`}, // as is, on one line
		{method: "struct", want: `{"text":"<&>"}`},
		{method: "typednil", want: `{}`},
		{method: "params", params: map[string]int{"n": 1}, want: `{"n":1}`},
		{method: "params", params: json.RawMessage(`[1, 2]`), want: `[1, 2]`}, // raw params go as they are
		{method: "badraw", wantCode: CodeInternalError, wantText: "encode result"},
		{method: "unencodable", wantCode: CodeInternalError, wantText: "encode result"},
		{method: "wire", wantCode: CodeInvalidParams, wantText: "bad thing"},
		{method: "plain", wantCode: CodeInternalError, wantText: "it broke"},
		{method: "panic", wantCode: CodeInternalError, wantText: "panicked: oops"},
		{method: "nope", wantCode: CodeMethodNotFound, wantText: "method not found: nope"},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			var raw json.RawMessage
			err := b.Call(ctx, tt.method, tt.params, &raw)
			if tt.wantCode == 0 {
				if err != nil || string(raw) != tt.want {
					t.Fatalf("Call = %s, %v; want %s", raw, err, tt.want)
				}
				return
			}
			var werr *Error
			if !errors.As(err, &werr) || werr.Code != tt.wantCode || !strings.Contains(werr.Message, tt.wantText) {
				t.Fatalf("Call error = %v; want code %d with %q", err, tt.wantCode, tt.wantText)
			}
			if !strings.HasPrefix(err.Error(), tt.method+": ") {
				t.Errorf("error %q does not start with the method", err)
			}
		})
	}

	// Results decode into structs; bad params fail before anything is sent.
	var s struct{ Text string }
	if err := b.Call(ctx, "struct", nil, &s); err != nil || s.Text != "<&>" {
		t.Errorf("Call into a struct = %+v, %v", s, err)
	}
	var n int
	if err := b.Call(ctx, "struct", nil, &n); err == nil || !strings.Contains(err.Error(), "struct: decode result") {
		t.Errorf("Call into the wrong type: %v", err)
	}
	if err := b.Call(ctx, "nil", func() {}, nil); err == nil || !strings.Contains(err.Error(), "nil: encode params") {
		t.Errorf("Call with unencodable params: %v", err)
	}
	if err := b.Notify(ctx, "n", func() {}); err == nil {
		t.Errorf("Notify with unencodable params: no error")
	}
}

func TestConnWithoutHandler(t *testing.T) {
	_, b := connPair(t, nil)
	if err := b.Call(t.Context(), "anything", nil, nil); !errors.Is(err, ErrMethodNotFound) {
		t.Fatalf("Call = %v, want method not found", err)
	}
}

func TestConnCallCancelled(t *testing.T) {
	checkGoroutines(t)
	peer, r, w := newFakePeer(t)
	c := startConn(t, r, w, ConnOptions{})

	ctx, cancel := context.WithCancelCause(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- c.Call(ctx, "tools/call", map[string]string{"name": "slow"}, nil) }()
	req := peer.recv()
	if req.Method != "tools/call" || !req.IsRequest() {
		t.Fatalf("peer got %s", dump(req))
	}
	cancel(errors.New("user pressed escape"))
	err := <-errc
	if err == nil || err.Error() != "tools/call: user pressed escape" {
		t.Fatalf("Call = %v, want the cancellation cause", err)
	}
	note := peer.recv()
	want := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s,"reason":"user pressed escape"}}`, req.ID)
	if got := dump(note); got != want {
		t.Fatalf("peer got %s\nwant %s", got, want)
	}

	// The late response is dropped, and the connection goes on.
	peer.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, req.ID))
	go func() { errc <- c.Call(t.Context(), "ping", nil, nil) }()
	ping := peer.recv()
	if ping.Method != "ping" {
		t.Fatalf("peer got %s, want the ping: a response gets no answer", dump(ping))
	}
	peer.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, ping.ID))
	if err := <-errc; err != nil {
		t.Fatalf("Call after a cancelled one: %v", err)
	}

	// A context that is over before the call sends nothing.
	if err := c.Call(ctx, "never", nil, nil); err == nil {
		t.Fatal("Call with a done context: no error")
	}
}

func TestConnPeerCancels(t *testing.T) {
	checkGoroutines(t)
	peer, r, w := newFakePeer(t)
	started := make(chan struct{})
	stopped := make(chan error, 1)
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		close(started)
		<-ctx.Done()
		stopped <- ctx.Err()
		return nil, ctx.Err()
	})
	startConn(t, r, w, ConnOptions{Handler: h})

	peer.send(`{"jsonrpc":"2.0","id":"a","method":"block"}`)
	waitDone(t, started, "handler")
	peer.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a","reason":"changed my mind"}}`)
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Fatalf("handler ctx: %v", err)
	}
	// No response for it: the next thing written answers the next request.
	peer.send(`{"jsonrpc":"2.0","id":"b","method":"other"}`)
	if resp := peer.recv(); resp.ID != StringID("b") {
		t.Fatalf("peer got %s, want the answer to b only", dump(resp))
	}
}

func TestConnPeerGoneFailsCalls(t *testing.T) {
	checkGoroutines(t)
	peer, r, w := newFakePeer(t)
	c := startConn(t, r, w, ConnOptions{})

	const calls = 5
	errc := make(chan error, calls)
	for range calls {
		go func() { errc <- c.Call(t.Context(), "slow", nil, nil) }()
	}
	for range calls {
		peer.recv()
	}
	peer.send("npm ERR! missing script: start")
	peer.w.Close() // the server exits
	for range calls {
		err := <-errc
		if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "closed by peer") {
			t.Fatalf("pending Call = %v, want ErrClosed by peer", err)
		}
	}
	waitDone(t, c.Done(), "Run")
	err := c.Err()
	if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), `npm ERR! missing script: start`) {
		t.Fatalf("Err() = %v, want ErrClosed quoting the last line", err)
	}
	if err := c.Call(t.Context(), "later", nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Call after the end = %v, want ErrClosed", err)
	}
}

func TestConnWriteErrorFailsCalls(t *testing.T) {
	peer, r, w := newFakePeer(t)
	c := startConn(t, r, w, ConnOptions{})
	peer.r.CloseWithError(errors.New("broken pipe"))
	err := c.Call(t.Context(), "x", nil, nil)
	if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "write: broken pipe") {
		t.Fatalf("Call = %v, want ErrClosed with the write error", err)
	}
	if err := c.Notify(t.Context(), "n", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Notify = %v, want ErrClosed", err)
	}
}

func TestConnGarbageAndStrays(t *testing.T) {
	peer, r, w := newFakePeer(t)
	var mu sync.Mutex
	var notes []string
	c := startConn(t, r, w, ConnOptions{OnNotification: func(ctx context.Context, msg *Message) {
		mu.Lock()
		notes = append(notes, msg.Method)
		mu.Unlock()
	}})

	errc := make(chan error, 1)
	var got json.RawMessage
	go func() { errc <- c.Call(t.Context(), "m", nil, &got) }()
	req := peer.recv()
	peer.send("Listening on stdio...")                                                 // logged
	peer.send(`{"jsonrpc":"2.0","id":1,`)                                              // answered -32700
	peer.send(`{"jsonrpc":"2.0","id":999,"result":{}}`)                                // unknown id: dropped
	peer.send(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"yours"}}`) // logged
	peer.send(`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"hi"}}`)
	peer.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"ok":true}}`, req.ID))
	if err := <-errc; err != nil || string(got) != `{"ok":true}` {
		t.Fatalf("Call = %s, %v", got, err)
	}
	if resp := peer.recv(); resp.Error == nil || resp.Error.Code != CodeParseError || resp.ID.IsValid() {
		t.Fatalf("peer got %s, want a parse error without id", dump(resp))
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(notes) != "[notifications/message]" {
		t.Fatalf("notifications = %v", notes)
	}
}

func TestConnOverlongResponse(t *testing.T) {
	peer, r, w := newFakePeer(t)
	c := startConn(t, r, w, ConnOptions{})
	errc := make(chan error, 1)
	go func() { errc <- c.Call(t.Context(), "tools/call", nil, nil) }()
	req := peer.recv()
	huge := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"text":"%s"}}`+"\n", req.ID, strings.Repeat("x", MaxLineSize))
	go io.WriteString(peer.w, huge) // ends when read, or when the test closes the pipe
	if err := <-errc; err == nil || !strings.Contains(err.Error(), "response longer than") {
		t.Fatalf("Call = %v, want response too long", err)
	}
}

// TestConnUnreadableResponse: a response that is not a valid message (its
// result nested deeper than jsonwire.MaxDepth) fails the call it answers,
// with why, when its id comes before what fails; when it does not, no
// call can be told: the line is dropped, and the call ends when its
// caller gives up. Neither is answered, and the connection goes on.
func TestConnUnreadableResponse(t *testing.T) {
	peer, r, w := newFakePeer(t)
	c := startConn(t, r, w, ConnOptions{})
	nested := strings.Repeat("[", deep) + strings.Repeat("]", deep)

	errc := make(chan error, 1)
	go func() { errc <- c.Call(t.Context(), "tools/call", nil, nil) }()
	req := peer.recv()
	peer.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"structuredContent":{"v":%s}}}`, req.ID, nested))
	if err := awaitErr(t, errc); err == nil || !strings.Contains(err.Error(), "its response is not a valid JSON-RPC message: parse error: exceeded max depth of 10000") {
		t.Fatalf("Call = %v, want the call failed by its unreadable response", err)
	}

	// The id last: dropped; the caller's bound ends the call.
	ctx, cancel := context.WithCancel(t.Context())
	go func() { errc <- c.Call(ctx, "tools/call", nil, nil) }()
	req = peer.recv()
	peer.send(fmt.Sprintf(`{"jsonrpc":"2.0","result":{"structuredContent":{"v":%s}},"id":%s}`, nested, req.ID))
	// Answered after the line before was read (the pipe keeps the order).
	go func() { errc <- c.Call(t.Context(), "ping", nil, nil) }()
	ping := peer.recv()
	if ping.Method != "ping" {
		t.Fatalf("peer got %s, want the ping: a response gets no answer", dump(ping))
	}
	peer.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, ping.ID))
	if err := awaitErr(t, errc); err != nil {
		t.Fatalf("ping after the unreadable response: %v", err)
	}
	select {
	case err := <-errc:
		t.Fatalf("the call ended before its answer or its caller's bound: %v", err)
	default:
	}
	cancel()
	if err := awaitErr(t, errc); !errors.Is(err, context.Canceled) {
		t.Fatalf("Call = %v, want its caller's cancellation", err)
	}
	// The cancellation, and nothing before it: a response gets no answer.
	if msg := peer.recv(); msg.Method != "notifications/cancelled" || !strings.Contains(string(msg.Params), `"requestId":`+req.ID.String()) {
		t.Fatalf("peer got %s, want the cancellation of request %s", dump(msg), req.ID)
	}
}

// awaitErr waits for a call's outcome on errc, within the hang guard.
func awaitErr(t *testing.T, errc <-chan error) error {
	t.Helper()
	select {
	case err := <-errc:
		return err
	case <-time.After(hangGuard):
		t.Fatal("the call did not end")
		return nil
	}
}

func TestConnRunCancelled(t *testing.T) {
	checkGoroutines(t)
	peer, r, w := newFakePeer(t)
	started := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		close(started)
		<-ctx.Done()
		return "stopped: " + ctx.Err().Error(), nil
	})
	c := NewConn(r, w, ConnOptions{Handler: h, Logger: testLogger(t)})
	ctx, cancel := context.WithCancel(t.Context())
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()

	peer.send(`{"jsonrpc":"2.0","id":1,"method":"work"}`)
	waitDone(t, started, "handler")
	cancel()
	// The handler's response still goes out, then Run returns.
	if resp := peer.recv(); string(resp.Result) != `"stopped: context canceled"` {
		t.Fatalf("peer got %s", dump(resp))
	}
	if err := <-runErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if err := c.Run(t.Context()); err == nil {
		t.Fatal("second Run: no error")
	}
	if err := c.Call(t.Context(), "x", nil, nil); !errors.Is(err, ErrClosed) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Call after Run = %v", err)
	}
	c.Close()
}

func TestConnClose(t *testing.T) {
	checkGoroutines(t)
	peer, r, w := newFakePeer(t)
	c := NewConn(r, w, ConnOptions{Logger: testLogger(t)})
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(t.Context()) }()

	errc := make(chan error, 1)
	go func() { errc <- c.Call(t.Context(), "x", nil, nil) }()
	peer.recv()
	if err := c.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("pending Call = %v, want ErrClosed", err)
	}
	if err := <-runErr; err != nil {
		t.Fatalf("Run = %v, want nil after Close", err)
	}
	// Close closed the writer: the peer sees the end of its input.
	select {
	case _, ok := <-peer.lines:
		if ok {
			t.Fatal("peer got more lines")
		}
	case <-time.After(hangGuard):
		t.Fatal("the writer was not closed")
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

func TestProgressWithoutToken(t *testing.T) {
	peer, r, w := newFakePeer(t)
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		return nil, req.Progress(ctx, 1, 0, "")
	})
	startConn(t, r, w, ConnOptions{Handler: h})
	peer.send(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"progressToken":{"bad":true}}}}`)
	peer.send(`{"jsonrpc":"2.0","id":2,"method":"m","params":{"_meta":{"progressToken":"t"}}}`)
	// Request 1 has no usable token, so the first notification is 2's, and
	// it leaves out the total and the message.
	var progress, responses int
	for progress+responses < 3 {
		msg := peer.recv()
		switch {
		case msg.Method == "notifications/progress":
			progress++
			if string(msg.Params) != `{"progressToken":"t","progress":1}` {
				t.Errorf("progress params = %s", msg.Params)
			}
		case msg.IsResponse() && msg.Error == nil:
			responses++
		default:
			t.Fatalf("peer got %s", dump(msg))
		}
	}
	if progress != 1 {
		t.Fatalf("%d progress notifications, want 1", progress)
	}
}

func TestPeekEnvelope(t *testing.T) {
	tests := []struct {
		prefix            string
		wantID            ID
		wantReq, wantResp bool
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"x":"xxxx`, Int64ID(7), true, false},
		{`{"id":"a","result":{"content":[{"text":"xx`, StringID("a"), false, true},
		{`{"jsonrpc":"2.0","method":"m","params":{"x":"xxx`, ID{}, true, false},
		{`{"jsonrpc":"2.0","error":{"code":1,`, ID{}, false, true},
		{`{"id":null,"method":"m","params":[`, ID{}, true, false},
		{`xxxxxxxx`, ID{}, false, false},
		{`{"jsonrpc"`, ID{}, false, false},
	}
	for _, tt := range tests {
		id, req, resp := peekEnvelope([]byte(tt.prefix))
		if id != tt.wantID || req != tt.wantReq || resp != tt.wantResp {
			t.Errorf("peekEnvelope(%s) = %s, %v, %v; want %s, %v, %v", tt.prefix, id, req, resp, tt.wantID, tt.wantReq, tt.wantResp)
		}
	}
}
