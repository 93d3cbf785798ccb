//go:build unix

package launcher

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/internal/hub"
	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/mcp"
)

// answerTo returns the answer to the request id (JSON), and the
// notifications that came before it; within a hang guard, which a stream
// of notifications does not extend.
func answerTo(t *testing.T, c *testserver.Client, id string) (answer *mcp.Message, before []*mcp.Message) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for time.Now().Before(deadline) {
		m := c.Next()
		if m.IsResponse() && m.ID.String() == id {
			return m, before
		}
		before = append(before, m)
	}
	t.Fatalf("no answer to request %s within %s, after %d other messages", id, waitLong, len(before))
	return nil, nil
}

// toolError returns the text of an error result, failing the test when m
// is not one.
func toolError(t *testing.T, via string, m *mcp.Message) string {
	t.Helper()
	var r mcp.CallToolResult
	if m.Error != nil || json.Unmarshal(m.Result, &r) != nil || !r.IsError || len(r.Content) == 0 {
		t.Fatalf("%s: got %s, want an error result", via, m.AppendJSON(nil))
	}
	return r.Content[0].Text
}

// A way in is how an agent reaches the session's server: connect NAME
// (the server's hub) or the gateway.
type wayIn struct {
	name    string
	connect func() *testserver.Client
}

func waysIn(ts *testSession, server string) []wayIn {
	return []wayIn{
		{"connect " + server, func() *testserver.Client { return ts.connect(server, "agent") }},
		{"the gateway", func() *testserver.Client { return ts.gatewayClient("agent") }},
	}
}

// TestSessionDeepAnswer: a stdio server answers a call with
// structuredContent nested deeper than a message may be. With its id
// before the result, the call ends at once, with an error that says why;
// with the id after it, nothing tells which call it answers: the call ends
// at the server's tool_timeout. Either way the connection goes on; through
// connect NAME and through the gateway alike. (The answer used to be
// logged as "not a JSON-RPC message", and the call never ended.)
func TestSessionDeepAnswer(t *testing.T) {
	if testing.Short() {
		t.Skip("an attack test (a deep answer): run without -short")
	}
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, testServerTOML(t, "srv", "echo", "MCPGEN_TESTSERVER_TOOLS=echo,deep")+"tool_timeout = \"1s\"\n")
	ts := startSession(t, path, Options{})
	ts.wait("ready", allReady("srv"))
	for _, via := range waysIn(ts, "srv") {
		c := via.connect()
		c.Call("1", "deep", `{}`)
		m, _ := answerTo(t, c, "1")
		if m.Error == nil || !strings.Contains(m.Error.Message, `server "srv": its response is not a valid JSON-RPC message: parse error: exceeded max depth of 10000`) {
			t.Errorf("%s, the id first: got %s, want an error that says why", via.name, m.AppendJSON(nil))
		}

		c.Call("2", "deep", `{"idLast":true}`)
		m, _ = answerTo(t, c, "2")
		if text := toolError(t, via.name, m); !strings.Contains(text, `server "srv" did not answer tools/call within its tool_timeout (1s)`) {
			t.Errorf("%s, the id last: got %q, want the tool_timeout's error", via.name, text)
		}

		c.Call("3", "echo", `{"text":"after"}`)
		if m, _ := answerTo(t, c, "3"); testserver.ResultText(t, m) != "after" {
			t.Errorf("%s: the call after: got %s", via.name, m.AppendJSON(nil))
		}
		c.Close()
	}
}

// waitLines waits until the file at path holds n lines at least, and
// returns them: a hang guard, not a timing check.
func waitLines(t *testing.T, path string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		b, _ := os.ReadFile(path)
		lines := strings.Fields(string(b))
		if len(lines) >= n {
			return lines
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: got %q, want %d lines at least", path, lines, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSessionToolTimeout: the launcher ends a request that its server does
// not answer within its tool_timeout, and tells the server: a tool that
// never answers, and one that sends progress without end, through connect
// NAME and the gateway (an error result, which says so); another request
// (an error, CodeTimeout). The connection goes on.
func TestSessionToolTimeout(t *testing.T) {
	cancels := filepath.Join(t.TempDir(), "cancels")
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, testServerTOML(t, "srv", "echo", "MCPGEN_TESTSERVER_TOOLS=echo,never,stream", "MCPGEN_TESTSERVER_CANCELS="+cancels)+"tool_timeout = \"500ms\"\n")
	ts := startSession(t, path, Options{})
	ts.wait("ready", allReady("srv"))
	const want = `server "srv" did not answer tools/call within its tool_timeout (500ms): the request was cancelled`
	told := 0
	for _, via := range waysIn(ts, "srv") {
		c := via.connect()
		c.Call("1", "never", `{}`)
		m, _ := answerTo(t, c, "1")
		if text := toolError(t, via.name, m); !strings.Contains(text, want) {
			t.Errorf("%s, never: got %q, want %q", via.name, text, want)
		}

		c.Send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"stream","arguments":{},"_meta":{"progressToken":"p"}}}`)
		m, before := answerTo(t, c, "2")
		if text := toolError(t, via.name, m); !strings.Contains(text, want) {
			t.Errorf("%s, stream: got %q, want %q", via.name, text, want)
		}
		if len(before) == 0 || before[0].Method != "notifications/progress" || !bytes.Contains(before[0].Params, []byte(`"progressToken":"p"`)) {
			t.Errorf("%s, stream: got %d messages before the answer, want its progress under the agent's token", via.name, len(before))
		}
		told += 2

		if via.name == "connect srv" {
			// The gateway routes only the methods it knows; the hub
			// forwards any.
			c.Send(`{"jsonrpc":"2.0","id":3,"method":"test/never"}`)
			m, _ = answerTo(t, c, "3")
			if m.Error == nil || m.Error.Code != hub.CodeTimeout || !strings.Contains(m.Error.Message, `server "srv" did not answer test/never within its tool_timeout (500ms)`) {
				t.Errorf("%s, test/never: got %s, want error %d that says why", via.name, m.AppendJSON(nil), hub.CodeTimeout)
			}
			told++
		}

		c.Call("4", "echo", `{"text":"after"}`)
		if m, _ := answerTo(t, c, "4"); testserver.ResultText(t, m) != "after" {
			t.Errorf("%s: the call after: got %s", via.name, m.AppendJSON(nil))
		}
		// The server was told to stop each of them.
		waitLines(t, cancels, told)
		c.Close()
	}
}
