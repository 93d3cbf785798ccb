//go:build unix

package launcher

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/mcp"
)

// TestSessionRemoteModern: a url server that speaks only the 2026-07-28
// binding (its headers on every POST, no session) is found modern by the
// launcher's probe, its tool with an invalid x-mcp-header annotation is
// left out, an agent's call through connect NAME carries the parameter's
// header, and no request carries a session id; with protocol pinned to
// the revision, the same.
func TestSessionRemoteModern(t *testing.T) {
	for _, protocol := range []string{"", "2026-07-28"} {
		t.Run("protocol="+protocol, func(t *testing.T) { testRemoteModern(t, protocol) })
	}
}

func testRemoteModern(t *testing.T, protocol string) {
	var mu sync.Mutex
	var seen []http.Header
	var methods []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		msg, err := mcp.DecodeMessage(bytes.TrimSpace(body))
		if err != nil {
			w.WriteHeader(400)
			return
		}
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		methods = append(methods, msg.Method)
		mu.Unlock()
		reply := func(status int, v string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,%s}`, msg.ID, v)
		}
		meta, _ := mcp.ParseRequestMeta(msg.Params)
		if r.Header.Get("Mcp-Protocol-Version") != "2026-07-28" || meta.ProtocolVersion != "2026-07-28" || r.Header.Get("Mcp-Method") != msg.Method {
			reply(400, `"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"]}}`)
			return
		}
		switch msg.Method {
		case "server/discover":
			reply(200, `"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"m","version":"1"}}}`)
		case "tools/list":
			reply(200, `"result":{"resultType":"complete","ttlMs":0,"cacheScope":"private","tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}},{"name":"bad","inputSchema":{"type":"object","properties":{"n":{"type":"number","x-mcp-header":"N"}}}}]}`)
		case "subscriptions/listen":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":%s}}}\n\n", msg.ID)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case "tools/call":
			reply(200, fmt.Sprintf(`"result":{"resultType":"complete","content":[{"type":"text","text":"region=%s"}]}`, r.Header.Get("Mcp-Param-Region")))
		default:
			reply(404, `"error":{"code":-32601,"message":"Method not found"}`)
		}
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpgen.toml")
	text := fmt.Sprintf("[servers.web]\nurl = %s\n", tomlString(srv.URL+"/mcp"))
	if protocol != "" {
		text += fmt.Sprintf("protocol = %q\n", protocol)
	}
	writeFile(t, path, text)
	ts := startSession(t, path, Options{})
	st := ts.wait("web ready", func(st *ctl.Status) bool { return server(st, "web").State == ctl.Ready })
	web := server(st, "web")
	if web.Era != "modern" || !slices.Equal(web.Tools, []string{"echo"}) {
		t.Errorf("web: %+v", web)
	}
	c := ts.connect("web", "agent")
	c.Call("1", "echo", `{"region":"eu"}`)
	if got := testserver.ResultText(t, c.Next()); got != "region=eu" {
		t.Errorf("echo: got %q", got)
	}
	// The hub's listen for the tools' changes goes on a goroutine of its
	// own, and may reach the server after the call: waited for (bounded).
	for deadline := time.Now().Add(waitLong); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		listened := slices.Contains(methods, "subscriptions/listen")
		mu.Unlock()
		if listened {
			break
		}
		if time.Now().After(deadline) {
			mu.Lock()
			t.Errorf("methods: got %q, want a subscriptions/listen for the tools' changes", methods)
			mu.Unlock()
			break
		}
	}
	mu.Lock()
	for _, h := range seen {
		if h.Get("Mcp-Session-Id") != "" {
			t.Errorf("a session id: %v", h)
		}
	}
	mu.Unlock()
	if err := ts.end(); err != nil {
		t.Fatal(err)
	}
}
