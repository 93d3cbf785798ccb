//go:build unix

package launcher

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
)

// get asks url with GET (or method), with a bearer token unless "".
func get(t *testing.T, method, url, token string, header ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, string(b)}
}

// waitHTTP polls url until check holds of its answer, at most waitLong.
func waitHTTP(t *testing.T, what, url, token string, check func(response) bool) response {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		r := get(t, http.MethodGet, url, token)
		if check(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: last answer %d %q", what, r.StatusCode, r.body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// hasLines reports whether text has every line of want, as written.
func hasLines(text string, want ...string) (missing []string) {
	lines := map[string]bool{}
	for l := range strings.SplitSeq(text, "\n") {
		lines[l] = true
	}
	for _, w := range want {
		if !lines[w] {
			missing = append(missing, w)
		}
	}
	return missing
}

// TestSessionProbesAndMetrics: /healthz and /readyz answer without a
// token, GET and HEAD only; /metrics needs the face's token, and counts
// the tool calls made through a real session, by server, tool and
// outcome, with their latencies, beside the servers by state (a lazy
// server idle), the HTTP clients and the first load.
func TestSessionProbesAndMetrics(t *testing.T) {
	const token = "metrics-test-token-0123456789"
	t.Setenv("METRICS_TEST_TOKEN", token)
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpgen.toml")
	toml := "[gateway]\nprefix = \"always\"\n\n[session]\n[session.auth]\ntoken_env = \"METRICS_TEST_TOKEN\"\n\n" + testServerTOML(t, "a", "serve") +
		strings.Replace(testServerTOML(t, "lazy", "serve"), "\nenv =", "\nstart = \"lazy\"\nenv =", 1)
	if err := os.WriteFile(path, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := startSession(t, path, Options{HTTP: HTTPOptions{Listen: "127.0.0.1:0"}})
	st := ts.wait("a ready", func(st *ctl.Status) bool { return ready(st, "a") })
	base := strings.TrimSuffix(st.HTTP.URL, "/mcp")

	if r := get(t, http.MethodGet, base+HealthPath, ""); r.StatusCode != http.StatusOK || r.body != "ok\n" {
		t.Errorf("healthz: got %d %q, want 200 ok", r.StatusCode, r.body)
	}
	waitHTTP(t, "readyz 200 (a ready, the lazy server idle)", base+ReadyPath, "", func(r response) bool { return r.StatusCode == http.StatusOK && r.body == "ready\n" })
	if r := get(t, http.MethodHead, base+ReadyPath, ""); r.StatusCode != http.StatusOK || r.body != "" {
		t.Errorf("HEAD readyz: got %d %q, want 200 and no body", r.StatusCode, r.body)
	}
	if r := post(t, base+HealthPath, `{}`); r.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST healthz: got %d %q, want 405", r.StatusCode, r.body)
	}
	// The loopback checks apply to the probes too: a page whose name
	// rebinds to 127.0.0.1 reads nothing.
	if r := get(t, http.MethodGet, base+ReadyPath, "", "Origin", "http://evil.example"); r.StatusCode != http.StatusForbidden {
		t.Errorf("readyz from another origin: got %d %q, want 403", r.StatusCode, r.body)
	}
	if r := get(t, http.MethodGet, base+MetricsPath, ""); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("metrics without a token: got %d %q, want 401", r.StatusCode, r.body)
	}

	gw := httpClient(t, st.HTTP.URL, "metrics-agent", token)
	for _, id := range []string{"2", "3"} {
		gw.Call(id, "a__echo", `{"text":"x"}`)
		if got := testserver.ResultText(t, nextAnswer(gw)); got != "x" {
			t.Fatalf("echo: %q", got)
		}
	}
	gw.Call("4", "a__no_such_tool", `{}`) // the gateway refuses it: no server hears of it
	nextAnswer(gw)

	r := get(t, http.MethodGet, base+MetricsPath, token)
	if r.StatusCode != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		t.Fatalf("metrics: got %d %s", r.StatusCode, r.header.Get("Content-Type"))
	}
	if missing := hasLines(r.body,
		`mcpgen_tool_calls_total{outcome="ok",server="a",tool="echo"} 2`,
		`mcpgen_tool_calls_total{outcome="error",server="a",tool="echo"} 0`,
		`mcpgen_tool_call_duration_seconds_count{server="a",tool="echo"} 2`,
		`mcpgen_servers{state="ready"} 1`,
		`mcpgen_servers{state="idle"} 1`,
		`mcpgen_servers{state="failed"} 0`,
		`mcpgen_server_restarts_total{server="a"} 0`,
		`mcpgen_clients{face="http"} 1`,
		`mcpgen_clients{face="gateway"} 0`,
		`mcpgen_reloads_total{result="ok"} 1`,
		`mcpgen_last_reload_success 1`,
		`mcpgen_requests_in_flight 0`,
		`mcpgen_idle_stops_total 0`,
	); len(missing) > 1 || (len(missing) == 1 && missing[0] != `mcpgen_idle_stops_total 0`) {
		t.Errorf("metrics: missing lines %q in\n%s", missing, r.body)
	}
	if strings.Contains(r.body, "no_such_tool") {
		t.Errorf("metrics: a tool that no server has is a label:\n%s", r.body)
	}
	gw.Close()
}

// TestSessionMetricsOpen: [session] metrics = "open" serves /metrics to
// anyone who reaches the address, while the MCP endpoint still needs the
// token.
func TestSessionMetricsOpen(t *testing.T) {
	t.Setenv("METRICS_TEST_TOKEN", "metrics-test-token-0123456789")
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpgen.toml")
	toml := "[session]\nmetrics = \"open\"\n[session.auth]\ntoken_env = \"METRICS_TEST_TOKEN\"\n\n" + testServerTOML(t, "a", "serve")
	if err := os.WriteFile(path, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := startSession(t, path, Options{HTTP: HTTPOptions{Listen: "127.0.0.1:0"}})
	st := ts.wait("a ready", func(st *ctl.Status) bool { return ready(st, "a") })
	base := strings.TrimSuffix(st.HTTP.URL, "/mcp")
	if r := get(t, http.MethodGet, base+MetricsPath, ""); r.StatusCode != http.StatusOK || !strings.Contains(r.body, "mcpgen_servers{") {
		t.Errorf("open metrics without a token: got %d %q", r.StatusCode, r.body)
	}
	if r := post(t, st.HTTP.URL, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("the MCP endpoint without a token: got %d, want 401", r.StatusCode)
	}
}

// TestSessionReadyzFailing: an eager server that cannot start keeps
// /readyz at 503 (and /healthz at 200); once a reload removes it, the
// session is ready.
func TestSessionReadyzFailing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpgen.toml")
	good := testServerTOML(t, "a", "serve")
	if err := os.WriteFile(path, []byte(good+testServerTOML(t, "broken", "exit")), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := startSession(t, path, Options{HTTP: HTTPOptions{Listen: "127.0.0.1:0"}})
	st := ts.wait("a ready, broken failed", func(st *ctl.Status) bool {
		return ready(st, "a") && len(st.Servers) == 2 && st.Servers[1].State == ctl.Failed
	})
	base := strings.TrimSuffix(st.HTTP.URL, "/mcp")
	if r := get(t, http.MethodGet, base+ReadyPath, ""); r.StatusCode != http.StatusServiceUnavailable || r.body != "servers not ready\n" {
		t.Errorf("readyz with a failed server: got %d %q, want 503", r.StatusCode, r.body)
	}
	if r := get(t, http.MethodGet, base+HealthPath, ""); r.StatusCode != http.StatusOK {
		t.Errorf("healthz with a failed server: got %d, want 200", r.StatusCode)
	}
	if r := get(t, http.MethodGet, base+MetricsPath, ""); !strings.Contains(r.body, `mcpgen_servers{state="failed"} 1`) {
		t.Errorf("metrics with a failed server:\n%s", r.body)
	}
	if err := os.WriteFile(path, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	ts.s.Reload()
	waitHTTP(t, "readyz 200 once the broken server is gone", base+ReadyPath, "", func(r response) bool { return r.StatusCode == http.StatusOK })
}

// TestSessionDrain: while a slow call is under way, Drain makes /readyz
// 503 at once; a new HTTP session gets 503 with Retry-After, a new call
// on an open session an error that says the launcher drains, a connect
// an error too; the slow call gets its answer, and then the session
// stops by itself.
func TestSessionDrain(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpgen.toml")
	if err := os.WriteFile(path, []byte("[gateway]\nprefix = \"always\"\n\n"+testServerTOML(t, "a", "serve")), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := startSession(t, path, Options{HTTP: HTTPOptions{Listen: "127.0.0.1:0"}})
	st := ts.wait("a ready", func(st *ctl.Status) bool { return ready(st, "a") })
	base := strings.TrimSuffix(st.HTTP.URL, "/mcp")
	waitHTTP(t, "readyz 200", base+ReadyPath, "", func(r response) bool { return r.StatusCode == http.StatusOK })

	slow := httpClient(t, st.HTTP.URL, "slow-agent", "")
	other := httpClient(t, st.HTTP.URL, "other-agent", "")
	slow.Call("2", "a__slow", `{"ms":4000}`)
	waitUntil(t, "the slow call under way", func() bool { return ts.s.drain.calls.Load() == 1 })

	ended := ts.s.Drain()
	if r := get(t, http.MethodGet, base+ReadyPath, ""); r.StatusCode != http.StatusServiceUnavailable || r.body != "draining\n" {
		t.Errorf("readyz while draining: got %d %q, want 503 draining", r.StatusCode, r.body)
	}
	if r := get(t, http.MethodGet, base+HealthPath, ""); r.StatusCode != http.StatusOK {
		t.Errorf("healthz while draining: got %d, want 200", r.StatusCode)
	}
	r := post(t, st.HTTP.URL, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"late","version":"1"}}}`)
	if r.StatusCode != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || !strings.Contains(r.body, "draining") {
		t.Errorf("a new session while draining: got %d (Retry-After %q) %s, want 503 with Retry-After", r.StatusCode, r.header.Get("Retry-After"), r.body)
	}
	other.Call("3", "a__echo", `{"text":"late"}`)
	if m := nextAnswer(other); m.Error == nil || !strings.Contains(m.Error.Message, "draining") {
		t.Errorf("a new call while draining: got %s, want an error that says the launcher drains", m.AppendJSON(nil))
	}
	if _, _, err := ctl.ConnectGateway(context.Background(), ts.ws, nil, "", nil, nil); err == nil || !strings.Contains(err.Error(), "draining") {
		t.Errorf("a connect while draining: got %v, want an error that says the launcher drains", err)
	}
	m := nextAnswer(slow)
	if got := testserver.ResultText(t, m); got != "slept" {
		t.Errorf("the slow call under way: got %s, want its answer", m.AppendJSON(nil))
	}
	select {
	case <-ended:
	case <-time.After(waitLong):
		t.Fatal("the session did not stop after the drain")
	}
	ts.ended = true
	if err := <-ts.done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// TestSessionDrainDeadline: a call that never ends holds the drain only
// until its deadline (drain_timeout less the servers' stop): the session
// stops, and the call gets an error.
func TestSessionDrainDeadline(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpgen.toml")
	if err := os.WriteFile(path, []byte("[gateway]\nprefix = \"always\"\n\n[session]\ndrain_timeout = \"2s\"\n\n"+testServerTOML(t, "a", "serve")), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := startSession(t, path, Options{HTTP: HTTPOptions{Listen: "127.0.0.1:0"}})
	st := ts.wait("a ready", func(st *ctl.Status) bool { return ready(st, "a") })
	c := httpClient(t, st.HTTP.URL, "stuck-agent", "")
	c.Call("2", "a__slow", `{"ms":600000}`) // longer than the test
	waitUntil(t, "the call under way", func() bool { return ts.s.drain.calls.Load() == 1 })
	ended := ts.s.Drain()
	select {
	case <-ended:
	case <-time.After(waitLong):
		t.Fatal("the session did not stop after the drain's deadline")
	}
	ts.ended = true
	if err := <-ts.done; err != nil {
		t.Errorf("Run: %v", err)
	}
	c.Close()
}

// waitUntil polls cond until it holds, at most waitLong.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting until %s: not after %s", what, waitLong)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
