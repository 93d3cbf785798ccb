// Package metrics is a launcher session's Prometheus metrics, served at
// /metrics of its HTTP face: what the session counts as it goes (tool
// calls and their latency, reloads, idle stops), and what it reads from
// the session at each scrape (servers by state, restarts, clients by
// face, bytes queued, requests under way). Each session has a registry
// of its own, never the global default, so that several sessions in one
// process (tests, a host of many workspaces) do not collide.
//
// Tool calls are counted on the hub's hot path (see hub.Hooks): each
// server's meters are found in a sync.Map and updated with Prometheus'
// atomic counters and histograms, so that a call takes no lock. The tool
// label is what an agent asked for, so its values are bounded: see
// ServerCalls.ToolCall.
package metrics

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcpgen/mcpgen/launcher/internal/hub"
)

// A Snapshot is what the session reports at a scrape.
type Snapshot struct {
	Servers []Server
	// Clients connected, by face: "hub" (connect NAME), "gateway"
	// (connect --workspace), "http" (HTTP sessions and stateless agents).
	Clients map[string]int
	// Queued is how many bytes wait to be written to agents, all faces
	// together.
	Queued int
	// InFlight is how many agents' requests the servers are answering.
	InFlight int
}

// A Server is one server as a scrape sees it.
type Server struct {
	Name     string
	State    string // as status says: idle, starting, ready, backoff, failed, stopped
	Restarts int
}

// States are the servers' states, each reported even when no server is
// in it, so that a query of one state never finds nothing.
var States = []string{"idle", "starting", "ready", "backoff", "failed", "stopped"}

// Faces are the faces whose clients are counted.
var Faces = []string{"hub", "gateway", "http"}

// Label values that stand for tool names not kept as labels (see
// ServerCalls.ToolCall).
const (
	OtherTool   = "_other"
	UnknownTool = "_unknown"
)

// MaxTools bounds the tool names kept as labels, per server.
const MaxTools = 256

// maxToolName bounds the length of a tool name kept as a label.
const maxToolName = 128

// latencyBuckets span a tool call's time, from a local lookup to a long
// build, in seconds.
var latencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// A Set is one session's metrics.
type Set struct {
	reg      *prometheus.Registry
	snapshot func() Snapshot

	calls      *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	idleStops  *prometheus.CounterVec
	reloads    *prometheus.CounterVec
	reloadOK   prometheus.Gauge
	reloadTime prometheus.Gauge

	mu      sync.Mutex
	servers map[string]*ServerCalls

	// Of the session, read at each scrape.
	byState  *prometheus.Desc
	restarts *prometheus.Desc
	clients  *prometheus.Desc
	queued   *prometheus.Desc
	inFlight *prometheus.Desc
}

// New returns a session's metrics; snapshot is called at each scrape, and
// must not block for long.
func New(snapshot func() Snapshot) *Set {
	s := &Set{
		reg:      prometheus.NewRegistry(),
		snapshot: snapshot,
		servers:  map[string]*ServerCalls{},
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpgen_tool_calls_total",
			Help: "Tool calls answered, by server, tool and outcome (ok, tool_error, error, timeout, cancelled).",
		}, []string{"server", "tool", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcpgen_tool_call_duration_seconds",
			Help:    "How long tool calls took, from the hub's taking them to their answer, by server and tool.",
			Buckets: latencyBuckets,
		}, []string{"server", "tool"}),
		idleStops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpgen_idle_stops_total",
			Help: "Servers stopped for idleness (idle_timeout), by server.",
		}, []string{"server"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpgen_reloads_total",
			Help: "Reloads of the manifest, by result (ok, failed).",
		}, []string{"result"}),
		reloadOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcpgen_last_reload_success",
			Help: "1 if the last load of the manifest succeeded, 0 if it failed (the previous manifest still runs).",
		}),
		reloadTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcpgen_last_reload_timestamp_seconds",
			Help: "When the manifest was last loaded, or a load failed, in seconds since the epoch.",
		}),
		byState:  prometheus.NewDesc("mcpgen_servers", "Servers of the workspace, by state.", []string{"state"}, nil),
		restarts: prometheus.NewDesc("mcpgen_server_restarts_total", "Restarts of each server after a crash, a failed ping or a restart request, as status shows them.", []string{"server"}, nil),
		clients:  prometheus.NewDesc("mcpgen_clients", "Agents connected, by face: hub (connect NAME), gateway (connect --workspace), http.", []string{"face"}, nil),
		queued:   prometheus.NewDesc("mcpgen_queued_bytes", "Bytes waiting to be written to agents, all faces together.", nil, nil),
		inFlight: prometheus.NewDesc("mcpgen_requests_in_flight", "Agents' requests that the servers are answering.", nil, nil),
	}
	s.reloads.WithLabelValues("ok")
	s.reloads.WithLabelValues("failed")
	s.reg.MustRegister(s.calls, s.latency, s.idleStops, s.reloads, s.reloadOK, s.reloadTime, (*sessionCollector)(s),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return s
}

// Handler serves the metrics in Prometheus' text format.
func (s *Set) Handler() http.Handler {
	return promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{
		// A scrape reads the session's status: a few at a time are
		// plenty, and more must not pile up.
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
	})
}

// Reloaded counts a load of the manifest (the first, or a reload).
func (s *Set) Reloaded(ok bool) {
	result, v := "ok", 1.0
	if !ok {
		result, v = "failed", 0
	}
	s.reloads.WithLabelValues(result).Inc()
	s.reloadOK.Set(v)
	s.reloadTime.SetToCurrentTime()
}

// IdleStopped counts a server stopped for idleness.
func (s *Set) IdleStopped(server string) { s.idleStops.WithLabelValues(server).Inc() }

// Server returns the meters of server's tool calls.
func (s *Set) Server(server string) *ServerCalls {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.servers[server]
	if c == nil {
		c = &ServerCalls{set: s, server: server}
		s.servers[server] = c
	}
	return c
}

// ServerCalls are one server's tool call meters.
type ServerCalls struct {
	set    *Set
	server string
	tools  sync.Map // tool name -> *toolMeter
	n      atomic.Int32
	mu     sync.Mutex // held to add a tool, never to count a call
}

type toolMeter struct {
	calls   [hub.Outcomes]prometheus.Counter
	latency prometheus.Observer
}

// ToolCall counts a call of tool that ended so and took d (it is a
// hub.Hooks.ToolCall). A tool name is kept as a label once a call of it
// is answered with a result (the server has such a tool), up to MaxTools
// per server; until then its failed calls count as UnknownTool, and past
// the bound every new name counts as OtherTool, so that an agent asking
// for made-up tools cannot grow the metrics without end.
func (c *ServerCalls) ToolCall(tool string, outcome hub.Outcome, d time.Duration) {
	m, ok := c.tools.Load(tool)
	if !ok {
		m = c.add(tool, outcome)
	}
	t := m.(*toolMeter)
	t.calls[outcome].Inc()
	t.latency.Observe(d.Seconds())
}

// add returns the meter of a tool not met yet: its own, or the one of
// OtherTool or UnknownTool.
func (c *ServerCalls) add(tool string, outcome hub.Outcome) any {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.tools.Load(tool); ok {
		return m
	}
	switch {
	case outcome != hub.OutcomeOK && outcome != hub.OutcomeToolError:
		tool = UnknownTool
	case c.n.Load() >= MaxTools || len(tool) > maxToolName || !utf8.ValidString(tool) || tool == OtherTool || tool == UnknownTool:
		tool = OtherTool
	}
	if m, ok := c.tools.Load(tool); ok {
		return m
	}
	m := &toolMeter{latency: c.set.latency.WithLabelValues(c.server, tool)}
	for o := range hub.Outcomes {
		m.calls[o] = c.set.calls.WithLabelValues(c.server, tool, o.String())
	}
	if tool != OtherTool && tool != UnknownTool {
		c.n.Add(1)
	}
	c.tools.Store(tool, m)
	return m
}

// sessionCollector reports what the session's snapshot says.
type sessionCollector Set

func (s *sessionCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{s.byState, s.restarts, s.clients, s.queued, s.inFlight} {
		ch <- d
	}
}

func (s *sessionCollector) Collect(ch chan<- prometheus.Metric) {
	snap := s.snapshot()
	count := make(map[string]int, len(States))
	for _, v := range snap.Servers {
		count[v.State]++
		ch <- prometheus.MustNewConstMetric(s.restarts, prometheus.CounterValue, float64(v.Restarts), v.Name)
	}
	for _, state := range States {
		ch <- prometheus.MustNewConstMetric(s.byState, prometheus.GaugeValue, float64(count[state]), state)
	}
	for _, face := range Faces {
		ch <- prometheus.MustNewConstMetric(s.clients, prometheus.GaugeValue, float64(snap.Clients[face]), face)
	}
	ch <- prometheus.MustNewConstMetric(s.queued, prometheus.GaugeValue, float64(snap.Queued))
	ch <- prometheus.MustNewConstMetric(s.inFlight, prometheus.GaugeValue, float64(snap.InFlight))
}
