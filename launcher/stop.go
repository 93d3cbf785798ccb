package launcher

import (
	"context"
	"maps"
	"slices"
	"sync"
)

// This file is the session's stop: a signal or mcpgen stop ends Run, which
// stops every server in parallel (shutdown); a second signal, mcpgen stop
// --force or Hurry skips their grace periods.

// sessionStop is the session's part in its stop.
type sessionStop struct {
	// ended is closed when Run has returned everything it held: every
	// server stopped, the lock released.
	ended chan struct{}

	// Guarded by the session's mu:
	closing  bool   // shutdown has begun: nothing starts any more
	hurried  bool   // Hurry was called
	hurry    func() // cuts the stop's grace periods short; set by Run
	run      func() // ends Run, for a stop request; set by Run
	requests int    // stop requests so far
}

// Hurry makes the session's stop skip the servers' grace periods, as a
// second signal does: they are killed instead of asked to exit. It may be
// called at any time; before the stop, it takes effect at the stop.
func (s *Session) Hurry() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stop.hurried = true
	if s.stop.hurry != nil {
		s.stop.hurry()
	}
}

// requestStop stops the session for mcpgen stop, as SIGTERM does; with
// force, or asked a second time, as a second signal does. It returns at
// once, with what is closed when the session has ended.
func (s *Session) requestStop(force bool) <-chan struct{} {
	s.mu.Lock()
	s.stop.requests++
	hurry := force || s.stop.requests > 1
	stopRun := s.stop.run
	s.mu.Unlock()
	s.log.Info("stop requested (mcpgen stop)", "skip_graces", hurry)
	if s.opts.Stop != nil {
		s.opts.Stop(hurry)
		return s.stop.ended
	}
	if hurry {
		s.Hurry()
	}
	if stopRun != nil {
		stopRun()
	}
	return s.stop.ended
}

// shutdown stops every server in parallel and disconnects their clients.
func (s *Session) shutdown(hurry context.Context) {
	s.mu.Lock()
	s.stop.closing = true
	s.mu.Unlock()
	s.builds.wg.Wait() // the session's context has ended: they end too
	s.mu.Lock()
	servers := slices.Collect(maps.Values(s.servers))
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, v := range servers {
		wg.Go(func() {
			v.stop(hurry)
			v.hub.Close()
		})
	}
	wg.Wait()
	if s.gw != nil {
		s.gw.Close() // after the hubs: the requests in flight have their answers
	}
	s.logs.close()
}
