package hub

import (
	"net/url"
	"strings"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/mcp"
)

// Translation between the eras, through the hub: a modern server's
// input_required result to a legacy agent's call.

// answerAsk reads the next message, which must be a request of method
// from the hub, and answers it with result.
func answerAsk(t *testing.T, c *testserver.Client, method, result string) *mcp.Message {
	t.Helper()
	m := c.Next()
	if m.Method != method || !m.IsRequest() {
		t.Fatalf("got %s, want a request %s", m.AppendJSON(nil), method)
	}
	c.Send(`{"jsonrpc":"2.0","id":` + m.ID.String() + `,"result":` + result + `}`)
	return m
}

// TestTranslateInputRequiredToLegacyAgent: a modern server that asks for
// input (input_required, two rounds, each with an elicitation, a sampling
// and roots) is answered by the legacy agent through the requests of its
// revision, roots by mcpgen; the call is retried with the answers, and the
// agent sees one call, with its progress token and one answer.
func TestTranslateInputRequiredToLegacyAgent(t *testing.T) {
	env, methods := methodsLog(t)
	th := newTestHub(t, "modern", env)
	c := th.client("legacy-agent", `{"elicitation":{},"sampling":{}}`)
	c.Send(`{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"elicit","arguments":{"text":"deploy","ask":"all","steps":2},"_meta":{"progressToken":"p"}}}`)
	for round := range 2 {
		m := answerAsk(t, c, "elicitation/create", `{"action":"accept","content":{"ok":true}}`)
		if !strings.Contains(string(m.Params), "Confirm deploy?") {
			t.Errorf("round %d: the elicitation's params %s are not the server's", round, m.Params)
		}
		answerAsk(t, c, "sampling/createMessage", `{"role":"assistant","content":{"type":"text","text":"ok"},"model":"m"}`)
	}
	m := c.Next()
	if m.ID.String() != `"c1"` {
		t.Fatalf("got %s, want the answer to c1", m.AppendJSON(nil))
	}
	got := testserver.ResultText(t, m)
	root := (&url.URL{Scheme: "file", Path: th.root}).String()
	round := ` confirm={"action":"accept","content":{"ok":true}} sample={"role":"assistant","content":{"type":"text","text":"ok"},"model":"m"} roots={"roots":[{"name":"workspace","uri":"` + root + `"}]}`
	if want := "deploy:" + round + round; got != want {
		t.Errorf("the call's result:\n got %s\nwant %s", got, want)
	}
	if mcp.ResultType(m.Result) != mcp.ResultComplete || strings.Contains(string(m.Result), "resultType") {
		t.Errorf("the legacy agent got %s, with the modern revision's members", m.Result)
	}
	c.Quiet() // one answer, nothing else
	if n := count(methods(), "tools/call 2026-07-28 legacy-agent"); n != 3 {
		t.Errorf("the server read %d tools/call, want 3 (the call, two retries)", n)
	}
}

// TestTranslateMissingCapability: a modern server that asks a legacy agent
// for what it did not declare (a careless server: the hub told it the
// agent's capabilities) gets no request to the agent: the call ends with a
// tool error that names what was asked. A careful server refuses the call
// itself, which the agent gets as the server sent it.
func TestTranslateMissingCapability(t *testing.T) {
	th := newTestHub(t, "modern")
	c := th.client("plain-agent", "")
	c.Call("1", "elicit", `{"text":"deploy","careless":true}`)
	m := c.Next()
	var r mcp.CallToolResult
	if m.Error != nil || json.Unmarshal(m.Result, &r) != nil || !r.IsError || len(r.Content) == 0 {
		t.Fatalf("got %s, want a tool error", m.AppendJSON(nil))
	}
	for _, want := range []string{`server "test"`, `elicitation/create ("Confirm deploy?")`, "did not declare the elicitation capability"} {
		if !strings.Contains(r.Content[0].Text, want) {
			t.Errorf("the tool error %q does not say %q", r.Content[0].Text, want)
		}
	}
	c.Call("2", "elicit", `{"text":"deploy"}`)
	if m := c.Next(); m.Error == nil || m.Error.Code != mcp.CodeMissingRequiredCapability {
		t.Errorf("a careful server: got %s, want its -32021", m.AppendJSON(nil))
	}
	c.Quiet()
}

// TestTranslateAgentRefuses: the legacy agent's error to what it is asked
// ends the call with a tool error that names the request and the error.
func TestTranslateAgentRefuses(t *testing.T) {
	th := newTestHub(t, "modern")
	c := th.client("agent", `{"sampling":{}}`)
	c.Call("1", "elicit", `{"text":"x","ask":"sampling"}`)
	m := c.Next()
	if m.Method != "sampling/createMessage" {
		t.Fatalf("got %s, want sampling/createMessage", m.AppendJSON(nil))
	}
	c.Send(`{"jsonrpc":"2.0","id":` + m.ID.String() + `,"error":{"code":-1,"message":"the user said no"}}`)
	m = c.Next()
	var r mcp.CallToolResult
	if json.Unmarshal(m.Result, &r) != nil || !r.IsError || !strings.Contains(r.Content[0].Text, "sampling/createMessage") || !strings.Contains(r.Content[0].Text, "the user said no") {
		t.Errorf("got %s, want a tool error naming the request and the agent's error", m.AppendJSON(nil))
	}
}

// TestTranslateCancel: a legacy agent that cancels its call while it is
// asked for input: the hub gives its question up (the agent is told), and
// the call gets no answer; the next call goes as well.
func TestTranslateCancel(t *testing.T) {
	th := newTestHub(t, "modern")
	c := th.client("agent", `{"elicitation":{}}`)
	c.Call("1", "elicit", `{"text":"x"}`)
	ask := c.Next()
	if ask.Method != "elicitation/create" {
		t.Fatalf("got %s, want elicitation/create", ask.AppendJSON(nil))
	}
	c.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	m := c.Next()
	if m.Method != "notifications/cancelled" || !strings.Contains(string(m.Params), `"requestId":`+ask.ID.String()) {
		t.Fatalf("got %s, want the hub's question cancelled", m.AppendJSON(nil))
	}
	c.Quiet()
	// A late answer goes nowhere.
	c.Send(`{"jsonrpc":"2.0","id":` + ask.ID.String() + `,"result":{"action":"accept"}}`)
	c.Call("2", "echo", `{"text":"still here"}`)
	if got := testserver.ResultText(t, c.Next()); got != "still here" {
		t.Errorf("echo after the cancel: %q", got)
	}
}

// TestTranslateAgentsApart: several legacy agents of one modern server
// are each asked only what their own calls need.
func TestTranslateAgentsApart(t *testing.T) {
	th := newTestHub(t, "modern")
	a := th.client("a", `{"elicitation":{}}`)
	b := th.client("b", `{"elicitation":{}}`)
	a.Call("1", "elicit", `{"text":"for-a"}`)
	b.Call("1", "elicit", `{"text":"for-b"}`)
	askA, askB := a.Next(), b.Next()
	if !strings.Contains(string(askA.Params), "for-a") || !strings.Contains(string(askB.Params), "for-b") {
		t.Fatalf("a was asked %s, b %s", askA.Params, askB.Params)
	}
	b.Send(`{"jsonrpc":"2.0","id":` + askB.ID.String() + `,"result":{"action":"decline"}}`)
	if got := testserver.ResultText(t, b.Next()); got != `for-b: confirm={"action":"decline"}` {
		t.Errorf("b's call: %q", got)
	}
	a.Send(`{"jsonrpc":"2.0","id":` + askA.ID.String() + `,"result":{"action":"accept"}}`)
	if got := testserver.ResultText(t, a.Next()); got != `for-a: confirm={"action":"accept"}` {
		t.Errorf("a's call: %q", got)
	}
	a.Quiet()
	b.Quiet()
}

// TestTranslateSameEra: a modern agent's request to a modern server gets
// the server's input_required as it is, with the server's requestState.
func TestTranslateSameEra(t *testing.T) {
	th := newTestHub(t, "modern")
	c := th.client("agent", "")
	c.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"elicit","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`)
	m := c.Next()
	ir, err := mcp.ParseInputRequired(m.Result)
	if err != nil || mcp.ResultType(m.Result) != mcp.ResultInputRequired || !strings.HasPrefix(ir.RequestState, "confirm:") {
		t.Fatalf("got %s, want the server's input_required as it is", m.AppendJSON(nil))
	}
	c.Quiet()
}
