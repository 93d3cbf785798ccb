package launcher

import (
	"context"
	"github.com/mcpgen/mcpgen/internal/sandbox"
	"sync"
	"time"

	"github.com/mcpgen/mcpgen/launcher/internal/watch"
)

// This file is the servers' builds: a server with a build step is built
// before it starts, unless its output is up to date, and is rebuilt, then
// restarted, when the sources it watches change.

// sessionBuilds is the session's part in rebuilds.
type sessionBuilds struct {
	wg sync.WaitGroup // the goroutines of rebuild; shutdown waits for them

	// Guarded by the session's mu:
	ctx     context.Context // the session's, which builds end with; set by Run
	running map[string]bool // servers being rebuilt after a source change
	again   map[string]bool // ... whose sources changed again meanwhile
}

// watchSources tells the watcher which files each server is built from.
func (s *Session) watchSources(w *watch.Watcher) {
	s.mu.Lock()
	m := s.m
	sources := map[string][]string{}
	for name, v := range s.servers {
		if srv := v.config().server; len(srv.Build) > 0 && len(srv.Watch) > 0 {
			sources[name] = srv.Watch
		}
	}
	s.mu.Unlock()
	if err := w.SetSources(m.Dir, sources); err != nil {
		s.log.Warn("watching sources", "error", err)
	}
}

// rebuild runs a server's build after its sources changed, then restarts
// it. A failed build keeps the running process and reports the error.
// Sources that change again during a build make it build once more when
// it is done: that build may have read them before the change.
func (s *Session) rebuild(name string) {
	s.mu.Lock()
	v := s.servers[name]
	if v == nil || s.stop.closing {
		s.mu.Unlock()
		return
	}
	if s.builds.running[name] {
		s.builds.again[name] = true
		s.mu.Unlock()
		return
	}
	s.builds.running[name] = true
	ctx := s.builds.ctx
	s.mu.Unlock()
	s.builds.wg.Go(func() {
		for {
			s.rebuildOnce(ctx, v)
			s.mu.Lock()
			again := s.builds.again[name] && ctx.Err() == nil
			delete(s.builds.again, name)
			if !again {
				delete(s.builds.running, name)
			}
			s.mu.Unlock()
			if !again {
				return
			}
		}
	})
}

func (s *Session) rebuildOnce(ctx context.Context, v *supervisor) {
	cfg := v.config()
	s.log.Info("sources changed: rebuilding", "server", v.name)
	_, took, err := Build(ctx, s.contain.Containment, cfg.m, cfg.server, cfg.sandboxPolicy(), s.opts.Env, true)
	if ctx.Err() != nil {
		return // the session is ending
	}
	if err != nil {
		v.mu.Lock()
		v.lastError = err.Error()
		v.mu.Unlock()
		s.log.Error("rebuild failed: keeping the running process", "server", v.name, "error", err)
		s.changed()
		return
	}
	s.log.Info("rebuilt", "server", v.name, "took", took.Round(time.Millisecond).String())
	// The configuration of now: a reload during the build may have
	// changed it, and must not be undone.
	v.restart(v.config())
}

// build runs a server's build step before it starts, unless its output is
// up to date.
func (v *supervisor) build(ctx context.Context, cfg *serverConfig) error {
	state, took, err := Build(ctx, v.host.contain.Containment, cfg.m, cfg.server, cfg.sandboxPolicy(), v.host.env, false)
	if state == Built && err == nil {
		v.host.log.Info("built", "server", cfg.server.Name, "took", took.Round(time.Millisecond).String())
	}
	return err
}

// sandboxPolicy is the server's sandbox, nil when it has none.
func (cfg *serverConfig) sandboxPolicy() *sandbox.Policy {
	if cfg.spec == nil {
		return nil
	}
	return cfg.spec.Sandbox
}
