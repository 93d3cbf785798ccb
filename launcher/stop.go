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

// Hurry makes the session's stop skip the servers' grace periods, as a
// second signal does: they are killed instead of asked to exit. It may be
// called at any time; before the stop, it takes effect at the stop.
func (s *Session) Hurry() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hurried = true
	if s.hurry != nil {
		s.hurry()
	}
}

// requestStop stops the session for mcpgen stop, as SIGTERM does; with
// force, or asked a second time, as a second signal does. It returns at
// once, with what is closed when the session has ended.
func (s *Session) requestStop(force bool) <-chan struct{} {
	s.mu.Lock()
	s.stops++
	hurry := force || s.stops > 1
	stopRun := s.stopRun
	s.mu.Unlock()
	s.log.Info("stop requested (mcpgen stop)", "skip_graces", hurry)
	if s.opts.Stop != nil {
		s.opts.Stop(hurry)
		return s.ended
	}
	if hurry {
		s.Hurry()
	}
	if stopRun != nil {
		stopRun()
	}
	return s.ended
}

// shutdown stops every server in parallel and disconnects their clients.
func (s *Session) shutdown(hurry context.Context) {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.rebuilds.Wait() // the session's context has ended: they end too
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
	s.mu.Lock()
	for _, l := range s.logs {
		l.Close()
	}
	s.mu.Unlock()
}
