package streamable

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/mcp"
)

// A fake is a Streamable HTTP server on loopback whose answers each test
// scripts. It answers initialize itself (JSON, with a session id unless
// noSession), accepts notifications and responses (202, and hands them to
// the test on posted), and passes other requests to call and GETs to get
// (405 when nil). It records every HTTP request it gets.
type fake struct {
	t         testing.TB
	srv       *httptest.Server
	session   string
	noSession bool
	version   string // the protocol version initialize answers

	call func(w http.ResponseWriter, r *http.Request, msg *mcp.Message)
	get  func(w http.ResponseWriter, r *http.Request)

	posted chan *mcp.Message

	mu     sync.Mutex
	seen   []seenRequest
	closed int // connections closed
}

// A seenRequest is what the fake got: the HTTP method, the JSON-RPC
// method ("response" for a response) and the headers.
type seenRequest struct {
	method string
	rpc    string
	header http.Header
}

func newFake(t testing.TB) *fake {
	t.Helper()
	f := &fake{t: t, session: "sess-1", version: "2025-11-25", posted: make(chan *mcp.Message, 64)}
	f.srv = httptest.NewUnstartedServer(f)
	f.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			f.mu.Lock()
			f.closed++
			f.mu.Unlock()
		}
	}
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) url() string { return f.srv.URL + "/mcp" }

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var msg *mcp.Message
	rec := seenRequest{method: r.Method, header: r.Header.Clone()}
	if r.Method == http.MethodPost {
		body, _ := io.ReadAll(r.Body)
		m, err := mcp.DecodeMessage(bytes.TrimSpace(body))
		if err != nil {
			http.Error(w, "bad message: "+err.Error(), http.StatusBadRequest)
			return
		}
		msg = m
		rec.rpc = m.Method
		if m.IsResponse() {
			rec.rpc = "response"
		}
	}
	f.mu.Lock()
	f.seen = append(f.seen, rec)
	f.mu.Unlock()

	switch {
	case r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusOK)
	case r.Method == http.MethodGet:
		if f.get == nil {
			http.Error(w, "no stream here", http.StatusMethodNotAllowed)
			return
		}
		f.get(w, r)
	case r.Method != http.MethodPost:
		w.WriteHeader(http.StatusMethodNotAllowed)
	case msg.Method == "initialize":
		if !f.noSession {
			w.Header().Set("Mcp-Session-Id", f.session)
		}
		writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}}`, msg.ID, f.version))
	case !msg.IsRequest():
		f.posted <- msg
		w.WriteHeader(http.StatusAccepted)
	case f.call != nil:
		f.call(w, r, msg)
	default:
		writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, msg.ID))
	}
}

// requests returns what the fake got so far.
func (f *fake) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.seen...)
}

// closedConns returns how many connections have been closed so far.
func (f *fake) closedConns() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// count counts the requests of an HTTP method (and a JSON-RPC one, if set).
func (f *fake) count(method, rpc string) int {
	n := 0
	for _, s := range f.requests() {
		if s.method == method && (rpc == "" || s.rpc == rpc) {
			n++
		}
	}
	return n
}

// waitPosted returns the next notification or response the client POSTed.
func (f *fake) waitPosted() *mcp.Message {
	f.t.Helper()
	select {
	case m := <-f.posted:
		return m
	case <-time.After(10 * time.Second):
		f.t.Fatal("the client posted nothing")
		return nil
	}
}

func writeJSON(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, body)
}

// startSSE starts an event stream answer.
func startSSE(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
}

// event writes one event: the fields given as "name: value" lines.
func event(w http.ResponseWriter, fields ...string) {
	_, _ = io.WriteString(w, strings.Join(fields, "\n")+"\n\n")
	w.(http.Flusher).Flush()
}

// newTransport returns a transport to url whose logs go to the test's log
// buffer, and closes it at the end of the test.
func newTransport(t *testing.T, url string, opts Options) (*Transport, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	tr, err := New(url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr, logs
}

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

// newClient starts an mcp.Client over a transport to url and performs the
// handshake.
func newClient(t *testing.T, url string, opts Options, copts mcp.ClientOptions) (*mcp.Client, *Transport) {
	t.Helper()
	tr, _ := newTransport(t, url, opts)
	if copts.Timeout == 0 {
		copts.Timeout = 20 * time.Second
	}
	c := mcp.NewClient(context.Background(), tr, tr, copts)
	t.Cleanup(func() { c.Close() })
	if _, err := c.Initialize(context.Background()); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c, tr
}

// lines is the low-level view of a transport: write lines, read messages.
type lines struct {
	t  *testing.T
	tr *Transport
	r  *mcp.Reader
}

func newLines(t *testing.T, tr *Transport) *lines {
	return &lines{t: t, tr: tr, r: mcp.NewReader(tr)}
}

func (l *lines) write(line string) {
	l.t.Helper()
	if _, err := l.tr.Write([]byte(line + "\n")); err != nil {
		l.t.Fatalf("write %s: %v", line, err)
	}
}

// read returns the next message, failing the test if none comes in time.
func (l *lines) read() *mcp.Message {
	l.t.Helper()
	type result struct {
		m   *mcp.Message
		err error
	}
	ch := make(chan result, 1)
	go func() {
		m, err := l.r.Read()
		ch <- result{m, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			l.t.Fatalf("read: %v", r.err)
		}
		return r.m
	case <-time.After(20 * time.Second):
		l.t.Fatal("read: no message")
		return nil
	}
}

// readErr reads until the transport ends, and returns the error.
func (l *lines) readErr() error {
	l.t.Helper()
	ch := make(chan error, 1)
	go func() {
		for {
			if _, err := l.r.Read(); err != nil {
				ch <- err
				return
			}
		}
	}()
	select {
	case err := <-ch:
		return err
	case <-time.After(20 * time.Second):
		l.t.Fatal("read: the transport did not end")
		return nil
	}
}

// handshake sends initialize and notifications/initialized.
func (l *lines) handshake() {
	l.t.Helper()
	l.write(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if m := l.read(); m.Error != nil {
		l.t.Fatalf("initialize: %v", m.Error)
	}
	l.write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// noTransportGoroutines fails the test if a goroutine of a Transport is
// still running after Close (a reader that was blocked in Read gets a moment
// to see the end).
func noTransportGoroutines(t *testing.T) {
	t.Helper()
	var b bytes.Buffer
	for range 100 {
		b.Reset()
		_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
		if !strings.Contains(b.String(), "streamable.(*Transport)") {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("goroutines of a Transport are left after Close:\n%s", b.String())
}
