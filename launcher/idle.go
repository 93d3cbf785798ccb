package launcher

import (
	"time"

	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/hub"
)

// This file is the supervisor's side of lazy start and idle stop. A server
// is idle when it has no process and starts when a request needs it: a
// lazy server (start = "lazy") until its first use, and any server with an
// idle_timeout once it has been stopped for idleness. Its hub answers
// initialize and tools/list from its catalog meanwhile (see the hub's
// lazy.go and catalog.go), and closes the channel the supervisor sleeps on
// when a request needs the process.
//
// The stop for idleness is decided with the hub, in one step: the hub
// detaches the process only if no client came since the timer started
// (Hub.IdleIf). A client that comes before that step cancels the stop; one
// that comes after it finds the server idle, and its first request starts
// a new process, which waits for the old one to be stopped.

// supervisorIdle is a supervisor's part in lazy start and idle stop.
type supervisorIdle struct {
	readyAt time.Time     // when the process that runs became ready; guarded by the supervisor's mu
	pokes   chan struct{} // adopt's: the idle_timeout may have changed
}

// sleep waits while the server is idle: until a request needs it (demand
// is closed: it returns nil) or a command comes.
func (v *supervisor) sleep(demand <-chan struct{}) *supervisorCmd {
	v.setState(ctl.Idle, "")
	select {
	case <-demand:
		return nil
	case cmd := <-v.cmds:
		return &cmd
	}
}

// restartIdle takes a restart that came while the server was idle: the new
// configuration, and with it the catalog kept for it (a changed command
// must not answer from the old one). The server stays idle, unless the
// restart asks for a process (mcpgen restart): then it reports true.
func (v *supervisor) restartIdle(cmd *supervisorCmd) (start bool) {
	old := v.config()
	if cmd.cfg.catKey != old.catKey {
		cat := v.host.catalogs.cached(v.name, cmd.cfg.catKey)
		if cat == nil {
			cat = &catalog{}
		}
		v.hub.Preload(cat.init, cat.tools, cat.lists)
	}
	if cmd.start || cmd.cfg.err != nil {
		// A process now (mcpgen restart), or a configuration that cannot
		// start: it fails at once rather than at the next request.
		v.hub.Wake()
		v.restartFor(cmd, true)
		return true
	}
	v.mu.Lock()
	v.cfg = cmd.cfg
	v.mu.Unlock()
	close(cmd.ack)
	v.host.changed()
	return false
}

// retryFailed takes the restart of a failed server: a lazy one is idle
// again (the next request starts it), unless the restart asks for a
// process (mcpgen restart) or its configuration cannot start; it returns
// what the supervisor then sleeps on. Any other starts now.
func (v *supervisor) retryFailed(cmd *supervisorCmd) <-chan struct{} {
	if !cmd.cfg.server.Lazy || cmd.start || cmd.cfg.err != nil {
		v.restartFor(cmd, true)
		return nil
	}
	demand := v.hub.Idle()
	v.restartIdle(cmd)
	return demand
}

// idleAfter makes the server idle again after a start for a request failed:
// the next request starts it again. It returns what the supervisor sleeps
// on.
func (v *supervisor) idleAfter(err error) <-chan struct{} {
	v.mu.Lock()
	v.lastError = err.Error()
	v.mu.Unlock()
	return v.hub.Idle()
}

// poke tells the idle timer that the idle_timeout may have changed.
func (v *supervisor) poke() {
	select {
	case v.idle.pokes <- struct{}{}:
	default: // one is pending
	}
}

// An idleTimer runs while a process of the server is ready (watch). It
// sends on c the time since which the server has been quiet (no client
// connected) once it has been for its idle_timeout. Its goroutine ends with
// stop.
type idleTimer struct {
	c    chan time.Time
	quit chan struct{}
	done chan struct{}
}

// watchIdle starts the idle timer of the process that just became ready.
func (v *supervisor) watchIdle() *idleTimer {
	readyAt := time.Now()
	v.mu.Lock()
	v.idle.readyAt = readyAt
	v.mu.Unlock()
	t := &idleTimer{c: make(chan time.Time), quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(t.done)
		timer := time.NewTimer(time.Hour)
		timer.Stop()
		defer timer.Stop()
		for {
			quiet, left, changed := v.hub.Quiet()
			since := later(readyAt, left)
			timeout := v.config().server.IdleTimeout
			var fire <-chan time.Time
			if quiet && timeout > 0 {
				timer.Reset(time.Until(since.Add(timeout)))
				fire = timer.C
			}
			select {
			case <-changed:
			case <-v.idle.pokes:
			case <-fire:
				select {
				case t.c <- since:
				case <-t.quit:
					return
				}
			case <-t.quit:
				return
			}
			timer.Stop()
		}
	}()
	return t
}

func (t *idleTimer) stop() {
	close(t.quit)
	<-t.done
}

// idleStop stops the server for idleness if it is still quiet since since,
// and returns the command that does; nil when a client came meanwhile.
func (v *supervisor) idleStop(up *hub.Upstream, since time.Time) *supervisorCmd {
	if hook := v.host.idleStop; hook != nil {
		hook(v.name)
	}
	demand, ok := v.hub.IdleIf(up, since)
	if !ok {
		return nil
	}
	if v.host.idleStopped != nil {
		v.host.idleStopped(v.name)
	}
	v.host.log.Info("server idle: stopping it", "server", v.name, "idle_timeout", v.config().server.IdleTimeout.String())
	return &supervisorCmd{idle: demand}
}

// idleStopAtLocked is when the server will be stopped for idleness if no client
// comes, or nil; the caller holds v.mu.
func (v *supervisor) idleStopAtLocked() *time.Time {
	timeout := v.cfg.server.IdleTimeout
	if v.state != ctl.Ready || timeout <= 0 {
		return nil
	}
	quiet, left, _ := v.hub.Quiet()
	if !quiet {
		return nil
	}
	at := later(v.idle.readyAt, left).Add(timeout).UTC()
	return &at
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
