package launcher

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mcpgen/mcpgen/launcher/internal/hub"
	"github.com/mcpgen/mcpgen/manifest"
)

// This file is the session's drain, what Kubernetes asks with SIGTERM
// before it kills the container at the end of its grace period: /readyz
// answers false at once, so that no new agent is sent here; no new client
// is taken (an HTTP session or stateless agent gets 503 with Retry-After,
// a connect an error that says so), and no new request is forwarded (the
// agent gets an error that says the launcher drains); the requests under
// way finish, up to a deadline; then the session stops as it does for
// SIGINT or mcpgen stop, its servers with their grace periods. The whole
// takes at most [session] drain_timeout (30s by default): what is not
// done by then is hurried (the servers killed).

// sessionDrain is the session's part in the drain.
type sessionDrain struct {
	draining atomic.Bool
	// calls are the agents' requests that the hubs forwarded and are
	// not answered yet, all servers together (see hubHooks).
	calls atomic.Int64
	// idle hears that calls fell to zero while draining; buffered, a
	// send never waits.
	idle chan struct{}
}

// Draining reports whether the session drains: it takes no new client.
func (s *Session) Draining() bool { return s.drain.draining.Load() }

// hubHooks are what the session hears of each hub's requests (see
// hub.Hooks): the requests under way, which a drain waits for and then
// refuses more of, and, when the session has metrics, each tool call.
func (s *Session) hubHooks(server string) hub.Hooks {
	hooks := hub.Hooks{
		Begin: func() bool {
			// Counted first, then the flag read: a drain that sets the
			// flag and then finds no request under way cannot miss one
			// that is let through.
			s.drain.calls.Add(1)
			if s.drain.draining.Load() {
				s.endCall()
				return false
			}
			return true
		},
		End: s.endCall,
	}
	if s.metrics != nil {
		hooks.ToolCall = s.metrics.Server(server).ToolCall
	}
	return hooks
}

func (s *Session) endCall() {
	if s.drain.calls.Add(-1) == 0 && s.drain.draining.Load() {
		select {
		case s.drain.idle <- struct{}{}:
		default: // one is pending
		}
	}
}

// stopAllowance is what a drain keeps, of its bound, for the servers to
// stop after the requests under way: their stdin closed, then SIGTERM,
// each with its grace, and a margin.
func (s *Session) stopAllowance() time.Duration {
	return s.timing.StdinGrace + s.timing.TermGrace + time.Second
}

// drainTimeout is the drain's bound: the manifest's, or the default.
func (s *Session) drainTimeout() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		return manifest.DefaultDrainTimeout
	}
	return s.m.Session.Drain()
}

// Drain drains the session and then stops it (see above); it returns at
// once, with what is closed when the session has ended. A second Drain,
// or one during a stop, changes nothing. Its goroutine ends with the
// session, at the latest at the drain's bound.
func (s *Session) Drain() <-chan struct{} {
	if !s.drain.draining.CompareAndSwap(false, true) {
		return s.stop.ended
	}
	bound := s.drainTimeout()
	wait := max(bound-s.stopAllowance(), bound/2)
	s.log.Info("draining: no new clients or requests; the requests under way finish, then the servers stop", "requests", s.drain.calls.Load(), "drain_timeout", bound.String())
	s.changed() // readiness changed: status, and whoever waits for a change
	go func() {
		start := time.Now()
		deadline := time.NewTimer(wait)
		defer deadline.Stop()
	waiting:
		for s.drain.calls.Load() > 0 {
			select {
			case <-s.drain.idle:
			case <-deadline.C:
				s.log.Warn("draining: requests still under way at the deadline: they end with their servers", "requests", s.drain.calls.Load(), "waited", time.Since(start).Round(time.Millisecond).String())
				break waiting
			case <-s.stop.ended:
				return
			}
		}
		s.mu.Lock()
		stopRun := s.stop.run
		s.mu.Unlock()
		if stopRun != nil {
			stopRun()
		}
		// What is left of the bound is the servers' stop; past it they
		// are killed, so that the launcher exits within the bound.
		hurry := time.NewTimer(bound - time.Since(start))
		defer hurry.Stop()
		select {
		case <-hurry.C:
			s.log.Warn("draining: the servers did not stop within drain_timeout: killing them", "drain_timeout", bound.String())
			s.Hurry()
		case <-s.stop.ended:
		}
	}()
	return s.stop.ended
}

// drainRefusal is what a connect is told while the session drains.
func (s *Session) drainRefusal() controlAnswer {
	return controlAnswer{Error: fmt.Sprintf("workspace %q: %v", s.opts.Workspace, hub.ErrDraining)}
}
