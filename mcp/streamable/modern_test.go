package streamable

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

// A server is a scripted Streamable HTTP server on loopback for the tests
// of both eras: answer answers every request (nil: 405 for what is not a
// POST, else script's), and every HTTP request is recorded.
type server struct {
	t      testing.TB
	srv    *httptest.Server
	answer func(w http.ResponseWriter, r *http.Request, msg *mcp.Message)

	mu   sync.Mutex
	seen []seenPost
}

// A seenPost is an HTTP request the server got, with its JSON-RPC message
// (nil for a GET or a DELETE).
type seenPost struct {
	method string
	header http.Header
	msg    *mcp.Message
}

func newServer(t testing.TB, answer func(w http.ResponseWriter, r *http.Request, msg *mcp.Message)) *server {
	t.Helper()
	s := &server{t: t, answer: answer}
	s.srv = httptest.NewServer(s)
	t.Cleanup(s.srv.Close)
	return s
}

func (s *server) url() string { return s.srv.URL + "/mcp" }

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := seenPost{method: r.Method, header: r.Header.Clone()}
	if r.Method == http.MethodPost {
		body, _ := io.ReadAll(r.Body)
		m, err := mcp.DecodeMessage(bytes.TrimSpace(body))
		if err != nil {
			http.Error(w, "bad message", http.StatusBadRequest)
			return
		}
		rec.msg = m
	}
	s.mu.Lock()
	s.seen = append(s.seen, rec)
	s.mu.Unlock()
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	s.answer(w, r, rec.msg)
}

// requests returns what the server got so far.
func (s *server) requests() []seenPost {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

// methods returns the JSON-RPC methods of the POSTs, and the HTTP method
// of the others, in order.
func (s *server) methods() []string {
	var out []string
	for _, r := range s.requests() {
		if r.msg == nil {
			out = append(out, r.method)
		} else {
			out = append(out, r.msg.Method)
		}
	}
	return out
}

// last returns the last POST of a JSON-RPC method.
func (s *server) last(method string) seenPost {
	s.t.Helper()
	reqs := s.requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].msg != nil && reqs[i].msg.Method == method {
			return reqs[i]
		}
	}
	s.t.Fatalf("the server got no %s", method)
	return seenPost{}
}

// result answers msg with a JSON result.
func result(w http.ResponseWriter, msg *mcp.Message, res string) {
	writeJSON(w, `{"jsonrpc":"2.0","id":`+msg.ID.String()+`,"result":`+res+`}`)
}

// rpcError answers msg with an HTTP status and a JSON-RPC error.
func rpcError(w http.ResponseWriter, status int, msg *mcp.Message, code int64, message, data string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	e := fmt.Sprintf(`{"code":%d,"message":%q`, code, message)
	if data != "" {
		e += `,"data":` + data
	}
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":%s}}`, msg.ID.String(), e)
}

const (
	discoverResult = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"modern","version":"1"}},"ttlMs":0,"cacheScope":"private"}`
	initResult     = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"legacy","version":"1"}}`
	// meta is the _meta of a modern request.
	meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`
)

// modernOnly is a modern-only server, as the spec's backward
// compatibility section has it: initialize and requests without the
// revision's header get 400 with a modern error; GET gets 405; it hands
// out no session, but sends an Mcp-Session-Id anyway (which the client
// must ignore). tools answers tools/list and tools/call.
func modernOnly(tools string) func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) {
	return func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) {
		w.Header().Set("Mcp-Session-Id", "do-not-use")
		v := r.Header.Get("Mcp-Protocol-Version")
		switch {
		case v != "2026-07-28":
			rpcError(w, http.StatusBadRequest, msg, mcp.CodeUnsupportedProtocolVersion, "Unsupported protocol version", `{"supported":["2026-07-28"],"requested":"`+v+`"}`)
		case r.Header.Get("Mcp-Method") != msg.Method:
			rpcError(w, http.StatusBadRequest, msg, mcp.CodeHeaderMismatch, "Header mismatch: Mcp-Method", "")
		case !msg.IsRequest():
			w.WriteHeader(http.StatusAccepted)
		case msg.Method == "server/discover":
			result(w, msg, discoverResult)
		case msg.Method == "tools/list":
			result(w, msg, tools)
		case msg.Method == "tools/call":
			result(w, msg, `{"resultType":"complete","content":[{"type":"text","text":"called"}]}`)
		default:
			rpcError(w, http.StatusNotFound, msg, mcp.CodeMethodNotFound, "Method not found", "")
		}
	}
}

// legacyOnly is a legacy server as the TypeScript SDK's are: a session
// from initialize, and 400 with a non-modern error for a request without
// one (server/discover, the probe, among them).
func legacyOnly(w http.ResponseWriter, r *http.Request, msg *mcp.Message) {
	switch {
	case msg.Method == "initialize":
		w.Header().Set("Mcp-Session-Id", "sess-1")
		result(w, msg, initResult)
	case r.Header.Get("Mcp-Session-Id") != "sess-1":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":null}`)
	case !msg.IsRequest():
		w.WriteHeader(http.StatusAccepted)
	case msg.Method == "tools/list":
		result(w, msg, `{"tools":[{"name":"old","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A"}}}}]}`)
	default:
		result(w, msg, `{}`)
	}
}

// dualEra is a server of both eras: the modern binding for requests that
// name the modern revision, sessions for the rest.
func dualEra(w http.ResponseWriter, r *http.Request, msg *mcp.Message) {
	if r.Header.Get("Mcp-Protocol-Version") == "2026-07-28" && msg.Method != "initialize" {
		modernOnly(`{"resultType":"complete","tools":[]}`)(w, r, msg)
		return
	}
	legacyOnly(w, r, msg)
}

// open opens an mcp.Client over a transport to url as mcpgen tools does
// (the era found the HTTP way, or pinned), and returns both.
func open(t *testing.T, url string, opts Options, oo mcp.OpenOptions) (*mcp.Client, *Transport, error) {
	t.Helper()
	tr, _ := newTransport(t, url, opts)
	c := mcp.NewClient(context.Background(), tr, tr, mcp.ClientOptions{Info: mcp.Implementation{Name: "t", Version: "1"}, Timeout: 20 * time.Second})
	t.Cleanup(func() { c.Close() })
	_, err := c.Open(context.Background(), oo)
	return c, tr, err
}

// TestEraDetection opens servers of each era, and of both, the way the
// modern HTTP binding says: a modern request first (server/discover), the
// body of a 400 read before falling back to initialize. A modern session
// sends no session id and opens no GET stream; a legacy one does as it
// always did.
func TestEraDetection(t *testing.T) {
	tests := []struct {
		name    string
		answer  func(w http.ResponseWriter, r *http.Request, msg *mcp.Message)
		opts    Options
		open    mcp.OpenOptions
		wantEra mcp.Era
		// want is what the server got, in order (the GET stream of a
		// legacy session may come after tools/list).
		want []string
	}{
		{name: "modern only", answer: modernOnly(`{"resultType":"complete","tools":[]}`), open: mcp.OpenOptions{Grace: -1},
			wantEra: mcp.EraModern, want: []string{"server/discover", "tools/list"}},
		{name: "legacy only", answer: legacyOnly, open: mcp.OpenOptions{Grace: -1},
			wantEra: mcp.EraLegacy, want: []string{"server/discover", "initialize", "notifications/initialized", "GET", "tools/list", "DELETE"}},
		{name: "dual era", answer: dualEra, open: mcp.OpenOptions{Grace: -1},
			wantEra: mcp.EraModern, want: []string{"server/discover", "tools/list"}},
		{name: "dual era pinned legacy", answer: dualEra, opts: Options{Protocol: "2025-11-25"}, open: mcp.OpenOptions{Version: "2025-11-25"},
			wantEra: mcp.EraLegacy, want: []string{"initialize", "notifications/initialized", "GET", "tools/list", "DELETE"}},
		{name: "dual era pinned modern", answer: dualEra, opts: Options{Protocol: "2026-07-28"}, open: mcp.OpenOptions{Version: "2026-07-28"},
			wantEra: mcp.EraModern, want: []string{"server/discover", "tools/list"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, tt.answer)
			c, tr, err := open(t, s.url(), tt.opts, tt.open)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if _, err := c.ListTools(context.Background()); err != nil {
				t.Fatalf("ListTools: %v", err)
			}
			if c.Era() != tt.wantEra || tr.Era() != tt.wantEra {
				t.Errorf("era: client %v, transport %v; want %v", c.Era(), tr.Era(), tt.wantEra)
			}
			c.Close()
			tr.Close()
			got := s.methods()
			// The GET stream opens concurrently with what follows.
			sortGet := func(m []string) []string {
				m = slices.DeleteFunc(slices.Clone(m), func(x string) bool { return x == "GET" })
				return m
			}
			if !slices.Equal(sortGet(got), sortGet(tt.want)) || slices.Contains(got, "GET") != slices.Contains(tt.want, "GET") {
				t.Errorf("the server got %v, want %v", got, tt.want)
			}
			for _, r := range s.requests() {
				modern := r.header.Get("Mcp-Protocol-Version") == "2026-07-28"
				switch {
				case tt.wantEra == mcp.EraModern && r.header.Get("Mcp-Session-Id") != "":
					t.Errorf("%s: a modern request carries a session id", r.method)
				case tt.wantEra == mcp.EraModern && (r.msg == nil || !modern || r.header.Get("Mcp-Method") != r.msg.Method):
					t.Errorf("%s %s: headers %v; want the modern binding's", r.method, r.msg.Method, r.header)
				case r.msg != nil && r.msg.Method == "tools/list" && tt.wantEra == mcp.EraLegacy && (modern || r.header.Get("Mcp-Method") != ""):
					t.Errorf("tools/list of a legacy session: headers %v; want the legacy binding's", r.header)
				}
			}
		})
	}
	noTransportGoroutines(t)
}

// TestEraDetectionAnswers covers the answers a probe may meet over HTTP:
// what makes the client fall back to initialize, and what does not.
func TestEraDetectionAnswers(t *testing.T) {
	tests := []struct {
		name     string
		discover func(w http.ResponseWriter, r *http.Request, msg *mcp.Message, n int)
		wantEra  mcp.Era
		wantErr  string
		// initVersion, when set, is the version initialize must ask.
		initVersion string
	}{
		{name: "400 without a body: legacy", wantEra: mcp.EraLegacy, discover: func(w http.ResponseWriter, r *http.Request, msg *mcp.Message, n int) {
			w.WriteHeader(http.StatusBadRequest)
		}},
		{name: "400 with a page that is not JSON-RPC: legacy", wantEra: mcp.EraLegacy, discover: func(w http.ResponseWriter, r *http.Request, msg *mcp.Message, n int) {
			http.Error(w, "<html>bad request</html>", http.StatusBadRequest)
		}},
		{name: "404 without a body: legacy", wantEra: mcp.EraLegacy, discover: func(w http.ResponseWriter, r *http.Request, msg *mcp.Message, n int) {
			w.WriteHeader(http.StatusNotFound)
		}},
		{name: "200 with method not found: legacy", wantEra: mcp.EraLegacy, discover: func(w http.ResponseWriter, r *http.Request, msg *mcp.Message, n int) {
			rpcError(w, http.StatusOK, msg, mcp.CodeMethodNotFound, "Method not found", "")
		}},
		{name: "200 with a result that is not a discover result: legacy", wantEra: mcp.EraLegacy, discover: func(w http.ResponseWriter, r *http.Request, msg *mcp.Message, n int) {
			result(w, msg, `{}`)
		}},
		{name: "400 unsupported version listing ours: modern, asked again", wantEra: mcp.EraModern, discover: func(w http.ResponseWriter, r *http.Request, msg *mcp.Message, n int) {
			if n == 1 {
				rpcError(w, http.StatusBadRequest, msg, mcp.CodeUnsupportedProtocolVersion, "Unsupported protocol version", `{"supported":["2026-07-28"],"requested":"2026-07-28"}`)
				return
			}
			result(w, msg, discoverResult)
		}},
		{name: "400 unsupported version listing only a legacy one: initialize at it", wantEra: mcp.EraLegacy, initVersion: "2025-06-18", discover: func(w http.ResponseWriter, r *http.Request, msg *mcp.Message, n int) {
			rpcError(w, http.StatusBadRequest, msg, mcp.CodeUnsupportedProtocolVersion, "Unsupported protocol version", `{"supported":["2025-06-18"]}`)
		}},
		{name: "400 header mismatch: modern, and no fallback", wantErr: "Header mismatch", discover: func(w http.ResponseWriter, r *http.Request, msg *mcp.Message, n int) {
			rpcError(w, http.StatusBadRequest, msg, mcp.CodeHeaderMismatch, "Header mismatch: Mcp-Name", "")
		}},
		{name: "400 unsupported version with garbage data: an error, no fallback", wantErr: "Unsupported protocol version", discover: func(w http.ResponseWriter, r *http.Request, msg *mcp.Message, n int) {
			rpcError(w, http.StatusBadRequest, msg, mcp.CodeUnsupportedProtocolVersion, "Unsupported protocol version", `"nonsense"`)
		}},
		{name: "400 unsupported version listing nothing of ours: an error", wantErr: "2099-01-01", discover: func(w http.ResponseWriter, r *http.Request, msg *mcp.Message, n int) {
			rpcError(w, http.StatusBadRequest, msg, mcp.CodeUnsupportedProtocolVersion, "Unsupported protocol version", `{"supported":["2099-01-01"]}`)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			discovers := 0
			s := newServer(t, func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) {
				if msg.Method == "server/discover" {
					mu.Lock()
					discovers++
					n := discovers
					mu.Unlock()
					tt.discover(w, r, msg, n)
					return
				}
				legacyOnly(w, r, msg)
			})
			c, tr, err := open(t, s.url(), Options{NoListen: true}, mcp.OpenOptions{Grace: -1})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Open: got %v, want an error with %q", err, tt.wantErr)
				}
				if slices.Contains(s.methods(), "initialize") {
					t.Errorf("the server got %v: a modern server's error must not make the client fall back", s.methods())
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if c.Era() != tt.wantEra || tr.Era() != tt.wantEra {
				t.Errorf("era: client %v, transport %v; want %v (the server got %v)", c.Era(), tr.Era(), tt.wantEra, s.methods())
			}
			if tt.initVersion != "" {
				if p := string(s.last("initialize").msg.Params); !strings.Contains(p, `"protocolVersion":"`+tt.initVersion+`"`) {
					t.Errorf("initialize params %s, want version %s", p, tt.initVersion)
				}
			}
		})
	}
}

// TestModernHeaders checks the headers of modern requests: the revision
// as the body's _meta names it, the method, the name (Base64 when it is
// not plain ASCII), the caller's headers, and nothing of a session, in the
// auto and the pinned mode.
func TestModernHeaders(t *testing.T) {
	for _, protocol := range []string{"", "2026-07-28"} {
		t.Run("protocol="+protocol, func(t *testing.T) {
			s := newServer(t, func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) {
				w.Header().Set("Mcp-Session-Id", "do-not-use")
				result(w, msg, `{"resultType":"complete"}`)
			})
			tr, _ := newTransport(t, s.url(), Options{Protocol: protocol, BearerToken: "tok", Header: http.Header{"X-Tenant": {"acme"}}})
			l := newLines(t, tr)
			calls := []struct{ line, method, name string }{
				{`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + meta + `}}`, "server/discover", ""},
				{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_weather","arguments":{},` + meta + `}}`, "tools/call", "get_weather"},
				{`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"file:///a%20b.txt",` + meta + `}}`, "resources/read", "file:///a%20b.txt"},
				{`{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{"name":"héllo",` + meta + `}}`, "prompts/get", "=?base64?aMOpbGxv?="},
				{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"=?base64?x?=",` + meta + `}}`, "tools/call", "=?base64?PT9iYXNlNjQ/eD89?="},
				{`{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{` + meta + `}}`, "tools/list", ""},
			}
			for _, c := range calls {
				l.write(c.line)
				if m := l.read(); m.Error != nil {
					t.Fatalf("%s: %v", c.method, m.Error)
				}
				r := s.last(c.method)
				want := map[string]string{
					"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": c.method, "Mcp-Name": c.name,
					"Mcp-Session-Id": "", "Authorization": "Bearer tok", "X-Tenant": "acme",
					"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
				}
				for k, v := range want {
					if got := r.header.Get(k); got != v {
						t.Errorf("%s: %s: got %q, want %q", c.method, k, got, v)
					}
				}
			}
			tr.Close()
			if got := s.methods(); slices.Contains(got, "GET") || slices.Contains(got, "DELETE") {
				t.Errorf("the server got %v: a modern session has no GET stream and no DELETE", got)
			}
		})
	}
}

// TestHeaderValue checks the modern binding's encoding of header values,
// with the spec's examples.
func TestHeaderValue(t *testing.T) {
	tests := []struct{ in, want string }{
		{"us-west1", "us-west1"},
		{"us west 1", "us west 1"},
		{"", ""},
		{"Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="},
		{" padded ", "=?base64?IHBhZGRlZCA=?="},
		{"line1\nline2", "=?base64?bGluZTEKbGluZTI=?="},
		{"\tindented", "=?base64?CWluZGVudGVk?="},
		{"=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="},
		{"=?base64?", "=?base64?"},
	}
	for _, tt := range tests {
		if got := headerValue(tt.in); got != tt.want {
			t.Errorf("headerValue(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestModernNoResume: a modern answer's stream that ends before the
// response fails the request at once, saying it may be sent again; the
// transport does not GET to resume it, whatever id and retry the stream
// gave.
func TestModernNoResume(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) {
		startSSE(w)
		event(w, "id: e1", "retry: 1", "data:")
		event(w, `data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`)
	})
	tr, _ := newTransport(t, s.url(), Options{})
	l := newLines(t, tr)
	l.write(`{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":"slow",` + meta + `}}`)
	if m := l.read(); m.Method != "notifications/progress" {
		t.Fatalf("got %+v, want the progress first", m)
	}
	m := l.read()
	if m.Error == nil || m.Error.Code != CodeTransportError || !strings.Contains(m.Error.Message, "may be sent again") || m.ID.String() != "7" {
		t.Fatalf("got %+v, want an error response to 7 that says the request may be sent again", m)
	}
	if got := s.methods(); !slices.Equal(got, []string{"prompts/get"}) {
		t.Errorf("the server got %v; want the request alone, no GET to resume it", got)
	}
}

// TestModernServerRequestsDropped: a modern server must not send requests
// on an answer's stream; one that does has them dropped, and the response
// still arrives.
func TestModernServerRequestsDropped(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) {
		startSSE(w)
		event(w, `data: {"jsonrpc":"2.0","id":"s1","method":"elicitation/create","params":{}}`)
		event(w, `data: {"jsonrpc":"2.0","id":`+msg.ID.String()+`,"result":{"resultType":"complete"}}`)
	})
	tr, logs := newTransport(t, s.url(), Options{})
	l := newLines(t, tr)
	l.write(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x",` + meta + `}}`)
	if m := l.read(); !m.IsResponse() || m.ID.String() != "1" {
		t.Fatalf("got %+v, want the response alone", m)
	}
	if !strings.Contains(logs.String(), "dropping a request") {
		t.Errorf("nothing logged of the dropped request:\n%s", logs)
	}
}

// TestModernCancel: a modern request is cancelled by closing its stream;
// notifications/cancelled is not POSTed.
func TestModernCancel(t *testing.T) {
	gone := make(chan struct{})
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) {
		startSSE(w)
		<-r.Context().Done()
		close(gone)
	})
	tr, _ := newTransport(t, s.url(), Options{})
	l := newLines(t, tr)
	l.write(`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"x",` + meta + `}}`)
	waitFor(t, "the request to reach the server", func() bool { return len(s.requests()) == 1 })
	l.write(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	select {
	case <-gone:
	case <-time.After(waitLong):
		t.Fatal("the request's stream is still open after the cancellation")
	}
	if got := s.methods(); !slices.Equal(got, []string{"prompts/get"}) {
		t.Errorf("the server got %v; want no notifications/cancelled", got)
	}
}

// TestModernErrors: a modern server's HTTP errors reach the reader as the
// JSON-RPC errors their bodies hold (code and data kept), and bodies that
// hold none as the transport's errors.
func TestModernErrors(t *testing.T) {
	tests := []struct {
		name     string
		answer   func(w http.ResponseWriter, r *http.Request, msg *mcp.Message)
		wantCode int64
		wantMsg  string
		wantData string
	}{
		{"unsupported version", func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) {
			rpcError(w, http.StatusBadRequest, msg, mcp.CodeUnsupportedProtocolVersion, "Unsupported protocol version", `{"supported":["2027-01-01"]}`)
		}, mcp.CodeUnsupportedProtocolVersion, "400 Bad Request: Unsupported protocol version", `{"supported":["2027-01-01"]}`},
		{"method not found", func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) {
			rpcError(w, http.StatusNotFound, msg, mcp.CodeMethodNotFound, "Method not found", "")
		}, mcp.CodeMethodNotFound, "404 Not Found: Method not found", ""},
		{"400 without a body", func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) {
			w.WriteHeader(http.StatusBadRequest)
		}, CodeTransportError, "400 Bad Request", ""},
		{"a huge error page", func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) {
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, strings.Repeat("x", 10<<20))
		}, CodeTransportError, "502 Bad Gateway: xxx", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, tt.answer)
			tr, _ := newTransport(t, s.url(), Options{})
			l := newLines(t, tr)
			l.write(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`)
			m := l.read()
			if m.Error == nil || m.Error.Code != tt.wantCode || !strings.Contains(m.Error.Message, tt.wantMsg) || string(m.Error.Data) != tt.wantData {
				t.Fatalf("got %+v, want code %d, a message with %q, data %s", m.Error, tt.wantCode, tt.wantMsg, tt.wantData)
			}
			if len(m.Error.Message) > 1000 {
				t.Errorf("the error quotes %d bytes of the page", len(m.Error.Message))
			}
		})
	}
}

// TestModernListen: subscriptions/listen is the one long stream: not cut
// by the request timeout, its notifications delivered as they come, and
// when it breaks, its request fails with an error that says to send it
// again (nothing resumes it, no GET replaces it).
func TestModernListen(t *testing.T) {
	release := make(chan struct{})
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) {
		switch msg.Method {
		case "subscriptions/listen":
			startSSE(w)
			event(w, `data: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1}}}`)
			select {
			case <-release:
			case <-r.Context().Done():
				return // the test failed before it released the stream
			}
			event(w, `data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1}}}`)
			// Then the connection breaks, without the response.
			panic(http.ErrAbortHandler)
		default:
			startSSE(w)
			<-r.Context().Done()
		}
	})
	tr, _ := newTransport(t, s.url(), Options{RequestTimeout: 50 * time.Millisecond})
	l := newLines(t, tr)
	l.write(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + meta + `}}`)
	if m := l.read(); m.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("got %+v, want the acknowledgment", m)
	}
	// Another request, that the timeout ends: the listen outlives it.
	l.write(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow",` + meta + `}}`)
	if m := l.read(); m.ID.String() != "2" || m.Error == nil || !strings.Contains(m.Error.Message, "no answer within") {
		t.Fatalf("got %+v, want the call to time out", m)
	}
	close(release)
	if m := l.read(); m.Method != "notifications/tools/list_changed" {
		t.Fatalf("got %+v, want the change, after the timeout", m)
	}
	m := l.read()
	if m.ID.String() != "1" || m.Error == nil || !strings.Contains(m.Error.Message, "send subscriptions/listen again") {
		t.Fatalf("got %+v, want the listen to fail, saying to send it again", m)
	}
	if slices.Contains(s.methods(), "GET") {
		t.Errorf("the server got %v: no GET stream in the modern era", s.methods())
	}
}

// TestModernOneWay: in a modern session, a response to the server is not
// sent (a modern server sends no requests), and a notification goes with
// the binding's headers.
func TestModernOneWay(t *testing.T) {
	s := newServer(t, modernOnly(`{"resultType":"complete","tools":[]}`))
	tr, _ := newTransport(t, s.url(), Options{Protocol: "2026-07-28"})
	l := newLines(t, tr)
	l.write(`{"jsonrpc":"2.0","id":"s1","result":{}}`)
	l.write(`{"jsonrpc":"2.0","method":"notifications/example"}`)
	waitFor(t, "the notification", func() bool { return len(s.requests()) == 1 })
	r := s.requests()[0]
	if r.msg.Method != "notifications/example" || r.header.Get("Mcp-Method") != "notifications/example" || r.header.Get("Mcp-Protocol-Version") != "2026-07-28" {
		t.Errorf("the server got %s with %v; want the notification alone, with the binding's headers", r.msg.Method, r.header)
	}
}

// TestProtocolOption: Options.Protocol takes auto or a revision mcpgen
// speaks, and the headers of the modern binding are the transport's.
func TestProtocolOption(t *testing.T) {
	for _, p := range []string{"", "auto", "2026-07-28", "2025-11-25", "2025-06-18"} {
		if _, err := New("http://127.0.0.1:1/mcp", Options{Protocol: p}); err != nil {
			t.Errorf("Protocol %q: %v", p, err)
		}
	}
	if _, err := New("http://127.0.0.1:1/mcp", Options{Protocol: "2099-01-01"}); err == nil || !strings.Contains(err.Error(), "want auto or a revision") {
		t.Errorf("Protocol 2099-01-01: got %v", err)
	}
	for _, h := range []string{"Mcp-Method", "mcp-name", "Mcp-Param-Region"} {
		if _, err := New("http://127.0.0.1:1/mcp", Options{Header: http.Header{h: {"x"}}}); err == nil || !strings.Contains(err.Error(), "sets it itself") {
			t.Errorf("header %s: got %v, want it refused", h, err)
		}
	}
}

// waitFor polls cond until it holds, or fails the test after waitLong.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(waitLong); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("waiting for %s: gave up", what)
}

// decodeTools returns the names of the tools of a tools/list result.
func decodeTools(t *testing.T, result json.RawMessage) []string {
	t.Helper()
	var r struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		t.Fatalf("tools/list result %s: %v", result, err)
	}
	var names []string
	for _, tool := range r.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// TestInitializeRefused: a modern-only server's refusal of initialize (a
// legacy request) reaches the client whole, the versions it speaks
// included, so that the client can say which to use.
func TestInitializeRefused(t *testing.T) {
	s := newServer(t, modernOnly(`{"resultType":"complete","tools":[]}`))
	tr, _ := newTransport(t, s.url(), Options{})
	l := newLines(t, tr)
	l.write(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	m := l.read()
	if versions, ok := m.Error.SupportedVersions(); !ok || !slices.Equal(versions, []string{"2026-07-28"}) {
		t.Fatalf("got %+v, want the server's -32022 with the versions it speaks", m.Error)
	}
	if tr.Era() != mcp.EraUnknown {
		t.Errorf("era %v after a refused initialize, want unknown still", tr.Era())
	}
}
