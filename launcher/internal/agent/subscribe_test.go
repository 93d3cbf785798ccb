package agent

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

// TestConnListen: subscriptions/listen is the Conn's: acknowledged with
// the lists the face tells of, tagged with the request's id; the face's
// list changes reach the subscriptions that asked, tagged, and the legacy
// session on the same connection untagged; a listening agent's lists are
// cacheable; a cancelled subscription hears nothing more, and is not
// answered; a bad filter gets -32602 naming the member.
func TestConnListen(t *testing.T) {
	f := newTestFace()
	f.desc = testDescription // tools change, nothing else
	c, a, _ := serveConn(t, f, Options{})
	for i, bad := range []struct{ params, says string }{
		{`{` + modernMeta + `}`, "notifications is required"},
		{`{"notifications":[],` + modernMeta + `}`, "notifications must be an object"},
		{`{"notifications":{"toolsListChanged":"yes"},` + modernMeta + `}`, "notifications.toolsListChanged must be a boolean"},
		{`{"notifications":{"resourceSubscriptions":"file:///x"},` + modernMeta + `}`, "notifications.resourceSubscriptions must be an array"},
	} {
		a.send(`{"jsonrpc":"2.0","id":` + string(rune('0'+i)) + `,"method":"subscriptions/listen","params":` + bad.params + `}`)
		if m := a.next(); m.Error == nil || m.Error.Code != mcp.CodeInvalidParams || !strings.Contains(m.Error.Message, bad.says) {
			t.Errorf("listen %s: got %s, want -32602 saying %q", bad.params, m.AppendJSON(nil), bad.says)
		}
	}

	a.send(`{"jsonrpc":"2.0","id":"s","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"promptsListChanged":true,"future":true},` + modernMeta + `}}`)
	if m := a.next(); m.Method != "notifications/subscriptions/acknowledged" ||
		string(m.Params) != `{"_meta":{"io.modelcontextprotocol/subscriptionId":"s"},"notifications":{"toolsListChanged":true}}` {
		t.Fatalf("acknowledgment: got %s", m.AppendJSON(nil))
	}
	a.send(`{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"legacy","version":"2"}}}`)
	a.next()
	a.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for !c.Initialized() {
		a.send(`{"jsonrpc":"2.0","id":"p","method":"ping"}`) // the read loop has read what came before once it answers
		a.next()
	}

	c.ListChanged("prompts") // the subscription did not get it; the session did
	c.ListChanged("tools")
	got := []string{}
	for range 3 {
		m := a.next()
		got = append(got, m.Method+" "+string(m.Params))
	}
	want := []string{
		"notifications/prompts/list_changed ",
		"notifications/tools/list_changed ",
		`notifications/tools/list_changed {"_meta":{"io.modelcontextprotocol/subscriptionId":"s"}}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("list changes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	a.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + modernMeta + `}}`)
	f.call(t, "2").Answer(json.RawMessage(`{"tools":[]}`), nil)
	if m := a.next(); !strings.Contains(string(m.Result), `"ttlMs":300000`) {
		t.Errorf("tools/list of a listening agent: %s, want ttlMs %d", m.Result, listTTL)
	}

	a.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s"}}`)
	a.send(`{"jsonrpc":"2.0","id":"p2","method":"ping"}`)
	a.next() // the cancellation was read
	if c.listening("tools") {
		t.Error("still listening after the cancellation")
	}
	c.ListChanged("tools")
	if m := a.next(); len(m.Params) != 0 {
		t.Errorf("after the cancellation: got %s, want the session's only", m.AppendJSON(nil))
	}
	a.quiet()
	f.mu.Lock()
	handed := len(f.calls)
	f.mu.Unlock()
	if handed != 1 {
		t.Errorf("the face was handed %d calls, want 1 (tools/list): a subscription is the Conn's", handed)
	}
}

// halfPipe is an agent's connection whose input the test closes alone
// (EOF), as `printf ... | mcpgen connect` does.
type halfPipe struct {
	io.Reader
	io.Writer
	in, out io.Closer
}

func (p halfPipe) Close() error { p.in.Close(); return p.out.Close() }

// TestConnListenEOF: an agent that closes its input ends its
// subscriptions: each is answered, gracefully, and the Conn ends without
// waiting for the bound of the answers it owes.
func TestConnListenEOF(t *testing.T) {
	f := newTestFace()
	f.desc = testDescription
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := New(context.Background(), halfPipe{inR, outW, inR, outW}, f, Options{AnswerBound: func() time.Duration { return time.Hour }})
	served := make(chan struct{})
	go func() { defer close(served); c.Serve() }()
	r := mcp.NewReader(outR)
	w := mcp.NewWriter(inW)
	_ = w.WriteLine([]byte(`{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + modernMeta + `}}`))
	if m, err := r.Read(); err != nil || m.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("acknowledgment: %v %v", m, err)
	}
	inW.Close()
	m, err := r.Read()
	if err != nil || m.ID.String() != "7" || !strings.Contains(string(m.Result), `"io.modelcontextprotocol/subscriptionId":7`) || !strings.Contains(string(m.Result), `"resultType":"complete"`) {
		t.Fatalf("the end of the subscription: %v %v", m, err)
	}
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	select {
	case <-served:
	case <-time.After(waitLong):
		t.Fatal("the Conn did not end once its agent's input did")
	}
}

// TestConnTasks: a task that a modern call is answered with is kept with
// the call's owner, for the face's routing of its requests; the oldest
// are forgotten beyond maxTasks.
func TestConnTasks(t *testing.T) {
	f := newTestFace()
	f.desc = testDescription
	c, a, _ := serveConn(t, f, Options{})
	for i := range maxTasks + 1 {
		id := fmt.Sprint(i)
		a.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{` + modernMeta + `}}`)
		call := f.call(t, id)
		call.SetOwner("server" + id)
		call.Answer(json.RawMessage(`{"resultType":"task","taskId":"t`+id+`","status":"working"}`), nil)
		if m := a.next(); !strings.Contains(string(m.Result), `"taskId":"t`+id+`"`) || strings.Contains(string(m.Result), "ttlMs\":0") {
			t.Fatalf("the task's handle: %s", m.Result)
		}
	}
	if owner, ok := c.TaskOwner("t1"); !ok || owner != "server1" {
		t.Errorf("TaskOwner(t1) = %v, %v", owner, ok)
	}
	if _, ok := c.TaskOwner("t0"); ok {
		t.Error("the oldest task is kept beyond maxTasks")
	}
	if _, ok := c.TaskOwner("nope"); ok {
		t.Error("a task never issued has an owner")
	}
}
