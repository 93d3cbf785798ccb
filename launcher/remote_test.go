//go:build unix

package launcher

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/mcp"
)

// A fakeRemote is a Streamable HTTP MCP server on a loopback port, small
// enough to expire its sessions on demand and to show what it was sent:
// JSON answers, session ids, no GET stream. Its tools are echo, hidden,
// and stream, whose answer is an event stream of progress without end.
// (The e2e tests reach the reference server-everything.)
type fakeRemote struct {
	srv *httptest.Server

	mu       sync.Mutex
	sessions map[string]bool // live sessions
	started  int
	deleted  []string
	headers  []http.Header // of every POST
	// storm makes the GET stream that of the hardening issue's hostile
	// server: a priming event with "retry: 1", and the end of the stream.
	storm   bool
	gets    int
	methods []string // of every POST
	streams int      // streams of stream's answers under way
}

func newFakeRemote(t *testing.T) *fakeRemote {
	f := &fakeRemote{sessions: map[string]bool{}}
	f.srv = httptest.NewServer(f) // on 127.0.0.1
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeRemote) url() string { return f.srv.URL + "/mcp" }

// expire ends every session, as a server that restarted has.
func (f *fakeRemote) expire() {
	f.mu.Lock()
	clear(f.sessions)
	f.mu.Unlock()
}

func (f *fakeRemote) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sid := r.Header.Get("Mcp-Session-Id")
	switch r.Method {
	case http.MethodDelete:
		f.deleted = append(f.deleted, sid)
		delete(f.sessions, sid)
		return
	case http.MethodPost:
	case http.MethodGet:
		if !f.storm || !f.sessions[sid] {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		f.gets++
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "id: g%d\nretry: 1\ndata:\n\n", f.gets)
		return
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	f.headers = append(f.headers, r.Header.Clone())
	body, _ := io.ReadAll(r.Body)
	msg, err := mcp.DecodeMessage(body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	f.methods = append(f.methods, msg.Method)
	if msg.Method == "initialize" {
		f.started++
		sid = fmt.Sprintf("session-%d", f.started)
		f.sessions[sid] = true
		w.Header().Set("Mcp-Session-Id", sid)
		f.answer(w, msg, `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"fake-remote","version":"1"}}`)
		return
	}
	if !f.sessions[sid] {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	if !msg.IsRequest() {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	switch msg.Method {
	case "tools/list":
		f.answer(w, msg, `{"tools":[{"name":"echo","inputSchema":{"type":"object"}},{"name":"hidden","inputSchema":{"type":"object"}},{"name":"stream","inputSchema":{"type":"object"}}]}`)
	case "tools/call":
		var p struct {
			Name      string `json:"name"`
			Arguments struct {
				Text string `json:"text"`
			} `json:"arguments"`
			Meta struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			} `json:"_meta"`
		}
		_ = json.Unmarshal(msg.Params, &p)
		if p.Name == "stream" {
			f.streams++
			f.mu.Unlock() // the stream lasts: other requests go on
			streamProgress(w, r, p.Meta.ProgressToken)
			f.mu.Lock()
			f.streams--
			return
		}
		text, _ := json.Marshal(sid + ": " + p.Arguments.Text)
		f.answer(w, msg, `{"content":[{"type":"text","text":`+string(text)+`}]}`)
	default:
		f.answer(w, msg, `{}`)
	}
}

// streamProgress answers with an event stream of progress under token,
// until the client goes.
func streamProgress(w http.ResponseWriter, r *http.Request, token json.RawMessage) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for i := 1; ; i++ {
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":%s,\"progress\":%d}}\n\n", token, i)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (f *fakeRemote) answer(w http.ResponseWriter, req *mcp.Message, result string) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write((&mcp.Message{ID: req.ID, Result: json.RawMessage(result)}).AppendJSON(nil))
}

// TestSessionRemote: a url server under the launcher: ready with its
// session, its headers and token resolved from the environment and sent,
// never shown; shared through connect NAME with its filters; a session the
// server ended is a crash, reconnected after backoff, the clients staying;
// the session deleted at the end.
func TestSessionRemote(t *testing.T) {
	f := newFakeRemote(t)
	const token = "secret-token-4c1e"
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpgen.toml")
	writeFile(t, path, fmt.Sprintf(`[workspace.vars]
TENANT = "acme"

[servers.web]
url = %s
bearer_token_env = "WEB_TOKEN"
headers = { X-Tenant = "${TENANT}" }
enabled_tools = ["echo"]

[servers.nokey]
url = %s
bearer_token_env = "NO_SUCH_TOKEN"
`, tomlString(f.url()), tomlString(f.url())))
	ts := startSession(t, path, Options{Env: append(os.Environ(), "WEB_TOKEN="+token)})
	st := ts.wait("web ready, nokey failed", func(st *ctl.Status) bool {
		return server(st, "web").State == ctl.Ready && server(st, "nokey").State == ctl.Failed
	})
	web := server(st, "web")
	if web.Kind != "remote" || web.Pid != 0 || web.StartedAt == nil || !slices.Equal(web.Tools, []string{"echo"}) {
		t.Errorf("web: %+v", web)
	}
	if nokey := server(st, "nokey"); !strings.Contains(nokey.LastError, "NO_SUCH_TOKEN is not set") {
		t.Errorf("nokey: %+v", nokey)
	}

	c := ts.connect("web", "agent")
	c.Call("1", "echo", `{"text":"hi"}`)
	if got := testserver.ResultText(t, c.Next()); got != "session-1: hi" {
		t.Errorf("echo: got %q", got)
	}
	c.Call("2", "hidden", `{}`)
	if m := c.Next(); m.Error == nil || m.Error.Code != mcp.CodeInvalidParams {
		t.Errorf("hidden: got %s, want -32602", m.AppendJSON(nil))
	}
	f.mu.Lock()
	for _, h := range f.headers {
		if h.Get("Authorization") != "Bearer "+token || h.Get("X-Tenant") != "acme" {
			t.Errorf("a POST had Authorization %q, X-Tenant %q", h.Get("Authorization"), h.Get("X-Tenant"))
		}
	}
	f.mu.Unlock()

	// The server forgets the session: the next request finds out, the
	// supervisor reconnects, the client stays and gets its answer.
	f.expire()
	c.Call("3", "echo", `{"text":"lost"}`)
	if m := c.Next(); m.Error == nil {
		t.Errorf("a call to an expired session: got %s, want an error", m.AppendJSON(nil))
	}
	ts.wait("web reconnected", func(st *ctl.Status) bool {
		s := server(st, "web")
		return s.State == ctl.Ready && s.Restarts >= 1
	})
	c.Call("4", "echo", `{"text":"again"}`)
	if got := testserver.ResultText(t, c.Next()); got != "session-2: again" {
		t.Errorf("echo after the reconnection: got %q", got)
	}
	if !slices.Contains(ts.events.states("web"), ctl.Backoff) {
		t.Errorf("web's states: %v, want backoff among them", ts.events.states("web"))
	}

	if err := ts.end(); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	if !slices.Contains(f.deleted, "session-2") {
		t.Errorf("sessions deleted: %q, want session-2", f.deleted)
	}
	f.mu.Unlock()
	shown, _ := json.Marshal(ts.s.Status())
	for what, text := range map[string]string{"status": string(shown), "events": ts.events.String()} {
		if strings.Contains(text, token) {
			t.Errorf("%s holds the token:\n%s", what, text)
		}
	}
}

// TestSessionRemoteLazy: a lazy url server with an idle_timeout holds no
// session until a request needs one; once unused for its idle_timeout the
// session is deleted and the server is idle; then tools/list is answered
// from its catalog, and a call opens a new session.
func TestSessionRemoteLazy(t *testing.T) {
	f := newFakeRemote(t)
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, fmt.Sprintf("[servers.web]\nurl = %s\nstart = \"lazy\"\nidle_timeout = \"100ms\"\n", tomlString(f.url())))
	ts := startSession(t, path, Options{})
	ts.wait("idle", serverIs("web", ctl.Idle))
	sessions := func() (started int, deleted []string) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.started, slices.Clone(f.deleted)
	}
	if started, _ := sessions(); started != 0 {
		t.Fatalf("a lazy url server at launch: got %d sessions opened, want none", started)
	}

	c := ts.connect("web", "agent") // no catalog yet: initialize connects
	c.Call("1", "echo", `{"text":"hi"}`)
	if got := testserver.ResultText(t, c.Next()); got != "session-1: hi" {
		t.Errorf("echo: got %q", got)
	}
	c.Close()
	ts.wait("idle once unused", serverIs("web", ctl.Idle))
	if started, deleted := sessions(); started != 1 || !slices.Equal(deleted, []string{"session-1"}) {
		t.Errorf("after the idle stop: got %d sessions opened, %q deleted; want 1, session-1", started, deleted)
	}

	c = ts.connect("web", "again") // initialize from the catalog
	c.Send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if m := c.Next(); !strings.Contains(string(m.Result), `"name":"echo"`) {
		t.Errorf("tools/list while idle: got %s", m.AppendJSON(nil))
	}
	if started, _ := sessions(); started != 1 {
		t.Errorf("listing while idle: got %d sessions opened, want still 1", started)
	}
	c.Call("3", "echo", `{"text":"again"}`)
	if got := testserver.ResultText(t, c.Next()); got != "session-2: again" {
		t.Errorf("echo after the idle stop: got %q, want it on a new session", got)
	}
	ts.waitStates("web", []ctl.State{ctl.Idle, ctl.Starting, ctl.Ready, ctl.Idle, ctl.Starting, ctl.Ready})
}

// TestSessionRemoteStreamGivenUp (hardening issue: "retry: 1" on the GET
// stream): a remote server whose GET stream closes at once, however often
// it is reconnected, has it given up after RemoteReconnects such streams;
// status and the log say so, and its tools work on.
func TestSessionRemoteStreamGivenUp(t *testing.T) {
	f := newFakeRemote(t)
	f.storm = true
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, fmt.Sprintf("[servers.web]\nurl = %s\n", tomlString(f.url())))
	// One reconnection: the floor makes it a second after the first stream.
	ts := startSession(t, path, Options{Timing: Timing{RemoteReconnects: 1}})
	st := ts.wait("the GET stream given up", func(st *ctl.Status) bool { return server(st, "web").Notice != "" })
	web := server(st, "web")
	if web.State != ctl.Ready || !strings.Contains(web.Notice, "the GET stream was given up after 2 connections in a row that failed or brought no message") {
		t.Errorf("web: got %+v, want ready, with the GET stream given up", web)
	}
	var table strings.Builder
	st.WriteTable(&table, time.Now(), false)
	if !strings.Contains(table.String(), "\nweb: the GET stream was given up") {
		t.Errorf("the table does not show the notice:\n%s", table.String())
	}
	if !ts.events.has("streamable: giving up the GET stream; the server's own messages (list changes, requests) will not arrive") {
		t.Errorf("the log does not say so:\n%s", ts.events)
	}
	f.mu.Lock()
	gets := f.gets
	f.mu.Unlock()
	if gets != 2 {
		t.Errorf("GETs: got %d, want 2", gets)
	}
	c := ts.connect("web", "agent")
	c.Call("1", "echo", `{"text":"hi"}`)
	if got := testserver.ResultText(t, c.Next()); got != "session-1: hi" {
		t.Errorf("echo: got %q", got)
	}
}

// TestSessionRemoteToolTimeout: a url server whose answer to a call is a
// stream of progress without end: the launcher ends the call at the
// server's tool_timeout, with an error result that says so, and tells the
// server (notifications/cancelled, and the stream is closed); through
// connect NAME and the gateway alike.
func TestSessionRemoteToolTimeout(t *testing.T) {
	f := newFakeRemote(t)
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, fmt.Sprintf("[servers.web]\nurl = %s\ntool_timeout = \"500ms\"\n", tomlString(f.url())))
	ts := startSession(t, path, Options{})
	ts.wait("ready", allReady("web"))
	cancelled := func() (n, streams int) {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, m := range f.methods {
			if m == "notifications/cancelled" {
				n++
			}
		}
		return n, f.streams
	}
	for i, via := range waysIn(ts, "web") {
		c := via.connect()
		c.Send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"stream","arguments":{},"_meta":{"progressToken":"p"}}}`)
		m, before := answerTo(t, c, "2")
		const want = `server "web" did not answer tools/call within its tool_timeout (500ms): the request was cancelled`
		if text := toolError(t, via.name, m); !strings.Contains(text, want) {
			t.Errorf("%s: got %q, want %q", via.name, text, want)
		}
		if len(before) == 0 || before[0].Method != "notifications/progress" {
			t.Errorf("%s: got %d messages before the answer, want its progress", via.name, len(before))
		}
		// The server is told, and its stream closed: a hang guard.
		for deadline := time.Now().Add(waitLong); ; time.Sleep(5 * time.Millisecond) {
			n, streams := cancelled()
			if n >= i+1 && streams == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the server got %d cancellations, %d streams go on; want %d, none", via.name, n, streams, i+1)
			}
		}
		c.Close()
	}
}
