package launcher

import (
	"net/http"
	"strings"

	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/httpauth"
	"github.com/mcpgen/mcpgen/launcher/internal/httpguard"
	"github.com/mcpgen/mcpgen/launcher/internal/metrics"
	"github.com/mcpgen/mcpgen/manifest"
)

// This file is what the HTTP face tells an orchestrator (Kubernetes) and
// a scraper (Prometheus): /healthz, /readyz and /metrics, beside the MCP
// endpoints.

// Paths of the probes and the metrics.
const (
	HealthPath  = "/healthz"
	ReadyPath   = "/readyz"
	MetricsPath = "/metrics"
)

// ready reports whether the session should be sent agents: its first
// manifest applied, not draining nor stopping, and every eager server
// ready or deliberately idle (stopped for idleness); lazy servers start
// when asked, so their state does not count. Otherwise it says why, in a
// word or two that names no server (the probe is public).
func (s *Session) ready() (bool, string) {
	select {
	case <-s.up:
	default:
		return false, "starting"
	}
	if s.Draining() {
		return false, "draining"
	}
	s.mu.Lock()
	closing := s.stop.closing
	servers := s.supervisorsLocked()
	s.mu.Unlock()
	if closing {
		return false, "stopping"
	}
	for _, v := range servers {
		if v.config().server.Lazy {
			continue
		}
		switch v.currentState() {
		case ctl.Ready, ctl.Idle:
		default:
			return false, "servers not ready"
		}
	}
	return true, "ready"
}

// supervisorsLocked returns every server's supervisor; the caller holds
// s.mu.
func (s *Session) supervisorsLocked() []*supervisor {
	out := make([]*supervisor, 0, len(s.servers))
	for _, v := range s.servers {
		out = append(out, v)
	}
	return out
}

// serveProbe answers /healthz (the process serves: always) or /readyz
// (see ready): 200 or 503, and a word. GET and HEAD only.
func (s *Session) serveProbe(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		httpguard.Refuse(w, http.StatusMethodNotAllowed, "a probe takes GET or HEAD")
		return
	}
	ok, why := true, "ok"
	if r.URL.Path == ReadyPath {
		ok, why = s.ready()
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	if ok {
		w.WriteHeader(http.StatusOK)
	} else {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	if r.Method == http.MethodGet {
		_, _ = w.Write([]byte(why + "\n"))
	}
}

// newMetrics returns the session's metrics, which read the session at
// each scrape.
func (s *Session) newMetrics() *metrics.Set {
	return metrics.New(s.snapshot)
}

// snapshot is what a scrape reads of the session.
func (s *Session) snapshot() metrics.Snapshot {
	s.mu.Lock()
	servers := s.supervisorsLocked()
	gw, web := s.gw, s.http
	s.mu.Unlock()
	snap := metrics.Snapshot{
		Clients: map[string]int{
			"hub":     int(s.stdioClients.hub.Load()),
			"gateway": int(s.stdioClients.gateway.Load()),
		},
		InFlight: int(s.drain.calls.Load()),
	}
	for _, v := range servers {
		st := v.status()
		snap.Servers = append(snap.Servers, metrics.Server{Name: st.Name, State: string(st.State), Restarts: st.Restarts})
		snap.Queued += v.hub.Queued()
	}
	if gw != nil {
		snap.Queued += gw.Queued()
	}
	if web != nil {
		snap.Clients["http"] = web.face.Sessions() + web.face.Stateless()
	}
	return snap
}

// observeHandler serves the probes and the metrics beside next, the MCP
// endpoints: the probes without authentication, the metrics behind auth
// unless the manifest opens them. On loopback, httpguard.Local checks
// every path (next checks its own again). While the session drains, a
// request that would begin a session or a stateless request is refused
// here, 503 with Retry-After, saying why.
func (s *Session) observeHandler(next http.Handler, auth *httpauth.Authenticator, m *manifest.Manifest, loopback bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(HealthPath, s.serveProbe)
	mux.HandleFunc(ReadyPath, s.serveProbe)
	var scrape http.Handler = s.metrics.Handler()
	if auth != nil && m.Session.Metrics != manifest.MetricsOpen {
		scrape = auth.Wrap(scrape)
	}
	mux.Handle(MetricsPath, scrape)
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Draining() && r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" && isMCPPath(r.URL.Path) {
			w.Header().Set("Retry-After", "5")
			httpguard.Refuse(w, http.StatusServiceUnavailable, hubDraining)
			return
		}
		next.ServeHTTP(w, r)
	}))
	var h http.Handler = mux
	if loopback {
		h = httpguard.Local(h)
	}
	return h
}

// hubDraining is what an HTTP client that would begin is told while the
// session drains.
const hubDraining = "the launcher is draining (it is stopping): it takes no new session or request; try again on another instance, or once it has restarted"

// isMCPPath reports whether path is one of the MCP endpoints.
func isMCPPath(path string) bool {
	if path == httpauth.GatewayPath {
		return true
	}
	name, ok := strings.CutPrefix(path, "/servers/")
	return ok && strings.HasSuffix(name, "/mcp")
}
