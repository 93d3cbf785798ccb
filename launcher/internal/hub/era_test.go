package hub

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/mcp"
)

// metaLog returns a file for the test server's notes of each request's
// _meta ($MCPGEN_TESTSERVER_META), and a function that reads them: one
// line each, "METHOD META".
func metaLog(t *testing.T) (env string, read func() []string) {
	path := filepath.Join(t.TempDir(), "meta")
	return "MCPGEN_TESTSERVER_META=" + path, func() []string {
		b, _ := os.ReadFile(path)
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
}

// statelessClient connects a client to the hub that opens no session.
func (th *testHub) statelessClient() *testserver.Client {
	th.t.Helper()
	ours, theirs := net.Pipe()
	served := make(chan struct{})
	go func() { defer close(served); th.hub.Serve(context.Background(), theirs) }()
	th.t.Cleanup(func() { ours.Close(); th.hub.Close(); <-served })
	return testserver.NewStatelessClient(th.t, ours)
}

// resultMembers reads a result's members, failing on an error.
func resultMembers(t *testing.T, m *mcp.Message) map[string]json.RawMessage {
	t.Helper()
	if m.Error != nil {
		t.Fatalf("got error %d %s, want a result", m.Error.Code, m.Error.Message)
	}
	var r map[string]json.RawMessage
	if err := json.Unmarshal(m.Result, &r); err != nil {
		t.Fatalf("result %s: %v", m.Result, err)
	}
	return r
}

// TestHubEras: a modern agent and a legacy session on one connection to
// the hub, with a legacy server (the reference-like test server) and a
// modern-only one behind it. server/discover is the hub's, from the
// server's catalog, never the server's; a modern request reaches a legacy
// server without the members of _meta that only the modern revision has
// (its progress token and trace context kept), a modern server as the
// agent sent it; the modern agent's answers are complete (resultType, the
// server's identity; a list's caching hints, the tools in order), the
// legacy session's as they were; a version nobody speaks gets -32022.
func TestHubEras(t *testing.T) {
	for _, tc := range []struct {
		mode, server string
	}{{"echo", "testserver"}, {"modern", "testserver-modern"}} {
		t.Run(tc.mode, func(t *testing.T) {
			menv, methods := methodsLog(t)
			xenv, metas := metaLog(t)
			th := newTestHub(t, tc.mode, menv, xenv)
			c := th.statelessClient()
			meta := testserver.ModernMeta("m", "")

			c.Send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{` + meta + `}}}`)
			r := resultMembers(t, c.Next())
			var versions []string
			_ = json.Unmarshal(r["supportedVersions"], &versions)
			var caps struct {
				Tools struct{ ListChanged bool } `json:"tools"`
			}
			_ = json.Unmarshal(r["capabilities"], &caps)
			if !slices.Equal(versions, mcp.AllVersions()) || !caps.Tools.ListChanged || string(r["resultType"]) != `"complete"` ||
				!strings.Contains(string(r["_meta"]), `"name":"`+tc.server+`"`) || string(r["cacheScope"]) != `"private"` {
				t.Errorf("server/discover: %s %s %s %s", r["supportedVersions"], r["capabilities"], r["resultType"], r["_meta"])
			}

			c.Send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{` + meta +
				`,"progressToken":"p","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"k=v"}}}`)
			m := c.Next()
			r = resultMembers(t, m)
			if testserver.ResultText(t, m) != "hi" || string(r["resultType"]) != `"complete"` || !strings.Contains(string(r["_meta"]), `"name":"`+tc.server+`"`) {
				t.Errorf("modern tools/call: %s", m.Result)
			}
			c.Send(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{` + meta + `}}}`)
			m = c.Next()
			r = resultMembers(t, m)
			var tools []struct{ Name string }
			_ = json.Unmarshal(r["tools"], &tools)
			names := make([]string, len(tools))
			for i, tl := range tools {
				names[i] = tl.Name
			}
			if len(names) == 0 || !slices.IsSorted(names) || string(r["ttlMs"]) == "" || string(r["cacheScope"]) != `"private"` || string(r["resultType"]) != `"complete"` {
				t.Errorf("modern tools/list: %s", m.Result)
			}
			c.Send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`)
			if m := c.Next(); m.Error == nil || m.Error.Code != mcp.CodeUnsupportedProtocolVersion {
				t.Errorf("an unknown version: %s", m.AppendJSON(nil))
			}

			// The same connection opens a legacy session: its answers are
			// legacy ones.
			c.Initialize("legacy", "")
			c.Send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"text":"yo"}}}`)
			if m := c.Next(); string(m.Result) != `{"content":[{"text":"yo","type":"text"}]}` && string(m.Result) != `{"content":[{"type":"text","text":"yo"}]}` {
				t.Errorf("legacy tools/call: %s", m.Result)
			}

			waitFor(t, metas, "the modern call", func(l string) bool { return strings.HasPrefix(l, "tools/call ") && strings.Contains(l, "traceparent") })
			for _, l := range metas() {
				if !strings.HasPrefix(l, "tools/call ") || !strings.Contains(l, "traceparent") {
					continue
				}
				keep := []string{`"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"`, `"tracestate":"k=v"`, `"progressToken":"mcpgen-`}
				modernOnly := []string{mcp.MetaProtocolVersion, mcp.MetaClientCapabilities, mcp.MetaClientInfo}
				for _, k := range keep {
					if !strings.Contains(l, k) {
						t.Errorf("the server read %s: want %s kept", l, k)
					}
				}
				for _, k := range modernOnly {
					if strings.Contains(l, k) == (tc.mode == "echo") {
						t.Errorf("the server read %s: %s present %v, want %v (a %s server)", l, k, strings.Contains(l, k), tc.mode != "echo", tc.mode)
					}
				}
			}
			for _, l := range methods() {
				if strings.HasPrefix(l, "server/discover") && !strings.HasSuffix(l, " mcpgen") {
					t.Errorf("the server read %q: server/discover is the hub's", l)
				}
			}
		})
	}
}

// TestHubListen: a modern agent's subscriptions/listen is the hub's, not
// the server's: acknowledged with the lists the hub tells of, and the
// server's tool changes reach it tagged with its id, whichever era the
// server speaks; the legacy agents keep their list_changed; no
// tool_timeout ends it.
func TestHubListen(t *testing.T) {
	for _, mode := range []string{"echo", "modern"} {
		t.Run(mode, func(t *testing.T) {
			menv, methods := methodsLog(t)
			th := newTestHub(t, mode, menv)
			th.hub.SetTimeouts(0, 50*time.Millisecond) // a listen outlives it
			legacy := th.client("legacy", "")
			c := th.statelessClient()
			meta := testserver.ModernMeta("m", "")
			c.Send(`{"jsonrpc":"2.0","id":"sub","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["test://x"]},"_meta":{` + meta + `}}}`)
			if m := c.Next(); m.Method != "notifications/subscriptions/acknowledged" ||
				string(m.Params) != `{"_meta":{"io.modelcontextprotocol/subscriptionId":"sub"},"notifications":{"toolsListChanged":true}}` {
				t.Fatalf("acknowledgment: %s", m.AppendJSON(nil))
			}
			time.Sleep(100 * time.Millisecond) // twice the tool_timeout: the subscription is no call
			c.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{},"_meta":{` + meta + `}}}`)
			var sawResult, sawChange bool
			for !sawResult || !sawChange {
				m := c.Next()
				switch {
				case m.IsResponse():
					if m.ID.String() != "1" {
						t.Fatalf("got %s, want the answer to the call (the subscription is under way)", m.AppendJSON(nil))
					}
					sawResult = true
				case m.Method == "notifications/tools/list_changed":
					if string(m.Params) != `{"_meta":{"io.modelcontextprotocol/subscriptionId":"sub"}}` {
						t.Errorf("the change: %s, want it tagged", m.AppendJSON(nil))
					}
					sawChange = true
				default:
					t.Errorf("got %s", m.AppendJSON(nil))
				}
			}
			if m := legacy.Next(); m.Method != "notifications/tools/list_changed" || len(m.Params) != 0 {
				t.Errorf("the legacy agent: got %s", m.AppendJSON(nil))
			}
			for _, l := range methods() {
				if strings.HasPrefix(l, "subscriptions/listen") && !strings.HasSuffix(l, " mcpgen") {
					t.Errorf("the server read %q: the agent's subscription is the hub's", l)
				}
			}
		})
	}
}

// TestHubLogLevel: a modern agent without a session hears the server's log
// messages only during a request that asked for them (_meta's logLevel),
// at that level or above; a legacy session hears them all, as ever.
func TestHubLogLevel(t *testing.T) {
	th := newTestHub(t, "echo", "MCPGEN_TESTSERVER_CATALOG=1")
	legacy := th.client("legacy", "")
	c := th.statelessClient()
	meta := testserver.ModernMeta("m", "")
	for i, tc := range []struct {
		level string
		hears bool
	}{{"", false}, {"emergency", false}, {"info", true}, {"debug", true}} {
		id := string(rune('1' + i))
		lv := ""
		if tc.level != "" {
			lv = `,"io.modelcontextprotocol/logLevel":"` + tc.level + `"`
		}
		c.Send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"log","arguments":{"text":"t` + id + `"},"_meta":{` + meta + lv + `}}}`)
		heard := false
		for {
			m := c.Next()
			if m.IsResponse() {
				break
			}
			if m.Method == "notifications/message" && strings.Contains(string(m.Params), `"t`+id+`"`) {
				heard = true
			}
		}
		if heard != tc.hears {
			t.Errorf("log level %q: heard %v, want %v", tc.level, heard, tc.hears)
		}
		if m := legacy.Next(); m.Method != "notifications/message" || !strings.Contains(string(m.Params), `"t`+id+`"`) {
			t.Errorf("the legacy session: got %s", m.AppendJSON(nil))
		}
	}
}

// lockedBuffer is a log's output that the test reads while the hub writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestHubTraceLogged: the agent's trace context reaches the server (see
// TestHubEras) and the hub's own log line about the call, of a modern
// agent and of a legacy one alike.
func TestHubTraceLogged(t *testing.T) {
	var out lockedBuffer
	root := t.TempDir()
	th := &testHub{t: t, hub: New("test", root, slog.New(slog.NewTextHandler(&out, nil))), root: root}
	th.start("echo")
	t.Cleanup(func() { th.hub.Close(); th.proc.Kill() })
	th.hub.SetTimeouts(0, 20*time.Millisecond)
	c := th.statelessClient()
	legacy := th.client("legacy", "")
	c.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"ms":60000},"_meta":{` + testserver.ModernMeta("m", "") +
		`,"traceparent":"00-11111111111111111111111111111111-2222222222222222-01","tracestate":"a=b"}}}`)
	legacy.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"ms":60000},"_meta":{"traceparent":"00-33333333333333333333333333333333-4444444444444444-01"}}}`)
	c.Next()
	legacy.Next()
	for _, want := range []string{`traceparent=00-11111111111111111111111111111111-2222222222222222-01 tracestate="a=b"`, "traceparent=00-33333333333333333333333333333333-4444444444444444-01"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the hub's log:\n%s\nwant a line with %s", out.String(), want)
		}
	}
}

// TestHubTasks: the tasks extension through the hub: advertised when the
// server has it; a task's requests reach the server, and its notification
// the subscription of the agent it was issued to, tagged, and no other
// agent. The agent gets its task once the server has acknowledged the
// hub's subscription to it: a server that takes the subscription late
// (its other requests answered meanwhile) tells of the update all the
// same.
func TestHubTasks(t *testing.T) {
	for _, delay := range []string{"0", "300"} {
		t.Run("listen delay "+delay+"ms", func(t *testing.T) { testHubTasks(t, delay) })
	}
}

func testHubTasks(t *testing.T, listenDelay string) {
	var log lockedBuffer
	menv, methods := methodsLog(t)
	root := t.TempDir()
	th := &testHub{t: t, hub: New("test", root, slog.New(slog.NewTextHandler(&log, nil))), root: root}
	th.start("modern", "MCPGEN_TESTSERVER_TASKS=1", "MCPGEN_TESTSERVER_LISTEN_DELAY_MS="+listenDelay, menv)
	t.Cleanup(func() { th.hub.Close(); th.proc.Kill() })
	c, other := th.statelessClient(), th.statelessClient()
	meta := testserver.ModernMeta("m", `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`)
	c.Send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{` + meta + `}}}`)
	if r := resultMembers(t, c.Next()); !strings.Contains(string(r["capabilities"]), `"io.modelcontextprotocol/tasks":{}`) {
		t.Errorf("discover: capabilities %s, want the tasks extension", r["capabilities"])
	}
	c.Send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"task","arguments":{"text":"x"},"_meta":{` + meta + `}}}`)
	if r := resultMembers(t, c.Next()); string(r["resultType"]) != `"task"` || string(r["taskId"]) != `"task-x"` {
		t.Fatalf("the task: %v", r)
	}
	for _, a := range []*testserver.Client{c, other} {
		a.Send(`{"jsonrpc":"2.0","id":"sub","method":"subscriptions/listen","params":{"notifications":{"taskIds":["task-x"]},"_meta":{` + meta + `}}}`)
		a.Next() // acknowledged: other's without the task, which is not its
	}
	c.Send(`{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"task-x","_meta":{` + meta + `}}}`)
	if m := c.Next(); !strings.Contains(string(m.Result), `"done task-x"`) {
		t.Errorf("tasks/get: %s", m.AppendJSON(nil))
	}
	c.Send(`{"jsonrpc":"2.0","id":4,"method":"tasks/update","params":{"taskId":"task-x","inputResponses":{},"_meta":{` + meta + `}}}`)
	var acked, told bool
	for !acked || !told {
		m := c.Next()
		switch {
		case m.IsResponse():
			if m.ID.String() != "4" || m.Error != nil {
				t.Fatalf("tasks/update: %s", m.AppendJSON(nil))
			}
			acked = true
		case m.Method == "notifications/tasks":
			if !strings.Contains(string(m.Params), `"io.modelcontextprotocol/subscriptionId":"sub"`) {
				t.Errorf("the task's notification: %s", m.AppendJSON(nil))
			}
			told = true
		}
	}
	other.Quiet()
	// The listen that asks for the task replaced the first one, which the
	// hub cancelled: that end is not the server's refusal.
	waitFor(t, methods, "the first listen's cancellation", func(l string) bool { return strings.HasPrefix(l, "notifications/cancelled ") })
	if strings.Contains(log.String(), "refused") {
		t.Errorf("the hub's log:\n%s", log.String())
	}
}

// TestHubTaskNeverAcknowledged: a server that never acknowledges the
// hub's subscription to a task it issued delays the task's handle by
// taskAckWait, no more.
func TestHubTaskNeverAcknowledged(t *testing.T) {
	defer func(d time.Duration) { taskAckWait = d }(taskAckWait)
	taskAckWait = 100 * time.Millisecond
	th := newTestHub(t, "modern", "MCPGEN_TESTSERVER_TASKS=1", "MCPGEN_TESTSERVER_LISTEN_DELAY_MS=600000")
	c := th.statelessClient()
	meta := testserver.ModernMeta("m", `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`)
	c.Send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"task","arguments":{"text":"x"},"_meta":{` + meta + `}}}`)
	if r := resultMembers(t, c.Next()); string(r["resultType"]) != `"task"` || string(r["taskId"]) != `"task-x"` {
		t.Fatalf("the task: %v", r)
	}
	c.Send(`{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"task-x","_meta":{` + meta + `}}}`)
	if m := c.Next(); !strings.Contains(string(m.Result), `"done task-x"`) {
		t.Errorf("tasks/get: %s", m.AppendJSON(nil))
	}
}

// TestHubResourceSubscriptions: a modern agent's subscription to a
// resource of a legacy server that has resources.subscribe: the hub
// subscribes at the server once, the server's update reaches the
// subscription tagged, and the hub unsubscribes when the agent's
// subscription ends; a modern server's are not honoured (the hub's own
// subscription does not ask for them).
func TestHubResourceSubscriptions(t *testing.T) {
	menv, methods := methodsLog(t)
	th := newTestHub(t, "echo", "MCPGEN_TESTSERVER_CATALOG=1", menv)
	c := th.statelessClient()
	meta := testserver.ModernMeta("m", "")
	c.Send(`{"jsonrpc":"2.0","id":"sub","method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["test://test/readme","test://test/readme"]},"_meta":{` + meta + `}}}`)
	if m := c.Next(); string(m.Params) != `{"_meta":{"io.modelcontextprotocol/subscriptionId":"sub"},"notifications":{"resourceSubscriptions":["test://test/readme"]}}` {
		t.Fatalf("acknowledgment: %s", m.AppendJSON(nil))
	}
	waitFor(t, methods, "resources/subscribe", func(l string) bool { return strings.HasPrefix(l, "resources/subscribe ") })
	for _, uri := range []string{"test://other", "test://test/readme"} {
		c.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"touch","arguments":{"text":"` + uri + `"},"_meta":{` + meta + `}}}`)
		var got []string
		for {
			m := c.Next()
			if m.IsResponse() {
				break
			}
			got = append(got, m.Method+" "+string(m.Params))
		}
		want := []string{}
		if uri == "test://test/readme" {
			want = []string{`notifications/resources/updated {"uri":"test://test/readme","_meta":{"io.modelcontextprotocol/subscriptionId":"sub"}}`}
		}
		if !slices.Equal(got, want) {
			t.Errorf("touch %s: got %q, want %q", uri, got, want)
		}
	}
	c.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"sub"}}`)
	waitFor(t, methods, "resources/unsubscribe", func(l string) bool { return strings.HasPrefix(l, "resources/unsubscribe ") })

	// A modern server that cannot tell of resources: nothing honoured.
	modern := newTestHub(t, "modern")
	mc := modern.statelessClient()
	mc.Send(`{"jsonrpc":"2.0","id":"sub","method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["test://x"]},"_meta":{` + meta + `}}}`)
	if m := mc.Next(); string(m.Params) != `{"_meta":{"io.modelcontextprotocol/subscriptionId":"sub"},"notifications":{}}` {
		t.Errorf("a modern server's acknowledgment: %s", m.AppendJSON(nil))
	}

	// A modern server that can: the hub's own subscription asks for the
	// resources agents want, and the server's updates reach the agents'
	// subscriptions that asked, tagged with their own ids.
	sub := newTestHub(t, "modern", "MCPGEN_TESTSERVER_SUBSCRIBE=1")
	a, b := sub.statelessClient(), sub.statelessClient()
	a.Send(`{"jsonrpc":"2.0","id":"a1","method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["test://a"]},"_meta":{` + meta + `}}}`)
	if m := a.Next(); string(m.Params) != `{"_meta":{"io.modelcontextprotocol/subscriptionId":"a1"},"notifications":{"resourceSubscriptions":["test://a"]}}` {
		t.Fatalf("acknowledgment, a modern server that tells of resources: %s", m.AppendJSON(nil))
	}
	b.Send(`{"jsonrpc":"2.0","id":"b1","method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["test://b"]},"_meta":{` + meta + `}}}`)
	if m := b.Next(); string(m.Params) != `{"_meta":{"io.modelcontextprotocol/subscriptionId":"b1"},"notifications":{"resourceSubscriptions":["test://b"]}}` {
		t.Fatalf("second acknowledgment: %s", m.AppendJSON(nil))
	}
	touched := func(c *testserver.Client, uri string) []string {
		t.Helper()
		c.Send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"touch","arguments":{"text":"` + uri + `"},"_meta":{` + meta + `}}}`)
		var got []string
		for {
			m := c.Next()
			if m.IsResponse() {
				return got
			}
			got = append(got, m.Method+" "+string(m.Params))
		}
	}
	// The hub's listen that asks for test://b is sent on its own, and may
	// reach the server after a call: touch until b hears (bounded).
	var got []string
	for i := 0; i < 500 && len(got) == 0; i++ {
		got = touched(b, "test://b")
	}
	if want := []string{`notifications/resources/updated {"uri":"test://b","_meta":{"io.modelcontextprotocol/subscriptionId":"b1"}}`}; !slices.Equal(got, want) {
		t.Errorf("touch test://b: b got %q, want %q", got, want)
	}
	if got := touched(b, "test://a"); len(got) != 0 {
		t.Errorf("touch test://a: b, which did not ask, got %q", got)
	}
	if got := a.Next(); got.Method != "notifications/resources/updated" || string(got.Params) != `{"uri":"test://a","_meta":{"io.modelcontextprotocol/subscriptionId":"a1"}}` {
		t.Errorf("touch test://a: a got %s", got.AppendJSON(nil))
	}
}

// TestHubLegacyLogLevelToModern: a legacy session's logging/setLevel is
// answered by the hub for a modern server (which has no such method), and
// the session's calls carry the level in _meta: the server logs during
// them at that level, and the session hears it. Before it asks, its calls
// ask for info, what a legacy server sends unasked.
func TestHubLegacyLogLevelToModern(t *testing.T) {
	th := newTestHub(t, "modern", "MCPGEN_TESTSERVER_TOOLS=echo,log")
	c := th.client("legacy", "")
	c.Call("1", "log", `{"text":"unasked"}`)
	if m := c.Next(); m.Method != "notifications/message" || !strings.Contains(string(m.Params), `"unasked"`) {
		t.Fatalf("before setLevel: got %s, want the server's log message", m.AppendJSON(nil))
	}
	c.Next()
	c.Send(`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"warning"}}`)
	if m := c.Next(); m.Error != nil || string(m.Result) != `{}` {
		t.Fatalf("logging/setLevel: %s", m.AppendJSON(nil))
	}
	c.Call("3", "log", `{"text":"quiet"}`)
	if m := c.Next(); !m.IsResponse() || testserver.ResultText(t, m) != "logged" {
		t.Fatalf("at warning: got %s, want the answer alone", m.AppendJSON(nil))
	}
	c.Send(`{"jsonrpc":"2.0","id":4,"method":"logging/setLevel","params":{"level":"info"}}`)
	if m := c.Next(); m.Error != nil || string(m.Result) != `{}` {
		t.Fatalf("logging/setLevel: %s", m.AppendJSON(nil))
	}
	c.Call("5", "log", `{"text":"loud"}`)
	m := c.Next()
	if m.Method != "notifications/message" || !strings.Contains(string(m.Params), `"loud"`) {
		t.Fatalf("after setLevel: got %s, want the server's log message", m.AppendJSON(nil))
	}
	if m := c.Next(); testserver.ResultText(t, m) != "logged" {
		t.Errorf("the call: %s", m.AppendJSON(nil))
	}
}

// TestHubLegacySubscribeToModern: a legacy session's resources/subscribe to
// a modern server (which has no such method) is the hub's: it asks for the
// resource through its own subscription, and the server's updates reach
// the session; resources/unsubscribe undoes it.
func TestHubLegacySubscribeToModern(t *testing.T) {
	th := newTestHub(t, "modern", "MCPGEN_TESTSERVER_SUBSCRIBE=1", "MCPGEN_TESTSERVER_TOOLS=echo,touch")
	c := th.client("legacy", "")
	c.Send(`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"test://a"}}`)
	if m := c.Next(); m.Error != nil || string(m.Result) != `{}` {
		t.Fatalf("resources/subscribe: %s", m.AppendJSON(nil))
	}
	touched := func(uri string) []string {
		t.Helper()
		c.Call("2", "touch", `{"text":"`+uri+`"}`)
		var got []string
		for {
			m := c.Next()
			if m.IsResponse() {
				return got
			}
			got = append(got, m.Method+" "+string(m.Params))
		}
	}
	// The hub's listen that asks for test://a is sent on its own, and may
	// reach the server after a call: touch until the session hears
	// (bounded).
	var got []string
	for i := 0; i < 500 && len(got) == 0; i++ {
		got = touched("test://a")
	}
	if want := []string{`notifications/resources/updated {"uri":"test://a"}`}; !slices.Equal(got, want) {
		t.Errorf("touch test://a: got %q, want %q", got, want)
	}
	c.Send(`{"jsonrpc":"2.0","id":3,"method":"resources/unsubscribe","params":{"uri":"test://a"}}`)
	if m := c.Next(); m.Error != nil {
		t.Fatalf("resources/unsubscribe: %s", m.AppendJSON(nil))
	}
	// Once the hub's listen no longer asks for it, the server tells of
	// it no more (bounded: the listen is sent again on its own).
	for i := 0; i < 500 && len(got) != 0; i++ {
		got = touched("test://a")
	}
	if len(got) != 0 {
		t.Errorf("after resources/unsubscribe: got %q", got)
	}
}
