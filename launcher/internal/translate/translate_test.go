package translate

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

func digest(t *testing.T, method, params string) Digest {
	t.Helper()
	d, err := DigestOf(method, json.RawMessage(params))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDigestOf(t *testing.T) {
	base := digest(t, "tools/call", `{"name":"x","arguments":{"a":1,"b":[true,"s"]}}`)
	for _, tc := range []struct {
		name, method, params string
		same                 bool
	}{
		{"spaced, in another order of params", "tools/call", `{ "arguments" : {"a":1, "b":[true, "s"]}, "name":"x"}`, true},
		{"arguments in another order", "tools/call", `{"name":"x","arguments":{"b":[true,"s"],"a":1}}`, false},
		{"with the retry's members", "tools/call", `{"name":"x","arguments":{"a":1,"b":[true,"s"]},"inputResponses":{"k":{}},"requestState":"s","_meta":{"progressToken":3}}`, true},
		{"other arguments", "tools/call", `{"name":"x","arguments":{"a":2,"b":[true,"s"]}}`, false},
		{"a number written otherwise", "tools/call", `{"name":"x","arguments":{"a":1.0,"b":[true,"s"]}}`, false},
		{"other tool", "tools/call", `{"name":"y","arguments":{"a":1,"b":[true,"s"]}}`, false},
		{"other method", "prompts/get", `{"name":"x","arguments":{"a":1,"b":[true,"s"]}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := digest(t, tc.method, tc.params) == base; got != tc.same {
				t.Errorf("same digest = %v, want %v", got, tc.same)
			}
		})
	}
	if _, err := DigestOf("tools/call", json.RawMessage(`[1]`)); err == nil {
		t.Error("DigestOf of params that are not an object: no error")
	}
}

func TestStateSealOpen(t *testing.T) {
	s := NewSigner()
	now := time.Now()
	st := State{Held: 7, Agent: 3, Method: "tools/call", Digest: digest(t, "tools/call", `{"name":"x"}`), Expires: now.Add(time.Minute).Truncate(time.Millisecond)}
	sealed := s.Seal(st)
	got, err := s.Open(sealed)
	if err != nil {
		t.Fatalf("Open(Seal(st)): %v", err)
	}
	if got.Held != st.Held || got.Agent != st.Agent || got.Method != st.Method || got.Digest != st.Digest || !got.Expires.Equal(st.Expires) {
		t.Errorf("Open(Seal(st)) = %+v, want %+v", got, st)
	}
	if err := got.Check(3, "tools/call", st.Digest, now); err != nil {
		t.Errorf("Check of its own retry: %v", err)
	}

	// Every byte altered is refused.
	body, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(sealed, statePrefix))
	for i := range body {
		b := append([]byte(nil), body...)
		b[i] ^= 0x20
		if _, err := s.Open(statePrefix + base64.RawURLEncoding.EncodeToString(b)); err == nil {
			t.Fatalf("a state with byte %d altered was opened", i)
		}
	}
	for _, bad := range []string{"", "mcpgen1.", "mcpgen1.!!", "other." + sealed, sealed[:len(sealed)-2], strings.Repeat("a", 10000)} {
		if _, err := s.Open(bad); err == nil {
			t.Errorf("Open(%.40q) = nil error", bad)
		}
	}
	// Another launcher's (another key) is refused.
	if _, err := NewSigner().Open(sealed); err == nil {
		t.Error("a state of another signer was opened")
	}

	for _, tc := range []struct {
		name   string
		agent  uint64
		method string
		d      Digest
		now    time.Time
		want   string
	}{
		{"another agent", 4, "tools/call", st.Digest, now, "another client"},
		{"another method", 3, "prompts/get", st.Digest, now, "tools/call, not a prompts/get"},
		{"other arguments", 3, "tools/call", digest(t, "tools/call", `{"name":"y"}`), now, "other arguments"},
		{"expired", 3, "tools/call", st.Digest, now.Add(2 * time.Minute), "expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := got.Check(tc.agent, tc.method, tc.d, tc.now)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

var confirm = mcp.InputRequest{Method: "elicitation/create", Params: json.RawMessage(`{"message":"Confirm?","requestedSchema":{"type":"object"}}`)}

func hold(t *testing.T, tab *Table, agent uint64, params string, onExpire func(*Held)) (*Held, string) {
	t.Helper()
	h, result, err := tab.Hold(Request{Agent: agent, Method: "tools/call", Digest: digest(t, "tools/call", params), Ask: confirm, Timeout: time.Hour, OnExpire: onExpire})
	if err != nil {
		t.Fatal(err)
	}
	if mcp.ResultType(result) != mcp.ResultInputRequired {
		t.Fatalf("Hold's result %s is not input_required", result)
	}
	ir, err := mcp.ParseInputRequired(result)
	if err != nil {
		t.Fatal(err)
	}
	if len(ir.Keys) != 1 || ir.InputRequests[ir.Keys[0]].Method != "elicitation/create" || !ir.HasState {
		t.Fatalf("Hold's result %s does not ask the server's request with a state", result)
	}
	return h, ir.RequestState
}

func TestTableResume(t *testing.T) {
	tab := NewTable()
	const params = `{"name":"x","arguments":{"a":1}}`
	d := digest(t, "tools/call", params)
	h, state := hold(t, tab, 1, params, nil)
	h.Value = "mine"
	answer := map[string]json.RawMessage{inputKey: json.RawMessage(`{"action":"accept"}`)}

	for _, tc := range []struct {
		name      string
		agent     uint64
		state     string
		responses map[string]json.RawMessage
		want      string
	}{
		{"forged", 1, state[:len(state)-3] + "AAA", answer, "not one that mcpgen gave"},
		{"another agent's", 2, state, answer, "another client"},
		{"an answer to a request never made", 1, state, map[string]json.RawMessage{inputKey: answer[inputKey], "other": json.RawMessage(`{}`)}, `inputResponses["other"] answers a request that was never made`},
		{"no answer", 1, state, map[string]json.RawMessage{}, "has no answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := tab.Resume(tc.agent, "tools/call", d, tc.state, tc.responses)
			if err == nil || !strings.Contains(err.Message, tc.want) || err.Code != mcp.CodeInvalidParams {
				t.Fatalf("Resume = %v, %v; want an invalid params error with %q", r, err, tc.want)
			}
		})
	}
	if s := tab.Stats(); s.Held != 1 {
		t.Fatalf("after refused retries, %d held, want 1 (a refused retry consumes nothing)", s.Held)
	}
	r, err := tab.Resume(1, "tools/call", d, state, answer)
	if err != nil {
		t.Fatal(err)
	}
	if r.Held != h || r.Held.Value != "mine" || string(r.Input) != `{"action":"accept"}` || r.Answered {
		t.Errorf("Resume = %+v", r)
	}
	// A state is good for one retry.
	if _, err := tab.Resume(1, "tools/call", d, state, answer); err == nil || !strings.Contains(err.Message, "over") {
		t.Errorf("a replayed state: %v, want an error that its call is over", err)
	}
	if s := tab.Stats(); s.Held != 0 || s.Bytes != 0 {
		t.Errorf("Stats = %+v, want nothing held", s)
	}
	if h.Drop() {
		t.Error("Drop of a resumed call reports it held")
	}
}

func TestTableSettle(t *testing.T) {
	tab := NewTable()
	h, state := hold(t, tab, 1, `{"name":"x"}`, nil)
	if !h.Settle(json.RawMessage(`{"content":[]}`), nil) {
		t.Fatal("Settle of a held call reports false")
	}
	if s := tab.Stats(); s.Bytes != len(`{"content":[]}`) {
		t.Errorf("Stats.Bytes = %d, want the answer's", s.Bytes)
	}
	r, err := tab.Resume(1, "tools/call", digest(t, "tools/call", `{"name":"x"}`), state, map[string]json.RawMessage{inputKey: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Answered || string(r.Result) != `{"content":[]}` {
		t.Errorf("the retry of a call that the server answered meanwhile: %+v", r)
	}
	if s := tab.Stats(); s.Bytes != 0 {
		t.Errorf("after the retry, %d bytes held", s.Bytes)
	}

	// Beyond the bound, an answer is replaced by an error.
	big := make([]byte, MaxHeldAnswerBytes/2+1)
	h1, _ := hold(t, tab, 1, `{"name":"a"}`, nil)
	h2, _ := hold(t, tab, 1, `{"name":"b"}`, nil)
	h1.Settle(big, nil)
	h2.Settle(big, nil)
	if h2.answer.err == nil || h2.answer.result != nil {
		t.Errorf("an answer beyond MaxHeldAnswerBytes was kept")
	}
	if s := tab.Stats(); s.Bytes != len(big) {
		t.Errorf("Stats.Bytes = %d, want %d", s.Bytes, len(big))
	}
	h1.Drop()
	h2.Drop()
	if s := tab.Stats(); s.Bytes != 0 || s.Held != 0 {
		t.Errorf("after Drop, Stats = %+v", s)
	}
}

func TestTableBounds(t *testing.T) {
	tab := NewTable()
	for i := range MaxHeldPerAgent {
		hold(t, tab, 1, `{"name":"x","arguments":{"i":`+strconv.Itoa(i)+`}}`, nil)
	}
	if _, _, err := tab.Hold(Request{Agent: 1, Method: "tools/call", Ask: confirm}); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("Hold beyond MaxHeldPerAgent: %v, want an error", err)
	}
	for agent := uint64(2); tab.Stats().Held < MaxHeld; agent++ {
		hold(t, tab, agent, `{"name":"x"}`, nil)
	}
	if _, _, err := tab.Hold(Request{Agent: 9999, Method: "tools/call", Ask: confirm}); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("Hold beyond MaxHeld: %v, want an error", err)
	}
}

func TestTableExpires(t *testing.T) {
	tab := NewTable()
	expired := make(chan *Held, 1)
	params := `{"name":"x"}`
	h, _, err := tab.Hold(Request{Agent: 1, Method: "tools/call", Digest: digest(t, "tools/call", params), Ask: confirm, Timeout: time.Millisecond,
		OnExpire: func(h *Held) { expired <- h }})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-expired:
		if got != h {
			t.Fatal("OnExpire got another call")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a held call did not expire")
	}
	if s := tab.Stats(); s.Held != 0 {
		t.Errorf("an expired call is held still: %+v", s)
	}
	if h.Drop() {
		t.Error("Drop of an expired call reports it held")
	}
}

func TestTableDropBeforeExpiry(t *testing.T) {
	tab := NewTable()
	var mu sync.Mutex
	ran := false
	h, _, err := tab.Hold(Request{Agent: 1, Method: "tools/call", Ask: confirm, Timeout: time.Millisecond,
		OnExpire: func(*Held) { mu.Lock(); ran = true; mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	dropped := h.Drop()
	time.Sleep(20 * time.Millisecond) // a late timer must find nothing to do
	mu.Lock()
	defer mu.Unlock()
	if dropped == ran {
		t.Errorf("Drop = %v and OnExpire ran = %v: exactly one of them must end the call", dropped, ran)
	}
}

// asker is a legacy agent that answers what it can.
type asker struct {
	can     map[string]bool
	answers map[string]string // by method
	fail    *mcp.Error
	asked   []string
}

func (a *asker) Can(method string) bool { return a.can[method] }
func (a *asker) Ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *mcp.Error) {
	a.asked = append(a.asked, method)
	if a.fail != nil {
		return nil, a.fail
	}
	return json.RawMessage(a.answers[method]), nil
}
func (a *asker) Roots() json.RawMessage { return json.RawMessage(`{"roots":[{"uri":"file:///w"}]}`) }

func TestAnswer(t *testing.T) {
	ir, err := mcp.ParseInputRequired(json.RawMessage(`{"resultType":"input_required","inputRequests":{
		"b":{"method":"elicitation/create","params":{"message":"Sure?"}},
		"a":{"method":"roots/list"},
		"c":{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"2+2?"}}]}}},
		"requestState":"server's"}`))
	if err != nil {
		t.Fatal(err)
	}
	agent := &asker{can: map[string]bool{"elicitation/create": true, "sampling/createMessage": true},
		answers: map[string]string{"elicitation/create": `{"action":"accept"}`, "sampling/createMessage": `{"role":"assistant","content":{"type":"text","text":"4"}}`}}
	params := json.RawMessage(`{"name":"x","arguments":{},"_meta":{"progressToken":1}}`)
	retry, err := Answer(context.Background(), agent, params, ir)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"x","arguments":{},"_meta":{"progressToken":1},"inputResponses":{"b":{"action":"accept"},"a":{"roots":[{"uri":"file:///w"}]},"c":{"role":"assistant","content":{"type":"text","text":"4"}}},"requestState":"server's"}`
	if string(retry) != want {
		t.Errorf("retry params:\n got %s\nwant %s", retry, want)
	}
	if strings.Join(agent.asked, ",") != "elicitation/create,sampling/createMessage" {
		t.Errorf("asked %v, want the server's requests in its order, roots answered by mcpgen", agent.asked)
	}

	// No state from the server: none in the retry, even one the first call had.
	ir2 := &mcp.InputRequiredResult{InputRequests: map[string]mcp.InputRequest{"r": {Method: "roots/list"}}, Keys: []string{"r"}}
	retry, err = Answer(context.Background(), agent, json.RawMessage(`{"name":"x","requestState":"old"}`), ir2)
	if err != nil || strings.Contains(string(retry), "requestState") {
		t.Errorf("retry without the server's state = %s, %v", retry, err)
	}

	for _, tc := range []struct {
		name  string
		agent *asker
		want  string
	}{
		{"no capability", &asker{can: map[string]bool{"sampling/createMessage": true}}, `elicitation/create ("Sure?"), and the client did not declare the elicitation capability`},
		{"the agent's error", &asker{can: agent.can, fail: mcp.NewError(-1, "user said no")}, "answered with an error: user said no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Answer(context.Background(), tc.agent, params, ir)
			var ie *InputError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Answer: %v, want an InputError with %q", err, tc.want)
			}
		})
	}
	unknown := &mcp.InputRequiredResult{InputRequests: map[string]mcp.InputRequest{"x": {Method: "tasks/get"}}, Keys: []string{"x"}}
	if _, err := Answer(context.Background(), agent, params, unknown); err == nil || !strings.Contains(err.Error(), "tasks/get") {
		t.Errorf("Answer of an unknown request: %v", err)
	}
}
