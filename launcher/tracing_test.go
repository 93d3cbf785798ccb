//go:build unix

package launcher

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
)

// TestSessionTracing: a session launched with OTEL_EXPORTER_OTLP_ENDPOINT
// traces a tool call that an agent makes through the gateway over HTTP
// with a traceparent in its _meta: the span reaches the receiver on
// loopback, in the agent's trace, the child of the agent's span, at the
// latest when the session stops.
func TestSessionTracing(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, r.URL.Path+" "+string(b))
		mu.Unlock()
	}))
	defer col.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.URL)
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpgen.toml")
	if err := os.WriteFile(path, []byte(testServerTOML(t, "a", "serve")), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := startSession(t, path, Options{HTTP: HTTPOptions{Listen: "127.0.0.1:0"}})
	st := ts.wait("a ready", func(st *ctl.Status) bool { return ready(st, "a") })
	c := modernHTTPClient(t, st.HTTP.URL)
	const traceID, agentSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	c.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"traced"},"_meta":{"traceparent":"00-` + traceID + `-` + agentSpan + `-01",` + testserver.ModernMeta("traced", "") + `}}}`)
	if got := testserver.ResultText(t, nextAnswer(c)); got != "traced" {
		t.Fatalf("the call: %q", got)
	}
	if err := ts.end(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(bodies, "\n")
	if !strings.Contains(all, "/v1/traces ") || !strings.Contains(all, `"traceId":"`+traceID+`"`) || !strings.Contains(all, `"parentSpanId":"`+agentSpan+`"`) || !strings.Contains(all, `"mcp.face"`) {
		t.Errorf("the receiver got: %s", all)
	}
}
