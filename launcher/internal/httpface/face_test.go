package httpface

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/internal/agent"
	"github.com/mcpgen/mcpgen/mcp"
)

// testAgent is what serves a test's sessions: an agent.Conn whose Handler
// answers a few methods of its own.
type testAgent struct {
	limits agent.Limits
	conns  atomic.Int32 // Conns serving

	mu      sync.Mutex
	serving map[*agent.Conn]bool
}

func (a *testAgent) serve(ctx context.Context, rwc io.ReadWriteCloser) {
	a.conns.Add(1)
	defer a.conns.Add(-1)
	h := &testHandler{all: a}
	h.conn = agent.New(ctx, rwc, h, agent.Options{Limits: a.limits})
	a.mu.Lock()
	if a.serving == nil {
		a.serving = map[*agent.Conn]bool{}
	}
	a.serving[h.conn] = true
	a.mu.Unlock()
	h.conn.Serve()
	a.mu.Lock()
	delete(a.serving, h.conn)
	a.mu.Unlock()
}

// listChanged tells every agent connection served that the tools changed.
func (a *testAgent) listChanged() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for c := range a.serving {
		c.ListChanged("tools")
	}
}

type testHandler struct {
	conn *agent.Conn
	all  *testAgent
}

// Request answers: initialize; echo (its params, as the result); progress
// (a progress notification for the request's token, then its params);
// ask (asks the agent for sampling, and answers with the agent's answer);
// notify (a notification for the agent, then {}); later (the same, the
// other way round); flood (n notifications of size bytes each, lossy as
// a hub's log messages are if it says so, then {}).
func (h *testHandler) Request(call *agent.Call) {
	params := call.Params()
	switch call.Method() {
	case "initialize":
		call.Answer(json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"test","version":"1"}}`), nil)
	case "echo":
		call.Answer(params, nil)
	case "tools/call":
		call.Answer(json.RawMessage(`{"content":[]}`), nil)
	case "progress":
		token := progressToken(params)
		h.conn.Send(&mcp.Message{Method: "notifications/progress", Params: json.RawMessage(`{"progressToken":` + token + `,"progress":1}`)})
		call.Answer(params, nil)
	case "ask":
		h.conn.Ask("sampling/createMessage", json.RawMessage(`{"messages":[]}`), func(result json.RawMessage, err *mcp.Error) {
			call.Answer(result, err)
		})
	case "notify":
		h.conn.Send(&mcp.Message{Method: "notifications/tools/list_changed"})
		call.Answer(json.RawMessage(`{}`), nil)
	case "change":
		// A change of the tools list, told to every agent's
		// subscriptions, as a face tells its agents.
		h.all.listChanged()
		call.Answer(json.RawMessage(`{}`), nil)
	case "hang":
		// Never answered: until its agent cancels it, which the test
		// hears of on hangCancelled.
		call.Hold()
		call.OnCancel(func(error) { hangCancelled <- call.Method() })
		hangStarted <- call.Method()
	case "log":
		// A log message of each level the params name, then {}.
		var p struct{ Levels []string }
		_ = json.Unmarshal(params, &p)
		for _, l := range p.Levels {
			h.conn.Send(&mcp.Message{Method: "notifications/message", Params: json.RawMessage(`{"level":"` + l + `","data":"at ` + l + `"}`)})
		}
		call.Answer(json.RawMessage(`{}`), nil)
	case "later":
		call.Answer(json.RawMessage(`{}`), nil)
		h.conn.Send(&mcp.Message{Method: "notifications/tools/list_changed"})
	case "flood":
		var p struct {
			N, Size int
			Lossy   bool
		}
		_ = json.Unmarshal(params, &p)
		pad := strings.Repeat("x", p.Size)
		call.Hold()
		h.conn.Go(func() {
			for i := 0; i < p.N && h.conn.Context().Err() == nil; i++ {
				msg := &mcp.Message{Method: "notifications/message", Params: json.RawMessage(`{"level":"info","data":"` + pad + `"}`)}
				if p.Lossy { // as a hub sends its server's log messages
					h.conn.Notify(agent.EncodeLine(msg), true, "", nil)
				} else {
					h.conn.Send(msg)
				}
			}
			call.Answer(json.RawMessage(`{}`), nil)
		})
	default:
		call.Answer(nil, mcp.NewError(mcp.CodeMethodNotFound, "no method %q", call.Method()))
	}
}

func (h *testHandler) Notification(*mcp.Message) {}

// hangStarted and hangCancelled hear of each "hang" call that began, and
// that its agent cancelled.
var hangStarted, hangCancelled = make(chan string, 16), make(chan string, 16)

// testFace serves a Face for the test on loopback; opts.Endpoint, when
// unset, serves the gateway ("") and a server "a" with a testAgent.
func testFace(t *testing.T, opts Options) (*Face, *httptest.Server, *testAgent) {
	t.Helper()
	ta := &testAgent{}
	if opts.Endpoint == nil {
		opts.Endpoint = func(server, tools string) (Serve, error) {
			if server != "" && server != "a" {
				return nil, fmt.Errorf("workspace %q has no server %q; it has: a", "t", server)
			}
			return ta.serve, nil
		}
	}
	opts.Loopback = true
	f := New(context.Background(), opts)
	srv := httptest.NewServer(f.Handler())
	t.Cleanup(func() {
		f.Close()
		srv.Close()
		if n := ta.conns.Load(); n != 0 {
			t.Errorf("%d agent connections still served after Close", n)
		}
	})
	return f, srv, ta
}

// Describe says what server/discover answers a stateless agent: tools,
// whose list tells of its changes.
func (h *testHandler) Describe() *agent.Description {
	return &agent.Description{
		Capabilities: json.RawMessage(`{"tools":{"listChanged":true}}`),
		ServerInfo:   json.RawMessage(`{"name":"test","version":"1"}`),
	}
}

func (h *testHandler) Ready(context.Context) error { return nil }

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"t","version":"1"}}}`

// request sends an MCP request to url with the headers a client sends,
// sid as the session, and more headers (name, value, ...; a value ""
// removes the header).
func request(t *testing.T, method, url, sid, body string, more ...string) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	} else {
		req.Header.Set("Accept", "text/event-stream")
	}
	if sid != "" {
		req.Header.Set(sessionHeader, sid)
	}
	for i := 0; i+1 < len(more); i += 2 {
		if more[i+1] == "" {
			req.Header.Del(more[i])
		} else {
			req.Header.Set(more[i], more[i+1])
		}
	}
	if strings.EqualFold(req.Header.Get("Host"), "") {
		req.Header.Del("Host")
	} else {
		req.Host = req.Header.Get("Host")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// readAll reads and closes a response's body.
func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// initialize begins a session at url, and returns its id.
func initialize(t *testing.T, url string) string {
	t.Helper()
	resp := request(t, http.MethodPost, url, "", initBody)
	body := readAll(t, resp)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"serverInfo"`) {
		t.Fatalf("initialize: %s %s", resp.Status, body)
	}
	sid := resp.Header.Get(sessionHeader)
	if sid == "" {
		t.Fatal("initialize: no Mcp-Session-Id in the answer")
	}
	resp = request(t, http.MethodPost, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if body := readAll(t, resp); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %s %s, want 202", resp.Status, body)
	}
	return sid
}

func TestSessionJSON(t *testing.T) {
	_, srv, _ := testFace(t, Options{})
	for _, path := range []string{"/mcp", "/servers/a/mcp"} {
		url := srv.URL + path
		sid := initialize(t, url)
		resp := request(t, http.MethodPost, url, sid, `{"jsonrpc":"2.0","id":"x","method":"echo","params":{"a":[1,
2]}}`)
		body := readAll(t, resp)
		if got, want := resp.Header.Get("Content-Type"), "application/json"; got != want {
			t.Errorf("%s: Content-Type %q, want %q", path, got, want)
		}
		if want := `{"jsonrpc":"2.0","id":"x","result":{"a":[1, 2]}}` + "\n"; body != want {
			t.Errorf("%s: answer %q, want %q", path, body, want)
		}
		if resp.Header.Get(sessionHeader) != sid {
			t.Errorf("%s: the answer's session %q, want %q", path, resp.Header.Get(sessionHeader), sid)
		}
	}
}

// sseEvents reads the data of every event of an event stream, until it
// ends.
func sseEvents(t *testing.T, body io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, data)
		}
	}
	return out
}

func TestProgressGoesToItsPOST(t *testing.T) {
	_, srv, _ := testFace(t, Options{})
	url := srv.URL + "/mcp"
	sid := initialize(t, url)
	resp := request(t, http.MethodPost, url, sid, `{"jsonrpc":"2.0","id":2,"method":"progress","params":{"_meta":{"progressToken":"tok"}}}`)
	defer resp.Body.Close()
	if got := resp.Header.Get("Content-Type"); got != "text/event-stream" {
		t.Fatalf("Content-Type %q, want an event stream", got)
	}
	events := sseEvents(t, resp.Body)
	want := []string{
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":1}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"_meta":{"progressToken":"tok"}}}`,
	}
	if strings.Join(events, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(events, "\n"), strings.Join(want, "\n"))
	}
}

// A server's request during a call goes to the call's POST while the
// client has no GET stream; the client's answer, POSTed, completes it.
func TestAskOnPOSTStream(t *testing.T) {
	_, srv, _ := testFace(t, Options{})
	url := srv.URL + "/mcp"
	sid := initialize(t, url)
	resp := request(t, http.MethodPost, url, sid, `{"jsonrpc":"2.0","id":5,"method":"ask"}`)
	defer resp.Body.Close()
	if got := resp.Header.Get("Content-Type"); got != "text/event-stream" {
		t.Fatalf("Content-Type %q, want an event stream", got)
	}
	rd := bufio.NewReader(resp.Body)
	ask := nextEvent(t, rd)
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if err := json.Unmarshal([]byte(ask), &m); err != nil || m.Method != "sampling/createMessage" {
		t.Fatalf("first event %q, want the server's sampling request", ask)
	}
	answer := request(t, http.MethodPost, url, sid, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"role":"assistant","content":{"type":"text","text":"yes"}}}`)
	if body := readAll(t, answer); answer.StatusCode != http.StatusAccepted {
		t.Fatalf("the client's answer: %s %s, want 202", answer.Status, body)
	}
	if got, want := nextEvent(t, rd), `{"jsonrpc":"2.0","id":5,"result":{"role":"assistant","content":{"type":"text","text":"yes"}}}`; got != want {
		t.Errorf("answer %q, want %q", got, want)
	}
}

func nextEvent(t *testing.T, rd *bufio.Reader) string {
	t.Helper()
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("the event stream ended: %v", err)
		}
		if data, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "data: "); ok {
			return data
		}
	}
}

// What is sent to the agent outside any POST goes to its GET stream; while
// it has none, to a POST that waits, before its answer; while none waits
// either, it waits for the GET stream.
func TestGETStream(t *testing.T) {
	_, srv, _ := testFace(t, Options{})
	url := srv.URL + "/mcp"
	sid := initialize(t, url)
	want := `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`

	// No GET stream: on the POST's, before its answer.
	resp := request(t, http.MethodPost, url, sid, `{"jsonrpc":"2.0","id":2,"method":"notify"}`)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("notify: Content-Type %q, want an event stream", ct)
	}
	events := sseEvents(t, resp.Body)
	resp.Body.Close()
	if len(events) != 2 || events[0] != want || !strings.Contains(events[1], `"id":2,"result":{}`) {
		t.Fatalf("notify's events: %q", events)
	}

	// Nothing waits: the GET stream, once it opens, has it.
	resp = request(t, http.MethodPost, url, sid, `{"jsonrpc":"2.0","id":3,"method":"later"}`)
	if body := readAll(t, resp); resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(body, `"id":3,"result":{}`) {
		t.Fatalf("later: %s %q %s", resp.Status, resp.Header.Get("Content-Type"), body)
	}
	get := request(t, http.MethodGet, url, sid, "")
	defer get.Body.Close()
	if get.StatusCode != http.StatusOK || get.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET: %s %q", get.Status, get.Header.Get("Content-Type"))
	}
	rd := bufio.NewReader(get.Body)
	if got := nextEvent(t, rd); got != want {
		t.Fatalf("GET stream: %q, want %q", got, want)
	}

	// Sent while it is open: on it, and the POST's answer is JSON.
	resp = request(t, http.MethodPost, url, sid, `{"jsonrpc":"2.0","id":4,"method":"notify"}`)
	if body := readAll(t, resp); resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(body, `"id":4`) {
		t.Fatalf("notify: %s %q %s", resp.Status, resp.Header.Get("Content-Type"), body)
	}
	if got := nextEvent(t, rd); got != want {
		t.Fatalf("GET stream: %q, want %q", got, want)
	}
	// One GET stream at a time.
	again := request(t, http.MethodGet, url, sid, "")
	if body := readAll(t, again); again.StatusCode != http.StatusConflict {
		t.Errorf("a second GET: %s %s, want 409", again.Status, body)
	}
}

func TestDeleteEndsSession(t *testing.T) {
	var opened, closed atomic.Int32
	f, srv, ta := testFace(t, Options{
		Open:  func() bool { opened.Add(1); return true },
		Close: func() { closed.Add(1) },
	})
	url := srv.URL + "/mcp"
	sid := initialize(t, url)
	if f.Sessions() != 1 || opened.Load() != 1 {
		t.Fatalf("sessions %d, opened %d: want 1, 1", f.Sessions(), opened.Load())
	}
	resp := request(t, http.MethodDelete, url, sid, "")
	if body := readAll(t, resp); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %s %s", resp.Status, body)
	}
	waitFor(t, "the agent connection to end", func() bool { return ta.conns.Load() == 0 })
	if f.Sessions() != 0 || closed.Load() != 1 {
		t.Errorf("sessions %d, closed %d: want 0, 1", f.Sessions(), closed.Load())
	}
	resp = request(t, http.MethodPost, url, sid, `{"jsonrpc":"2.0","id":2,"method":"echo"}`)
	if body := readAll(t, resp); resp.StatusCode != http.StatusNotFound {
		t.Errorf("after DELETE: %s %s, want 404", resp.Status, body)
	}
}

func TestSessionExpires(t *testing.T) {
	f, srv, _ := testFace(t, Options{SessionTimeout: 50 * time.Millisecond})
	url := srv.URL + "/mcp"
	resp := request(t, http.MethodPost, url, "", initBody)
	readAll(t, resp)
	sid := resp.Header.Get(sessionHeader)
	waitFor(t, "the session to expire", func() bool { return f.Sessions() == 0 })
	resp = request(t, http.MethodPost, url, sid, `{"jsonrpc":"2.0","id":2,"method":"echo"}`)
	if body := readAll(t, resp); resp.StatusCode != http.StatusNotFound {
		t.Errorf("after expiry: %s %s, want 404", resp.Status, body)
	}
}

// An open stream keeps its session from expiring: the expiry timer that
// fires while one is open (as expire, called here) ends nothing; once it
// closes, the session is unused again.
func TestOpenStreamKeepsSession(t *testing.T) {
	f, srv, _ := testFace(t, Options{SessionTimeout: time.Hour})
	url := srv.URL + "/mcp"
	sid := initialize(t, url)
	f.mu.Lock()
	s := f.sessions[sid]
	f.mu.Unlock()
	get := request(t, http.MethodGet, url, sid, "")
	waitFor(t, "the GET stream", func() bool { return s.currentGet() != nil })
	s.mu.Lock()
	used := s.used
	s.mu.Unlock()
	s.expire(used)
	if f.Sessions() != 1 {
		t.Fatal("the session expired under its GET stream")
	}
	get.Body.Close()
	waitFor(t, "the GET stream to end", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.open == 0
	})
	s.mu.Lock()
	used = s.used
	s.mu.Unlock()
	s.expire(used)
	if f.Sessions() != 0 {
		t.Fatal("the unused session did not expire")
	}
}

// waitFor polls cond, within a bound far beyond what it should take.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Each bad request of the issue gets its answer.
func TestBadRequests(t *testing.T) {
	_, srv, _ := testFace(t, Options{MaxBody: 1024})
	url := srv.URL + "/mcp"
	sid := initialize(t, url)
	ping := `{"jsonrpc":"2.0","id":9,"method":"ping"}`
	for _, tc := range []struct {
		name, method, path, sid, body string
		headers                       []string
		status                        int
		code                          string // in the body
	}{
		{"too large", "POST", "/mcp", sid, `{"jsonrpc":"2.0","id":9,"method":"echo","params":{"x":"` + strings.Repeat("x", 2000) + `"}}`, nil, 413, "-32600"},
		{"wrong content type", "POST", "/mcp", sid, ping, []string{"Content-Type", "text/plain"}, 415, "-32600"},
		{"no event stream accepted", "POST", "/mcp", sid, ping, []string{"Accept", "application/json"}, 406, "-32600"},
		{"GET without event stream", "GET", "/mcp", sid, "", []string{"Accept", "application/json"}, 406, "-32600"},
		{"malformed JSON", "POST", "/mcp", sid, `{"jsonrpc":"2.0","id":9,`, nil, 400, "-32700"},
		{"not JSON", "POST", "/mcp", sid, `hello`, nil, 400, "-32700"},
		{"batch", "POST", "/mcp", sid, "[" + ping + "]", nil, 400, "batches are not accepted"},
		{"not a message", "POST", "/mcp", sid, `{"jsonrpc":"2.0","id":9}`, nil, 400, "-32600"},
		{"unknown session", "POST", "/mcp", "0123456789abcdef", ping, nil, 404, "initialize a new one"},
		{"unknown session GET", "GET", "/mcp", "0123456789abcdef", "", nil, 404, "initialize a new one"},
		{"unknown session DELETE", "DELETE", "/mcp", "0123456789abcdef", "", nil, 404, "initialize a new one"},
		{"session of another endpoint", "POST", "/servers/a/mcp", sid, ping, nil, 404, "initialize a new one"},
		{"no session", "POST", "/mcp", "", ping, nil, 400, "begins with initialize"},
		{"unknown server", "POST", "/servers/nope/mcp", "", initBody, nil, 404, `no server \"nope\"`},
		{"foreign Host", "POST", "/mcp", sid, ping, []string{"Host", "evil.example:80"}, 403, "Host header"},
		{"foreign Origin", "POST", "/mcp", sid, ping, []string{"Origin", "http://evil.example"}, 403, "Origin"},
		{"other method", "PUT", "/mcp", sid, ping, nil, 405, "POST, GET and DELETE"},
		{"unknown version", "POST", "/mcp", sid, ping, []string{"MCP-Protocol-Version", "1999-01-01"}, 400, "unsupported MCP-Protocol-Version"},
		{"other path", "POST", "/nope", sid, ping, nil, 404, "no MCP endpoint here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := request(t, tc.method, srv.URL+tc.path, tc.sid, tc.body, tc.headers...)
			body := readAll(t, resp)
			if resp.StatusCode != tc.status || !strings.Contains(body, tc.code) {
				t.Errorf("%s %s: %s %s, want %d with %q", tc.method, tc.path, resp.Status, body, tc.status, tc.code)
			}
		})
	}
	// The session is still there, and answers.
	resp := request(t, http.MethodPost, url, sid, ping)
	if body := readAll(t, resp); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"id":9,"result":{}`) {
		t.Errorf("ping after the bad requests: %s %s", resp.Status, body)
	}
}

func TestTooManySessions(t *testing.T) {
	_, srv, _ := testFace(t, Options{MaxSessions: 2})
	url := srv.URL + "/mcp"
	initialize(t, url)
	second := initialize(t, url)
	resp := request(t, http.MethodPost, url, "", initBody)
	body := readAll(t, resp)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a third session: %s (Retry-After %q) %s, want 503 with Retry-After", resp.Status, resp.Header.Get("Retry-After"), body)
	}
	// Once one ends, another may begin.
	readAll(t, request(t, http.MethodDelete, url, second, ""))
	initialize(t, url)
}

func TestTooManyStreams(t *testing.T) {
	_, srv, _ := testFace(t, Options{MaxStreams: 1})
	url := srv.URL + "/mcp"
	sid := initialize(t, url)
	get := request(t, http.MethodGet, url, sid, "")
	defer get.Body.Close()
	resp := request(t, http.MethodPost, url, sid, `{"jsonrpc":"2.0","id":2,"method":"echo"}`)
	body := readAll(t, resp)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a second stream: %s (Retry-After %q) %s, want 503 with Retry-After", resp.Status, resp.Header.Get("Retry-After"), body)
	}
}

// A client that opens its GET stream and never reads it is dropped once
// what waits for it passes the agent connection's bounds, as a stdio
// agent's pipe would be: its session ends, and other sessions go on.
func TestSlowReaderDropped(t *testing.T) {
	f, srv, ta := testFace(t, Options{})
	ta.limits = agent.Limits{MaxQueued: 1 << 20}
	url := srv.URL + "/mcp"
	sid := initialize(t, url)
	other := initialize(t, url)

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n%s: %s\r\n\r\n", srv.Listener.Addr(), sessionHeader, sid)
	// Nothing of conn is read from now on. The flood goes to the GET
	// stream once it is open; the call's own answer, to its POST.
	f.mu.Lock()
	s := f.sessions[sid]
	f.mu.Unlock()
	waitFor(t, "the GET stream", func() bool { return s.currentGet() != nil })
	go post(url, sid, `{"jsonrpc":"2.0","id":2,"method":"flood","params":{"n":100000,"size":16384}}`)
	waitFor(t, "the slow client's session to end", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.sessions[sid] == nil
	})
	resp := request(t, http.MethodPost, url, other, `{"jsonrpc":"2.0","id":3,"method":"echo","params":{"ok":true}}`)
	if body := readAll(t, resp); !strings.Contains(body, `"id":3,"result":{"ok":true}`) {
		t.Errorf("the other session: %s %s", resp.Status, body)
	}
}

// Many sessions at once, each with its calls: every answer comes to the
// POST that asked, never another's.
func TestNoCrossedAnswers(t *testing.T) {
	_, srv, _ := testFace(t, Options{})
	url := srv.URL + "/mcp"
	const clients, calls = 16, 50
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		sid := initialize(t, url)
		wg.Go(func() {
			for i := range calls {
				params := fmt.Sprintf(`{"client":%d,"call":%d}`, c, i)
				resp, err := post(url, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"echo","params":%s}`, i, params))
				if err != nil {
					errs <- err
					return
				}
				if want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":%s}`, i, params); strings.TrimSpace(resp) != want {
					errs <- fmt.Errorf("client %d call %d: %s, want %s", c, i, resp, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// post is request for goroutines other than the test's.
func post(url, sid, body string) (string, error) {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(sessionHeader, sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s %s", resp.Status, b)
	}
	return string(b), err
}

// A request the session ends under gets an answer all the same.
func TestEndedUnderRequest(t *testing.T) {
	_, srv, _ := testFace(t, Options{})
	url := srv.URL + "/mcp"
	sid := initialize(t, url)
	done := make(chan string, 1)
	go func() {
		// ask waits for the client's answer, which never comes.
		resp, err := post(url, sid, `{"jsonrpc":"2.0","id":2,"method":"ask"}`)
		if err != nil {
			done <- err.Error()
			return
		}
		done <- resp
	}()
	// The ask is on the POST's stream: then DELETE.
	time.Sleep(10 * time.Millisecond)
	readAll(t, request(t, http.MethodDelete, url, sid, ""))
	select {
	case got := <-done:
		if got == "" {
			t.Error("no answer")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the request was left hanging")
	}
}

// The log never holds a refused token.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var _ = errors.New
var _ = slog.New
