// Package metrics is a launcher session's Prometheus metrics, served at
// /metrics of its HTTP face in Prometheus' text exposition format: what the session counts as it goes (tool
// calls and their latency, reloads, idle stops), and what it reads from
// the session at each scrape (servers by state, restarts, clients by
// face, bytes queued, requests under way), with the process's own. Each
// session has a Set of its own, so that several sessions in one process
// (tests, a host of many workspaces) do not collide.
//
// The format is written here (exposition.go), not by the Prometheus Go
// client: that client and the protobuf packages it brings cost every
// mcpgen command about 3 ms of package initialization (measured with
// GODEBUG=inittrace=1), agents' connect included, for an endpoint a few
// launchers serve; the text format is small and stable.
//
// Tool calls are counted on the hub's hot path (see hub.Hooks): each
// server's meters are found in a sync.Map and updated with atomic
// counters, so that a call takes no lock. The tool label is what an agent
// asked for, so its values are bounded: see ServerCalls.ToolCall.
package metrics

import (
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

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
var latencyBuckets = [...]float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// A Set is one session's metrics.
type Set struct {
	snapshot func() Snapshot

	reloadsOK, reloadsFailed atomic.Uint64
	reloadOK                 atomic.Bool
	reloadAt                 atomic.Int64 // unix nanoseconds; 0: never

	mu        sync.Mutex
	servers   map[string]*ServerCalls
	idleStops map[string]*atomic.Uint64

	scrapes chan struct{} // scrapes under way: a few at a time
}

// New returns a session's metrics; snapshot is called at each scrape, and
// must not block for long.
func New(snapshot func() Snapshot) *Set {
	return &Set{
		snapshot:  snapshot,
		servers:   map[string]*ServerCalls{},
		idleStops: map[string]*atomic.Uint64{},
		// A scrape reads the session's status: a few at a time are
		// plenty, and more must not pile up.
		scrapes: make(chan struct{}, 4),
	}
}

// Handler serves the metrics in Prometheus' text format.
func (s *Set) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case s.scrapes <- struct{}{}:
			defer func() { <-s.scrapes }()
		default:
			http.Error(w, "too many scrapes at once: try again", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write(s.exposition())
	})
}

// Reloaded counts a load of the manifest (the first, or a reload).
func (s *Set) Reloaded(ok bool) {
	if ok {
		s.reloadsOK.Add(1)
	} else {
		s.reloadsFailed.Add(1)
	}
	s.reloadOK.Store(ok)
	s.reloadAt.Store(time.Now().UnixNano())
}

// IdleStopped counts a server stopped for idleness.
func (s *Set) IdleStopped(server string) {
	s.mu.Lock()
	n := s.idleStops[server]
	if n == nil {
		n = new(atomic.Uint64)
		s.idleStops[server] = n
	}
	s.mu.Unlock()
	n.Add(1)
}

// Server returns the meters of server's tool calls.
func (s *Set) Server(server string) *ServerCalls {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.servers[server]
	if c == nil {
		c = &ServerCalls{server: server}
		s.servers[server] = c
	}
	return c
}

// ServerCalls are one server's tool call meters.
type ServerCalls struct {
	server string
	tools  sync.Map // tool name -> *toolMeter
	n      atomic.Int32
	mu     sync.Mutex // held to add a tool, never to count a call
}

// A toolMeter counts one tool's calls by outcome, and their latency: how
// many fell in each bucket (each its own, not the cumulative count the
// format shows), how many in all, and their sum in seconds (float64 bits).
type toolMeter struct {
	calls   [hub.Outcomes]atomic.Uint64
	buckets [len(latencyBuckets)]atomic.Uint64
	count   atomic.Uint64
	sumBits atomic.Uint64
}

func (m *toolMeter) observe(seconds float64) {
	for i, le := range latencyBuckets {
		if seconds <= le {
			m.buckets[i].Add(1)
			break
		}
	}
	m.count.Add(1)
	for {
		old := m.sumBits.Load()
		if m.sumBits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+seconds)) {
			return
		}
	}
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
	t.calls[outcome].Add(1)
	t.observe(d.Seconds())
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
	m := &toolMeter{}
	if tool != OtherTool && tool != UnknownTool {
		c.n.Add(1)
	}
	c.tools.Store(tool, m)
	return m
}
