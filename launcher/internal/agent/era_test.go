package agent

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

// modernMeta is the _meta of a modern request of agent "m".
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"m","version":"1"}}`

var testDescription = &Description{
	Capabilities: json.RawMessage(`{"tools":{"listChanged":true}}`),
	ServerInfo:   json.RawMessage(`{"name":"face","version":"9"}`),
	Instructions: "Use the face.",
}

// result reads a message's result as a map, failing on an error.
func result(t *testing.T, m *mcp.Message) map[string]json.RawMessage {
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

// TestConnDiscover: server/discover is answered by the Conn from the
// face's description, never handed to the face: every version the
// launcher speaks, the capabilities, instructions and the identity, as a
// complete and cacheable result. One that comes before the face knows
// waits for it.
func TestConnDiscover(t *testing.T) {
	f := newTestFace()
	c, a, _ := serveConn(t, f, Options{})
	a.send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`)
	for deadline := time.Now().Add(waitLong); c.Eras().Modern == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the Conn never read server/discover")
		}
	}
	f.mu.Lock()
	f.desc = testDescription
	f.mu.Unlock()
	m := a.next()
	r := result(t, m)
	var versions []string
	_ = json.Unmarshal(r["supportedVersions"], &versions)
	if !slices.Equal(versions, mcp.AllVersions()) {
		t.Errorf("supportedVersions %v, want %v", versions, mcp.AllVersions())
	}
	if string(r["capabilities"]) != `{"tools":{"listChanged":true}}` || string(r["instructions"]) != `"Use the face."` ||
		string(r["resultType"]) != `"complete"` || string(r["cacheScope"]) != `"private"` || string(r["ttlMs"]) != "0" ||
		!strings.Contains(string(r["_meta"]), `"io.modelcontextprotocol/serverInfo":{"name":"face","version":"9"}`) {
		t.Errorf("discover: %s", m.Result)
	}
	// Without _meta too (a probe of a client that is not sure), and at once.
	a.send(`{"jsonrpc":"2.0","id":2,"method":"server/discover"}`)
	if m := a.next(); m.ID.String() != "2" || string(result(t, m)["resultType"]) != `"complete"` {
		t.Errorf("discover without _meta: %s", m.AppendJSON(nil))
	}
	f.mu.Lock()
	handed := len(f.calls)
	f.mu.Unlock()
	if handed != 0 {
		t.Errorf("the face was handed %d calls; server/discover is the Conn's", handed)
	}
	if e := c.Eras(); e.Modern != 1 || c.DisplayName() != "m 1" || c.Session() {
		t.Errorf("eras %+v, name %q, session %v: want one modern request of agent m 1, no session", e, c.DisplayName(), c.Session())
	}
}

// TestConnModernBadMeta: a modern request whose _meta is wrong is answered
// by the Conn with what is wrong (the member named), a version nobody
// speaks with -32022 listing those the launcher does; none reaches the
// face, and the connection goes on.
func TestConnModernBadMeta(t *testing.T) {
	f := newTestFace()
	f.desc = testDescription
	_, a, _ := serveConn(t, f, Options{})
	for i, tc := range []struct {
		meta string
		code int64
		says string
	}{
		{`"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}`, mcp.CodeUnsupportedProtocolVersion, "Unsupported protocol version"},
		{`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`, mcp.CodeInvalidParams, "io.modelcontextprotocol/clientCapabilities"},
		{`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}`, mcp.CodeInvalidParams, "io.modelcontextprotocol/clientCapabilities"},
		{`"_meta":{"io.modelcontextprotocol/protocolVersion":7,"io.modelcontextprotocol/clientCapabilities":{}}`, mcp.CodeInvalidParams, "io.modelcontextprotocol/protocolVersion"},
		{`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":"me"}`, mcp.CodeInvalidParams, "io.modelcontextprotocol/clientInfo"},
		{`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"loud"}`, mcp.CodeInvalidParams, "io.modelcontextprotocol/logLevel"},
		{`"_meta":"io.modelcontextprotocol/protocolVersion"`, mcp.CodeInvalidParams, "_meta must be an object"},
	} {
		for _, method := range []string{"tools/call", "server/discover"} {
			a.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{"name":"x",%s}}`, i, method, tc.meta))
			m := a.next()
			if m.ID.String() != fmt.Sprint(i) || m.Error == nil || m.Error.Code != tc.code || !strings.Contains(m.Error.Message, tc.says) {
				t.Errorf("%s with %s: got %s, want %d saying %q", method, tc.meta, m.AppendJSON(nil), tc.code, tc.says)
				continue
			}
			if tc.code == mcp.CodeUnsupportedProtocolVersion {
				if v, ok := m.Error.SupportedVersions(); !ok || !slices.Equal(v, mcp.AllVersions()) {
					t.Errorf("-32022 lists %v, want %v", v, mcp.AllVersions())
				}
			}
		}
	}
	f.mu.Lock()
	handed := len(f.calls)
	f.mu.Unlock()
	if handed != 0 {
		t.Errorf("the face was handed %d calls of bad requests", handed)
	}
}

// TestConnEras: legacy and modern requests on one connection: the legacy
// session's answers are the face's as they are; a modern request's are
// completed (resultType, the server's identity, caching hints of a list,
// the tools in a stable order), what the result has already kept; a face
// that is the server (Own) names itself instead of the server.
func TestConnEras(t *testing.T) {
	f := newTestFace()
	f.desc = testDescription
	c, a, _ := serveConn(t, f, Options{})
	a.send(`{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"legacy","version":"2"}}}`)
	a.next()
	a.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	tools := `{"tools":[{"name":"b"},{"name":"a"},{"name":"c"}]}`

	a.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	f.call(t, "1").Answer(json.RawMessage(tools), nil)
	if m := a.next(); string(m.Result) != tools {
		t.Errorf("legacy tools/list: %s, want it as the face answered", m.Result)
	}
	a.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + modernMeta + `}}`)
	call := f.call(t, "2")
	if !call.Modern() || call.Meta().ProtocolVersion != mcp.ModernVersion {
		t.Errorf("call 2: modern %v, meta %+v", call.Modern(), call.Meta())
	}
	call.Answer(json.RawMessage(tools), nil)
	m := a.next()
	r := result(t, m)
	var listed []struct{ Name string }
	_ = json.Unmarshal(r["tools"], &listed)
	if len(listed) != 3 || listed[0].Name != "a" || listed[1].Name != "b" || listed[2].Name != "c" ||
		string(r["resultType"]) != `"complete"` || string(r["ttlMs"]) != "0" || string(r["cacheScope"]) != `"private"` ||
		!strings.Contains(string(r["_meta"]), `"name":"face"`) {
		t.Errorf("modern tools/list: %s", m.Result)
	}
	// A modern server's own result: what it says is kept.
	a.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x",` + modernMeta + `}}`)
	f.call(t, "3").Answer(json.RawMessage(`{"content":[],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"server"}}}`), nil)
	if m := a.next(); strings.Count(string(m.Result), "serverInfo") != 1 || !strings.Contains(string(m.Result), `"name":"server"`) || strings.Contains(string(m.Result), "ttlMs") {
		t.Errorf("modern tools/call of a modern server: %s", m.Result)
	}
	// A modern ping.
	a.send(`{"jsonrpc":"2.0","id":4,"method":"ping","params":{` + modernMeta + `}}`)
	if m := a.next(); string(result(t, m)["resultType"]) != `"complete"` {
		t.Errorf("modern ping: %s", m.Result)
	}
	// Errors pass as they are.
	a.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x",` + modernMeta + `}}`)
	f.call(t, "5").Answer(nil, mcp.NewError(mcp.CodeInvalidParams, "no"))
	if m := a.next(); m.Error == nil || m.Error.Message != "no" {
		t.Errorf("modern error: %s", m.AppendJSON(nil))
	}
	if e := c.Eras(); e.Modern != 4 || e.Legacy != 2 || c.DisplayName() != "legacy 2" {
		t.Errorf("eras %+v, name %q: want 4 modern, 2 legacy, named by its initialize", e, c.DisplayName())
	}

	// The gateway names itself.
	own := *testDescription
	own.Own = true
	f.mu.Lock()
	f.desc = &own
	f.mu.Unlock()
	a.send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"x",` + modernMeta + `}}`)
	f.call(t, "6").Answer(json.RawMessage(`{"content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"server"},"other":1}}`), nil)
	if m := a.next(); strings.Contains(string(m.Result), `"name":"server"`) || !strings.Contains(string(m.Result), `"name":"face"`) || !strings.Contains(string(m.Result), `"other":1`) {
		t.Errorf("an Own face's result: %s", m.Result)
	}
}

// TestCallTrace: the trace context of a request's _meta is the call's, for
// mcpgen's log lines, a legacy request's too; WantsLog hears a modern
// request's log level while it is under way.
func TestCallTrace(t *testing.T) {
	f := newTestFace()
	f.desc = testDescription
	c, a, _ := serveConn(t, f, Options{})
	a.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"traceparent":"00-a-b-01"}}}`)
	a.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{` + strings.TrimSuffix(strings.TrimPrefix(modernMeta, `"_meta":{`), "}") + `,"traceparent":"00-c-d-01","tracestate":"x=y","io.modelcontextprotocol/logLevel":"warning"}}}`)
	a.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"}}`)
	if got := fmt.Sprint(f.call(t, "1").Trace()); got != "[traceparent 00-a-b-01]" {
		t.Errorf("legacy trace: %s", got)
	}
	if got := fmt.Sprint(f.call(t, "2").Trace()); got != "[traceparent 00-c-d-01 tracestate x=y]" {
		t.Errorf("modern trace: %s", got)
	}
	if got := f.call(t, "3").Trace(); got != nil {
		t.Errorf("no trace: %v", got)
	}
	if c.WantsLog("info") || !c.WantsLog("warning") || !c.WantsLog("error") {
		t.Error("WantsLog: want warning and above")
	}
	f.call(t, "2").Answer(json.RawMessage(`{}`), nil)
	a.next()
	if c.WantsLog("emergency") {
		t.Error("WantsLog after the call ended")
	}
}
