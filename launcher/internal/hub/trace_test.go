package hub

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/launcher/internal/tracing"
)

// collector is an OTLP/HTTP receiver on loopback: it keeps the spans it is
// sent, as OTLP's JSON encoding has them.
type collector struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []otlpSpan
}

type otlpSpan struct {
	TraceID      string `json:"traceId"`
	SpanID       string `json:"spanId"`
	ParentSpanID string `json:"parentSpanId"`
	Name         string `json:"name"`
	Kind         int    `json:"kind"`
	Status       struct {
		Code int `json:"code"`
	} `json:"status"`
	Attributes []struct {
		Key   string `json:"key"`
		Value struct {
			String string `json:"stringValue"`
		} `json:"value"`
	} `json:"attributes"`
}

func newCollector(t *testing.T) *collector {
	c := &collector{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "want POST /v1/traces of JSON", http.StatusBadRequest)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var req struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []otlpSpan `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		if err := json.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				c.spans = append(c.spans, ss.Spans...)
			}
		}
		c.mu.Unlock()
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *collector) received() []otlpSpan {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]otlpSpan(nil), c.spans...)
}

// TestHubTracing: with a tracer, a tool call the hub forwards is a span,
// the child of the agent's (its request's traceparent), exported to the
// OTLP receiver; the server gets the span's traceparent, in the agent's
// trace. A tool's error result is a failed span.
func TestHubTracing(t *testing.T) {
	col := newCollector(t)
	xenv, metas := metaLog(t)
	th := newTestHub(t, "echo", xenv)
	tr := tracing.New(&tracing.Config{Endpoint: col.srv.URL + "/v1/traces", Service: "mcpgen"}, "ws", nil)
	th.hub.SetTracer(tr)
	c := th.client("agent", "")
	const traceID, agentSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	c.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"traceparent":"00-` + traceID + `-` + agentSpan + `-01"}}}`)
	if got := testserver.ResultText(t, c.Next()); got != "hi" {
		t.Fatalf("echo: %q", got)
	}
	c.Send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope-not-a-tool","arguments":{}}}`)
	c.Next()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr.Shutdown(ctx) // exports what waits

	spans := col.received()
	var call *otlpSpan
	for i, s := range spans {
		if s.TraceID == traceID {
			call = &spans[i]
		}
	}
	if call == nil {
		t.Fatalf("no span of the agent's trace among %d: %+v", len(spans), spans)
	}
	if call.ParentSpanID != agentSpan || call.Name != "tools/call echo" || call.Status.Code == 2 {
		t.Errorf("the call's span: %+v", *call)
	}
	attrs := map[string]string{}
	for _, a := range call.Attributes {
		attrs[a.Key] = a.Value.String
	}
	if attrs["mcp.server"] != "test" || attrs["mcp.tool"] != "echo" || attrs["mcp.face"] != "hub" {
		t.Errorf("the span's attributes: %v", attrs)
	}
	sent := ""
	for _, l := range metas() {
		if strings.HasPrefix(l, "tools/call ") && strings.Contains(l, traceID) {
			sent = l
		}
	}
	if want := `"traceparent":"00-` + traceID + `-` + call.SpanID + `-01"`; !strings.Contains(sent, want) {
		t.Errorf("the server read %q, want %s", sent, want)
	}
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2 (the second call's a root)", len(spans))
	}
	for _, s := range spans {
		if s.TraceID != traceID && (s.Status.Code != 2 || s.ParentSpanID != "") {
			t.Errorf("the failed call's span: %+v", s)
		}
	}
}

// BenchmarkTracedRoundTrip: a tools/call round trip through the hub, side
// by side with and without a tracer (whose spans go to a receiver on
// loopback that takes them). The goal of issue 20: within 5% of off.
//
//	go test -run '^$' -bench TracedRoundTrip -benchtime 20000x ./launcher/internal/hub/
func BenchmarkTracedRoundTrip(b *testing.B) {
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	b.Cleanup(sink.Close)
	for _, traced := range []bool{false, true} {
		b.Run(map[bool]string{false: "off", true: "on"}[traced], func(b *testing.B) {
			h := benchHub(b)
			if traced {
				tr := tracing.New(&tracing.Config{Endpoint: sink.URL + "/v1/traces", Service: "bench"}, "ws", nil)
				b.Cleanup(func() { tr.Shutdown(context.Background()) })
				h.hub.SetTracer(tr)
			}
			benchCalls(b, []*benchConn{h.unixClient(b)}, 1)
		})
	}
}
