package main

import (
	"bufio"
	"bytes"
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

	"github.com/mcpgen/mcpgen/mcp"
)

// keyServer is a Streamable HTTP server on loopback that wants an API key in
// its url's query and a header that mixes text and the key, as the servers
// whose url Codex cannot express do. It answers initialize and tools/list
// with JSON, holds "slow" until release is closed and "never" until hold
// is, and records what it got.
type keyServer struct {
	srv *httptest.Server
	key string
	// bearer, when set, is the bearer token the server wants instead of
	// the key.
	bearer  string
	release chan struct{}
	hold    chan struct{}

	mu      sync.Mutex
	methods []string // JSON-RPC methods, "DELETE" for the end of the session
	refused int      // requests without the key
}

func newKeyServer(t *testing.T, key string) *keyServer {
	ks := &keyServer{key: key, release: make(chan struct{}), hold: make(chan struct{})}
	ks.srv = httptest.NewServer(ks)
	t.Cleanup(ks.srv.Close)
	t.Cleanup(func() { close(ks.hold) }) // before Close, which waits for the handlers
	return ks
}

func (ks *keyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	keyed := r.URL.Query().Get("api_key") == ks.key && r.Header.Get("X-Api-Key") == "Key "+ks.key
	if ks.bearer != "" {
		keyed = r.Header.Get("Authorization") == "Bearer "+ks.bearer
	}
	if !keyed {
		ks.mu.Lock()
		ks.refused++
		ks.mu.Unlock()
		http.Error(w, "no key", http.StatusUnauthorized)
		return
	}
	switch r.Method {
	case http.MethodDelete:
		ks.record("DELETE")
		return
	case http.MethodGet:
		http.Error(w, "no stream", http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(r.Body)
	msg, err := mcp.DecodeMessage(bytes.TrimSpace(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ks.record(msg.Method)
	if !msg.IsRequest() {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	var result string
	switch msg.Method {
	case "initialize":
		w.Header().Set("Mcp-Session-Id", "s-1")
		result = `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"keyed","version":"1"}}`
	case "tools/list":
		result = `{"tools":[{"name":"lookup","inputSchema":{"type":"object"}}]}`
	case "slow":
		<-ks.release
		result = `{"late":true}`
	case "never":
		<-ks.hold
		result = `{"never":true}`
	default:
		result = `{}`
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID.String(), result)
}

func (ks *keyServer) record(m string) {
	ks.mu.Lock()
	ks.methods = append(ks.methods, m)
	ks.mu.Unlock()
}

func (ks *keyServer) seen() (methods []string, refused int) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	return append([]string(nil), ks.methods...), ks.refused
}

// TestServeRemote: mcpgen serve gives the agent a remote server whose url
// holds a ${VAR} (the API key in the query) and whose header mixes text and
// it, which Codex cannot express: the key comes from the environment the
// agent passed, the messages go both ways, an answer owed when the agent
// closes stdin still comes back, and then the session ends (DELETE).
func TestServeRemote(t *testing.T) {
	const key = "k-7f3a9c"
	ks := newKeyServer(t, key)
	dir := t.TempDir()
	manifestPath := filepath.Join(dir, "mcpgen.toml")
	// A tool timeout of an hour: an answer that serve waited for in vain
	// would hang the test, whose guards are far shorter.
	body := fmt.Sprintf("[servers.docs]\nurl = %q\nheaders.X-Api-Key = \"Key ${DOCS_KEY}\"\ntool_timeout = \"1h\"\n", ks.srv.URL+"/mcp?api_key=${DOCS_KEY}")
	if err := os.WriteFile(manifestPath, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCS_KEY", key)

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr := &lockedBuffer{}
	code := make(chan int, 1)
	go func() {
		// Ends when serve returns: at the end of the session.
		code <- run([]string{"serve", "--manifest", manifestPath, "docs"}, inR, outW, stderr)
		inR.Close() // what the test still sends fails, rather than wait for ever
		outW.Close()
	}()
	lines := make(chan string, 16)
	go func() {
		// Ends at serve's EOF.
		defer close(lines)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	next := func() string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("serve ended early: %s", stderr.String())
			}
			return l
		case <-time.After(30 * time.Second): // a hang guard, not a timing check
			m, r := ks.seen()
			t.Fatalf("no answer from serve (server saw %v, refused %d): %s", m, r, stderr.String())
			return ""
		}
	}
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatalf("serve reads no more (%v): %s", err, stderr.String())
		}
	}

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}}`)
	if got := next(); !strings.Contains(got, `"id":1`) || !strings.Contains(got, `"serverInfo":{"name":"keyed"`) {
		t.Fatalf("initialize: %s", got)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if got := next(); !strings.Contains(got, `"id":2`) || !strings.Contains(got, `"name":"lookup"`) {
		t.Fatalf("tools/list: %s", got)
	}
	send(`not json`)
	if got := next(); !strings.Contains(got, `"code":-32700`) {
		t.Errorf("a line that is not JSON: %s, want a parse error", got)
	}
	// The agent asks twice and cancels the second, then leaves at once:
	// the first answer is still owed, the second is not.
	send(`{"jsonrpc":"2.0","id":3,"method":"slow"}`)
	send(`{"jsonrpc":"2.0","id":5,"method":"never"}`)
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`)
	deadline := time.Now().Add(30 * time.Second)
	for methods, _ := ks.seen(); len(methods) < 6; methods, _ = ks.seen() {
		if time.Now().After(deadline) {
			t.Fatalf("the server did not get slow, never and the cancellation: %v", methods)
		}
		time.Sleep(10 * time.Millisecond)
	}
	inW.Close()
	// Only slow is let through: never's answer, were serve waiting for
	// it, would not come before the hour of its tool timeout.
	close(ks.release)
	if got := next(); !strings.Contains(got, `"id":3`) || !strings.Contains(got, `"late":true`) {
		t.Errorf("the answer owed: %s", got)
	}
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("serve exited %d: %s", c, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not exit once stdin closed and its answer came")
	}
	methods, refused := ks.seen()
	slices.Sort(methods[3:6]) // slow, never and the cancellation go out at once
	if want := "initialize notifications/initialized tools/list never notifications/cancelled slow DELETE"; strings.Join(methods, " ") != want {
		t.Errorf("the server got %v, want %s", methods, want)
	}
	if refused > 0 {
		t.Errorf("%d requests came without the key (%v)", refused, methods)
	}
	if strings.Contains(stderr.String(), key) {
		t.Errorf("serve's stderr shows the key: %s", stderr.String())
	}
}

// TestServeURL: mcpgen serve --url relays to a Streamable HTTP endpoint
// with the bearer token of the variable --bearer-token-env names, and no
// manifest (what emit --gateway-url writes for Claude Desktop); the token
// goes into the requests only; without it, serve fails at start naming
// the variable.
func TestServeURL(t *testing.T) {
	const token = "gw-token-0123456789abcdef"
	ks := newKeyServer(t, "")
	ks.bearer = token
	t.Setenv("GW_TOKEN", token)
	t.Chdir(t.TempDir()) // no manifest here or above is read

	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"desktop","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	}, "\n") + "\n"
	var out, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"serve", "--url", ks.srv.URL + "/mcp", "--bearer-token-env", "GW_TOKEN"}, strings.NewReader(in), &out, &stderr)
	}()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve --url exited %d: %s", code, stderr.String())
		}
	case <-time.After(30 * time.Second): // a hang guard, not a timing check
		t.Fatalf("serve --url did not end once stdin closed: %s", stderr.String())
	}
	if got := out.String(); !strings.Contains(got, `"serverInfo":{"name":"keyed"`) || !strings.Contains(got, `"name":"lookup"`) {
		t.Errorf("the agent got %s", got)
	}
	// The agent here writes its three lines without waiting for answers,
	// and the server's handlers run side by side: the three may be seen
	// in any order, the session's DELETE last.
	methods, refused := ks.seen()
	if n := len(methods); refused > 0 || n != 4 || methods[n-1] != "DELETE" ||
		!slices.Equal(slices.Sorted(slices.Values(methods[:n-1])), []string{"initialize", "notifications/initialized", "tools/list"}) {
		t.Errorf("the server got %v (%d refused), want initialize, notifications/initialized and tools/list, then DELETE", methods, refused)
	}
	if strings.Contains(stderr.String()+out.String(), token) {
		t.Errorf("serve showed the token: %s", stderr.String())
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"serve", "--url", ks.srv.URL + "/mcp", "--bearer-token-env", "GW_UNSET"}, 1, "mcpgen: --bearer-token-env GW_UNSET: the variable is not set or empty in the environment mcpgen got"},
		{[]string{"serve", "--url", ks.srv.URL + "/mcp", "files"}, 2, `mcpgen: --url relays to a URL instead of a server of the manifest: drop "files"`},
		{[]string{"serve", "--bearer-token-env", "GW_TOKEN", "files"}, 2, "mcpgen: --bearer-token-env is the token of --url: pass --url URL too"},
	} {
		var o, e bytes.Buffer
		if code := run(tc.args, strings.NewReader(""), &o, &e); code != tc.code || !strings.Contains(e.String(), tc.want) {
			t.Errorf("mcpgen %s: exit %d %q, want %d with %q", strings.Join(tc.args, " "), code, e.String(), tc.code, tc.want)
		}
	}
}
