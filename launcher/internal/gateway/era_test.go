package gateway

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/mcp"
)

// statelessClient connects an agent to the gateway that opens no session.
func (w *world) statelessClient(servers ...string) *testserver.Client {
	w.t.Helper()
	ours, theirs := net.Pipe()
	served := make(chan struct{})
	go func() { defer close(served); w.g.Serve(context.Background(), theirs, servers) }()
	w.t.Cleanup(func() { ours.Close(); <-served })
	return testserver.NewStatelessClient(w.t, ours)
}

// addMode adds a server whose test server runs in mode, started.
func (w *world) addMode(name, mode string, env ...string) *backend {
	w.t.Helper()
	b := w.add(name, false, env...)
	b.mode = mode
	w.start(name)
	return b
}

func readLines(path string) []string {
	b, _ := os.ReadFile(path)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func members(t *testing.T, m *mcp.Message) map[string]json.RawMessage {
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

// TestGatewayEras: a modern agent and a legacy session on one connection
// to the gateway, over a legacy server and a modern-only one.
// server/discover is the gateway's, from the merged catalog; every modern
// answer names the gateway, whichever server answered; a tools/call
// reaches the legacy server without the members of _meta that only the
// modern revision has (trace context kept), the modern one as the agent
// sent it; the legacy session's answers are legacy ones.
func TestGatewayEras(t *testing.T) {
	w := newWorld(t)
	dir := t.TempDir()
	legacyMeta, modernMeta := filepath.Join(dir, "legacy"), filepath.Join(dir, "modern")
	w.addMode("old", "echo", "MCPGEN_TESTSERVER_CATALOG=1", "MCPGEN_TESTSERVER_INSTRUCTIONS=Old ways.", "MCPGEN_TESTSERVER_META="+legacyMeta)
	w.addMode("new", "modern", "MCPGEN_TESTSERVER_META="+modernMeta)
	c := w.statelessClient()
	meta := testserver.ModernMeta("m", "")

	c.Send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{` + meta + `}}}`)
	r := members(t, next(t, c, "1"))
	var versions []string
	_ = json.Unmarshal(r["supportedVersions"], &versions)
	if !slices.Equal(versions, mcp.AllVersions()) || !strings.Contains(string(r["capabilities"]), `"tools":{"listChanged":true}`) ||
		!strings.Contains(string(r["instructions"]), "Old ways.") || !strings.Contains(string(r["_meta"]), `"title":"mcpgen workspace gateway"`) ||
		string(r["resultType"]) != `"complete"` {
		t.Errorf("server/discover: %s %s %s %s", r["supportedVersions"], r["capabilities"], r["instructions"], r["_meta"])
	}

	c.Send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{` + meta + `}}}`)
	m := next(t, c, "2")
	r = members(t, m)
	var tools []struct{ Name string }
	_ = json.Unmarshal(r["tools"], &tools)
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if !slices.IsSorted(names) || !slices.Contains(names, "old__echo") || !slices.Contains(names, "new__echo") ||
		string(r["cacheScope"]) != `"private"` || string(r["ttlMs"]) == "" || !strings.Contains(string(r["_meta"]), "mcpgen workspace gateway") {
		t.Errorf("modern tools/list: %v %s", names, m.Result)
	}

	trace := `"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"`
	for i, server := range []string{"old", "new"} {
		id := []string{"3", "4"}[i]
		c.Send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + server + `__echo","arguments":{"text":"hi"},"_meta":{` + meta + `,` + trace + `}}}`)
		m := next(t, c, id)
		r := members(t, m)
		if testserver.ResultText(t, m) != "hi" || string(r["resultType"]) != `"complete"` ||
			!strings.Contains(string(r["_meta"]), "mcpgen workspace gateway") || strings.Contains(string(r["_meta"]), "testserver") {
			t.Errorf("modern tools/call of %s: %s", server, m.Result)
		}
	}
	c.Send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"old__echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	if m := next(t, c, "5"); m.Error == nil || m.Error.Code != mcp.CodeUnsupportedProtocolVersion {
		t.Errorf("an unknown version: %s", m.AppendJSON(nil))
	}

	c.Initialize("legacy", "")
	c.Send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"new__echo","arguments":{"text":"yo"}}}`)
	if m := next(t, c, "6"); strings.Contains(string(m.Result), "resultType") || testserver.ResultText(t, m) != "yo" {
		t.Errorf("legacy tools/call of the modern server: %s", m.Result)
	}

	for _, tc := range []struct {
		path   string
		modern bool
	}{{legacyMeta, false}, {modernMeta, true}} {
		var line string
		for deadline := time.Now().Add(waitLong); line == ""; time.Sleep(5 * time.Millisecond) {
			for _, l := range readLines(tc.path) {
				if strings.HasPrefix(l, "tools/call ") && strings.Contains(l, "traceparent") {
					line = l
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no modern call read", tc.path)
			}
		}
		if !strings.Contains(line, trace) {
			t.Errorf("%s read %s: want the trace context", tc.path, line)
		}
		for _, k := range []string{mcp.MetaProtocolVersion, mcp.MetaClientCapabilities, mcp.MetaClientInfo} {
			if strings.Contains(line, k) != tc.modern {
				t.Errorf("%s read %s: %s present %v, want %v", tc.path, line, k, !tc.modern, tc.modern)
			}
		}
	}
}

// TestServerInfoJSON: the gateway's identity, encoded by hand, is its
// serverInfo.
func TestServerInfoJSON(t *testing.T) {
	var got mcp.Implementation
	if err := json.Unmarshal(serverInfoJSON, &got); err != nil || got != serverInfo {
		t.Errorf("serverInfoJSON %s is %+v (%v), want %+v", serverInfoJSON, got, err, serverInfo)
	}
}

// TestGatewayListen: a modern agent's subscriptions/listen is the
// gateway's: a server's tool change (legacy or modern) reaches it tagged
// with its id once the merged catalog changed; the agent's legacy session
// keeps list_changed.
func TestGatewayListen(t *testing.T) {
	w := newWorld(t)
	w.addMode("old", "echo")
	w.addMode("new", "modern")
	c := w.statelessClient()
	meta := testserver.ModernMeta("m", "")
	c.Send(`{"jsonrpc":"2.0","id":"sub","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"promptsListChanged":true},"_meta":{` + meta + `}}}`)
	if m := c.Next(); m.Method != "notifications/subscriptions/acknowledged" ||
		string(m.Params) != `{"_meta":{"io.modelcontextprotocol/subscriptionId":"sub"},"notifications":{"toolsListChanged":true}}` {
		t.Fatalf("acknowledgment: %s", m.AppendJSON(nil))
	}
	c.Initialize("legacy", "")
	for i, server := range []string{"old", "new"} {
		id := []string{"1", "2"}[i]
		c.Send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + server + `__add","arguments":{},"_meta":{` + meta + `}}}`)
		var sawResult, sawTagged, sawPlain bool
		for !sawResult || !sawTagged || !sawPlain {
			m := c.Next()
			switch {
			case m.IsResponse():
				sawResult = m.ID.String() == id
			case m.Method == "notifications/tools/list_changed" && len(m.Params) == 0:
				sawPlain = true
			case m.Method == "notifications/tools/list_changed":
				if string(m.Params) != `{"_meta":{"io.modelcontextprotocol/subscriptionId":"sub"}}` {
					t.Errorf("the change: %s, want it tagged", m.AppendJSON(nil))
				}
				sawTagged = true
			}
		}
	}
}

// TestGatewayLogLevel: through the gateway too, a modern agent without a
// session hears a server's log messages only during a request that asked
// for them, at that level or above, named after their server.
func TestGatewayLogLevel(t *testing.T) {
	w := newWorld(t)
	w.add("old", true, "MCPGEN_TESTSERVER_CATALOG=1")
	c := w.statelessClient()
	meta := testserver.ModernMeta("m", "")
	for i, tc := range []struct {
		level string
		hears bool
	}{{"", false}, {"error", false}, {"info", true}} {
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
			if m.Method == "notifications/message" && strings.Contains(string(m.Params), `"t`+id+`"`) && strings.Contains(string(m.Params), `"old/testlog"`) {
				heard = true
			}
		}
		if heard != tc.hears {
			t.Errorf("log level %q: heard %v, want %v", tc.level, heard, tc.hears)
		}
	}
}

// TestGatewayTasks: the tasks extension through the gateway: advertised
// to modern agents when a server has it; a task's tasks/get and
// tasks/update go to the server that issued it, and its notifications to
// the agent's subscription that asked for it, tagged; a task the agent
// was not issued is an error.
func TestGatewayTasks(t *testing.T) {
	w := newWorld(t)
	w.addMode("old", "echo")
	w.addMode("new", "modern", "MCPGEN_TESTSERVER_TASKS=1")
	c := w.statelessClient()
	meta := testserver.ModernMeta("m", `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`)
	c.Send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{` + meta + `}}}`)
	if r := members(t, next(t, c, "1")); !strings.Contains(string(r["capabilities"]), `"extensions":{"io.modelcontextprotocol/tasks":{}}`) {
		t.Errorf("discover: capabilities %s, want the tasks extension", r["capabilities"])
	}
	c.Send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"task","arguments":{"text":"x"},"_meta":{` + meta + `}}}`)
	if r := members(t, next(t, c, "2")); string(r["resultType"]) != `"task"` || string(r["taskId"]) != `"task-x"` {
		t.Fatalf("the task: %v", r)
	}
	c.Send(`{"jsonrpc":"2.0","id":"sub","method":"subscriptions/listen","params":{"notifications":{"taskIds":["task-x","task-y"]},"_meta":{` + meta + `}}}`)
	if m := c.Next(); m.Method != "notifications/subscriptions/acknowledged" ||
		string(m.Params) != `{"_meta":{"io.modelcontextprotocol/subscriptionId":"sub"},"notifications":{"taskIds":["task-x"]}}` {
		t.Fatalf("acknowledgment: %s", m.AppendJSON(nil))
	}
	c.Send(`{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"task-x","_meta":{` + meta + `}}}`)
	if m := next(t, c, "3"); !strings.Contains(string(m.Result), `"done task-x"`) {
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
			if !strings.Contains(string(m.Params), `"io.modelcontextprotocol/subscriptionId":"sub"`) || !strings.Contains(string(m.Params), `"taskId":"task-x"`) {
				t.Errorf("the task's notification: %s", m.AppendJSON(nil))
			}
			told = true
		default:
			t.Errorf("got %s", m.AppendJSON(nil))
		}
	}
	c.Send(`{"jsonrpc":"2.0","id":5,"method":"tasks/get","params":{"taskId":"task-y","_meta":{` + meta + `}}}`)
	if m := next(t, c, "5"); m.Error == nil || m.Error.Code != mcp.CodeInvalidParams || !strings.Contains(m.Error.Message, `unknown task "task-y"`) {
		t.Errorf("tasks/get of a task not issued: %s", m.AppendJSON(nil))
	}
}

// TestGatewayResourceSubscriptions: through the gateway, a modern agent's
// subscription to resources goes to the server of each URI, and a
// server's update reaches it tagged; a URI that no server serves is not
// acknowledged.
func TestGatewayResourceSubscriptions(t *testing.T) {
	w := newWorld(t)
	w.add("a", true, "MCPGEN_TESTSERVER_CATALOG=1", "MCPGEN_TESTSERVER_TOOLS=echo,touch")
	w.add("b", true, "MCPGEN_TESTSERVER_CATALOG=1", "MCPGEN_TESTSERVER_TOOLS=log")
	for deadline := time.Now().Add(waitLong); ; time.Sleep(5 * time.Millisecond) {
		_, a := w.g.Catalog().Resource("test://a/readme")
		_, b := w.g.Catalog().Resource("test://b/readme")
		if a && b {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the servers' resources never reached the catalog")
		}
	}
	c := w.statelessClient()
	meta := testserver.ModernMeta("m", "")
	c.Send(`{"jsonrpc":"2.0","id":"sub","method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["test://b/readme","test://a/readme","test://nobody"]},"_meta":{` + meta + `}}}`)
	if m := c.Next(); string(m.Params) != `{"_meta":{"io.modelcontextprotocol/subscriptionId":"sub"},"notifications":{"resourceSubscriptions":["test://a/readme","test://b/readme"]}}` {
		t.Fatalf("acknowledgment: %s", m.AppendJSON(nil))
	}
	c.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"touch","arguments":{"text":"test://a/readme"},"_meta":{` + meta + `}}}`)
	var got []string
	for {
		m := c.Next()
		if m.IsResponse() {
			break
		}
		got = append(got, m.Method+" "+string(m.Params))
	}
	want := []string{`notifications/resources/updated {"uri":"test://a/readme","_meta":{"io.modelcontextprotocol/subscriptionId":"sub"}}`}
	if !slices.Equal(got, want) {
		t.Errorf("touch: got %q, want %q", got, want)
	}
}

// TestGatewayResourceNotFound: a resource that no server offers is an
// error that names the resource in its data (the spec's SHOULD): -32602
// for a modern agent (SEP-2164, which the 2026-07-28 revision adopts), the
// -32002 of the legacy revisions for a legacy session.
func TestGatewayResourceNotFound(t *testing.T) {
	w := newWorld(t)
	w.addMode("old", "echo", "MCPGEN_TESTSERVER_CATALOG=1")
	c := w.statelessClient()
	c.Send(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"nobody://x","_meta":{` + testserver.ModernMeta("m", "") + `}}}`)
	m := next(t, c, "1")
	if m.Error == nil || m.Error.Code != mcp.CodeInvalidParams || string(m.Error.Data) != `{"uri":"nobody://x"}` {
		t.Errorf("a modern agent: got %s, want -32602 with data {\"uri\":\"nobody://x\"}", m.AppendJSON(nil))
	}
	c.Initialize("legacy", "")
	c.Send(`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"nobody://x"}}`)
	m = next(t, c, "2")
	if m.Error == nil || m.Error.Code != -32002 || string(m.Error.Data) != `{"uri":"nobody://x"}` {
		t.Errorf("a legacy session: got %s, want -32002 with data {\"uri\":\"nobody://x\"}", m.AppendJSON(nil))
	}
}
