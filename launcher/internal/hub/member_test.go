package hub

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/internal/agent"
	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/mcp"
)

// TestHubFilter: a hidden tool is not listed, and calling it is refused
// as an unknown tool is; a change of the filter is told to the clients.
func TestHubFilter(t *testing.T) {
	th := newTestHub(t, "echo")
	th.hub.SetFilter(func(tool string) bool { return tool != "pid" && tool != "crash" })
	c := th.client("a", "")

	c.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	var names []string
	for {
		m := c.Next()
		var r struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal(m.Result, &r); err != nil {
			t.Fatalf("tools/list: %s", m.AppendJSON(nil))
		}
		for _, tool := range r.Tools {
			names = append(names, tool.Name)
		}
		if r.NextCursor == "" {
			break
		}
		c.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"` + r.NextCursor + `"}}`)
	}
	if slices.Contains(names, "pid") || slices.Contains(names, "crash") || !slices.Contains(names, "echo") {
		t.Errorf("listed %q: want echo, and neither pid nor crash", names)
	}
	if got := th.hub.Tools(); slices.Contains(got, "pid") || len(got) != len(names) {
		t.Errorf("Tools(): got %q, want %q", got, names)
	}

	c.Call("2", "crash", `{}`)
	if m := c.Next(); m.Error == nil || m.Error.Code != mcp.CodeInvalidParams || !strings.Contains(m.Error.Message, "crash") {
		t.Errorf("a hidden tool's call: got %s, want -32602 naming it", m.AppendJSON(nil))
	}
	c.Call("3", "echo", `{"text":"shown"}`)
	if m := c.Next(); testserver.ResultText(t, m) != "shown" {
		t.Errorf("an exposed tool's call: got %s", m.AppendJSON(nil))
	}

	// The same filter again changes nothing; another one is told.
	th.hub.SetFilter(func(tool string) bool { return tool != "pid" && tool != "crash" })
	c.Quiet()
	th.hub.SetFilter(nil)
	if m := c.Next(); m.Method != "notifications/tools/list_changed" {
		t.Errorf("after the filter changed: got %s, want list_changed", m.AppendJSON(nil))
	}
	if got := th.hub.Tools(); !slices.Contains(got, "pid") {
		t.Errorf("Tools() without a filter: %q", got)
	}
}

// A memberLog is what a Member received.
type memberLog struct {
	mu     sync.Mutex
	msgs   []*mcp.Message
	closed bool
	more   chan struct{}
}

func newMemberLog() *memberLog { return &memberLog{more: make(chan struct{}, 1)} }

func (l *memberLog) send(m *mcp.Message, _ []byte) {
	l.mu.Lock()
	l.msgs = append(l.msgs, m)
	l.mu.Unlock()
	select {
	case l.more <- struct{}{}:
	default:
	}
}

func (l *memberLog) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.send(&mcp.Message{Method: "(closed)"}, nil)
}

// wait returns the first message that ok accepts, failing after WaitLong.
func (l *memberLog) wait(t *testing.T, what string, ok func(*mcp.Message) bool) *mcp.Message {
	t.Helper()
	deadline := time.After(waitLong)
	for {
		l.mu.Lock()
		for _, m := range l.msgs {
			if ok(m) {
				l.mu.Unlock()
				return m
			}
		}
		l.mu.Unlock()
		select {
		case <-l.more:
		case <-deadline:
			t.Fatalf("no %s", what)
		}
	}
}

func byID(id string) func(*mcp.Message) bool {
	return func(m *mcp.Message) bool { return m.IsResponse() && m.ID.String() == id }
}

// A testMember is a Member as the gateway makes one: the hub's view of an
// agent's Conn (over a pipe, whose other end the test reads into a
// memberLog) whose requests the test hands it (Handle), each to the hub
// at once.
type testMember struct {
	*Member
	conn *agent.Conn
}

// Handle takes one message of the agent's, as the Conn's read loop does.
func (m *testMember) Handle(msg *mcp.Message) { m.conn.Receive(msg) }

// memberHandler is the test's face: initialize answered, every other
// request the member's.
type memberHandler struct{ m *testMember }

func (h memberHandler) Request(call *agent.Call) {
	if call.Method() == "initialize" {
		call.Answer(json.RawMessage(`{}`), nil)
		return
	}
	h.m.Member.Request(call)
}

func (memberHandler) Notification(*mcp.Message) {}

func (memberHandler) Describe() *agent.Description { return nil }

func (memberHandler) Ready(context.Context) error { return nil }

func (th *testHub) member(name string, sampling bool) (*testMember, *memberLog) {
	th.t.Helper()
	log := newMemberLog()
	ours, theirs := net.Pipe()
	tm := &testMember{}
	tm.conn = agent.New(context.Background(), theirs, memberHandler{tm}, agent.Options{})
	served := make(chan struct{})
	go func() { defer close(served); tm.conn.Serve() }()
	go func() { // ends when the pipe closes, at the test's end
		r := mcp.NewReader(ours)
		for {
			m, err := r.Read()
			if err != nil {
				return
			}
			log.send(m, nil)
		}
	}()
	caps := `{}`
	if sampling {
		caps = `{"sampling":{}}`
	}
	tm.Handle(request(`"init"`, "initialize", `{"protocolVersion":"2025-06-18","capabilities":`+caps+`,"clientInfo":{"name":"`+name+`"}}`))
	log.wait(th.t, "the answer to initialize", byID(`"init"`))
	m, err := th.hub.Join(tm.conn, MemberOptions{Closed: log.close})
	if err != nil {
		th.t.Fatal(err)
	}
	tm.Member = m
	th.t.Cleanup(func() {
		m.Leave()
		ours.Close()
		<-served
	})
	return tm, log
}

func request(id, method, params string) *mcp.Message {
	m, err := mcp.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`))
	if err != nil {
		panic(err)
	}
	return m
}

// TestHubMember: a member is remapped as a connected client is: its ids
// and tokens are its own beside a client using the same, its
// cancellations reach the server, the server's requests come to it under
// the hub's ids, and it leaves cleanly.
func TestHubMember(t *testing.T) {
	th := newTestHub(t, "echo")
	m, log := th.member("gateway", true)
	c := th.client("agent", "")

	// The same ids, side by side.
	m.Handle(request("1", "tools/call", `{"name":"echo","arguments":{"text":"member"}}`))
	c.Call("1", "echo", `{"text":"client"}`)
	if got := testserver.ResultText(t, log.wait(t, "answer to 1", byID("1"))); got != "member" {
		t.Errorf("member got %q", got)
	}
	if got := testserver.ResultText(t, c.Next()); got != "client" {
		t.Errorf("client got %q", got)
	}

	// Progress under its own token.
	m.Handle(request(`"p"`, "tools/call", `{"name":"progress","arguments":{"steps":2},"_meta":{"progressToken":"mine"}}`))
	log.wait(t, "answer to p", byID(`"p"`))
	var tokens []string
	log.mu.Lock()
	for _, msg := range log.msgs {
		if msg.Method == "notifications/progress" {
			var p struct {
				Token json.RawMessage `json:"progressToken"`
			}
			_ = json.Unmarshal(msg.Params, &p)
			tokens = append(tokens, string(p.Token))
		}
	}
	log.mu.Unlock()
	if !slices.Equal(tokens, []string{`"mine"`, `"mine"`}) {
		t.Errorf("progress tokens: got %q, want the member's own twice", tokens)
	}

	// A cancellation: no answer, the server stops.
	m.Handle(request("2", "tools/call", `{"name":"slow","arguments":{"ms":20000}}`))
	cancel, _ := mcp.DecodeMessage([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`))
	m.Handle(cancel)
	m.Handle(request("3", "tools/call", `{"name":"echo","arguments":{"text":"after"}}`))
	log.wait(t, "answer to 3", byID("3"))
	log.mu.Lock()
	for _, msg := range log.msgs {
		if msg.ID.String() == "2" {
			t.Errorf("a cancelled request was answered: %s", msg.AppendJSON(nil))
		}
	}
	log.mu.Unlock()

	// The server asks for sampling: the member can answer, under the
	// hub's id, and its answer reaches the server's tool.
	m.Handle(request("4", "tools/call", `{"name":"sample","arguments":{}}`))
	ask := log.wait(t, "sampling request", func(msg *mcp.Message) bool { return msg.Method == "sampling/createMessage" })
	if !ask.IsRequest() {
		t.Fatalf("sampling: %s", ask.AppendJSON(nil))
	}
	answer, _ := mcp.DecodeMessage([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"model":"m","role":"assistant","content":{"type":"text","text":"sampled"}}}`, ask.ID)))
	m.Handle(answer)
	if got := testserver.ResultText(t, log.wait(t, "answer to 4", byID("4"))); !strings.Contains(got, "sampled") {
		t.Errorf("sample: got %q, want the member's answer", got)
	}

	if got := th.hub.Clients(); !slices.Contains(got, "gateway") {
		t.Errorf("clients: %q, want the member among them", got)
	}
	m.Leave()
	if got := th.hub.Clients(); slices.Contains(got, "gateway") {
		t.Errorf("clients after Leave: %q", got)
	}
	log.mu.Lock()
	n := len(log.msgs)
	log.mu.Unlock()
	c.Call("5", "add", `{}`) // list_changed for every client
	c.Next()
	c.Next()
	time.Sleep(testserver.WaitQuiet)
	log.mu.Lock()
	if len(log.msgs) != n {
		t.Errorf("the member got %s after Leave", log.msgs[n].AppendJSON(nil))
	}
	log.mu.Unlock()
}

// TestHubMemberClosed: a member of a hub that closes is told, once; a
// member's request in flight when its server crashes gets an error.
func TestHubMemberClosed(t *testing.T) {
	th := newTestHub(t, "echo")
	m, log := th.member("gateway", false)
	m.Handle(request("1", "tools/call", `{"name":"slow","arguments":{"ms":20000}}`))
	th.crash()
	if got := log.wait(t, "answer to 1", byID("1")); got.Error == nil || got.Error.Code != CodeUnavailable {
		t.Errorf("in flight at the crash: got %s, want a %d error", got.AppendJSON(nil), CodeUnavailable)
	}
	th.hub.Close()
	log.wait(t, "close", func(msg *mcp.Message) bool { return msg.Method == "(closed)" })
	th.hub.Close()
	log.mu.Lock()
	defer log.mu.Unlock()
	if !log.closed || log.msgs[len(log.msgs)-1].Method != "(closed)" {
		t.Errorf("closed %v; last message %s", log.closed, log.msgs[len(log.msgs)-1].AppendJSON(nil))
	}
	if _, err := th.hub.Join(m.conn, MemberOptions{}); err == nil {
		t.Errorf("joined a closed hub")
	}
}

// TestHubCatalog: a watched hub lists its server's prompts, resources and
// templates, keeps them across a restart, says when it is ready, failed
// and back, and calls its watchers.
func TestHubCatalog(t *testing.T) {
	th := newTestHub(t, "echo", "MCPGEN_TESTSERVER_CATALOG=1", "MCPGEN_TESTSERVER_NAME=one")
	events := make(chan struct{}, 100)
	stop := th.hub.Watch(func() { events <- struct{}{} })
	defer stop()
	wait := func(what string, ok func(Catalog) bool) Catalog {
		t.Helper()
		deadline := time.After(waitLong)
		for {
			if c := th.hub.Catalog(); ok(c) {
				return c
			}
			select {
			case <-events:
			case <-deadline:
				t.Fatalf("the catalog never %s: %+v", what, th.hub.Catalog())
			}
		}
	}
	c := wait("listed prompts and resources", func(c Catalog) bool { return len(c.Prompts) > 0 && len(c.Resources) > 0 && len(c.Templates) > 0 })
	if !c.Ready || c.Failed != nil || c.Init == nil || len(c.Tools) == 0 {
		t.Errorf("catalog: %+v", c)
	}
	if got := string(c.Resources[0]); !strings.Contains(got, "test://one/readme") {
		t.Errorf("resources: %s", got)
	}

	th.crash()
	c = wait("stopped being ready", func(c Catalog) bool { return !c.Ready })
	if len(c.Tools) == 0 || len(c.Prompts) == 0 {
		t.Errorf("a restarting server's catalog is kept: %+v", c)
	}
	th.hub.Fail(fmt.Errorf("gave up"))
	wait("failed", func(c Catalog) bool { return c.Failed != nil })
	th.start("echo", "MCPGEN_TESTSERVER_CATALOG=1", "MCPGEN_TESTSERVER_NAME=two")
	c = wait("recovered with the new process's lists", func(c Catalog) bool {
		return c.Ready && c.Failed == nil && len(c.Resources) > 0 && strings.Contains(string(c.Resources[0]), "test://two/")
	})
	th.hub.SetFilter(func(string) bool { return false })
	if c := wait("filtered", func(c Catalog) bool { return c.Exposes != nil }); c.Exposes("echo") {
		t.Errorf("Exposes(echo) after a filter hiding everything")
	}
}
