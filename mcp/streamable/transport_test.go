package streamable

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

// TestHeaders checks the headers of each kind of request: what the spec
// asks (Accept, the session id and protocol version after initialize, not
// before), the caller's headers and token on every one.
func TestHeaders(t *testing.T) {
	f := newFake(t)
	f.version = "2025-06-18"
	tr, _ := newTransport(t, f.url(), Options{
		BearerToken: "tok",
		Header:      http.Header{"X-Tenant": {"acme"}},
	})
	l := newLines(t, tr)
	l.handshake()
	l.write(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if m := l.read(); m.Error != nil {
		t.Fatalf("tools/list: %v", m.Error)
	}
	tr.Close()

	const any = "*"
	want := []struct {
		method, rpc                       string
		accept, contentType, session, ver string
	}{
		{"POST", "initialize", "application/json, text/event-stream", "application/json", "", ""},
		{"POST", "notifications/initialized", "application/json, text/event-stream", "application/json", "sess-1", "2025-06-18"},
		{"GET", "", "text/event-stream", "", "sess-1", "2025-06-18"},
		{"POST", "tools/list", "application/json, text/event-stream", "application/json", "sess-1", "2025-06-18"},
		{"DELETE", "", any, "", "sess-1", "2025-06-18"},
	}
	got := f.requests()
	if len(got) != len(want) {
		t.Fatalf("requests: got %d, want %d: %v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		check := func(name, gotV, wantV string) {
			if wantV != any && gotV != wantV {
				t.Errorf("%s %s: %s: got %q, want %q", w.method, w.rpc, name, gotV, wantV)
			}
		}
		check("method", g.method, w.method)
		check("jsonrpc method", g.rpc, w.rpc)
		check("Accept", g.header.Get("Accept"), w.accept)
		check("Content-Type", g.header.Get("Content-Type"), w.contentType)
		check("Mcp-Session-Id", g.header.Get("Mcp-Session-Id"), w.session)
		check("Mcp-Protocol-Version", g.header.Get("Mcp-Protocol-Version"), w.ver)
		check("Authorization", g.header.Get("Authorization"), "Bearer tok")
		check("X-Tenant", g.header.Get("X-Tenant"), "acme")
	}
	noTransportGoroutines(t)
}

// TestAnswers covers what a server may answer to a request's POST, and the
// error response the reader gets when the answer holds no response.
func TestAnswers(t *testing.T) {
	tests := []struct {
		name   string
		answer func(w http.ResponseWriter, r *http.Request, id string)
		// want is the result; or wantCode and wantErr, a part of the
		// error's message.
		want     string
		wantCode int64
		wantErr  string
		// before are the methods of the messages read before the answer.
		before []string
	}{
		{name: "json", want: `{"ok":true}`, answer: func(w http.ResponseWriter, r *http.Request, id string) {
			writeJSON(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"ok":true}}`)
		}},
		{name: "json with a charset", want: `{"ok":true}`, answer: func(w http.ResponseWriter, r *http.Request, id string) {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"ok":true}}`)
		}},
		{name: "pretty-printed json", want: `{ "ok": true }`, answer: func(w http.ResponseWriter, r *http.Request, id string) {
			writeJSON(w, "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": "+id+",\n  \"result\": {\n \"ok\": true\n}\n}\n")
		}},
		{name: "json batch", want: `{}`, before: []string{"notifications/message"}, answer: func(w http.ResponseWriter, r *http.Request, id string) {
			writeJSON(w, `[{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}},{"jsonrpc":"2.0","id":`+id+`,"result":{}}]`)
		}},
		{name: "event stream with a notification and a request first", want: `{"n":1}`, before: []string{"notifications/progress", "ping"}, answer: func(w http.ResponseWriter, r *http.Request, id string) {
			startSSE(w)
			event(w, "id: a1", "retry: 5", "data:")
			event(w, `data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`)
			event(w, `event: message`, `data: {"jsonrpc":"2.0","id":"s1","method":"ping"}`)
			event(w, `: keep-alive`)
			event(w, `event: other`, `data: not json`)
			event(w, `data: {"jsonrpc":"2.0",`, `data: "id":`+id+`,"result":{"n":1}}`)
		}},
		{name: "event stream that stays open after the response", want: `{}`, answer: func(w http.ResponseWriter, r *http.Request, id string) {
			startSSE(w)
			event(w, `data: {"jsonrpc":"2.0","id":`+id+`,"result":{}}`)
			<-r.Context().Done()
		}},
		{name: "json without the response", wantCode: CodeTransportError, wantErr: "holds no response", answer: func(w http.ResponseWriter, r *http.Request, id string) {
			writeJSON(w, `{"jsonrpc":"2.0","id":999,"result":{}}`)
		}},
		{name: "json that is not a message", wantCode: CodeTransportError, wantErr: "holds no response", answer: func(w http.ResponseWriter, r *http.Request, id string) {
			writeJSON(w, `<html>oops</html>`)
		}},
		{name: "an event stream that ends without the response and no id", before: []string{"notifications/message"}, wantCode: CodeTransportError, wantErr: "no event id", answer: func(w http.ResponseWriter, r *http.Request, id string) {
			startSSE(w)
			event(w, `data: {"jsonrpc":"2.0","method":"notifications/message","params":{}}`)
		}},
		{name: "202 to a request", wantCode: CodeTransportError, wantErr: "without answering", answer: func(w http.ResponseWriter, r *http.Request, id string) {
			w.WriteHeader(http.StatusAccepted)
		}},
		{name: "another content type", wantCode: CodeTransportError, wantErr: `"text/html"`, answer: func(w http.ResponseWriter, r *http.Request, id string) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html></html>")
		}},
		{name: "500 with text", wantCode: CodeTransportError, wantErr: "500 Internal Server Error: database down", answer: func(w http.ResponseWriter, r *http.Request, id string) {
			http.Error(w, "database\n down", http.StatusInternalServerError)
		}},
		{name: "401", wantCode: CodeTransportError, wantErr: "check the bearer token", answer: func(w http.ResponseWriter, r *http.Request, id string) {
			w.WriteHeader(http.StatusUnauthorized)
		}},
		{name: "400 with a json-rpc error", wantCode: -32602, wantErr: "400 Bad Request: bad cursor", answer: func(w http.ResponseWriter, r *http.Request, id string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"bad cursor"}}`)
		}},
		{name: "json longer than the limit", wantCode: CodeTransportError, wantErr: "longer than 1024 bytes", answer: func(w http.ResponseWriter, r *http.Request, id string) {
			writeJSON(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"x":"`+strings.Repeat("x", 2000)+`"}}`)
		}},
		{name: "an event longer than the limit", wantCode: CodeTransportError, wantErr: "longer than 1024 bytes", answer: func(w http.ResponseWriter, r *http.Request, id string) {
			startSSE(w)
			event(w, `data: {"jsonrpc":"2.0","id":`+id+`,"result":{"x":"`+strings.Repeat("x", 2000)+`"}}`)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t)
			f.call = func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) { tt.answer(w, r, msg.ID.String()) }
			tr, _ := newTransport(t, f.url(), Options{MaxMessageSize: 1024, NoListen: true})
			l := newLines(t, tr)
			l.handshake()
			l.write(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`)
			var before []string
			m := l.read()
			for m.Method != "" {
				before = append(before, m.Method)
				m = l.read()
			}
			if strings.Join(before, " ") != strings.Join(tt.before, " ") {
				t.Errorf("messages before the response: got %q, want %q", before, tt.before)
			}
			if m.ID != mcp.Int64ID(7) {
				t.Fatalf("response id: got %s, want 7", m.ID)
			}
			switch {
			case tt.wantErr == "" && m.Error != nil:
				t.Fatalf("got error %v, want result %s", m.Error, tt.want)
			case tt.wantErr == "":
				if got := strings.Join(strings.Fields(string(m.Result)), " "); got != tt.want {
					t.Errorf("result: got %s, want %s", got, tt.want)
				}
			case m.Error == nil:
				t.Fatalf("got result %s, want an error with %q", m.Result, tt.wantErr)
			default:
				if m.Error.Code != tt.wantCode || !strings.Contains(m.Error.Message, tt.wantErr) {
					t.Errorf("error: got %d %q, want %d with %q", m.Error.Code, m.Error.Message, tt.wantCode, tt.wantErr)
				}
			}
			// The transport goes on: the next request is answered.
			f.call = nil
			l.write(`{"jsonrpc":"2.0","id":8,"method":"ping"}`)
			if m := l.read(); m.ID != mcp.Int64ID(8) || m.Error != nil {
				t.Errorf("the next request: got id %s error %v, want id 8 answered", m.ID, m.Error)
			}
		})
	}
	noTransportGoroutines(t)
}

// TestServerRequestsOnTheAnswerStream is a tool call whose server asks
// the client something (elicitation) on the call's event stream before it
// answers: the question reaches the client, whose answer goes back as a
// POST of its own, and then the result arrives.
func TestServerRequestsOnTheAnswerStream(t *testing.T) {
	f := newFake(t)
	answered := make(chan *mcp.Message, 1)
	f.call = func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) {
		startSSE(w)
		event(w, `data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"asking"}}`)
		event(w, `id: 1`, `data: {"jsonrpc":"2.0","id":"q1","method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object","properties":{}}}}`)
		resp := f.waitPosted()
		answered <- resp
		event(w, `id: 2`, `data: {"jsonrpc":"2.0","id":`+msg.ID.String()+`,"result":{"content":[{"type":"text","text":"thanks"}]}}`)
	}
	var mu sync.Mutex
	var notes []string
	c, _ := newClient(t, f.url(), Options{NoListen: true}, mcp.ClientOptions{
		Capabilities: json.RawMessage(`{"elicitation":{}}`),
		Handler: mcp.HandlerFunc(func(ctx context.Context, req *mcp.Request) (any, error) {
			if req.Method != "elicitation/create" {
				return nil, mcp.NewError(mcp.CodeMethodNotFound, "no")
			}
			return json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`), nil
		}),
		OnNotification: func(ctx context.Context, msg *mcp.Message) {
			mu.Lock()
			notes = append(notes, msg.Method)
			mu.Unlock()
		},
	})
	f.waitPosted() // notifications/initialized
	res, err := c.CallTool(context.Background(), "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 || res.Content[0].Text != "thanks" {
		t.Errorf("result: got %+v, want the text thanks", res.Content)
	}
	resp := <-answered
	if resp.ID != mcp.StringID("q1") || !strings.Contains(string(resp.Result), `"Ada"`) {
		t.Errorf("the client's answer: got id %s result %s, want id \"q1\" with Ada", resp.ID, resp.Result)
	}
	for _, s := range f.requests() {
		if s.rpc == "response" && s.header.Get("Mcp-Session-Id") != "sess-1" {
			t.Errorf("the answer's POST: session %q, want sess-1", s.header.Get("Mcp-Session-Id"))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(notes) != 1 || notes[0] != "notifications/message" {
		t.Errorf("notifications: got %q, want [notifications/message]", notes)
	}
}

// TestSessionExpired: a 404 to a request that carried the session id ends
// the transport with ErrSessionExpired, which the launcher takes for a
// crash; no DELETE follows. A 404 without a session is a wrong URL.
func TestSessionExpired(t *testing.T) {
	t.Run("404 to the session", func(t *testing.T) {
		f := newFake(t)
		f.call = func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) { http.NotFound(w, r) }
		tr, _ := newTransport(t, f.url(), Options{NoListen: true})
		l := newLines(t, tr)
		l.handshake()
		// The 404 may come back before Write returns, which then reports
		// it itself, as a pipe's EPIPE would; either way Read ends with it.
		if _, werr := tr.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")); werr != nil && !errors.Is(werr, ErrSessionExpired) {
			t.Fatalf("write: got %v, want nil or ErrSessionExpired", werr)
		}
		err := l.readErr()
		if !errors.Is(err, ErrSessionExpired) {
			t.Fatalf("read: got %v, want ErrSessionExpired", err)
		}
		if _, werr := tr.Write([]byte(`{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n")); !errors.Is(werr, ErrSessionExpired) {
			t.Errorf("write after: got %v, want ErrSessionExpired", werr)
		}
		tr.Close()
		if n := f.count("DELETE", ""); n != 0 {
			t.Errorf("DELETEs: got %d, want 0 for an expired session", n)
		}
	})
	t.Run("seen through mcp.Client", func(t *testing.T) {
		f := newFake(t)
		f.call = func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) { http.NotFound(w, r) }
		c, _ := newClient(t, f.url(), Options{NoListen: true}, mcp.ClientOptions{})
		_, err := c.ListTools(context.Background())
		if !errors.Is(err, ErrSessionExpired) || !errors.Is(err, mcp.ErrClosed) {
			t.Fatalf("tools/list: got %v, want an error matching ErrSessionExpired and mcp.ErrClosed", err)
		}
	})
	t.Run("a first GET answered 404 is no expiry", func(t *testing.T) {
		f := newFake(t)
		f.get = func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }
		tr, _ := newTransport(t, f.url(), Options{})
		l := newLines(t, tr)
		l.handshake()
		l.write(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		if m := l.read(); m.ID != mcp.Int64ID(1) || m.Error != nil {
			t.Fatalf("got %+v, want ping answered", m)
		}
		if n := f.count("GET", ""); n != 1 {
			t.Errorf("GETs: got %d, want 1", n)
		}
	})
	t.Run("404 without a session", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		defer srv.Close()
		tr, _ := newTransport(t, srv.URL+"/wrong", Options{})
		l := newLines(t, tr)
		l.write(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`)
		m := l.read()
		if m.Error == nil || !strings.Contains(m.Error.Message, "check the URL") {
			t.Fatalf("got %+v, want an error that says to check the URL", m)
		}
	})
	noTransportGoroutines(t)
}

// TestGetStream: the GET stream carries the server's own messages; a 405
// means there is none; a stream that drops is reconnected with its last
// event id, after the server's retry delay.
func TestGetStream(t *testing.T) {
	t.Run("405", func(t *testing.T) {
		f := newFake(t)
		tr, _ := newTransport(t, f.url(), Options{})
		l := newLines(t, tr)
		l.handshake()
		for i := range 3 {
			l.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i+1))
			if m := l.read(); m.Error != nil {
				t.Fatal(m.Error)
			}
		}
		if n := f.count("GET", ""); n != 1 {
			t.Errorf("GETs: got %d, want 1 (405 means no stream)", n)
		}
	})
	t.Run("messages and a reconnection", func(t *testing.T) {
		f := newFake(t)
		var mu sync.Mutex
		var lastIDs []string
		f.get = func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			lastIDs = append(lastIDs, r.Header.Get("Last-Event-Id"))
			n := len(lastIDs)
			mu.Unlock()
			startSSE(w)
			if n == 1 {
				event(w, "id: g1", "retry: 1", "data:")
				event(w, `id: g2`, `data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
				return // dropped
			}
			event(w, `id: g3`, `data: {"jsonrpc":"2.0","id":"r1","method":"roots/list"}`)
			<-r.Context().Done()
		}
		tr, _ := newTransport(t, f.url(), Options{})
		l := newLines(t, tr)
		l.handshake()
		f.waitPosted() // notifications/initialized
		if m := l.read(); m.Method != "notifications/tools/list_changed" {
			t.Fatalf("got %+v, want the list_changed of the GET stream", m)
		}
		m := l.read()
		if m.Method != "roots/list" || m.ID != mcp.StringID("r1") {
			t.Fatalf("got %+v, want the roots/list request of the reconnected stream", m)
		}
		l.write(`{"jsonrpc":"2.0","id":"r1","result":{"roots":[]}}`)
		if got := f.waitPosted(); got.ID != mcp.StringID("r1") {
			t.Errorf("the answer: got id %s, want \"r1\"", got.ID)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(lastIDs) != 2 || lastIDs[0] != "" || lastIDs[1] != "g2" {
			t.Errorf("Last-Event-ID of the GETs: got %q, want [\"\" \"g2\"]", lastIDs)
		}
	})
	t.Run("an event too large is dropped, the stream goes on", func(t *testing.T) {
		f := newFake(t)
		f.get = func(w http.ResponseWriter, r *http.Request) {
			startSSE(w)
			event(w, `data: {"jsonrpc":"2.0","method":"notifications/message","params":{"data":"`+strings.Repeat("x", 2000)+`"}}`)
			event(w, `data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
			<-r.Context().Done()
		}
		tr, logs := newTransport(t, f.url(), Options{MaxMessageSize: 1024})
		l := newLines(t, tr)
		l.handshake()
		if m := l.read(); m.Method != "notifications/tools/list_changed" {
			t.Fatalf("got %+v, want the event after the one too large", m)
		}
		if !strings.Contains(logs.String(), "longer than the limit") {
			t.Errorf("logs: got %q, want the dropped event", logs.String())
		}
	})
	t.Run("a reconnection answered 404 is the session's end", func(t *testing.T) {
		f := newFake(t)
		var mu sync.Mutex
		gets := 0
		f.get = func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			gets++
			n := gets
			mu.Unlock()
			if n > 1 {
				http.NotFound(w, r)
				return
			}
			startSSE(w)
			event(w, "id: g1", "retry: 1", "data:")
		}
		tr, _ := newTransport(t, f.url(), Options{})
		l := newLines(t, tr)
		l.handshake()
		if err := l.readErr(); !errors.Is(err, ErrSessionExpired) {
			t.Fatalf("read: got %v, want ErrSessionExpired", err)
		}
	})
	t.Run("no GET with NoListen", func(t *testing.T) {
		f := newFake(t)
		tr, _ := newTransport(t, f.url(), Options{NoListen: true})
		l := newLines(t, tr)
		l.handshake()
		l.write(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		l.read()
		if n := f.count("GET", ""); n != 0 {
			t.Errorf("GETs: got %d, want 0", n)
		}
	})
	noTransportGoroutines(t)
}

// TestResume: a request's event stream that drops before the response is
// resumed with a GET that carries the last event id; when it cannot be, the
// request gets an error rather than waiting for ever.
func TestResume(t *testing.T) {
	tests := []struct {
		name string
		// get answers the resuming GETs.
		get     func(w http.ResponseWriter, r *http.Request, id string)
		wantErr string
		wantIDs string // the Last-Event-IDs of the GETs, space separated
	}{
		{name: "resumed", wantIDs: "e1", get: func(w http.ResponseWriter, r *http.Request, id string) {
			startSSE(w)
			event(w, "id: e2", `data: {"jsonrpc":"2.0","id":`+id+`,"result":{"resumed":true}}`)
		}},
		{name: "resumed twice", wantIDs: "e1 e2", get: func(w http.ResponseWriter, r *http.Request, id string) {
			startSSE(w)
			if r.Header.Get("Last-Event-Id") == "e1" {
				event(w, "id: e2", "data:")
				return
			}
			event(w, "id: e3", `data: {"jsonrpc":"2.0","id":`+id+`,"result":{"resumed":true}}`)
		}},
		{name: "no GET", wantIDs: "e1", wantErr: "offers no GET to resume it (405 Method Not Allowed)", get: func(w http.ResponseWriter, r *http.Request, id string) {
			w.WriteHeader(http.StatusMethodNotAllowed)
		}},
		{name: "no GET route", wantIDs: "e1", wantErr: "offers no GET to resume it (404 Not Found)", get: func(w http.ResponseWriter, r *http.Request, id string) {
			http.NotFound(w, r)
		}},
		{name: "streams that bring nothing", wantIDs: "e1 e1 e1 e1", wantErr: "could not be resumed (4 attempts)", get: func(w http.ResponseWriter, r *http.Request, id string) {
			startSSE(w)
		}},
		{name: "errors", wantIDs: "e1 e1 e1 e1", wantErr: "could not be resumed (4 attempts)", get: func(w http.ResponseWriter, r *http.Request, id string) {
			w.WriteHeader(http.StatusBadGateway)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t)
			var mu sync.Mutex
			var callID string
			f.call = func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) {
				mu.Lock()
				callID = msg.ID.String()
				mu.Unlock()
				startSSE(w)
				event(w, "id: e1", "retry: 1", "data:")
			}
			f.get = func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				id := callID
				mu.Unlock()
				tt.get(w, r, id)
			}
			tr, _ := newTransport(t, f.url(), Options{NoListen: true, MaxReconnects: 3})
			tr.wait = (&waits{limit: 64}).wait // the delays are TestResumeRetryStorm's
			l := newLines(t, tr)
			l.handshake()
			l.write(`{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"slow"}}`)
			m := l.read()
			if m.ID != mcp.StringID("c1") {
				t.Fatalf("got %+v, want the answer to c1", m)
			}
			switch {
			case tt.wantErr == "" && m.Error != nil:
				t.Errorf("got error %v, want the resumed result", m.Error)
			case tt.wantErr == "" && string(m.Result) != `{"resumed":true}`:
				t.Errorf("result: got %s, want {\"resumed\":true}", m.Result)
			case tt.wantErr != "" && (m.Error == nil || !strings.Contains(m.Error.Message, tt.wantErr)):
				t.Errorf("got %+v, want an error with %q", m, tt.wantErr)
			}
			var ids []string
			for _, s := range f.requests() {
				if s.method == "GET" {
					ids = append(ids, s.header.Get("Last-Event-Id"))
				}
			}
			if got := strings.Join(ids, " "); got != tt.wantIDs {
				t.Errorf("Last-Event-ID of the GETs: got %q, want %q", got, tt.wantIDs)
			}
		})
	}
	noTransportGoroutines(t)
}

// TestDeleteAtClose: Close ends the session the server gave, and only then.
func TestDeleteAtClose(t *testing.T) {
	for _, noSession := range []bool{false, true} {
		t.Run(fmt.Sprintf("no session %v", noSession), func(t *testing.T) {
			f := newFake(t)
			f.noSession = noSession
			tr, _ := newTransport(t, f.url(), Options{NoListen: true})
			l := newLines(t, tr)
			l.handshake()
			f.waitPosted()
			if err := tr.Close(); err != nil {
				t.Fatal(err)
			}
			want := 1
			if noSession {
				want = 0
			}
			var deletes []seenRequest
			for _, s := range f.requests() {
				if s.method == "DELETE" {
					deletes = append(deletes, s)
				}
			}
			if len(deletes) != want {
				t.Fatalf("DELETEs: got %d, want %d", len(deletes), want)
			}
			if want == 1 && deletes[0].header.Get("Mcp-Session-Id") != "sess-1" {
				t.Errorf("DELETE session: got %q, want sess-1", deletes[0].header.Get("Mcp-Session-Id"))
			}
			if err := l.readErr(); err != io.EOF {
				t.Errorf("read after Close: got %v, want EOF", err)
			}
			if _, err := tr.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")); !errors.Is(err, ErrClosed) {
				t.Errorf("write after Close: got %v, want ErrClosed", err)
			}
		})
	}
	noTransportGoroutines(t)
}

// TestUnreachable: a server that cannot be reached ends the transport, as a
// process that exits ends its stdout.
func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/mcp"
	srv.Close()
	tr, _ := newTransport(t, url, Options{})
	l := newLines(t, tr)
	// The failure may come back to Write already, as EPIPE does to a
	// process's stdin; Read says it in any case.
	_, werr := tr.Write([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}` + "\n"))
	err := l.readErr()
	for _, err := range []error{werr, err} {
		if err != nil && !strings.Contains(err.Error(), "cannot reach the server") {
			t.Errorf("got %v, want cannot reach the server", err)
		}
	}
	if err == nil {
		t.Error("read: no error")
	}
	tr.Close()
	noTransportGoroutines(t)
}

// TestRequestTimeout: a server that never answers gets the request failed
// after RequestTimeout, and the stream closed.
func TestRequestTimeout(t *testing.T) {
	f := newFake(t)
	gone := make(chan struct{})
	f.call = func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) {
		startSSE(w)
		<-r.Context().Done()
		close(gone)
	}
	tr, _ := newTransport(t, f.url(), Options{NoListen: true, RequestTimeout: 50 * time.Millisecond})
	l := newLines(t, tr)
	l.handshake()
	l.write(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hang"}}`)
	m := l.read()
	if m.Error == nil || !strings.Contains(m.Error.Message, "no answer within 50ms") {
		t.Fatalf("got %+v, want no answer within 50ms", m)
	}
	<-gone
}

// TestCancel: notifications/cancelled goes to the server, then the
// request's stream is closed, and no error answers the cancelled request.
func TestCancel(t *testing.T) {
	f := newFake(t)
	started, gone := make(chan struct{}), make(chan struct{})
	f.call = func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) {
		if msg.Method == "ping" {
			writeJSON(w, `{"jsonrpc":"2.0","id":`+msg.ID.String()+`,"result":{}}`)
			return
		}
		startSSE(w)
		close(started)
		<-r.Context().Done()
		close(gone)
	}
	tr, _ := newTransport(t, f.url(), Options{NoListen: true})
	l := newLines(t, tr)
	l.handshake()
	f.waitPosted()
	l.write(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"hang"}}`)
	// The call must be at the server before it is cancelled: a cancel that
	// overtakes its request may rightly keep the request from being sent.
	waitClosed(t, started, "the call to reach the server")
	l.write(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"user"}}`)
	if m := f.waitPosted(); m.Method != "notifications/cancelled" {
		t.Fatalf("posted: got %+v, want notifications/cancelled", m)
	}
	waitClosed(t, gone, "the cancelled call's stream to close")
	l.write(`{"jsonrpc":"2.0","id":6,"method":"ping"}`)
	if m := l.read(); m.ID != mcp.Int64ID(6) {
		t.Errorf("got %+v, want the answer to 6 and nothing for the cancelled 5", m)
	}
}

// waitClosed waits for c to be closed; the bound only turns a hang into a
// failure that says what never happened.
func waitClosed(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(30 * time.Second):
		t.Fatalf("gave up waiting for %s", what)
	}
}

// TestSecretsStayOut: the token, the headers and the URL's query appear in
// no log and no error, whatever goes wrong.
func TestSecretsStayOut(t *testing.T) {
	const token, key, query = "tok-SECRET1", "hdr-SECRET2", "q-SECRET3"
	f := newFake(t)
	f.call = func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) {
		http.Error(w, "no", http.StatusInternalServerError)
	}
	f.get = func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }
	tr, logs := newTransport(t, f.url()+"?key="+query, Options{BearerToken: token, Header: http.Header{"X-Api-Key": {key}}})
	l := newLines(t, tr)
	l.handshake()
	l.write(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	m := l.read()
	f.srv.Close() // now unreachable
	// The first request may fail alone (on a connection the server just
	// closed); the next cannot reach the server, which ends the transport.
	var err error
	text := logs.String() + m.Error.Message
	for i := 2; err == nil && i < 10; i++ {
		if _, err = tr.Write(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`+"\n", i)); err != nil {
			break
		}
		var m *mcp.Message
		if m, err = l.r.Read(); err == nil && m.Error != nil {
			text += m.Error.Message
		}
	}
	if err == nil {
		t.Fatal("the transport did not end when the server went away")
	}
	tr.Close()
	text += logs.String() + err.Error()
	for _, secret := range []string{token, key, query} {
		if strings.Contains(text, secret) {
			t.Errorf("%s appears in:\n%s", secret, text)
		}
	}
	if !strings.Contains(text, "/mcp") {
		t.Errorf("the endpoint should still be named:\n%s", text)
	}
}

// TestRedirects: a redirect within the endpoint's origin that keeps the
// method is followed with the headers; one elsewhere is refused before the
// headers leave.
func TestRedirects(t *testing.T) {
	elsewhere := newFake(t)
	f := newFake(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/mcp", http.StatusPermanentRedirect)
	})
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.url(), http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/see-other", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/mcp", http.StatusSeeOther)
	})
	mux.Handle("/mcp", f)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	tests := []struct{ path, wantErr string }{
		{"/old", ""},
		{"/away", "another origin"},
		{"/see-other", "redirects POST to GET"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			tr, _ := newTransport(t, srv.URL+tt.path, Options{NoListen: true, BearerToken: "tok"})
			l := newLines(t, tr)
			l.write(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`)
			m := l.read()
			switch {
			case tt.wantErr == "" && m.Error != nil:
				t.Fatalf("got %v, want the redirect followed", m.Error)
			case tt.wantErr != "" && (m.Error == nil || !strings.Contains(m.Error.Message, tt.wantErr)):
				t.Fatalf("got %+v, want an error with %q", m, tt.wantErr)
			}
		})
	}
	if n := len(elsewhere.requests()); n != 0 {
		t.Errorf("the other origin got %d requests, want 0", n)
	}
	for _, s := range f.requests() {
		if s.header.Get("Authorization") != "Bearer tok" {
			t.Errorf("%s %s after a redirect: no token", s.method, s.rpc)
		}
	}
	noTransportGoroutines(t)
}

// TestWriteFraming: Write takes lines however they are cut.
func TestWriteFraming(t *testing.T) {
	f := newFake(t)
	tr, _ := newTransport(t, f.url(), Options{NoListen: true})
	l := newLines(t, tr)
	l.handshake()
	for _, chunk := range []string{`{"jsonrpc":"2.0",`, `"id":1,"method":"ping"}`, "\n" + `{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n\n" + `{"jsonrpc":"2.0","id":3,"method":"ping"}` + "\r\n"} {
		if _, err := tr.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]bool{}
	for range 3 {
		got[l.read().ID.String()] = true
	}
	if !got["1"] || !got["2"] || !got["3"] {
		t.Errorf("answers: got %v, want 1, 2 and 3", got)
	}
}

// TestTooManyInFlight: past maxInFlight requests waiting for an answer, a
// request is answered with an error at once.
func TestTooManyInFlight(t *testing.T) {
	f := newFake(t)
	release := make(chan struct{})
	f.call = func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) {
		startSSE(w)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
	defer close(release)
	tr, _ := newTransport(t, f.url(), Options{NoListen: true})
	l := newLines(t, tr)
	l.handshake()
	for i := range maxInFlight + 1 {
		l.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"hang"}}`, i))
	}
	m := l.read()
	if m.ID != mcp.Int64ID(maxInFlight) || m.Error == nil || !strings.Contains(m.Error.Message, "more than 256 requests") {
		t.Fatalf("got %+v, want an error for the request past the limit", m)
	}
}

func TestNewRefuses(t *testing.T) {
	tests := []struct {
		url     string
		opts    Options
		wantErr string
	}{
		{"ftp://x/mcp", Options{}, "want an absolute http or https URL"},
		{"/mcp", Options{}, "want an absolute http or https URL"},
		{"https://u:pw@x/mcp?k=v", Options{Header: http.Header{"Accept": {"x"}}}, "the transport sets it itself"},
		{"https://x/mcp", Options{Header: http.Header{"mcp-session-id": {"x"}}}, "the transport sets it itself"},
		{"https://x/mcp", Options{Header: http.Header{"Authorization": {"x"}}, BearerToken: "t"}, "conflicts with the bearer token"},
		{"https://x/mcp", Options{Header: http.Header{"Bad Name": {"x"}}}, "not a valid header name"},
		{"https://x/mcp", Options{Header: http.Header{"X-A": {"a\nb"}}}, "must be one line"},
		{"https://x/mcp", Options{BearerToken: "a b"}, "spaces or line breaks"},
	}
	for _, tt := range tests {
		_, err := New(tt.url, tt.opts)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("New(%q, %+v): got %v, want %q", tt.url, tt.opts, err, tt.wantErr)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("New(%q): the error shows the password: %v", tt.url, err)
		}
	}
}

// TestConnectionReuse: an answered event stream is read on to its end
// rather than closed at the response, so that its connection survives for
// later requests. The server here ends each stream only once the client has
// had the response: a client that closed the stream at the response would
// close the connection too, every time.
func TestConnectionReuse(t *testing.T) {
	f := newFake(t)
	answered := make(chan struct{})
	f.call = func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) {
		startSSE(w)
		event(w, "id: 1", `data: {"jsonrpc":"2.0","id":`+msg.ID.String()+`,"result":{}}`)
		select {
		case <-answered:
		case <-r.Context().Done():
		}
	}
	tr, _ := newTransport(t, f.url(), Options{NoListen: true})
	l := newLines(t, tr)
	l.handshake()
	const calls = 20
	for i := range calls {
		l.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x"}}`, i+1))
		if m := l.read(); m.Error != nil {
			t.Fatal(m.Error)
		}
		answered <- struct{}{}
	}
	if closed := f.closedConns(); closed > 1 {
		t.Errorf("connections closed during %d calls: got %d, want none (or one, to a slow drain)", calls, closed)
	}
}
