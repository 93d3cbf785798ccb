package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

	json "github.com/goccy/go-json"
)

// outcome is what an AsyncCall delivered to its callback.
type outcome struct {
	result string
	err    error
}

// collector records the outcomes that callbacks deliver, and how often.
type collector struct {
	mu   sync.Mutex
	got  map[ID][]outcome
	each chan ID
}

func newCollector() *collector {
	return &collector{got: make(map[ID][]outcome), each: make(chan ID, 100)}
}

// then returns the callback for the call that will get id.
func (c *collector) then(id *ID) func(json.RawMessage, error) {
	return func(result json.RawMessage, err error) {
		c.mu.Lock()
		c.got[*id] = append(c.got[*id], outcome{string(result), err})
		c.mu.Unlock()
		c.each <- *id
	}
}

func (c *collector) wait(t *testing.T) ID {
	t.Helper()
	select {
	case id := <-c.each:
		return id
	case <-t.Context().Done():
		t.Fatal("no outcome delivered")
		return ID{}
	}
}

func (c *collector) outcomes(id ID) []outcome {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.got[id]
}

// goCall sends a request with Go, its outcome recorded by col.
func goCall(t *testing.T, c *Conn, col *collector, method string, params any) *AsyncCall {
	t.Helper()
	id := new(ID)
	var mu sync.Mutex // the callback may run before Go returns
	mu.Lock()
	then := col.then(id)
	a, err := c.Go(t.Context(), method, params, func(result json.RawMessage, err error) {
		mu.Lock()
		defer mu.Unlock()
		then(result, err)
	})
	if err != nil {
		t.Fatalf("Go(%s) = %v", method, err)
	}
	*id = a.ID()
	mu.Unlock()
	return a
}

// TestConnGoPassesResultsThrough: what a proxy needs from Go. Each call
// gets a fresh id; the params of a json.RawMessage reach the peer as they
// are; a result comes back as the exact bytes the peer wrote, in whatever
// order the responses come; an error comes as the peer's *Error, data raw.
func TestConnGoPassesResultsThrough(t *testing.T) {
	checkGoroutines(t)
	peer, r, w := newFakePeer(t)
	c := startConn(t, r, w, ConnOptions{})
	col := newCollector()

	params := []json.RawMessage{
		json.RawMessage(`{ "name" : "read_file", "arguments":{"path":"a\u00e9.txt"} }`),
		json.RawMessage(`{"n":12345678901234567890}`),
		json.RawMessage(`[1.50,2e3]`),
	}
	calls := make([]*AsyncCall, len(params))
	sent := make([]*Message, len(params))
	for i, p := range params {
		calls[i] = goCall(t, c, col, "tools/call", p)
		sent[i] = peer.recv()
		if sent[i].ID != calls[i].ID() || !bytes.Equal(sent[i].Params, p) {
			t.Fatalf("peer got %s, want id %s and params %s as they are", dump(sent[i]), calls[i].ID(), p)
		}
	}
	if calls[0].ID() == calls[1].ID() || calls[1].ID() == calls[2].ID() {
		t.Fatalf("ids %s, %s, %s are not fresh", calls[0].ID(), calls[1].ID(), calls[2].ID())
	}

	results := []string{
		`{"content":[{"type":"text","text":"caf\u00e9 & <b>"}] , "isError" : false}`,
		`{"big":12345678901234567890,"float":1.50}`,
	}
	peer.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, sent[1].ID, results[1]))
	peer.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"unknown tool","data":{ "tried" : ["x"] }}}`, sent[2].ID))
	peer.send(fmt.Sprintf(`{"jsonrpc":"2.0","result":%s,"id":%s}`, results[0], sent[0].ID))
	for range calls {
		col.wait(t)
	}
	for i, want := range results {
		got := col.outcomes(calls[i].ID())
		if len(got) != 1 || got[0].err != nil || got[0].result != want {
			t.Errorf("call %d delivered %+v, want once %s", i, got, want)
		}
		if raw, err := calls[i].Await(t.Context()); err != nil || string(raw) != want {
			t.Errorf("call %d: Await = %s, %v; want %s", i, raw, err, want)
		}
	}
	got := col.outcomes(calls[2].ID())
	var werr *Error
	if len(got) != 1 || !errors.As(got[0].err, &werr) || werr.Code != CodeInvalidParams || string(werr.Data) != `{ "tried" : ["x"] }` {
		t.Fatalf("call 2 delivered %+v, want the peer's error with its data as sent", got)
	}
}

// TestConnGoCancel: Cancel tells the peer under the call's id, delivers the
// cause once, and a response that comes anyway is dropped.
func TestConnGoCancel(t *testing.T) {
	checkGoroutines(t)
	peer, r, w := newFakePeer(t)
	c := startConn(t, r, w, ConnOptions{})
	col := newCollector()

	a := goCall(t, c, col, "tools/call", map[string]string{"name": "slow"})
	req := peer.recv()
	cause := errors.New("the client went away")
	if !a.Cancel(cause) {
		t.Fatal("Cancel = false for a pending call")
	}
	want := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s,"reason":"the client went away"}}`, req.ID)
	if got := dump(peer.recv()); got != want {
		t.Fatalf("peer got %s\nwant %s", got, want)
	}
	col.wait(t)
	peer.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"late":true}}`, req.ID))
	if a.Cancel(cause) {
		t.Error("second Cancel = true, want false")
	}

	// A call answered is past cancelling; the late response was dropped.
	b := goCall(t, c, col, "ping", nil)
	ping := peer.recv()
	peer.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, ping.ID))
	col.wait(t)
	if b.Cancel(cause) {
		t.Error("Cancel after the response = true, want false")
	}
	if got := col.outcomes(a.ID()); len(got) != 1 || got[0].err != cause {
		t.Errorf("cancelled call delivered %+v, want the cause once", got)
	}
	if raw, err := a.Await(t.Context()); raw != nil || err != cause {
		t.Errorf("Await = %s, %v; want the cause", raw, err)
	}
	if got := col.outcomes(b.ID()); len(got) != 1 || got[0].result != "{}" {
		t.Errorf("answered call delivered %+v", got)
	}
}

// TestConnAwaitContext: Await whose context ends cancels the call.
func TestConnAwaitContext(t *testing.T) {
	checkGoroutines(t)
	peer, r, w := newFakePeer(t)
	c := startConn(t, r, w, ConnOptions{})
	a, err := c.Go(t.Context(), "tools/call", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	req := peer.recv()
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(errors.New("timed out"))
	if raw, err := a.Await(ctx); raw != nil || err == nil || err.Error() != "timed out" {
		t.Fatalf("Await = %s, %v; want the context's cause", raw, err)
	}
	if note := peer.recv(); note.Method != "notifications/cancelled" || !strings.Contains(string(note.Params), `"requestId":`+req.ID.String()) {
		t.Fatalf("peer got %s, want the cancellation of %s", dump(note), req.ID)
	}
	if _, err := c.Go(ctx, "never", nil, nil); err == nil || err.Error() != "never: timed out" {
		t.Fatalf("Go with a done context = %v, want its cause and nothing sent", err)
	}
}

// TestConnOnEnd: when the peer goes, OnEnd hears it first (a proxy stops
// routing to it), then every pending call gets the error once, and later
// calls are refused as not sent (a proxy sends them to the next process).
func TestConnOnEnd(t *testing.T) {
	checkGoroutines(t)
	peer, r, w := newFakePeer(t)
	var mu sync.Mutex
	var events []string
	record := func(s string) {
		mu.Lock()
		events = append(events, s)
		mu.Unlock()
	}
	c := startConn(t, r, w, ConnOptions{OnEnd: func(err error) { record("end: " + err.Error()) }})
	col := newCollector()
	for range 2 {
		goCall(t, c, col, "tools/call", nil)
		peer.recv()
	}
	peer.w.Close() // the server exits
	for range 2 {
		id := col.wait(t)
		got := col.outcomes(id)
		if len(got) != 1 || !errors.Is(got[0].err, ErrClosed) || errors.Is(got[0].err, ErrNotSent) {
			t.Errorf("call %s delivered %+v, want ErrClosed once", id, got)
		}
		record("call failed")
	}
	waitDone(t, c.Done(), "Run")
	mu.Lock()
	if got := strings.Join(events, "; "); got != "end: connection closed by peer; call failed; call failed" {
		t.Errorf("events: %s; want the end first", got)
	}
	mu.Unlock()

	_, err := c.Go(t.Context(), "tools/call", nil, func(json.RawMessage, error) { t.Error("a refused call delivered an outcome") })
	if !errors.Is(err, ErrNotSent) || !errors.Is(err, ErrClosed) {
		t.Fatalf("Go after the end = %v, want ErrNotSent and ErrClosed", err)
	}
}

// TestConnProxy plays the launcher's hub over Conns: it forwards a client's
// request to the server under a fresh id and the result back under the
// client's id, byte for byte; it hands a server's request to the client
// and the client's raw answer back, and stops when the server cancels it;
// and it passes notifications both ways untouched.
func TestConnProxy(t *testing.T) {
	checkGoroutines(t)
	server, r, w := newFakePeer(t)
	client := newLineRecorder(t)

	// The server's requests: a handler that waits for the client's answer.
	type routed struct {
		req    *Request
		answer chan json.RawMessage
	}
	toClient := make(chan routed, 10)
	cancelled := make(chan ID, 10)
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		switch req.Method {
		case "ping": // inline: answered by the hub itself
			return nil, nil
		case "roots/list":
			return json.RawMessage(`{"roots":[{"uri":"file:///ws","name":"workspace"}]}`), nil
		}
		rt := routed{req, make(chan json.RawMessage, 1)}
		toClient <- rt
		select {
		case raw := <-rt.answer:
			return raw, nil
		case <-ctx.Done():
			cancelled <- req.ID
			return nil, ctx.Err()
		}
	})
	up := startConn(t, r, w, ConnOptions{
		Handler: h,
		Inline:  func(m string) bool { return m == "ping" || m == "roots/list" },
		OnNotification: func(ctx context.Context, msg *Message) {
			_ = client.w.Write(msg) // raw, to the client
		},
	})

	// 1. A client's request, as the hub's client reader decodes it.
	in, err := DecodeMessage([]byte(`{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{ "name" : "read_file", "arguments" : {"path":"<a&b>.txt"} }}`))
	if err != nil {
		t.Fatal(err)
	}
	clientID := in.ID
	if _, err := up.Go(t.Context(), in.Method, in.Params, func(result json.RawMessage, err error) {
		out := &Message{ID: clientID, Result: result}
		if err != nil {
			out = &Message{ID: clientID, Error: wireError(err)}
		}
		_ = client.w.Write(out)
	}); err != nil {
		t.Fatal(err)
	}
	fwd := server.recv()
	if fwd.ID == clientID || !bytes.Equal(fwd.Params, in.Params) || fwd.Method != "tools/call" {
		t.Fatalf("server got %s, want the client's params untouched under an id of the hub's", dump(fwd))
	}
	result := `{"content":[{"type":"text","text":"caf\u00e9 <&>"}],  "structuredContent":{"n":1.0}}`
	server.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, fwd.ID, result))
	if got, want := client.next(t), `{"jsonrpc":"2.0","id":"c-1","result":`+result+`}`; got != want {
		t.Fatalf("client got %s\nwant %s", got, want)
	}

	// 2. A server's request: routed to the client, whose raw answer goes
	// back under the server's id.
	server.send(`{"jsonrpc":"2.0","id":"s-9","method":"sampling/createMessage","params":{"messages":[ ],"maxTokens":10}}`)
	rt := <-toClient
	if rt.req.ID != StringID("s-9") || string(rt.req.Params) != `{"messages":[ ],"maxTokens":10}` {
		t.Fatalf("handler got %s %s", rt.req.ID, rt.req.Params)
	}
	answer := `{"role":"assistant", "content":{"type":"text","text":"hi"},"model":"m"}`
	rt.answer <- json.RawMessage(answer)
	if resp := server.recv(); resp.ID != StringID("s-9") || string(resp.Result) != answer {
		t.Fatalf("server got %s, want the client's answer as it was", dump(resp))
	}

	// 3. The server cancels its next request: the handler hears it, and
	// the server gets no answer.
	server.send(`{"jsonrpc":"2.0","id":10,"method":"elicitation/create","params":{}}`)
	rt = <-toClient
	server.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":10}}`)
	if id := <-cancelled; id != Int64ID(10) {
		t.Fatalf("cancelled %s, want 10", id)
	}

	// 4. Notifications pass through as they are, both ways; pings and
	// roots/list are answered on the read loop.
	note := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info" , "data":"<&>"}}`
	server.send(note)
	if got := client.next(t); got != note {
		t.Fatalf("client got %s\nwant %s", got, note)
	}
	fromClient, _ := DecodeMessage([]byte(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed","params":{ }}`))
	if err := up.Send(fromClient); err != nil {
		t.Fatal(err)
	}
	if got := server.recv(); got.Method != "notifications/roots/list_changed" || string(got.Params) != `{ }` {
		t.Fatalf("server got %s", dump(got))
	}
	server.send(`{"jsonrpc":"2.0","id":11,"method":"ping"}`)
	if resp := server.recv(); resp.ID != Int64ID(11) || string(resp.Result) != `{}` {
		t.Fatalf("server got %s, want the answer to its ping", dump(resp))
	}
	server.send(`{"jsonrpc":"2.0","id":12,"method":"roots/list"}`)
	if resp := server.recv(); resp.ID != Int64ID(12) || string(resp.Result) != `{"roots":[{"uri":"file:///ws","name":"workspace"}]}` {
		t.Fatalf("server got %s, want the roots", dump(resp))
	}
}

// lineRecorder stands for the hub's writer to one client: an mcp.Writer on
// a pipe, whose lines the test reads.
type lineRecorder struct {
	w     *Writer
	lines chan string
}

func newLineRecorder(t *testing.T) *lineRecorder {
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() }) // ends the reading goroutine
	l := &lineRecorder{w: NewWriter(pw), lines: make(chan string, 100)}
	go func() {
		r := NewReader(pr)
		for {
			line, err := r.ReadLine()
			if err != nil {
				return
			}
			l.lines <- string(line)
		}
	}()
	return l
}

func (l *lineRecorder) next(t *testing.T) string {
	t.Helper()
	select {
	case line := <-l.lines:
		return line
	case <-t.Context().Done():
		t.Fatal("the client got nothing")
		return ""
	}
}

// A heldWriter holds each write until the test lets it go: to a writer
// below, or failing with the error given.
type heldWriter struct {
	w       io.Writer
	entered chan struct{}
	release chan error
}

func newHeldWriter(w io.Writer) *heldWriter {
	return &heldWriter{w: w, entered: make(chan struct{}, 1), release: make(chan error, 1)}
}

func (h *heldWriter) Write(p []byte) (int, error) {
	h.entered <- struct{}{}
	if err := <-h.release; err != nil {
		return 0, err
	}
	return h.w.Write(p)
}

// TestConnStopSending plays a server being stopped by a proxy: it stops
// sending, then closes the server's stdin. A call sent before still gets
// its answer; nothing is written after, and a write cut short by the close
// neither ends the Conn nor passes for sent.
func TestConnStopSending(t *testing.T) {
	checkGoroutines(t)
	peer, r, w := newFakePeer(t)
	held := newHeldWriter(w)
	handled := make(chan string, 10)
	c := startConn(t, r, held, ConnOptions{
		Handler: HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
			handled <- req.Method
			return nil, nil
		}),
		Inline: func(string) bool { return true }, // answered in order, on the read loop
	})
	col := newCollector()
	held.release <- nil
	sent := goCall(t, c, col, "tools/call", nil)
	<-held.entered
	peer.recv()

	// A notification whose write is under way as sending stops, and the
	// stdin closes under it.
	notified := make(chan error, 1)
	go func() { notified <- c.Notify(t.Context(), "notifications/progress", nil) }()
	<-held.entered
	c.StopSending(errors.New("the server is stopping"))
	held.release <- os.ErrClosed
	if err := <-notified; !errors.Is(err, ErrNotSent) || c.Err() != nil {
		t.Errorf("a write cut short by the close: Notify = %v, Conn.Err = %v; want ErrNotSent, and the Conn still up", err, c.Err())
	}

	// Nothing is sent any more: a request is refused as not sent, with the
	// cause; the peer's request is handled, its answer dropped.
	_, err := c.Go(t.Context(), "tools/call", nil, func(json.RawMessage, error) { t.Error("a refused call delivered an outcome") })
	if !errors.Is(err, ErrNotSent) || errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "the server is stopping") {
		t.Errorf("Go after StopSending = %v, want ErrNotSent with the cause", err)
	}
	peer.send(`{"jsonrpc":"2.0","id":"s1","method":"ping"}`)
	if m := <-handled; m != "ping" {
		t.Errorf("handled %s, want ping", m)
	}

	// The call sent before is still answered.
	peer.send(`{"jsonrpc":"2.0","id":` + sent.ID().String() + `,"result":{"ok":true}}`)
	if id := col.wait(t); id != sent.ID() {
		t.Fatalf("outcome for %s, want %s", id, sent.ID())
	}
	if got := col.outcomes(sent.ID()); len(got) != 1 || got[0].err != nil || got[0].result != `{"ok":true}` {
		t.Errorf("the call sent before StopSending got %+v, want its result", got)
	}
	select {
	case <-held.entered:
		t.Error("the Conn wrote after StopSending")
	default:
	}
}

// TestConnGoWriteFails: a request whose own write fails never reached the
// peer: Go says so (ErrNotSent, so that a proxy sends it elsewhere) and
// delivers nothing, while the Conn ends and the calls pending fail.
func TestConnGoWriteFails(t *testing.T) {
	checkGoroutines(t)
	peer, r, w := newFakePeer(t)
	held := newHeldWriter(w)
	ended := make(chan error, 1)
	c := startConn(t, r, held, ConnOptions{OnEnd: func(err error) { ended <- err }})
	col := newCollector()
	held.release <- nil
	pending := goCall(t, c, col, "tools/call", nil)
	<-held.entered
	peer.recv()

	held.release <- errors.New("write |1: broken pipe")
	_, err := c.Go(t.Context(), "tools/call", nil, func(json.RawMessage, error) { t.Error("a request never sent delivered an outcome") })
	if !errors.Is(err, ErrNotSent) || !errors.Is(err, ErrClosed) {
		t.Errorf("Go whose write fails = %v, want ErrNotSent and ErrClosed", err)
	}
	if err := <-ended; !errors.Is(err, ErrClosed) {
		t.Errorf("OnEnd got %v, want ErrClosed", err)
	}
	col.wait(t)
	if got := col.outcomes(pending.ID()); len(got) != 1 || !errors.Is(got[0].err, ErrClosed) || errors.Is(got[0].err, ErrNotSent) {
		t.Errorf("the call pending got %+v, want ErrClosed once (it was sent)", got)
	}
}
