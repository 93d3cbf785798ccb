//go:build unix

package launcher

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/mcp"
	"github.com/mcpgen/mcpgen/mcp/streamable"
)

// httpClient begins an HTTP session at url (the streamable transport, as
// mcpgen reaches a remote server), and initializes.
func httpClient(t *testing.T, url, name, token string) *testserver.Client {
	t.Helper()
	tr, err := streamable.New(url, streamable.Options{BearerToken: token})
	if err != nil {
		t.Fatal(err)
	}
	return testserver.NewClient(t, tr, name, `{"sampling":{}}`)
}

// TestSessionHTTP: launch --listen serves the gateway at /mcp and each
// server at /servers/NAME/mcp; status shows the URL and counts the
// sessions, which are clients of the gateway and the hubs while open; a
// server's request reaches the HTTP agent and its answer comes back.
func TestSessionHTTP(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpgen.toml")
	if err := os.WriteFile(path, []byte(testServerTOML(t, "a", "serve")+testServerTOML(t, "b", "serve")), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := startSession(t, path, Options{HTTP: HTTPOptions{Listen: "127.0.0.1:0"}})
	st := ts.wait("both servers ready", func(st *ctl.Status) bool { return ready(st, "a", "b") })
	if st.HTTP == nil || !strings.HasPrefix(st.HTTP.URL, "http://127.0.0.1:") || !strings.HasSuffix(st.HTTP.URL, "/mcp") || st.HTTP.Auth != "none" {
		t.Fatalf("status's http: %+v", st.HTTP)
	}
	base := strings.TrimSuffix(st.HTTP.URL, "/mcp")

	gw := httpClient(t, st.HTTP.URL, "gw-agent", "")
	gw.Call("2", "a__echo", `{"text":"through the gateway"}`)
	if got := testserver.ResultText(t, gw.Next()); got != "through the gateway" {
		t.Errorf("gateway call: %q", got)
	}
	one := httpClient(t, base+"/servers/b/mcp", "b-agent", "")
	one.Call("2", "echo", `{"text":"to b alone"}`)
	if got := testserver.ResultText(t, one.Next()); got != "to b alone" {
		t.Errorf("server call: %q", got)
	}
	// A server's request reaches the agent over HTTP, and its answer the
	// server.
	one.Call("3", "sample", `{}`)
	ask := one.Next()
	if ask.Method != "sampling/createMessage" {
		t.Fatalf("want the server's sampling request, got %s", ask.AppendJSON(nil))
	}
	one.Send(`{"jsonrpc":"2.0","id":` + ask.ID.String() + `,"result":{"role":"assistant","content":{"type":"text","text":"sampled"}}}`)
	if got := testserver.ResultText(t, one.Next()); !strings.Contains(got, "sampled") {
		t.Errorf("sample: %q", got)
	}

	st = ts.wait("two HTTP sessions, counted as clients", func(st *ctl.Status) bool {
		return st.HTTP.Sessions == 2 && st.Gateway != nil && st.Gateway.Clients.Count == 1 && serverClients(st, "b") == 2
	})
	gw.Close()
	one.Close()
	ts.wait("the sessions to end (DELETE)", func(st *ctl.Status) bool {
		return st.HTTP.Sessions == 0 && st.Gateway.Clients.Count == 0 && serverClients(st, "b") == 0
	})

	// An unknown server's endpoint.
	resp := post(t, base+"/servers/nope/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(resp.body, `has no server \"nope\"`) {
		t.Errorf("unknown server: %d %s", resp.StatusCode, resp.body)
	}
}

// nextAnswer skips the notifications that come before the next answer.
func nextAnswer(c *testserver.Client) *mcp.Message {
	for {
		if m := c.Next(); m.IsResponse() {
			return m
		}
	}
}

func ready(st *ctl.Status, names ...string) bool {
	n := 0
	for _, s := range st.Servers {
		for _, name := range names {
			if s.Name == name && s.State == ctl.Ready {
				n++
			}
		}
	}
	return n == len(names)
}

func serverClients(st *ctl.Status, name string) int {
	for _, s := range st.Servers {
		if s.Name == name {
			return s.Clients.Count
		}
	}
	return -1
}

type response struct {
	StatusCode int
	header     http.Header
	body       string
}

func post(t *testing.T, url, body string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, string(b)}
}

// TestSessionHTTPSlowReader: an agent that opens its GET stream and never
// reads it, while a server floods it with log messages, is dropped at the
// bounds of an agent on stdio (it loses agent.MaxUnread of them in a row
// while nothing is written to it): its session ends, and the launcher
// serves the next agent.
func TestSessionHTTPSlowReader(t *testing.T) {
	if testing.Short() {
		t.Skip("an attack test (a client that never reads): run without -short")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpgen.toml")
	if err := os.WriteFile(path, []byte(testServerTOML(t, "a", "serve", "MCPGEN_TESTSERVER_TOOLS=echo,flood")), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := startSession(t, path, Options{HTTP: HTTPOptions{Listen: "127.0.0.1:0"}})
	st := ts.wait("a ready", func(st *ctl.Status) bool { return ready(st, "a") })
	url := st.HTTP.URL

	resp := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"deaf","version":"1"}}}`)
	sid := resp.header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, resp.body)
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %v %v", r, err)
	} else {
		r.Body.Close()
	}
	host := strings.TrimPrefix(strings.TrimSuffix(url, "/mcp"), "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\n\r\n", host, sid)
	// Nothing of conn is read from now on.

	// The flood's log messages go to the deaf agent's GET stream: the
	// gateway sends every agent the servers' log messages.
	flood := make(chan response, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"flood","arguments":{"steps":200000}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			flood <- response{body: err.Error()}
			return
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		flood <- response{StatusCode: r.StatusCode, body: string(b)}
	}()
	ts.wait("the deaf agent dropped", func(st *ctl.Status) bool { return st.HTTP.Sessions == 0 })
	if !ts.events.has("client dropped") {
		t.Errorf("the log does not say the client was dropped")
	}
	if r := post(t, url, `{"jsonrpc":"2.0","id":3,"method":"ping"}`); r.StatusCode != http.StatusBadRequest {
		t.Errorf("a POST without a session: %d %s", r.StatusCode, r.body)
	}
	req, _ = http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != http.StatusNotFound {
		t.Errorf("the dropped session: %v %v, want 404", r, err)
	} else {
		r.Body.Close()
	}
	// The launcher serves the next agent.
	other := httpClient(t, url, "reader", "")
	other.Call("2", "echo", `{"text":"still here"}`)
	if got := testserver.ResultText(t, nextAnswer(other)); got != "still here" {
		t.Errorf("the other agent: %q", got)
	}
	<-flood
}

// TestSessionHTTPS: with tls_cert and tls_key, the face serves HTTPS (and
// only HTTPS), and its URL says so; the token of [session.auth] admits.
func TestSessionHTTPS(t *testing.T) {
	dir := t.TempDir()
	selfSigned(t, dir)
	path := filepath.Join(dir, "mcpgen.toml")
	manifest := "[session]\ntls_cert = \"cert.pem\"\ntls_key = \"key.pem\"\n\n[session.auth]\ntoken_env = \"HTTPS_TEST_TOKEN\"\n\n" + testServerTOML(t, "a", "serve")
	if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HTTPS_TEST_TOKEN", "https-test-token-0123456789")
	ts := startSession(t, path, Options{HTTP: HTTPOptions{Listen: "127.0.0.1:0"}})
	st := ts.wait("a ready", func(st *ctl.Status) bool { return ready(st, "a") })
	if !strings.HasPrefix(st.HTTP.URL, "https://127.0.0.1:") || st.HTTP.Auth != "a bearer token" {
		t.Fatalf("status's http: %+v", st.HTTP)
	}
	pem, err := os.ReadFile(filepath.Join(dir, "cert.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer client.CloseIdleConnections()
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"tls","version":"1"}}}`
	for _, tc := range []struct {
		name, token string
		status      int
	}{
		{"with the token", "https-test-token-0123456789", http.StatusOK},
		{"without", "", http.StatusUnauthorized},
	} {
		req, _ := http.NewRequest(http.MethodPost, st.HTTP.URL, strings.NewReader(init))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s: %s %s, want %d", tc.name, resp.Status, body, tc.status)
		}
	}
	// Plain HTTP gets no MCP.
	if r := post(t, "http"+strings.TrimPrefix(st.HTTP.URL, "https"), init); r.StatusCode == http.StatusOK {
		t.Errorf("plain HTTP to the HTTPS face: %d %s", r.StatusCode, r.body)
	}
}

// TestSessionHTTPIdleExit: an HTTP session counts as a client of the
// launcher while it is open, and only then: with one open, no idle exit
// is planned; once it is deleted, the idle launcher exits.
func TestSessionHTTPIdleExit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, lazyTOML(t, "srv", true, "50ms"))
	ts := startSession(t, path, Options{IdleExit: 100 * time.Millisecond, HTTP: HTTPOptions{Listen: "127.0.0.1:0"}})
	st := ts.wait("idle", serverIs("srv", ctl.Idle))
	resp := post(t, st.HTTP.URL, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"idle","version":"1"}}}`)
	sid := resp.header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, resp.body)
	}
	ts.wait("no idle exit planned while the session is open", func(st *ctl.Status) bool { return st.HTTP.Sessions == 1 && st.IdleExitAt == nil })
	select {
	case err := <-ts.done:
		ts.ended = true
		t.Fatalf("the launcher exited with an HTTP session open: %v", err)
	default:
	}
	req, _ := http.NewRequest(http.MethodDelete, st.HTTP.URL, nil)
	req.Header.Set("Mcp-Session-Id", sid)
	r, err := http.DefaultClient.Do(req)
	if err != nil || r.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %v %v", r, err)
	}
	r.Body.Close()
	select {
	case err := <-ts.done:
		ts.ended = true
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(waitLong):
		t.Fatal("the idle launcher did not exit once its HTTP session ended")
	}
}

// modernHTTPClient is a modern agent at url: every request its own POST,
// with the revision's headers (the streamable transport pinned to the
// modern era, as mcpgen reaches a modern remote server).
func modernHTTPClient(t *testing.T, url string) *testserver.Client {
	t.Helper()
	tr, err := streamable.New(url, streamable.Options{Protocol: mcp.ModernVersion})
	if err != nil {
		t.Fatal(err)
	}
	return testserver.NewStatelessClient(t, tr)
}

// modernToolCall sends a modern tools/call of tool with args (JSON) and
// the rest of params (extra, ",..." JSON), declaring caps.
func modernToolCall(c *testserver.Client, id, tool, args, caps, extra string) {
	c.Send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + extra +
		`,"_meta":{` + testserver.ModernMeta("modern-http", caps) + `}}}`)
}

// TestSessionHTTPModern: a modern agent over HTTP, without a session: it
// calls the tools of a legacy and a modern server through the gateway; a
// legacy server's elicitation during its call comes back input_required,
// and its retry, another POST, finds the call held; it counts as one
// client of the gateway, and no HTTP session.
func TestSessionHTTPModern(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpgen.toml")
	if err := os.WriteFile(path, []byte(testServerTOML(t, "a", "serve", "MCPGEN_TESTSERVER_TOOLS=echo,elicit")+testServerTOML(t, "b", "modern")), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := startSession(t, path, Options{HTTP: HTTPOptions{Listen: "127.0.0.1:0"}})
	st := ts.wait("both servers ready", func(st *ctl.Status) bool { return ready(st, "a", "b") })
	c := modernHTTPClient(t, st.HTTP.URL)

	modernToolCall(c, "1", "a__echo", `{"text":"to legacy"}`, "", "")
	if m := nextAnswer(c); testserver.ResultText(t, m) != "to legacy" || mcp.ResultType(m.Result) != mcp.ResultComplete {
		t.Errorf("legacy server: %s", m.AppendJSON(nil))
	}
	modernToolCall(c, "2", "b__echo", `{"text":"to modern"}`, "", "")
	if m := nextAnswer(c); testserver.ResultText(t, m) != "to modern" {
		t.Errorf("modern server: %s", m.AppendJSON(nil))
	}

	const elicits = `{"elicitation":{}}`
	modernToolCall(c, "3", "a__elicit", `{"text":"deploy"}`, elicits, "")
	m := nextAnswer(c)
	ir, err := mcp.ParseInputRequired(m.Result)
	if err != nil || mcp.ResultType(m.Result) != mcp.ResultInputRequired || len(ir.Keys) != 1 {
		t.Fatalf("want input_required, got %s", m.AppendJSON(nil))
	}
	modernToolCall(c, "4", "a__elicit", `{"text":"deploy"}`, elicits,
		`,"inputResponses":{"`+ir.Keys[0]+`":{"action":"accept","content":{"ok":true}}},"requestState":"`+ir.RequestState+`"`)
	if m := nextAnswer(c); m.ID.String() != "4" || !strings.Contains(testserver.ResultText(t, m), `"ok":true`) {
		t.Errorf("the retry: %s", m.AppendJSON(nil))
	}

	st = ts.wait("one stateless client of the gateway", func(st *ctl.Status) bool {
		return st.Gateway != nil && st.Gateway.Clients.Count == 1
	})
	if st.HTTP.Sessions != 0 || st.HTTP.Stateless != 1 {
		t.Errorf("HTTP sessions %d, stateless %d: want none and one", st.HTTP.Sessions, st.HTTP.Stateless)
	}
}

// TestSessionHTTPTools: the gateway's endpoint takes ?tools, as connect
// takes --tools: an agent at /mcp?tools=search, of either era, lists
// search_tools and call_tool, while one at /mcp lists every tool; a
// server's endpoint, or a value that is no mode, is refused with 400.
func TestSessionHTTPTools(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpgen.toml")
	if err := os.WriteFile(path, []byte(testServerTOML(t, "a", "serve")), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := startSession(t, path, Options{HTTP: HTTPOptions{Listen: "127.0.0.1:0"}})
	st := ts.wait("the server ready", func(st *ctl.Status) bool { return ready(st, "a") })
	url := st.HTTP.URL
	names := func(m *mcp.Message) []string {
		var r struct {
			Tools []struct{ Name string } `json:"tools"`
		}
		if err := json.Unmarshal(m.Result, &r); err != nil {
			t.Fatalf("tools/list: %v: %s", err, m.AppendJSON(nil))
		}
		var out []string
		for _, tool := range r.Tools {
			out = append(out, tool.Name)
		}
		slices.Sort(out) // the eras list in orders of their own
		return out
	}
	search := []string{"call_tool", "search_tools"}
	for _, c := range []struct {
		name   string
		url    string
		search bool
	}{{"legacy, all", url, false}, {"legacy, search", url + "?tools=search", true}} {
		cl := httpClient(t, c.url, "agent", "")
		cl.Send(`{"jsonrpc":"2.0","id":"l","method":"tools/list"}`)
		got := names(nextAnswer(cl))
		if slices.Equal(got, search) != c.search || !c.search && !slices.Contains(got, "echo") {
			t.Errorf("%s: tools %q", c.name, got)
		}
		cl.Close()
	}
	for _, c := range []struct {
		name   string
		url    string
		search bool
	}{{"modern, all", url, false}, {"modern, search", url + "?tools=search", true}} {
		cl := modernHTTPClient(t, c.url)
		cl.Send(`{"jsonrpc":"2.0","id":"m","method":"tools/list","params":{"_meta":{` + testserver.ModernMeta("modern-http", "") + `}}}`)
		got := names(nextAnswer(cl))
		if slices.Equal(got, search) != c.search || !c.search && !slices.Contains(got, "echo") {
			t.Errorf("%s: tools %q", c.name, got)
		}
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	base := strings.TrimSuffix(url, "/mcp")
	for _, c := range []struct{ url, want string }{
		{base + "/servers/a/mcp?tools=search", "a server's endpoint lists its own"},
		{url + "?tools=some", `?tools=\"some\": use one of all, search`},
	} {
		if resp := post(t, c.url, initialize); resp.StatusCode != http.StatusBadRequest || !strings.Contains(resp.body, c.want) {
			t.Errorf("%s: %d %s, want 400 saying %q", c.url, resp.StatusCode, resp.body, c.want)
		}
	}
}
