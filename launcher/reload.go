package launcher

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/internal/sandbox"
	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/hub"
	"github.com/mcpgen/mcpgen/launcher/internal/watch"
	"github.com/mcpgen/mcpgen/manifest"
)

// This file is how the running servers follow the manifest: a reload (the
// watcher's, SIGHUP's, mcpgen reload's) reads it and applies it, so that
// removed servers stop, added ones start and changed ones restart (a change
// is what restartKey says it is); and mcpgen restart restarts one server on
// request.

// sessionLoads is the session's part in following the manifest.
type sessionLoads struct {
	// mu serializes reloads: the watcher's, Reload's and the control
	// socket's, so that a manifest read earlier is never applied after one
	// read later.
	mu sync.Mutex
	// applied is the number of the watcher's content applied last
	// (watch.Content.Seq); guarded by mu.
	applied uint64
	// file and path name the manifest as it was loaded first, for parsing
	// the content the watcher reads, and searched says how it was found
	// (manifest.Manifest.Searched); set before the watcher starts.
	file, path string
	searched   bool
	// requests holds Reload's request until Run takes it; requests made
	// meanwhile merge into it.
	requests chan struct{}

	// Guarded by the session's mu:
	last    ctl.ReloadStatus // the outcome of the last load
	watcher *watch.Watcher   // nil when the manifest is not a file, or cannot be watched
}

// load reads the manifest, resolves the workspace context, and refuses a
// manifest whose servers cannot all be held within the file descriptor
// limit: better at once, with the numbers, than at the thousandth server
// (and, at a reload, than stopping what runs for what cannot).
func (s *Session) load() (*manifest.Manifest, *manifest.Context, error) {
	m, err := s.opts.Load()
	if err != nil {
		return nil, nil, err
	}
	c, err := m.Context(s.opts.Context)
	if err != nil {
		return nil, nil, err
	}
	if err := CheckCapacity(m); err != nil {
		return nil, nil, err
	}
	return m, c, nil
}

// Reload asks the session to read the manifest again and apply it, as
// SIGHUP does: failed servers are restarted too, even when their
// configuration did not change. An invalid manifest changes nothing: the
// error is logged and shown by status.
//
// Reload returns at once, and is safe to call from a signal handler's
// goroutine: Run does the reload, and requests made while one waits merge
// into it. One made before Run has started is done once it has.
func (s *Session) Reload() {
	select {
	case s.loads.requests <- struct{}{}:
	default: // one is waiting already
	}
}

// reloadNow reads the manifest again (or takes content, as the watcher
// read it) and applies it, then watches the sources of the servers it has;
// it returns once removed and changed servers have stopped. retryFailed
// restarts failed servers even when their configuration did not change.
func (s *Session) reloadNow(retryFailed bool, content *watch.Content) {
	s.reload(retryFailed, content)
	s.mu.Lock()
	w, closing := s.loads.watcher, s.stop.closing
	s.mu.Unlock()
	if w != nil && !closing {
		s.watchSources(w)
	}
}

// reload reads the manifest again and applies it: see Reload. content,
// when not nil, is the manifest as the watcher read it; without it, the
// manifest is read through the watcher when there is one, so that the
// watcher compares later changes with what was applied.
func (s *Session) reload(retryFailed bool, content *watch.Content) {
	s.loads.mu.Lock()
	defer s.loads.mu.Unlock()
	s.mu.Lock()
	w := s.loads.watcher
	s.mu.Unlock()
	var m *manifest.Manifest
	var c *manifest.Context
	var err error
	switch {
	case content == nil && w != nil:
		if content, err = w.Read(); err != nil {
			break
		}
		fallthrough
	case content != nil:
		if content.Seq < s.loads.applied {
			return // a later content was applied already
		}
		s.loads.applied = content.Seq
		m, c, err = s.parse(content.Data)
	default:
		m, c, err = s.load()
	}
	now := time.Now().UTC()
	s.mu.Lock()
	s.loads.last = ctl.ReloadStatus{At: &now, OK: err == nil}
	if err != nil {
		s.loads.last.Error = err.Error()
	}
	s.mu.Unlock()
	if s.metrics != nil {
		s.metrics.Reloaded(err == nil)
	}
	if err != nil {
		s.log.Error("reload failed: keeping the running servers", "error", err)
		s.changed()
		return
	}
	s.apply(m, c, retryFailed)
	s.log.Info("reloaded", "manifest", m.File)
}

// parse reads the manifest from content the watcher read, as Load would
// from the file, and resolves the workspace context.
func (s *Session) parse(data []byte) (*manifest.Manifest, *manifest.Context, error) {
	m, err := manifest.Parse(data, s.loads.file, filepath.Dir(s.loads.path))
	if err != nil {
		return nil, nil, err
	}
	m.Path, m.Searched = s.loads.path, s.loads.searched
	c, err := m.Context(s.opts.Context)
	if err != nil {
		return nil, nil, err
	}
	return m, c, nil
}

// parses tells the watcher whether content is a manifest that applies:
// then a manifest replaced whole by it is applied at once.
func (s *Session) parses(data []byte) bool {
	_, _, err := s.parse(data)
	return err == nil
}

// apply makes the running servers match m: removed servers stop, added ones
// start, changed ones restart, and the others keep their process.
func (s *Session) apply(m *manifest.Manifest, c *manifest.Context, retryFailed bool) {
	if s.opts.hooks.apply != nil {
		s.opts.hooks.apply()
	}
	want := map[string]*serverConfig{}
	for _, srv := range m.Servers {
		if srv.Enabled {
			want[srv.Name] = s.configure(m, c, srv)
		}
	}
	s.mu.Lock()
	if s.stop.closing || s.exit.exiting {
		s.mu.Unlock() // a reload that raced the shutdown: start nothing
		return
	}
	s.m, s.ctx = m, c
	var stop []*supervisor
	var restart []func()
	for name, v := range s.servers {
		cfg, keep := want[name]
		if !keep {
			stop = append(stop, v)
			delete(s.servers, name)
			continue
		}
		v.hub.SetRoot(c.WorkspaceDir)
		old := v.config()
		if cfg.key != old.key || retryFailed && v.currentState() == ctl.Failed {
			restart = append(restart, func() { v.restart(cfg) })
		} else {
			v.adopt(cfg) // descriptions, providers: nothing to restart
		}
	}
	var start []*supervisor
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if _, ok := s.servers[name]; !ok {
			h := hub.New(name, c.WorkspaceDir, s.log)
			h.SetTracer(s.tracer)
			h.SetHooks(s.hubHooks(name))
			v := newSupervisor(s.host(), want[name], h)
			s.servers[name] = v
			start = append(start, v)
		}
	}
	s.mu.Unlock()
	// The new servers' goroutines run from now on, and wait for begin:
	// whatever this apply waits for below, a stop of the session finds
	// every server it knows running, and ends it.
	begin := make(chan struct{})
	for _, v := range start {
		go v.run(begin)
	}

	var wg sync.WaitGroup
	for _, v := range stop {
		wg.Go(func() {
			v.stop(context.Background())
			v.hub.Close()
			s.log.Info("server removed", "server", v.name)
		})
	}
	for _, r := range restart {
		wg.Go(r)
	}
	wg.Wait()
	for _, v := range start {
		if cfg := v.config(); cfg.server.Lazy {
			// Its catalog, if one was kept: it answers until the server
			// runs.
			if cat := s.catalogs.cached(v.name, cfg.catKey); cat != nil {
				v.hub.Preload(cat.init, cat.tools, cat.lists)
			}
		}
	}
	// The gateway watches the new hubs before their servers start, so
	// that their first handshake lists prompts and resources too, and
	// the catalog kept has them.
	s.updateGateway(m)
	close(begin)
	s.changed()
}

// configure resolves how to run srv; a reference that cannot be resolved
// leaves the server failed with that reason.
func (s *Session) configure(m *manifest.Manifest, c *manifest.Context, srv *manifest.Server) *serverConfig {
	cfg := &serverConfig{server: srv, m: m, limits: proc.Limits{MemoryMax: srv.MemoryMax, CPUMax: srv.CPUMax}}
	if srv.Kind == manifest.KindRemote {
		cfg.remote, cfg.err = m.Remote(srv, c, manifest.EnvLookup(s.opts.Env))
		cfg.key = restartKey(srv, nil, cfg.err) + remoteKey(cfg.remote)
		cfg.catKey = remoteCatalogKey(cfg.key)
		return cfg
	}
	cfg.spec, cfg.err = serverSpec(m, srv, c, s.opts.Self, s.opts.Env)
	if cfg.err == nil {
		cfg.err = checkLimits(s.contain.Containment, m, srv, cfg.limits)
	}
	if cfg.err == nil && cfg.spec.Sandbox != nil {
		r := sandbox.Inspect(cfg.spec.Sandbox)
		cfg.sandbox = &r
	}
	cfg.key = restartKey(srv, cfg.spec, cfg.err)
	cfg.catKey = catalogKey(m, srv, c, cfg.spec, s.opts.Env, cfg.err)
	return cfg
}

// restartKey sums up what a server's process depends on: its resolved
// command line and environment, and for servers mcpgen runs itself, their
// definition. It compares servers by what they mean, not by where they
// stand in the file: positions are left out (a comment added above a
// server moves them), and so is the order of what has no order for the
// process: env and headers, tools, a tool's arguments. (A reordered
// server keeps listing its tools in the order it started with, until it
// next restarts: calls in flight matter more than that order.)
// Descriptions, provider filters and scopes are left out too: changing
// them restarts nothing.
func restartKey(srv *manifest.Server, spec *proc.Spec, err error) string {
	def := *srv
	def.Description, def.Providers, def.Scope, def.Pos, def.Watch = "", nil, "", manifest.Position{}, nil
	def.MemoryMaxPos, def.CPUMaxPos = manifest.Position{}, manifest.Position{}
	// Tool filters and lifecycle settings change what the hub shows and
	// when the server runs, not the process.
	def.EnabledTools, def.DisabledTools, def.Lazy, def.IdleTimeout = nil, nil, false, 0
	def.InputTimeout = 0 // the hub's bound on held calls (see hub.SetInputTimeout)
	def.Env = sortedVars(def.Env)
	def.Headers = sortedVars(def.Headers)
	// The tools go apart, as copies without their positions: def.Tools
	// points at the manifest's own.
	def.Tools = nil
	tools := make([]manifest.Tool, len(srv.Tools))
	for i, t := range srv.Tools {
		tools[i] = *t
		tools[i].Pos = manifest.Position{}
		tools[i].Args = slices.SortedFunc(slices.Values(t.Args), func(a, b *manifest.Arg) int { return strings.Compare(a.Name, b.Name) })
	}
	slices.SortFunc(tools, func(a, b manifest.Tool) int { return strings.Compare(a.Name, b.Name) })
	var env []string
	var path, dir string
	var args []string
	var sb *sandbox.Policy
	if spec != nil {
		env = slices.Sorted(slices.Values(spec.Env))
		path, dir, args, sb = spec.Path, spec.Dir, spec.Args, spec.Sandbox
	}
	errText := ""
	if err != nil {
		errText = err.Error()
	}
	b, _ := json.Marshal(struct {
		Def   manifest.Server
		Tools []manifest.Tool
		Path  string
		Args  []string
		Dir   string
		Env   []string
		Sbx   *sandbox.Policy `json:",omitempty"` // absent when none: keys made before sandboxes stay
		Err   string
	}{def, tools, path, args, dir, env, sb, errText})
	return string(b)
}

// sortedVars returns vars in name order, which is the same set of
// variables or headers as in file order.
func sortedVars(vars []manifest.Var) []manifest.Var {
	return slices.SortedFunc(slices.Values(vars), func(a, b manifest.Var) int { return strings.Compare(a.Name, b.Name) })
}

// restartServer restarts a server now, for mcpgen restart: whatever its
// state, failed included, with the configuration it has; it counts as a
// restart. It returns once the server is ready, failed or in backoff
// again, or with its name when it is still starting after its startup
// timeout.
func (s *Session) restartServer(ctx context.Context, name string) ([]string, error) {
	s.mu.Lock()
	v, closing := s.servers[name], s.stop.closing || s.exit.exiting
	s.mu.Unlock()
	switch {
	case closing:
		return nil, fmt.Errorf("workspace %q is stopping: nothing restarts any more", s.opts.Workspace)
	case v == nil:
		_, err := s.hubOf(name)
		return nil, err
	}
	s.log.Info("restart requested (mcpgen restart)", "server", name)
	v.restartNow(v.config())
	return s.waitSettled(ctx, []string{name}), nil
}
