package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpgen/mcpgen/launcher/internal/agent"
	"github.com/mcpgen/mcpgen/launcher/internal/hub"
)

// A Backend is one server of the workspace as the gateway reaches it: its
// hub, and what its supervisor says about it.
type Backend struct {
	Name        string
	Description string // the manifest's: search_tools says it
	Hub         *hub.Hub
	// State says where the server is in its life; the gateway asks when
	// the hub has no process to take a call.
	State func() State
}

// State is what a supervisor says of a server that does not take calls.
type State struct {
	State     string    // starting, ready, backoff, failed, stopped
	RetryAt   time.Time // backoff: when it is started again
	LastError string
}

// A Gateway serves the workspace gateway to any number of agents: one
// session per connection (Serve), each a member of every server's hub.
// It follows the hubs (Watch) and the workspace's servers (Set): a change
// rebuilds the catalogs once, and every session whose lists changed is
// told (list_changed). Its goroutine (run) ends at Close.
type Gateway struct {
	log *slog.Logger

	mu       sync.Mutex
	backends []Backend // in manifest order
	opts     Options
	stops    map[*hub.Hub]func() // stops watching each hub
	version  int                 // bumped at every change
	catalogs map[string]*cached  // by the servers a session serves
	sessions map[*session]struct{}
	eras     agent.EraTotals // its agents' requests of each era (era.go)
	wake     chan struct{}   // closed (and replaced) after every change
	closed   bool

	kick chan struct{} // a change to apply; run takes it
	done chan struct{} // closed when run has returned
	quit chan struct{} // closed by Close
}

type cached struct {
	version int
	catalog *Catalog
}

// New starts a gateway with no server; Set gives it some.
func New(log *slog.Logger) *Gateway {
	g := &Gateway{
		log:      log,
		stops:    map[*hub.Hub]func(){},
		catalogs: map[string]*cached{},
		sessions: map[*session]struct{}{},
		wake:     make(chan struct{}),
		kick:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		quit:     make(chan struct{}),
	}
	go g.run()
	return g
}

// Options are the workspace's [gateway] table, as the gateway applies it.
type Options struct {
	Always bool // prefix = "always": SERVER__TOOL for every tool
	// Search (tools = "search") lists search_tools, call_tool and the
	// pinned tools instead of every tool (search.go); a session may
	// choose otherwise (Join.Tools).
	Search bool
	Pin    []string // the tools search mode lists as themselves, by the gateway's names
	Reveal bool     // search_reveal: a session lists the tools it found, and says list_changed
}

// Set gives the gateway the workspace's servers, in manifest order, and
// how to present their tools.
func (g *Gateway) Set(backends []Backend, opts Options) {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	var watch []*hub.Hub
	keep := map[*hub.Hub]bool{}
	for _, b := range backends {
		keep[b.Hub] = true
		if g.stops[b.Hub] == nil {
			watch = append(watch, b.Hub)
			g.stops[b.Hub] = func() {} // replaced below, outside the lock
		}
	}
	var stop []func()
	for h, f := range g.stops {
		if !keep[h] {
			stop = append(stop, f)
			delete(g.stops, h)
		}
	}
	opts.Pin = slices.Clone(opts.Pin)
	g.backends, g.opts = slices.Clone(backends), opts
	g.mu.Unlock()
	for _, f := range stop {
		f()
	}
	for _, h := range watch {
		f := h.Watch(g.changed)
		g.mu.Lock()
		if _, ok := g.stops[h]; ok && !g.closed {
			g.stops[h] = f
			f = nil
		}
		g.mu.Unlock()
		if f != nil {
			f() // dropped meanwhile
		}
	}
	g.changed()
}

// changed asks run to apply a change; it never blocks (a hub calls it).
func (g *Gateway) changed() {
	select {
	case g.kick <- struct{}{}:
	default: // one is waiting already: it sees this change too
	}
}

// run applies changes until Close: the catalogs are rebuilt, and each
// session follows (new members, list_changed).
func (g *Gateway) run() {
	defer close(g.done)
	for {
		select {
		case <-g.quit:
			return
		case <-g.kick:
		}
		g.mu.Lock()
		g.version++
		sessions := make([]*session, 0, len(g.sessions))
		for s := range g.sessions {
			sessions = append(sessions, s)
		}
		g.mu.Unlock()
		for _, s := range sessions {
			s.refresh()
		}
		g.mu.Lock()
		close(g.wake)
		g.wake = make(chan struct{})
		g.mu.Unlock()
	}
}

// Close ends every session and stops following the hubs.
func (g *Gateway) Close() {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.closed = true
	sessions := make([]*session, 0, len(g.sessions))
	for s := range g.sessions {
		sessions = append(sessions, s)
	}
	var stops []func()
	for _, f := range g.stops {
		stops = append(stops, f)
	}
	clear(g.stops)
	g.mu.Unlock()
	for _, f := range stops {
		f()
	}
	close(g.quit)
	<-g.done
	for _, s := range sessions {
		s.close()
	}
}

// Check reports whether servers (the names a gateway connection asks for;
// none: every server) are servers of the workspace.
func (g *Gateway) Check(servers []string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	var names []string
	for _, b := range g.backends {
		names = append(names, b.Name)
	}
	for _, s := range servers {
		if !slices.Contains(names, s) {
			list := strings.Join(names, ", ")
			if list == "" {
				list = "none"
			}
			return fmt.Errorf("the workspace has no server %q; it has: %s", s, list)
		}
	}
	return nil
}

// Serve runs one agent's gateway session until its connection closes or
// the gateway does; servers limits it to some servers (none: all).
func (g *Gateway) Serve(ctx context.Context, conn io.ReadWriteCloser, servers []string) {
	g.ServeJoin(ctx, conn, Join{Servers: servers})
}

// A Join is what an agent asks of its gateway session.
type Join struct {
	Servers []string // only these servers; none: all
	Tools   string   // ToolsAll or ToolsSearch; "": the workspace's [gateway] tools
}

// The ways a session lists the workspace's tools ([gateway] tools, and
// connect --tools).
const (
	ToolsAll    = "all"
	ToolsSearch = "search"
)

// ServeJoin is Serve, as j asks.
func (g *Gateway) ServeJoin(ctx context.Context, conn io.ReadWriteCloser, j Join) {
	s := newSession(ctx, g, conn, j.Servers)
	s.tools = j.Tools
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		conn.Close()
		return
	}
	g.sessions[s] = struct{}{}
	g.mu.Unlock()
	s.refresh()
	s.run()
	g.mu.Lock()
	delete(g.sessions, s)
	g.mu.Unlock()
}

// backendsFor returns the backends a session of servers serves, in
// manifest order.
func (g *Gateway) backendsFor(servers []string) []Backend {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []Backend
	for _, b := range g.backends {
		if len(servers) == 0 || slices.Contains(servers, b.Name) {
			out = append(out, b)
		}
	}
	return out
}

// catalog returns the catalog of a set of servers (none: all) as the hubs
// have it now, built once per change for every session that serves them.
func (g *Gateway) catalog(servers []string) *Catalog {
	key := strings.Join(servers, ",")
	g.mu.Lock()
	if c := g.catalogs[key]; c != nil && c.version == g.version {
		g.mu.Unlock()
		return c.catalog
	}
	version, opts := g.version, g.opts
	g.mu.Unlock()
	var in []Server
	for _, b := range g.backendsFor(servers) {
		in = append(in, serverOf(b))
	}
	c := Build(in, opts.Always)
	c.pin = opts.Pin
	g.mu.Lock()
	if old := g.catalogs[key]; old == nil || old.version <= version {
		g.catalogs[key] = &cached{version: version, catalog: c}
	}
	for k, old := range g.catalogs {
		if old.version < g.version {
			delete(g.catalogs, k) // stale: rebuilt when asked for
		}
	}
	g.mu.Unlock()
	return c
}

// serverOf is a backend's part of the catalog, as its hub has it now.
func serverOf(b Backend) Server {
	c := b.Hub.Catalog()
	return Server{
		Name:        b.Name,
		Description: b.Description,
		Init:        c.Init,
		Tools:       c.Tools,
		Prompts:     c.Prompts,
		Resources:   c.Resources,
		Templates:   c.Templates,
		Exposes:     c.Exposes,
		Failed:      c.Failed != nil,
	}
}

// options returns the gateway's options now.
func (g *Gateway) options() Options {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.opts
}

// Catalog returns the catalog of the whole workspace, as status shows it.
func (g *Gateway) Catalog() *Catalog { return g.catalog(nil) }

// Clients returns the names of the agents connected to the gateway.
func (g *Gateway) Clients() []string {
	g.mu.Lock()
	sessions := make([]*session, 0, len(g.sessions))
	for s := range g.sessions {
		sessions = append(sessions, s)
	}
	g.mu.Unlock()
	names := make([]string, 0, len(sessions))
	for _, s := range sessions {
		names = append(names, s.displayName())
	}
	slices.Sort(names)
	return names
}

// invalidate makes the next catalog be built from the hubs as they are
// now, whether or not run has applied their last changes yet.
func (g *Gateway) invalidate() {
	g.mu.Lock()
	g.version++
	g.mu.Unlock()
}

// awaitWake returns the channel closed after the next change.
func (g *Gateway) awaitWake() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.wake
}

// Queued returns how many bytes wait to be written to the gateway's
// agents.
func (g *Gateway) Queued() int {
	g.mu.Lock()
	sessions := make([]*session, 0, len(g.sessions))
	for s := range g.sessions {
		sessions = append(sessions, s)
	}
	g.mu.Unlock()
	n := 0
	for _, s := range sessions {
		n += s.conn.Stats().Queued
	}
	return n
}
