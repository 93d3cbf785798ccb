package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/mcp"
)

// A testFace is the Handler of the Conn under test: it keeps every call,
// answers none unless told, and records notifications and cancellations.
type testFace struct {
	mu        sync.Mutex
	calls     []*Call
	notes     []string
	cancelled map[string]error // by call id
	more      chan struct{}
	desc      *Description
}

func newTestFace() *testFace {
	return &testFace{cancelled: map[string]error{}, more: make(chan struct{}, 1)}
}

func (f *testFace) Request(call *Call) {
	if call.Method() == "initialize" {
		call.Answer(json.RawMessage(`{}`), nil)
		return
	}
	call.OnCancel(func(why error) {
		f.mu.Lock()
		f.cancelled[call.ID().String()] = why
		f.mu.Unlock()
		f.kick()
	})
	f.mu.Lock()
	f.calls = append(f.calls, call)
	f.mu.Unlock()
	f.kick()
}

func (f *testFace) Notification(msg *mcp.Message) {
	f.mu.Lock()
	f.notes = append(f.notes, msg.Method)
	f.mu.Unlock()
	f.kick()
}

// Describe says what the test face stands for: a server "face" with
// tools, once described (f.desc nil: not known yet).
func (f *testFace) Describe() *Description {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.desc
}

// Ready waits until the face is described, or ctx ends.
func (f *testFace) Ready(ctx context.Context) error {
	for {
		if f.Describe() != nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

func (f *testFace) kick() {
	select {
	case f.more <- struct{}{}:
	default:
	}
}

// waitFor waits until ok holds, failing after waitLong.
func (f *testFace) waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.After(waitLong)
	for {
		f.mu.Lock()
		done := ok()
		f.mu.Unlock()
		if done {
			return
		}
		select {
		case <-f.more:
		case <-deadline:
			t.Fatalf("no %s", what)
		}
	}
}

// call returns the call of id, once the face has it.
func (f *testFace) call(t *testing.T, id string) *Call {
	t.Helper()
	var found *Call
	f.waitFor(t, "call "+id, func() bool {
		for _, c := range f.calls {
			if c.ID().String() == id {
				found = c
				return true
			}
		}
		return false
	})
	return found
}

// An agentEnd is the test's end of a Conn: it writes lines and reads
// messages.
type agentEnd struct {
	t    *testing.T
	conn net.Conn
	w    *mcp.Writer
	in   chan *mcp.Message
}

// serveConn runs a Conn with face f over a net.Pipe until the test ends.
func serveConn(t *testing.T, f Handler, opts Options) (*Conn, *agentEnd, <-chan struct{}) {
	t.Helper()
	ours, theirs := net.Pipe()
	c := New(context.Background(), theirs, f, opts)
	served := make(chan struct{})
	go func() { defer close(served); c.Serve() }()
	a := &agentEnd{t: t, conn: ours, w: mcp.NewWriter(ours), in: make(chan *mcp.Message, 1000)}
	go func() { // ends when the pipe closes
		defer close(a.in)
		r := mcp.NewReader(ours)
		for {
			m, err := r.Read()
			if err != nil {
				return
			}
			a.in <- m
		}
	}()
	t.Cleanup(func() { ours.Close(); <-served })
	return c, a, served
}

func (a *agentEnd) send(line string) {
	a.t.Helper()
	if err := a.w.WriteLine([]byte(line)); err != nil {
		a.t.Fatal(err)
	}
}

func (a *agentEnd) next() *mcp.Message {
	a.t.Helper()
	select {
	case m, ok := <-a.in:
		if !ok {
			a.t.Fatal("the connection ended")
		}
		return m
	case <-time.After(waitLong):
		a.t.Fatal("nothing from the Conn")
		return nil
	}
}

// quiet fails if a message comes within a short while.
func (a *agentEnd) quiet() {
	a.t.Helper()
	select {
	case m := <-a.in:
		a.t.Errorf("got %s, want nothing", m.AppendJSON(nil))
	case <-time.After(testserver.WaitQuiet):
	}
}

// TestConnRequests: what a Conn answers itself (ping, a line it cannot
// read, a request under an id already under way) and what it hands its
// face; who the agent said it is.
func TestConnRequests(t *testing.T) {
	f := newTestFace()
	c, a, _ := serveConn(t, f, Options{})
	a.send(`{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"sampling":{},"roots":{}},"clientInfo":{"name":"agent","version":"2"}}}`)
	if m := a.next(); m.ID.String() != `"i"` || string(m.Result) != `{}` {
		t.Fatalf("initialize: got %s", m.AppendJSON(nil))
	}
	id := c.Identity()
	if id.Info.Name != "agent" || id.ProtocolVersion != "2025-06-18" || !id.Sampling || id.Elicitation ||
		string(id.Capabilities) != `{"sampling":{},"roots":{}}` || c.DisplayName() != "agent 2" || !c.Can("sampling/createMessage") || c.Can("elicitation/create") {
		t.Errorf("identity: %+v, %q", id, c.DisplayName())
	}
	if c.Initialized() {
		t.Error("initialized before notifications/initialized")
	}
	a.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	a.send(`not json at all`)
	if m := a.next(); m.Error == nil || m.Error.Code != mcp.CodeParseError || m.ID.String() != "null" {
		t.Errorf("a line that is not JSON: got %s, want -32700 with id null", m.AppendJSON(nil))
	}
	a.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if m := a.next(); m.ID.String() != "1" || string(m.Result) != `{}` {
		t.Errorf("ping: got %s", m.AppendJSON(nil))
	}
	a.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`)
	call := f.call(t, "2")
	a.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if m := a.next(); m.ID.String() != "2" || m.Error == nil || m.Error.Code != mcp.CodeInvalidRequest {
		t.Errorf("an id under way again: got %s, want -32600", m.AppendJSON(nil))
	}
	if !c.Initialized() {
		t.Error("not initialized after notifications/initialized")
	}
	a.send(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`)
	f.waitFor(t, "the notification", func() bool { return len(f.notes) == 1 && f.notes[0] == "notifications/roots/list_changed" })

	if string(call.Params()) != `{"name":"x"}` || call.Method() != "tools/call" {
		t.Errorf("the call: %s %s", call.Method(), call.Params())
	}
	if !call.Answer(json.RawMessage(`{"content":[]}`), nil) || call.Answer(json.RawMessage(`{}`), nil) {
		t.Error("Answer: want the first to win, the second to lose")
	}
	if m := a.next(); m.ID.String() != "2" || string(m.Result) != `{"content":[]}` {
		t.Errorf("the answer: got %s", m.AppendJSON(nil))
	}
	a.quiet()
}

// TestConnCancel: a cancelled request ends without an answer (its face
// hears why), one answered after is not written; one that waits for a
// slot is dropped unseen.
func TestConnCancel(t *testing.T) {
	f := newTestFace()
	_, a, _ := serveConn(t, f, Options{})
	a.send(`{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{}}`)
	call := f.call(t, `"c"`)
	a.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c"}}`)
	f.waitFor(t, "the cancellation", func() bool { return f.cancelled[`"c"`] != nil })
	if why := f.cancelled[`"c"`]; !errors.Is(why, errCancelled) {
		t.Errorf("cancelled because %v, want %v", why, errCancelled)
	}
	if call.Answer(json.RawMessage(`{}`), nil) || !call.Over() || call.OnCancel(func(error) {}) {
		t.Error("a cancelled call took an answer, or a stop")
	}
	a.send(`{"jsonrpc":"2.0","id":"after","method":"ping"}`)
	if m := a.next(); m.ID.String() != `"after"` {
		t.Errorf("got %s, want only the ping's answer", m.AppendJSON(nil))
	}
}

// TestConnAdmission: an agent that asks without an answer coming gets
// MaxInFlight requests under way and MaxWaiting waiting, then is read no
// more (Stalled); each answer lets one more start, and every request is
// answered once.
func TestConnAdmission(t *testing.T) {
	f := newTestFace()
	stalled := make(chan struct{}, 1)
	c, a, _ := serveConn(t, f, Options{Stalled: func() {
		select {
		case stalled <- struct{}{}:
		default:
		}
	}})
	const n = MaxInFlight + MaxWaiting + 10
	wrote := make(chan error, 1)
	go func() { // ends once every request is read: once the test answers
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"i":%d}}`+"\n", i, i)
		}
		_, err := io.WriteString(a.conn, b.String())
		wrote <- err
	}()
	select {
	case <-stalled:
	case <-time.After(waitLong):
		t.Fatal("the Conn never stopped reading")
	}
	st := c.Stats()
	if st.Slots > MaxInFlight || st.Waiting > MaxWaiting || st.Calls > MaxInFlight {
		t.Errorf("stats %+v: want at most %d under way, %d waiting", st, MaxInFlight, MaxWaiting)
	}
	seen := map[string]bool{}
	for answered := 0; answered < n; answered++ {
		var next *Call
		f.waitFor(t, "a call to answer", func() bool {
			for _, call := range f.calls {
				if !call.Over() {
					next = call
					return true
				}
			}
			return false
		})
		next.Answer(json.RawMessage(`{}`), nil)
		m := a.next()
		if seen[m.ID.String()] {
			t.Fatalf("%s answered twice", m.ID)
		}
		seen[m.ID.String()] = true
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
}

// TestConnAsk: a server's request goes to the agent under an id of the
// Conn's and its answer comes back; one given up is told the agent; one
// the agent leaves unanswered gets an error when it goes, and one asked
// after gets it at once.
func TestConnAsk(t *testing.T) {
	f := newTestFace()
	c, a, served := serveConn(t, f, Options{})
	type answer struct {
		result string
		err    *mcp.Error
	}
	answers := make(chan answer, 4)
	got := func(result json.RawMessage, err *mcp.Error) { answers <- answer{string(result), err} }

	c.Ask("sampling/createMessage", json.RawMessage(`{"q":1}`), got)
	req := a.next()
	if req.Method != "sampling/createMessage" || string(req.Params) != `{"q":1}` || !req.ID.IsValid() {
		t.Fatalf("the agent got %s", req.AppendJSON(nil))
	}
	a.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"a":1}}`, req.ID))
	if an := <-answers; an.result != `{"a":1}` || an.err != nil {
		t.Errorf("the answer: %+v", an)
	}

	ask := c.Ask("elicitation/create", nil, got)
	req = a.next()
	ask.Cancel("no longer needed")
	m := a.next()
	if m.Method != "notifications/cancelled" || !strings.Contains(string(m.Params), `"requestId":`+req.ID.String()) || !strings.Contains(string(m.Params), "no longer needed") {
		t.Errorf("after Cancel the agent got %s", m.AppendJSON(nil))
	}
	a.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, req.ID)) // late: nowhere

	c.Ask("sampling/createMessage", nil, got)
	a.next()
	a.conn.Close()
	<-served
	if an := <-answers; an.err == nil || an.err.Code != CodeUnavailable {
		t.Errorf("unanswered when the agent went: %+v", an)
	}
	c.Ask("sampling/createMessage", nil, got)
	if an := <-answers; an.err == nil || an.err.Code != CodeUnavailable {
		t.Errorf("asked after the agent went: %+v", an)
	}
	select {
	case an := <-answers:
		t.Errorf("one answer more: %+v", an)
	default:
	}
}

// TestConnDrain: an agent that closes its input gets the answers it is
// owed, then the Conn closes.
func TestConnDrain(t *testing.T) {
	f := newTestFace()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := New(context.Background(), halfConn{inR, outW}, f, Options{AnswerBound: func() time.Duration { return waitLong }})
	served := make(chan struct{})
	go func() { defer close(served); c.Serve() }()
	w := mcp.NewWriter(inW)
	_ = w.WriteLine([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`))
	inW.Close()
	call := f.call(t, "1")
	r := mcp.NewReader(outR)
	go call.Answer(json.RawMessage(`{"late":true}`), nil)
	m, err := r.Read()
	if err != nil || m.ID.String() != "1" || string(m.Result) != `{"late":true}` {
		t.Fatalf("after the input closed: got %v, %v; want the answer", m, err)
	}
	if _, err := r.Read(); err == nil {
		t.Error("the connection stayed open after the answers")
	}
	select {
	case <-served:
	case <-time.After(waitLong):
		t.Fatal("Serve did not return")
	}
}

// halfConn is a connection whose input the agent closes while it reads
// on.
type halfConn struct {
	in  *io.PipeReader
	out *io.PipeWriter
}

func (h halfConn) Read(b []byte) (int, error)  { return h.in.Read(b) }
func (h halfConn) Write(b []byte) (int, error) { return h.out.Write(b) }
func (h halfConn) Close() error {
	h.in.Close()
	return h.out.Close()
}
