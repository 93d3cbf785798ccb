package httpguard

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"
)

// passed is the handler behind the checks: it answers 200 "passed".
var passed = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.WriteString(w, "passed")
})

// checkRefusal checks that a refusal is a JSON-RPC error without an id.
func checkRefusal(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("refusal Content-Type: got %q, want application/json", ct)
	}
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &msg); err != nil || msg.JSONRPC != "2.0" || string(msg.ID) != "null" || msg.Error.Code != -32600 || msg.Error.Message == "" {
		t.Errorf("refusal body: got %q (%v), want a JSON-RPC error without an id", rec.Body.String(), err)
	}
}

// TestLocal is the DNS rebinding attack: a page of evil.example.com whose
// name resolves to 127.0.0.1 makes the browser send Host and Origin of
// its own; the conformance suite's dns-rebinding-protection scenario sends
// them both, and the valid localhost ones.
func TestLocal(t *testing.T) {
	for _, tc := range []struct {
		name    string
		host    string
		origins []string
		want    int
	}{
		{"conformance: rebinding refused", "evil.example.com", []string{"http://evil.example.com"}, 403},
		{"conformance: localhost accepted", "localhost:41234", []string{"http://localhost:41234"}, 200},
		{"127.0.0.1 with its origin", "127.0.0.1:41234", []string{"http://127.0.0.1:41234"}, 200},
		{"[::1] with its origin", "[::1]:41234", []string{"http://[::1]:41234"}, 200},
		{"no port", "localhost", nil, 200},
		{"another loopback address", "127.0.0.2:80", nil, 200},
		{"a client that is no browser: no Origin", "127.0.0.1:41234", nil, 200},
		{"through a tunnel: another port", "localhost:9000", []string{"https://localhost:9000"}, 200},
		{"a rebound name, no Origin", "evil.example.com:41234", nil, 403},
		{"a name that starts as localhost", "localhost.evil.example.com", nil, 403},
		{"loopback Host, foreign Origin", "127.0.0.1:41234", []string{"http://evil.example.com"}, 403},
		{"Origin null", "127.0.0.1:41234", []string{"null"}, 403},
		{"Origin not a URL", "127.0.0.1:41234", []string{"localhost"}, 403},
		{"Origin of another scheme", "127.0.0.1:41234", []string{"file://localhost"}, 403},
		{"two Origins", "127.0.0.1:41234", []string{"http://localhost", "http://evil.example.com"}, 403},
		{"empty Host", "", nil, 403},
		{"all interfaces as Host", "0.0.0.0:41234", nil, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/mcp", strings.NewReader("{}"))
			r.Host = tc.host
			for _, o := range tc.origins {
				r.Header.Add("Origin", o)
			}
			rec := httptest.NewRecorder()
			Local(passed).ServeHTTP(rec, r)
			if rec.Code != tc.want {
				t.Fatalf("Host %q Origin %q: got %d %s, want %d", tc.host, tc.origins, rec.Code, rec.Body, tc.want)
			}
			if tc.want != 200 {
				checkRefusal(t, rec)
			} else if rec.Body.String() != "passed" {
				t.Errorf("the request did not reach the handler: %q", rec.Body)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	const both = "application/json, text/event-stream"
	for _, tc := range []struct {
		name         string
		method       string
		contentType  string
		accept       []string
		want         int
		wantInHeader string
	}{
		{"a client's POST", "POST", "application/json", []string{both}, 200, ""},
		{"JSON in UTF-8", "POST", "application/json; charset=UTF-8", []string{both}, 200, ""},
		{"no Accept takes anything", "POST", "application/json", nil, 200, ""},
		{"wildcards", "POST", "application/json", []string{"*/*"}, 200, ""},
		{"type wildcards", "POST", "application/json", []string{"application/*, text/*;q=0.5"}, 200, ""},
		{"Accept in two headers", "POST", "application/json", []string{"application/json", "text/event-stream"}, 200, ""},
		{"no Content-Type", "POST", "", []string{both}, 415, "application/json"},
		{"a form", "POST", "application/x-www-form-urlencoded", []string{both}, 415, "application/json"},
		{"text", "POST", "text/plain", []string{both}, 415, "application/json"},
		{"JSON in Latin-1", "POST", "application/json; charset=latin1", []string{both}, 415, "application/json"},
		{"JSON only", "POST", "application/json", []string{"application/json"}, 406, ""},
		{"events only", "POST", "application/json", []string{"text/event-stream"}, 406, ""},
		{"events refused by q=0", "POST", "application/json", []string{"application/json, text/event-stream;q=0"}, 406, ""},
		{"HTML", "POST", "application/json", []string{"text/html"}, 406, ""},
		{"GET stream", "GET", "", []string{"text/event-stream"}, 200, ""},
		{"GET of JSON", "GET", "", []string{"application/json"}, 406, ""},
		{"DELETE passes", "DELETE", "", []string{"text/html"}, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, "/mcp", strings.NewReader("{}"))
			if tc.contentType != "" {
				r.Header.Set("Content-Type", tc.contentType)
			}
			for _, a := range tc.accept {
				r.Header.Add("Accept", a)
			}
			rec := httptest.NewRecorder()
			if Check(rec, r) {
				passed.ServeHTTP(rec, r)
			}
			if rec.Code != tc.want {
				t.Fatalf("got %d %s, want %d", rec.Code, rec.Body, tc.want)
			}
			if tc.want != 200 {
				checkRefusal(t, rec)
			}
			if tc.wantInHeader != "" && rec.Header().Get("Accept-Post") != tc.wantInHeader {
				t.Errorf("Accept-Post: got %q, want %q", rec.Header().Get("Accept-Post"), tc.wantInHeader)
			}
		})
	}
}

// bodyServer serves ReadBody with a limit of max: the body comes back.
func bodyServer(t *testing.T, max int64) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if body, ok := ReadBody(w, r, max); ok {
			_, _ = w.Write(body)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestReadBody(t *testing.T) {
	srv := bodyServer(t, 16)
	for _, tc := range []struct {
		name    string
		body    string
		chunked bool // no Content-Length: the limit is found reading
		want    int
	}{
		{"within the limit", "0123456789abcdef", false, 200},
		{"one byte over", "0123456789abcdefg", false, 413},
		{"over, chunked", strings.Repeat("x", 1<<20), true, 413},
		{"within, chunked", "{}", true, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(tc.body)
			if tc.chunked {
				body = io.MultiReader(body) // hides the length
			}
			resp, err := http.Post(srv.URL, "application/json", body)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.want {
				t.Fatalf("got %d %s, want %d", resp.StatusCode, got, tc.want)
			}
			if tc.want == 200 && string(got) != tc.body {
				t.Errorf("body: got %q, want %q", got, tc.body)
			}
		})
	}
}

// TestReadBodySlow: a body that does not come in time is answered 408,
// and the handler is not held.
func TestReadBodySlow(t *testing.T) {
	// Restored after the server is closed (cleanups run last first).
	t.Cleanup(func(d time.Duration) func() { return func() { readBodyTimeout = d } }(readBodyTimeout))
	readBodyTimeout = 50 * time.Millisecond
	srv := bodyServer(t, 1<<20)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The headers promise 100 bytes; 2 come, and no more.
	_, _ = io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{}")
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute)) // a bound on the test, not a timing
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a slow body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("got %d, want 408", resp.StatusCode)
	}
}

// TestSlowHeaders: a client that sends its headers a little at a time, or
// never ends them, is cut off by Server's read-header timeout rather than
// holding its connection.
func TestSlowHeaders(t *testing.T) {
	var logs bytes.Buffer
	srv := Server(passed, slog.New(slog.NewTextHandler(&logs, nil)))
	if srv.ReadHeaderTimeout != ReadHeaderTimeout || srv.MaxHeaderBytes != MaxHeaderBytes || srv.ReadTimeout != 0 || srv.WriteTimeout != 0 {
		t.Errorf("limits: got read-header %v, header bytes %d, read %v, write %v", srv.ReadHeaderTimeout, srv.MaxHeaderBytes, srv.ReadTimeout, srv.WriteTimeout)
	}
	srv.ReadHeaderTimeout = 50 * time.Millisecond // the test's, so it need not wait 10s
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { // ends when the server is closed
		defer close(done)
		_ = srv.Serve(ln)
	}()
	defer func() { srv.Close(); <-done }()

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "GET / HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute)) // a bound on the test, not a timing
	rest, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("the connection was not closed by the server: %v", err)
	}
	if strings.Contains(string(rest), "passed") {
		t.Errorf("a request without the end of its headers was served: %q", rest)
	}
}
