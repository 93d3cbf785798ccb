package hub

import (
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/launcher/internal/translate"
	"github.com/mcpgen/mcpgen/mcp"
)

// Translation between the eras, through the hub: a modern server's
// input_required result to a legacy agent's call.

// answerAsk reads the next message, which must be a request of method
// from the hub, and answers it with result.
func answerAsk(t *testing.T, c *testserver.Client, method, result string) *mcp.Message {
	t.Helper()
	m := nextNotProgress(c)
	if m.Method != method || !m.IsRequest() {
		t.Fatalf("got %s, want a request %s", m.AppendJSON(nil), method)
	}
	c.Send(`{"jsonrpc":"2.0","id":` + m.ID.String() + `,"result":` + result + `}`)
	return m
}

// nextNotProgress returns the next message that is not progress (see
// TestTranslateProgress).
func nextNotProgress(c *testserver.Client) *mcp.Message {
	for {
		if m := c.Next(); m.Method != "notifications/progress" {
			return m
		}
	}
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
	m := nextNotProgress(c)
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

// The other way: a legacy server's request during a modern agent's call.

// modernCall sends a modern request (stateless: its _meta names the
// version and the agent's capabilities caps) to call tool with args;
// extra are more members of params (",..." JSON), a retry's say.
func modernCall(c *testserver.Client, id, tool, args, caps, extra string) {
	c.Send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + extra +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `,"io.modelcontextprotocol/clientInfo":{"name":"m","version":"1"}}}}`)
}

// inputRequired reads the next message, which must answer id with an
// input_required result asking what the server asked (method, with a
// params member that holds want), and returns its requestState.
func inputRequired(t *testing.T, c *testserver.Client, id, method, want string) string {
	t.Helper()
	m := c.Next()
	if m.ID.String() != id || m.Error != nil {
		t.Fatalf("got %s, want the answer to %s", m.AppendJSON(nil), id)
	}
	ir, err := mcp.ParseInputRequired(m.Result)
	if err != nil || mcp.ResultType(m.Result) != mcp.ResultInputRequired || len(ir.Keys) != 1 || !strings.HasPrefix(ir.RequestState, "mcpgen1.") {
		t.Fatalf("got %s, want input_required with one request and mcpgen's state", m.Result)
	}
	req := ir.InputRequests[ir.Keys[0]]
	if req.Method != method || !strings.Contains(string(req.Params), want) {
		t.Fatalf("it asks %s %s, want %s with %s", req.Method, req.Params, method, want)
	}
	return ir.RequestState
}

func retryWith(state, answer string) string {
	return `,"inputResponses":{"mcpgen":` + answer + `},"requestState":"` + state + `"`
}

const elicits = `{"elicitation":{}}`

// TestTranslateHeldRoundTrip: a legacy server that elicits during a modern
// agent's call: the call is answered input_required, asking the server's
// request, with mcpgen's requestState; the retry with the agent's input
// answers the server's request, and gets the next input_required (the
// server asks again), then the server's result. The agent is sent no
// request of the server's; a state is good for one retry.
func TestTranslateHeldRoundTrip(t *testing.T) {
	th := newTestHub(t, "echo")
	c := th.client("agent", "")
	modernCall(c, "1", "elicit", `{"text":"deploy","steps":2}`, elicits, "")
	state := inputRequired(t, c, "1", "elicitation/create", "Confirm deploy?")
	modernCall(c, "2", "elicit", `{"text": "deploy", "steps": 2}`, elicits, retryWith(state, `{"action":"accept","content":{"ok":true}}`))
	state2 := inputRequired(t, c, "2", "elicitation/create", "Confirm deploy?")
	modernCall(c, "3", "elicit", `{"text":"deploy","steps":2}`, elicits, retryWith(state2, `{"action":"decline"}`))
	m := c.Next()
	if got := testserver.ResultText(t, m); m.ID.String() != "3" || got != `deploy: {"action":"accept","content":{"ok":true}} {"action":"decline"}` {
		t.Errorf("the last retry: got %s", m.AppendJSON(nil))
	}
	modernCall(c, "4", "elicit", `{"text":"deploy","steps":2}`, elicits, retryWith(state, `{"action":"accept"}`))
	if m := c.Next(); m.Error == nil || m.Error.Code != mcp.CodeInvalidParams || !strings.Contains(m.Error.Message, "over") {
		t.Errorf("a replayed state: got %s, want -32602 saying its call is over", m.AppendJSON(nil))
	}
	c.Quiet()
	if s := th.hub.held.Stats(); s.Held != 0 || s.Bytes != 0 {
		t.Errorf("held after the calls: %+v", s)
	}
}

// TestTranslateHeldBadRetries: retries that name no call of the agent's
// that is held get a clear error (-32602), and the call stays held for
// the right one.
func TestTranslateHeldBadRetries(t *testing.T) {
	th := newTestHub(t, "echo")
	a, b := th.client("a", ""), th.client("b", "")
	modernCall(a, "1", "elicit", `{"text":"x"}`, elicits, "")
	state := inputRequired(t, a, "1", "elicitation/create", "Confirm x?")
	accept := `{"action":"accept"}`
	forged := state[:len(state)-4] + "AAAA"
	if forged == state {
		forged = state[:len(state)-4] + "BBBB"
	}
	for _, tc := range []struct {
		name, args, extra string
		c                 *testserver.Client
		want              string
	}{
		{"forged", `{"text":"x"}`, retryWith(forged, accept), a, "not one that mcpgen gave"},
		{"another agent's", `{"text":"x"}`, retryWith(state, accept), b, "another client"},
		{"other arguments", `{"text":"y"}`, retryWith(state, accept), a, "other arguments"},
		{"answers to requests never made", `{"text":"x"}`, `,"inputResponses":{"mcpgen":{}}`, a, "never made"},
		{"an answer to another request", `{"text":"x"}`, `,"inputResponses":{"mcpgen":{},"other":{}},"requestState":"` + state + `"`, a, `inputResponses["other"] answers a request that was never made`},
		{"a state that is not a string", `{"text":"x"}`, `,"inputResponses":{},"requestState":3`, a, "requestState must be a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			modernCall(tc.c, "9", "elicit", tc.args, elicits, tc.extra)
			m := tc.c.Next()
			if m.Error == nil || m.Error.Code != mcp.CodeInvalidParams || !strings.Contains(m.Error.Message, tc.want) {
				t.Errorf("got %s, want -32602 with %q", m.AppendJSON(nil), tc.want)
			}
		})
	}
	modernCall(a, "2", "elicit", `{"text":"x"}`, elicits, retryWith(state, accept))
	if got := testserver.ResultText(t, a.Next()); got != `x: {"action":"accept"}` {
		t.Errorf("the right retry after the bad ones: %q", got)
	}
}

// TestTranslateHeldExpires: a held call that its agent does not retry
// within the server's input_timeout is cancelled at the server, whose
// request is refused; its state is refused then.
func TestTranslateHeldExpires(t *testing.T) {
	cancels := t.TempDir() + "/cancels"
	th := newTestHub(t, "echo", "MCPGEN_TESTSERVER_CANCELS="+cancels)
	th.hub.SetInputTimeout(50 * time.Millisecond)
	c := th.client("agent", "")
	modernCall(c, "1", "elicit", `{"text":"x"}`, elicits, "")
	state := inputRequired(t, c, "1", "elicitation/create", "Confirm x?")
	waitFor(t, func() []string { b, _ := os.ReadFile(cancels); return strings.Fields(string(b)) }, "the call's cancellation", func(string) bool { return true })
	if s := th.hub.held.Stats(); s.Held != 0 {
		t.Errorf("held after the expiry: %+v", s)
	}
	modernCall(c, "2", "elicit", `{"text":"x"}`, elicits, retryWith(state, `{"action":"accept"}`))
	if m := c.Next(); m.Error == nil || !strings.Contains(m.Error.Message, "expired") && !strings.Contains(m.Error.Message, "over") {
		t.Errorf("a retry after the expiry: got %s", m.AppendJSON(nil))
	}
	// The server is free: it answers the next call.
	c.Call("3", "echo", `{"text":"next"}`)
	if got := testserver.ResultText(t, c.Next()); got != "next" {
		t.Errorf("echo: %q", got)
	}
}

// TestTranslateHeldAnsweredMeanwhile: a legacy server that answers the
// call while it is held (it does without the input): the answer waits for
// the retry.
func TestTranslateHeldAnsweredMeanwhile(t *testing.T) {
	th := newTestHub(t, "echo")
	c := th.client("agent", "")
	until := t.TempDir() + "/answer"
	args := `{"text":"x","impatient":true,"until":"` + until + `"}`
	modernCall(c, "1", "elicit", args, elicits, "")
	state := inputRequired(t, c, "1", "elicitation/create", "Confirm x?")
	if err := os.WriteFile(until, nil, 0o600); err != nil { // the server answers now
		t.Fatal(err)
	}
	for deadline := time.Now().Add(waitLong); th.hub.held.Stats().Bytes == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the server's answer was never kept")
		}
	}
	modernCall(c, "2", "elicit", args, elicits, retryWith(state, `{"action":"accept"}`))
	if got := testserver.ResultText(t, c.Next()); got != "impatient" {
		t.Errorf("the retry: %q, want the server's answer", got)
	}
	if s := th.hub.held.Stats(); s.Held != 0 || s.Bytes != 0 {
		t.Errorf("held after the retry: %+v", s)
	}
	c.Quiet()
}

// TestTranslateHeldAgentGoes: an agent that goes while its call is held:
// the server's request is refused and the call cancelled at the server;
// nothing stays held.
func TestTranslateHeldAgentGoes(t *testing.T) {
	cancels := t.TempDir() + "/cancels"
	th := newTestHub(t, "echo", "MCPGEN_TESTSERVER_CANCELS="+cancels)
	c := th.client("agent", "")
	modernCall(c, "1", "elicit", `{"text":"x"}`, elicits, "")
	inputRequired(t, c, "1", "elicitation/create", "Confirm x?")
	c.Close()
	waitFor(t, func() []string { b, _ := os.ReadFile(cancels); return strings.Fields(string(b)) }, "the call's cancellation", func(string) bool { return true })
	for deadline := time.Now().Add(waitLong); th.hub.held.Stats().Held != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the call of an agent that went stays held")
		}
	}
}

// TestTranslateHeldServerExits: a legacy server that exits while a call
// of its is held for the agent's input: its request, which nobody will
// read the answer of, waits no more, so that the upstream ends (and the
// supervisor can stop or restart the server) at once, not after the
// input_timeout; the agent's retry is told that the call ended.
func TestTranslateHeldServerExits(t *testing.T) {
	th := newTestHub(t, "echo")
	th.hub.SetInputTimeout(time.Hour) // longer than the test waits
	c := th.client("agent", "")
	modernCall(c, "1", "elicit", `{"text":"x"}`, elicits, "")
	state := inputRequired(t, c, "1", "elicitation/create", "Confirm x?")
	th.proc.Kill()
	select {
	case <-th.up.Done():
	case <-time.After(waitLong):
		t.Fatal("the upstream of a server that exited did not end: its request held for the agent's input still waits")
	}
	th.hub.Detach(th.up)
	modernCall(c, "2", "elicit", `{"text":"x"}`, elicits, retryWith(state, `{"action":"accept"}`))
	if m := c.Next(); m.Error == nil {
		t.Errorf("a retry after the server exited: got %s, want an error", m.AppendJSON(nil))
	}
}

// TestTranslateAttribution: a legacy server's requests go to the agent of
// the oldest call in flight that can answer them: a modern agent's call
// is held, a legacy agent is asked; neither sees the other's; a modern
// agent that declared no elicitation is not asked: its call fails with
// MissingRequiredClientCapabilityError naming elicitation, as a modern
// server's would.
func TestTranslateAttribution(t *testing.T) {
	th := newTestHub(t, "echo")
	m, l, plain := th.client("modern", ""), th.client("legacy", elicits), th.client("plain", "")
	modernCall(plain, "1", "elicit", `{"text":"p"}`, `{}`, "")
	if got := plain.Next(); got.Error == nil || got.Error.Code != mcp.CodeMissingRequiredCapability || !strings.Contains(string(got.Error.Data), `"requiredCapabilities":{"elicitation":{}}`) {
		t.Errorf("a modern agent without elicitation, alone: %s", got.AppendJSON(nil))
	}
	modernCall(m, "1", "elicit", `{"text":"m"}`, elicits, "")
	state := inputRequired(t, m, "1", "elicitation/create", "Confirm m?")
	l.Call("1", "elicit", `{"text":"l"}`)
	ask := l.Next()
	if ask.Method != "elicitation/create" || !strings.Contains(string(ask.Params), "Confirm l?") {
		t.Fatalf("the legacy agent got %s", ask.AppendJSON(nil))
	}
	l.Send(`{"jsonrpc":"2.0","id":` + ask.ID.String() + `,"result":{"action":"accept"}}`)
	if got := testserver.ResultText(t, l.Next()); got != `l: {"action":"accept"}` {
		t.Errorf("the legacy agent's call: %q", got)
	}
	modernCall(m, "2", "elicit", `{"text":"m"}`, elicits, retryWith(state, `{"action":"cancel"}`))
	if got := testserver.ResultText(t, m.Next()); got != `m: {"action":"cancel"}` {
		t.Errorf("the modern agent's call: %q", got)
	}
	m.Quiet()
	l.Quiet()
	plain.Quiet()
}

// TestTranslateHeldRetryCancelled: a modern agent that cancels its retry
// of a held call, while the server works on it with the input: the server
// hears the cancellation, the agent gets no answer, and nothing is held.
func TestTranslateHeldRetryCancelled(t *testing.T) {
	cancels := t.TempDir() + "/cancels"
	th := newTestHub(t, "echo", "MCPGEN_TESTSERVER_CANCELS="+cancels)
	c := th.client("agent", "")
	args := `{"text":"x","ms":60000}`
	modernCall(c, "1", "elicit", args, elicits, "")
	state := inputRequired(t, c, "1", "elicitation/create", "Confirm x?")
	modernCall(c, "2", "elicit", args, elicits, retryWith(state, `{"action":"accept"}`))
	c.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
	waitFor(t, func() []string { b, _ := os.ReadFile(cancels); return strings.Fields(string(b)) }, "the call's cancellation", func(string) bool { return true })
	c.Quiet()
	if s := th.hub.held.Stats(); s.Held != 0 {
		t.Errorf("held after the cancel: %+v", s)
	}
	c.Call("3", "echo", `{"text":"next"}`)
	if got := testserver.ResultText(t, c.Next()); got != "next" {
		t.Errorf("echo: %q", got)
	}
}

// TestTranslateProgress: progress crosses the eras with the call: a legacy
// agent gets the modern server's progress of every round under its own
// token; a modern agent gets the legacy server's progress of a held call
// (which asked for progress) under its retry's token.
func TestTranslateProgress(t *testing.T) {
	t.Run("legacy agent, modern server", func(t *testing.T) {
		th := newTestHub(t, "modern")
		c := th.client("agent", elicits)
		c.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"elicit","arguments":{"text":"x","steps":2},"_meta":{"progressToken":"mine"}}}`)
		progress := 0
		for {
			m := c.Next()
			switch {
			case m.Method == "notifications/progress":
				if !strings.Contains(string(m.Params), `"progressToken":"mine"`) {
					t.Errorf("progress under another token: %s", m.Params)
				}
				progress++
			case m.Method == "elicitation/create":
				c.Send(`{"jsonrpc":"2.0","id":` + m.ID.String() + `,"result":{"action":"accept"}}`)
			case m.IsResponse():
				if progress != 3 {
					t.Errorf("%d progress notifications before the answer, want 3 (one each round)", progress)
				}
				testserver.ResultText(t, m)
				return
			default:
				t.Fatalf("got %s", m.AppendJSON(nil))
			}
		}
	})
	t.Run("modern agent, legacy server", func(t *testing.T) {
		th := newTestHub(t, "echo")
		c := th.client("agent", "")
		// The server's call is the first one: its progress token is the
		// first call's, whose progress then goes to the retry's.
		c.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"elicit","arguments":{"text":"x"},"_meta":{"progressToken":"first",` + testserver.ModernMeta("m", elicits) + `}}}`)
		state := inputRequired(t, c, "1", "elicitation/create", "Confirm x?")
		c.Send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"elicit","arguments":{"text":"x"}` + retryWith(state, `{"action":"accept"}`) +
			`,"_meta":{"progressToken":"retry",` + testserver.ModernMeta("m", elicits) + `}}}`)
		m := c.Next()
		if m.Method != "notifications/progress" || !strings.Contains(string(m.Params), `"progressToken":"retry"`) {
			t.Fatalf("got %s, want progress under the retry's token", m.AppendJSON(nil))
		}
		if m := c.Next(); m.ID.String() != "2" {
			t.Fatalf("got %s, want the answer to the retry", m.AppendJSON(nil))
		}
	})
}

// TestTranslateHeldBound: an agent that holds as many calls as it may
// (translate.MaxHeldPerAgent) and retries none: the server's request for
// one more call is refused, saying why, and that call goes on (the server
// answers it); another agent still holds its own.
func TestTranslateHeldBound(t *testing.T) {
	th := newTestHub(t, "echo")
	c, other := th.client("greedy", ""), th.client("other", "")
	for i := range translate.MaxHeldPerAgent {
		id := strconv.Itoa(i + 1)
		modernCall(c, id, "elicit", `{"text":"x`+id+`"}`, elicits, "")
		inputRequired(t, c, id, "elicitation/create", "Confirm x"+id+"?")
	}
	modernCall(c, "99", "elicit", `{"text":"one more"}`, elicits, "")
	m := c.Next()
	if got := testserver.ResultText(t, m); m.ID.String() != "99" || !strings.Contains(got, "refused: mcpgen cannot hold the call") || !strings.Contains(got, "at most 16") {
		t.Errorf("one call more than the bound: got %s", m.AppendJSON(nil))
	}
	modernCall(other, "1", "elicit", `{"text":"y"}`, elicits, "")
	inputRequired(t, other, "1", "elicitation/create", "Confirm y?")
	if s := th.hub.held.Stats(); s.Held != translate.MaxHeldPerAgent+1 {
		t.Errorf("held: %+v, want %d", s, translate.MaxHeldPerAgent+1)
	}
}
