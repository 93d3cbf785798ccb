package metrics

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/launcher/internal/hub"
)

// TestToolLabelsBounded: an agent that calls made-up tools cannot grow
// the metrics: a name is a label once a call of it has a result, names
// that only fail are _unknown, and past MaxTools, or a name that is too
// long or not UTF-8, _other.
func TestToolLabelsBounded(t *testing.T) {
	set := New(func() Snapshot { return Snapshot{} })
	c := set.Server("git")
	for i := range 1000 {
		c.ToolCall(fmt.Sprintf("made-up-%d", i), hub.OutcomeError, time.Millisecond)
	}
	for i := range MaxTools + 10 {
		c.ToolCall(fmt.Sprintf("tool-%d", i), hub.OutcomeOK, time.Millisecond)
	}
	c.ToolCall("bad\xff", hub.OutcomeOK, time.Millisecond)
	c.ToolCall(strings.Repeat("x", maxToolName+1), hub.OutcomeToolError, time.Millisecond)
	c.ToolCall("tool-0", hub.OutcomeError, time.Millisecond) // a known tool's failure is its own

	text := scrape(t, set)
	for _, line := range []string{
		`mcpgen_tool_calls_total{outcome="error",server="git",tool="_unknown"} 1000`,
		`mcpgen_tool_calls_total{outcome="ok",server="git",tool="_other"} 11`,
		`mcpgen_tool_calls_total{outcome="tool_error",server="git",tool="_other"} 1`,
		`mcpgen_tool_calls_total{outcome="ok",server="git",tool="tool-0"} 1`,
		`mcpgen_tool_calls_total{outcome="error",server="git",tool="tool-0"} 1`,
		fmt.Sprintf(`mcpgen_tool_calls_total{outcome="ok",server="git",tool="tool-%d"} 1`, MaxTools-1),
	} {
		if !strings.Contains(text, "\n"+line+"\n") {
			t.Errorf("no line %s", line)
		}
	}
	// Each label has its five outcomes, and so have the two catch-alls.
	if got, want := strings.Count(text, "\nmcpgen_tool_calls_total{"), (MaxTools+2)*int(hub.Outcomes); got != want {
		t.Errorf("series of tool calls: got %d, want %d", got, want)
	}
}

// scrape is what set's handler serves.
func scrape(t *testing.T, set *Set) string {
	t.Helper()
	w := httptest.NewRecorder()
	set.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if w.Code != http.StatusOK {
		t.Fatalf("scrape: %d %s", w.Code, w.Body)
	}
	return w.Body.String()
}

// TestSnapshot: what the session reports at a scrape, every state and
// face present, zeros included.
func TestSnapshot(t *testing.T) {
	set := New(func() Snapshot {
		return Snapshot{
			Servers: []Server{{Name: "a", State: "ready", Restarts: 2}, {Name: "b", State: "failed"}, {Name: "c", State: "ready"}},
			Clients: map[string]int{"http": 3},
			Queued:  42, InFlight: 1,
		}
	})
	set.Reloaded(true)
	set.Reloaded(false)
	set.IdleStopped("a")
	want := `
# HELP mcpgen_servers Servers of the workspace, by state.
# TYPE mcpgen_servers gauge
mcpgen_servers{state="backoff"} 0
mcpgen_servers{state="failed"} 1
mcpgen_servers{state="idle"} 0
mcpgen_servers{state="ready"} 2
mcpgen_servers{state="starting"} 0
mcpgen_servers{state="stopped"} 0
# HELP mcpgen_clients Agents connected, by face: hub (connect NAME), gateway (connect --workspace), http.
# TYPE mcpgen_clients gauge
mcpgen_clients{face="gateway"} 0
mcpgen_clients{face="http"} 3
mcpgen_clients{face="hub"} 0
# HELP mcpgen_queued_bytes Bytes waiting to be written to agents, all faces together.
# TYPE mcpgen_queued_bytes gauge
mcpgen_queued_bytes 42
# HELP mcpgen_reloads_total Reloads of the manifest, by result (ok, failed).
# TYPE mcpgen_reloads_total counter
mcpgen_reloads_total{result="failed"} 1
mcpgen_reloads_total{result="ok"} 1
# HELP mcpgen_last_reload_success 1 if the last load of the manifest succeeded, 0 if it failed (the previous manifest still runs).
# TYPE mcpgen_last_reload_success gauge
mcpgen_last_reload_success 0
# HELP mcpgen_idle_stops_total Servers stopped for idleness (idle_timeout), by server.
# TYPE mcpgen_idle_stops_total counter
mcpgen_idle_stops_total{server="a"} 1
`
	text := scrape(t, set)
	for line := range strings.SplitSeq(strings.TrimSpace(want), "\n") {
		if !strings.Contains(text, "\n"+line+"\n") {
			t.Errorf("no line %s in\n%s", line, text)
		}
	}
}

// TestHistogramAndEscaping: a tool's latency histogram is cumulative, its
// +Inf bucket its count, its sum the seconds observed; a label value with
// a quote, a backslash or a line feed is escaped as the format asks.
func TestHistogramAndEscaping(t *testing.T) {
	set := New(func() Snapshot { return Snapshot{} })
	c := set.Server(`we"ird\server` + "\n")
	c.ToolCall("t", hub.OutcomeOK, 3*time.Millisecond)  // le 0.005
	c.ToolCall("t", hub.OutcomeOK, 40*time.Millisecond) // le 0.05
	c.ToolCall("t", hub.OutcomeOK, 400*time.Second)     // past every bucket
	text := scrape(t, set)
	labels := `server="we\"ird\\server\n",tool="t"`
	for _, line := range []string{
		`# TYPE mcpgen_tool_call_duration_seconds histogram`,
		`mcpgen_tool_call_duration_seconds_bucket{` + labels + `,le="0.005"} 1`,
		`mcpgen_tool_call_duration_seconds_bucket{` + labels + `,le="0.025"} 1`,
		`mcpgen_tool_call_duration_seconds_bucket{` + labels + `,le="0.05"} 2`,
		`mcpgen_tool_call_duration_seconds_bucket{` + labels + `,le="300"} 2`,
		`mcpgen_tool_call_duration_seconds_bucket{` + labels + `,le="+Inf"} 3`,
		`mcpgen_tool_call_duration_seconds_sum{` + labels + `} 400.043`,
		`mcpgen_tool_call_duration_seconds_count{` + labels + `} 3`,
		`mcpgen_tool_calls_total{outcome="ok",` + labels + `} 3`,
	} {
		if !strings.Contains(text, "\n"+line+"\n") {
			t.Errorf("no line %s in\n%s", line, text)
		}
	}
}
