package launcher

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/wire"
)

// This file is the session's idle exit: a launcher with no client and no
// running server for its idle_exit ([session] idle_exit, or Options.IdleExit)
// exits, as a stop does, removing its socket and releasing its lock.
//
// The decision races with clients that connect, and is taken so that each
// of them is either served or refused in a way that mcpgen connect knows
// to retry with a new launcher:
//
//   - A connect counts as a client from the moment the control socket reads
//     its request (openClient), under the session's lock, and the decision
//     (exitIfQuiet) is taken under that lock too, only if nothing happened
//     since the launcher was found quiet (epoch). A connect counted first
//     cancels the exit; one read after is answered "exiting".
//   - The socket is removed as soon as the decision is taken, so that no
//     new connection reaches this launcher; one that was already on its way
//     is refused as above, or closed unanswered when the listener closes,
//     which a client tells from a crash by the socket being gone.
//   - connect, told so, waits for the lock to be released and starts a new
//     launcher (see cmd/mcpgen's autostart).

// sessionExit is the session's part in the idle exit; guarded by the
// session's mu.
type sessionExit struct {
	clients int           // connections of clients (connect) being served
	epoch   uint64        // counts the changes that can end quiet: events, clients
	exiting bool          // the launcher exits for idleness: connects are refused
	since   time.Time     // since when it has been quiet, as the timer saw it; zero: it is not
	kick    chan struct{} // a change for the timer to look at
}

// idleExitLocked is how long the launcher waits, quiet, before it exits; zero:
// never. The caller holds s.mu.
func (s *Session) idleExitLocked() time.Duration {
	if s.opts.IdleExit != 0 {
		return max(s.opts.IdleExit, 0)
	}
	if s.m != nil {
		return s.m.Session.IdleExit
	}
	return 0
}

// quietLocked reports whether no client is connected and no server runs
// (each is idle, failed or stopped). The caller holds s.mu.
func (s *Session) quietLocked() bool {
	if s.exit.clients > 0 {
		return false
	}
	for _, v := range s.servers {
		switch v.currentState() {
		case ctl.Idle, ctl.Failed, ctl.Stopped:
		default:
			return false
		}
	}
	return true
}

// kickExitLocked tells the idle-exit timer that something changed. The
// caller holds s.mu.
func (s *Session) kickExitLocked() {
	s.exit.epoch++
	select {
	case s.exit.kick <- struct{}{}:
	default: // one is pending
	}
}

// openClient counts a client connection, unless the launcher exits: then
// it reports false, and the client is to be refused (wire.ExitingMessage).
func (s *Session) openClient() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exit.exiting || s.drain.draining.Load() {
		return false
	}
	s.exit.clients++
	s.kickExitLocked()
	return true
}

// closeClient counts a client connection that ended.
func (s *Session) closeClient() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exit.clients--
	s.kickExitLocked()
}

// watchIdleExit runs the idle-exit timer until ctx ends, or until it has
// decided to exit: then it removes the socket at sockPath and ends Run
// (stop). It is Run's goroutine, and ends before Run returns.
func (s *Session) watchIdleExit(ctx context.Context, sockPath string, stop func()) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		s.mu.Lock()
		quiet, epoch, after := s.quietLocked(), s.exit.epoch, s.idleExitLocked()
		switch {
		case !quiet:
			s.exit.since = time.Time{}
		case s.exit.since.IsZero():
			s.exit.since = time.Now()
		}
		since := s.exit.since
		s.mu.Unlock()
		var fire <-chan time.Time
		if quiet && after > 0 {
			timer.Reset(time.Until(since.Add(after)))
			fire = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-s.exit.kick:
		case <-fire:
			if s.opts.hooks.idleExit != nil {
				s.opts.hooks.idleExit()
			}
			if s.exitIfQuiet(epoch) {
				if s.opts.hooks.exiting != nil {
					s.opts.hooks.exiting()
				}
				s.log.Info("idle: no client and no running server: exiting", "idle_exit", after.String(), "quiet_since", since.Format(time.RFC3339Nano))
				// No new connection reaches this launcher from now on;
				// connect finds no socket and starts a new one once this
				// one has released its lock.
				os.Remove(sockPath)
				stop()
				return
			}
		}
		timer.Stop()
	}
}

// exitIfQuiet decides the idle exit: if the launcher is still quiet and
// nothing happened since epoch, it exits from now on (connects are
// refused) and it reports true.
func (s *Session) exitIfQuiet(epoch uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop.closing || s.exit.exiting || s.exit.epoch != epoch || !s.quietLocked() {
		return false
	}
	s.exit.exiting = true
	return true
}

// idleExitStatus fills the session's idle exit in st.
func (s *Session) idleExitStatus(st *ctl.Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	after := s.idleExitLocked()
	if after <= 0 {
		return
	}
	st.IdleExit = after.String()
	if !s.exit.since.IsZero() && !s.exit.exiting && s.quietLocked() {
		at := s.exit.since.Add(after).UTC()
		st.IdleExitAt = &at
	}
}

// refuseExiting answers a connect that came as the launcher exits.
func refuseExiting(workspace string) controlAnswer {
	return controlAnswer{Error: fmt.Sprintf("workspace %q: %s", workspace, wire.ExitingMessage), Exiting: true}
}
