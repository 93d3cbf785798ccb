package mcp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	json "github.com/goccy/go-json"
)

// A scripted server answers on the wire as its script says, and keeps every
// message it read: how the tests play servers that no library would write
// (silent, crashing, modern only).
type scripted struct {
	t      *testing.T
	w      *Writer
	p      *pipes
	script func(s *scripted, msg *Message)

	mu   sync.Mutex
	read []*Message
	done chan struct{}
}

// newScripted runs a scripted server, and a client of it, over pipes; the
// test's cleanup stops both.
func newScripted(t *testing.T, opts ClientOptions, script func(s *scripted, msg *Message)) (*scripted, *Client) {
	t.Helper()
	p := newPipes()
	s := &scripted{t: t, w: NewWriter(p.serverW), p: p, script: script, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		r := NewReader(p.serverR)
		for {
			msg, err := r.Read()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.read = append(s.read, msg)
			s.mu.Unlock()
			script(s, msg)
		}
	}()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	c := NewClient(context.Background(), p.clientR, p.clientW, opts)
	t.Cleanup(func() {
		c.Close()
		s.exit()
		waitDone(t, s.done, "scripted server")
		waitDone(t, c.Done(), "client")
	})
	return s, c
}

// reply answers msg with result (JSON), or with err.
func (s *scripted) reply(msg *Message, result string, err *Error) {
	if err != nil {
		_ = s.w.Write(&Message{ID: msg.ID, Error: err})
		return
	}
	_ = s.w.Write(&Message{ID: msg.ID, Result: json.RawMessage(result)})
}

// exit ends the server as a process's exit would: its output closes.
func (s *scripted) exit() {
	s.p.serverW.Close()
	s.p.serverR.Close()
}

// methodsAfter returns the methods of what the server read, once it has
// read n messages at least (or after hangGuard).
func (s *scripted) methodsAfter(n int) []string {
	for deadline := time.Now().Add(hangGuard); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		s.mu.Lock()
		got := len(s.read)
		s.mu.Unlock()
		if got >= n {
			break
		}
	}
	return s.methods()
}

// methods returns the methods of what the server read, in order.
func (s *scripted) methods() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.read {
		out = append(out, m.Method)
	}
	return out
}

// messages returns what the server read.
func (s *scripted) messages() []*Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.read)
}

const (
	legacyInit = `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"old","version":"1"}}`
	discovered = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true},"logging":{},"resources":{"subscribe":true,"listChanged":true}},"instructions":"Be modern.","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"new","version":"2"}},"ttlMs":0,"cacheScope":"private"}`
)

// legacyScript is a legacy server that answers -32601 to what it does not
// know, server/discover included.
func legacyScript(s *scripted, msg *Message) {
	switch {
	case !msg.IsRequest():
	case msg.Method == "initialize":
		s.reply(msg, legacyInit, nil)
	case msg.Method == "ping":
		s.reply(msg, `{}`, nil)
	case msg.Method == "tools/list":
		s.reply(msg, `{"tools":[{"name":"old-tool","inputSchema":{"type":"object"}}]}`, nil)
	default:
		s.reply(msg, "", NewError(CodeMethodNotFound, "method not found: %s", msg.Method))
	}
}

// modernScript is a modern-only server: every request must carry the
// modern _meta; initialize is refused with the versions it speaks, as the
// spec advises; tools/list pages by one.
func modernScript(s *scripted, msg *Message) {
	if !msg.IsRequest() {
		return
	}
	if msg.Method == "initialize" {
		s.reply(msg, "", UnsupportedVersionError("2025-11-25", []string{ModernVersion}))
		return
	}
	m, err := ParseRequestMeta(msg.Params)
	if err == nil {
		if werr := CheckModernRequest(&m, []string{ModernVersion}); werr != nil {
			err = werr
		}
	}
	if err != nil {
		s.reply(msg, "", err.(*Error))
		return
	}
	switch msg.Method {
	case "server/discover":
		s.reply(msg, discovered, nil)
	case "tools/list":
		var p struct {
			Cursor string `json:"cursor"`
		}
		_ = json.Unmarshal(msg.Params, &p)
		if p.Cursor == "" {
			s.reply(msg, `{"resultType":"complete","tools":[{"name":"a","inputSchema":{"type":"object"}}],"nextCursor":"2","ttlMs":0,"cacheScope":"private"}`, nil)
		} else {
			s.reply(msg, `{"resultType":"complete","tools":[{"name":"b","inputSchema":{"type":"object"}}],"ttlMs":0,"cacheScope":"private"}`, nil)
		}
	default:
		s.reply(msg, "", NewError(CodeMethodNotFound, "method not found: %s", msg.Method))
	}
}

func TestOpenModernOnly(t *testing.T) {
	checkGoroutines(t)
	s, c := newScripted(t, ClientOptions{Info: Implementation{Name: "tester", Version: "0.1"}, Capabilities: json.RawMessage(`{"elicitation":{}}`)}, modernScript)
	ctx := t.Context()
	init, err := c.Open(ctx, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Era() != EraModern || c.Version() != ModernVersion || init.Era != EraModern || init.Discover == nil {
		t.Fatalf("era %v, version %q, init era %v; want modern at %s", c.Era(), c.Version(), init.Era, ModernVersion)
	}
	// The legacy form: what a legacy client is told, without what it
	// could only use through requests the modern revision removed.
	want := `{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"resources":{"listChanged":true}},"serverInfo":{"name":"new","version":"2"},"instructions":"Be modern."}`
	if string(init.Raw) != want || init.ServerInfo.Name != "new" || init.Instructions != "Be modern." {
		t.Errorf("InitializeResult: got %s, want %s", init.Raw, want)
	}
	if string(init.Discover.Raw) != discovered {
		t.Errorf("Discover.Raw: got %s, want it as sent", init.Discover.Raw)
	}

	tools, err := c.ListTools(ctx) // two pages
	if err != nil || len(tools) != 2 || tools[0].Name != "a" || tools[1].Name != "b" {
		t.Fatalf("ListTools: got %v, %v; want a, b", tools, err)
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	// Nothing but modern requests, each with its _meta; no initialize,
	// no notifications/initialized, no ping.
	if got := strings.Join(s.methods(), " "); got != "server/discover tools/list tools/list server/discover" {
		t.Errorf("the server read %s", got)
	}
	for _, m := range s.messages() {
		meta, err := ParseRequestMeta(m.Params)
		if err != nil || meta.ProtocolVersion != ModernVersion || string(meta.ClientCapabilities) != `{"elicitation":{}}` ||
			string(meta.ClientInfo) != `{"name":"tester","version":"0.1"}` {
			t.Errorf("%s: params %s; want the modern _meta", m.Method, m.Params)
		}
	}
	if p := s.messages()[2].Params; !strings.Contains(string(p), `"cursor":"2"`) {
		t.Errorf("the second page: params %s, want the cursor", p)
	}
}

func TestOpenLegacy(t *testing.T) {
	checkGoroutines(t)
	s, c := newScripted(t, ClientOptions{}, legacyScript)
	init, err := c.Open(t.Context(), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Era() != EraLegacy || c.Version() != "2025-06-18" || init.Era != EraLegacy || init.Discover != nil || string(init.Raw) != legacyInit {
		t.Fatalf("era %v, version %q, result %+v; want legacy, as the server answered", c.Era(), c.Version(), init)
	}
	if _, err := c.ListTools(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := "server/discover initialize notifications/initialized tools/list ping"
	if got := strings.Join(s.methodsAfter(5), " "); got != want {
		t.Errorf("the server read %s, want %s", got, want)
	}
	for _, m := range s.messages()[1:] {
		if strings.Contains(string(m.Params), "_meta") {
			t.Errorf("%s: params %s; a legacy request has no modern _meta", m.Method, m.Params)
		}
	}
}

// TestOpenSilentLegacy: a legacy server that says nothing before
// initialize gets initialize after the grace, and is legacy.
func TestOpenSilentLegacy(t *testing.T) {
	checkGoroutines(t)
	var initialized sync.Once
	var ready bool
	s, c := newScripted(t, ClientOptions{}, func(s *scripted, msg *Message) {
		switch {
		case msg.Method == "initialize":
			initialized.Do(func() { ready = true })
			s.reply(msg, legacyInit, nil)
		case !ready:
			// Silent before initialize.
		default:
			legacyScript(s, msg)
		}
	})
	if _, err := c.Open(t.Context(), OpenOptions{Grace: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if c.Era() != EraLegacy {
		t.Fatalf("era %v, want legacy", c.Era())
	}
	if got := strings.Join(s.methodsAfter(3), " "); got != "server/discover initialize notifications/initialized" {
		t.Errorf("the server read %s", got)
	}
}

// TestOpenExitsOnProbe: a legacy server that exits on a request before
// initialize fails Open with ErrProbeEnded; opened again with a legacy
// version, it is sent no probe.
func TestOpenExitsOnProbe(t *testing.T) {
	checkGoroutines(t)
	crashy := func(s *scripted, msg *Message) {
		if msg.Method != "initialize" && msg.IsRequest() && len(s.methods()) == 1 {
			s.exit() // what a crash does to its output
			return
		}
		legacyScript(s, msg)
	}
	_, c := newScripted(t, ClientOptions{}, crashy)
	_, err := c.Open(t.Context(), OpenOptions{})
	if !errors.Is(err, ErrProbeEnded) || !errors.Is(err, ErrClosed) {
		t.Fatalf("Open: got %v, want ErrProbeEnded and ErrClosed", err)
	}

	s, c := newScripted(t, ClientOptions{}, crashy)
	if _, err := c.Open(t.Context(), OpenOptions{Version: LatestVersion}); err != nil {
		t.Fatalf("Open at a legacy version: %v", err)
	}
	if got := strings.Join(s.methodsAfter(2), " "); got != "initialize notifications/initialized" || c.Era() != EraLegacy {
		t.Errorf("the server read %s (era %v); want the handshake, no probe", got, c.Era())
	}
}

// TestOpenDualEra: mcp.Server speaks both; the probe makes it modern, and
// a legacy version makes it legacy.
func TestOpenDualEra(t *testing.T) {
	checkGoroutines(t)
	c := connect(t, testServer(t, &ServerOptions{PageSize: 2, Instructions: "Use echo."}), ClientOptions{})
	init, err := c.Open(t.Context(), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Era() != EraModern || init.Discover == nil || init.ServerInfo.Name != "test-server" || init.Instructions != "Use echo." {
		t.Fatalf("era %v, result %s; want modern, with the server's identity", c.Era(), init.Raw)
	}
	tools, err := c.ListTools(t.Context()) // three pages, each with _meta
	if err != nil || len(tools) != 5 {
		t.Fatalf("ListTools: got %d tools, %v; want 5", len(tools), err)
	}
	res, err := c.CallTool(t.Context(), "echo", map[string]string{"text": "hi"})
	if err != nil || res.Content[0].Text != "hi" {
		t.Fatalf("CallTool: %+v, %v", res, err)
	}
	if err := c.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}

	c = connect(t, testServer(t, nil), ClientOptions{})
	init, err = c.Open(t.Context(), OpenOptions{Version: "2025-06-18"})
	if err != nil || c.Era() != EraLegacy || init.ProtocolVersion != "2025-06-18" {
		t.Fatalf("pinned legacy: got %v, %v, era %v", init, err, c.Era())
	}
}

// TestOpenUnsupportedLegacyOnly: a server that answers the probe -32022,
// listing only a legacy revision, is opened with initialize at that one.
func TestOpenUnsupportedLegacyOnly(t *testing.T) {
	checkGoroutines(t)
	s, c := newScripted(t, ClientOptions{}, func(s *scripted, msg *Message) {
		if msg.Method == "server/discover" {
			s.reply(msg, "", UnsupportedVersionError(ModernVersion, []string{"2025-06-18"}))
			return
		}
		legacyScript(s, msg)
	})
	if _, err := c.Open(t.Context(), OpenOptions{}); err != nil {
		t.Fatal(err)
	}
	msgs := s.messages()
	if c.Era() != EraLegacy || len(msgs) < 2 || msgs[1].Method != "initialize" || !strings.Contains(string(msgs[1].Params), `"protocolVersion":"2025-06-18"`) {
		t.Errorf("era %v; the server read %v; want initialize at 2025-06-18", c.Era(), s.methods())
	}

	// Listing nothing of ours is an error that says what each speaks.
	_, c = newScripted(t, ClientOptions{}, func(s *scripted, msg *Message) {
		s.reply(msg, "", UnsupportedVersionError(ModernVersion, []string{"2099-01-01"}))
	})
	if _, err := c.Open(t.Context(), OpenOptions{}); err == nil || !strings.Contains(err.Error(), "the server speaks 2099-01-01") {
		t.Errorf("Open: got %v, want what the server speaks", err)
	}
}

// TestOpenKnown: a server known as legacy gets no probe; one known as
// legacy that refuses initialize is probed, and found modern; a pinned
// modern version on a legacy server is an error.
func TestOpenKnown(t *testing.T) {
	checkGoroutines(t)
	s, c := newScripted(t, ClientOptions{}, legacyScript)
	if _, err := c.Open(t.Context(), OpenOptions{Known: EraLegacy}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.methodsAfter(2), " "); got != "initialize notifications/initialized" {
		t.Errorf("known legacy: the server read %s, want no probe", got)
	}

	s, c = newScripted(t, ClientOptions{}, modernScript)
	if _, err := c.Open(t.Context(), OpenOptions{Known: EraLegacy}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.methods(), " "); got != "initialize server/discover" || c.Era() != EraModern {
		t.Errorf("known legacy, now modern: the server read %s (era %v)", got, c.Era())
	}

	_, c = newScripted(t, ClientOptions{}, legacyScript)
	_, err := c.Open(t.Context(), OpenOptions{Version: ModernVersion})
	if !errors.Is(err, ErrMethodNotFound) || c.Era() != EraUnknown {
		t.Errorf("pinned modern on a legacy server: got %v (era %v), want its -32601", err, c.Era())
	}

	_, c = newScripted(t, ClientOptions{}, legacyScript)
	if _, err := c.Open(t.Context(), OpenOptions{Version: "1999-01-01"}); err == nil || !strings.Contains(err.Error(), `"1999-01-01"`) {
		t.Errorf("an unknown version: got %v", err)
	}
}

// TestOpenModernMetaMerges: a modern request's own _meta (a progress
// token) is kept beside the revision's.
func TestOpenModernMetaMerges(t *testing.T) {
	s, c := newScripted(t, ClientOptions{}, modernScript)
	if _, err := c.Open(t.Context(), OpenOptions{}); err != nil {
		t.Fatal(err)
	}
	_ = c.Call(t.Context(), "tools/call", json.RawMessage(`{"name":"x","_meta":{"progressToken":7}}`), nil)
	msgs := s.messages()
	last := msgs[len(msgs)-1]
	meta, err := ParseRequestMeta(last.Params)
	if err != nil || string(meta.ProgressToken) != "7" || meta.ProtocolVersion != ModernVersion {
		t.Errorf("params %s: want the progress token and the modern _meta", last.Params)
	}
}

func ExampleClient_Open() {
	p := newPipes()
	s := NewServer(Implementation{Name: "dual", Version: "1"}, nil)
	go func() { _ = s.Serve(context.Background(), p.serverR, p.serverW); p.serverW.Close() }()
	c := NewClient(context.Background(), p.clientR, p.clientW, ClientOptions{})
	defer c.Close()
	if _, err := c.Open(context.Background(), OpenOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Era(), c.Version())
	// Output: modern 2026-07-28
}
