package launcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/dirs"
	"github.com/mcpgen/mcpgen/launcher/internal/gateway"
	"github.com/mcpgen/mcpgen/launcher/internal/hub"
	"github.com/mcpgen/mcpgen/launcher/internal/logfile"
	"github.com/mcpgen/mcpgen/launcher/internal/metrics"
	"github.com/mcpgen/mcpgen/launcher/internal/tracing"
	"github.com/mcpgen/mcpgen/launcher/internal/watch"
	"github.com/mcpgen/mcpgen/manifest"
)

// Options configure a session.
type Options struct {
	Workspace string
	// Load reads the manifest: at the start and at every reload.
	Load func() (*manifest.Manifest, error)
	// Context holds --dir and --user; WorkspaceID is set from Workspace.
	Context manifest.ContextOptions
	// Self is the mcpgen binary, which runs built-in and declared servers.
	Self string
	// Env is the environment servers inherit (default: this process's).
	Env []string
	// Log receives one record per event: a server's state, a reload.
	Log *slog.Logger
	// Changed, if set, is called after every event (to redraw a table).
	Changed func()
	// Stop, if set, is called when mcpgen stop asks the session to stop
	// (hurry: with --force, or asked a second time), for its owner to do
	// what it does on SIGTERM (and on a second signal): end Run's context
	// (and call Hurry). Unset, the session does that itself.
	Stop func(hurry bool)
	// Debounce is the quiet time the watcher waits for after a change it
	// does not apply at once: a write in place, or content that does not
	// parse (the manifest replaced whole by content that parses is applied
	// at once).
	Debounce time.Duration
	Timing   Timing
	// Containment forces a way of containing servers (see proc.Mode); the
	// zero value takes the strongest the system has.
	Containment proc.Mode
	// IdleExit, when positive, is how long the launcher waits with no
	// client and no running server before it exits, whatever the
	// manifest's [session] idle_exit says; negative: it never exits so.
	// Zero: as the manifest says (never, when it says nothing).
	IdleExit time.Duration
	// HTTP is launch's --listen and --no-auth: PlanHTTP makes of them and
	// the manifest how the workspace is served over HTTP.
	HTTP HTTPOptions

	hooks testHooks // tests' ways into the moments where races are decided
}

// testHooks let tests act at the moments where races are decided; each is
// nil outside tests.
type testHooks struct {
	idleStop func(server string) // a quiet server's idle timer fired, before the stop is decided
	idleExit func()              // the idle-exit timer fired, before the exit is decided
	exiting  func()              // the exit is decided, before the socket goes
	apply    func()              // an apply begins: a step that may be stuck
}

// A Session is one workspace's launcher: it holds the workspace's lock,
// runs a supervisor and a hub per stdio server, follows the manifest, and
// answers the control socket (status, reload, connect, stop, restart, and
// a wait until the servers are up).
type Session struct {
	opts    Options
	timing  Timing
	log     *slog.Logger
	started time.Time // set by Run

	// Each concern of the session holds its own, in the file that is
	// about it.
	contain  containment   // what the session's processes run in (contain.go)
	loads    sessionLoads  // the manifest as the session follows it (reload.go)
	builds   sessionBuilds // rebuilds after a source change (rebuild.go)
	logs     serverLogs    // the servers' logs (logs.go)
	catalogs catalogCache  // the servers' catalogs as kept (catalog.go)
	stop     sessionStop   // the stop (stop.go)
	drain    sessionDrain  // the drain on SIGTERM (drain.go)
	exit     sessionExit   // the idle exit (exit.go)

	mu      sync.Mutex
	m       *manifest.Manifest
	ctx     *manifest.Context
	servers map[string]*supervisor
	gw      *gateway.Gateway // the workspace gateway; set by Run
	tracer  *tracing.Tracer  // traces tool calls; set by Run (nil: none, see tracing.ReadEnv)
	http    *sessionHTTP     // the HTTP face; set by Run when it serves one
	// metrics are the session's, when its HTTP face serves them; set by
	// Run before any hub is made (observe.go).
	metrics *metrics.Set
	// stdioClients are the agents connected through the control socket,
	// by face: a server's hub, the gateway (for metrics).
	stdioClients struct{ hub, gateway atomic.Int64 }
	// settle is closed, and replaced, at every event: what waitSettled
	// waits on.
	settle chan struct{}
	// up is closed once Run has started the servers and answers on its
	// control socket.
	up chan struct{}
}

// NewSession prepares a session; Run starts it.
func NewSession(opts Options) *Session {
	if opts.Env == nil {
		opts.Env = os.Environ()
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Debounce <= 0 {
		opts.Debounce = 200 * time.Millisecond
	}
	opts.Context.WorkspaceID = opts.Workspace
	// Every line names the workspace: a platform's log pipeline gathers
	// the lines of many launchers (launch --log-format json).
	opts.Log = opts.Log.With("workspace", opts.Workspace)
	return &Session{
		opts:     opts,
		timing:   opts.Timing.withDefaults(),
		log:      opts.Log,
		contain:  containment{slots: make(chan struct{}, startConcurrency), log: opts.Log},
		loads:    sessionLoads{requests: make(chan struct{}, 1)},
		builds:   sessionBuilds{running: make(map[string]bool), again: make(map[string]bool)},
		logs:     serverLogs{files: make(map[string]*logfile.File)},
		catalogs: catalogCache{kept: make(map[string][32]byte), log: opts.Log},
		stop:     sessionStop{ended: make(chan struct{})},
		drain:    sessionDrain{idle: make(chan struct{}, 1)},
		exit:     sessionExit{kick: make(chan struct{}, 1)},
		servers:  make(map[string]*supervisor),
		settle:   make(chan struct{}),
		up:       make(chan struct{}),
	}
}

// Up is closed once Run has started the servers (they may be starting
// still) and answers on its control socket; never, when Run fails first.
func (s *Session) Up() <-chan struct{} { return s.up }

// WaitSettled waits until no server is starting (each is ready, failed or
// in backoff), at most the servers' longest startup timeout, and returns
// those still starting then. Call it once Up is closed.
func (s *Session) WaitSettled(ctx context.Context) (starting []string) {
	return s.waitSettled(ctx, nil)
}

// Run runs the session until ctx ends, then stops every server in parallel
// (gracefully, unless Hurry is called) and returns. Run fails before
// starting anything when the workspace already has a launcher or the
// manifest is invalid. A Session runs once.
func (s *Session) Run(ctx context.Context) error {
	// Last of all, once the lock is released: tell whoever asked it to
	// stop that it has.
	defer close(s.stop.ended)
	// The stop outlives ctx, which has ended by then; Hurry ends this.
	hurry, hurryNow := context.WithCancel(context.WithoutCancel(ctx))
	defer hurryNow()
	ctx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	s.mu.Lock()
	s.stop.hurry, s.stop.run = hurryNow, stopRun
	if s.stop.hurried {
		hurryNow()
	}
	s.mu.Unlock()
	if s.drain.draining.Load() {
		stopRun() // drained before it ran: there is nothing to wait for
	}

	runtimeDir, err := RuntimeDir(s.opts.Workspace)
	if err != nil {
		return err
	}
	stateDir, err := StateDir(s.opts.Workspace)
	if err != nil {
		return err
	}
	s.logs.dir, s.catalogs.dir = stateDir, stateDir
	held, err := dirs.Lock(runtimeDir)
	if err != nil {
		return err
	}
	defer held.Unlock()

	// What a launcher killed with -9 left behind goes first; then this
	// one's containment is recorded, before anything starts.
	if err := s.setupContainment(ctx, runtimeDir); err != nil {
		return err
	}
	defer s.closeContainment()

	m, c, err := s.load()
	if err != nil {
		return err
	}
	// Watch at once, and apply what the watcher read: it compares later
	// content with that, so a change made since the load is applied now,
	// and one made after is seen.
	var events <-chan watch.Event
	var watchErrs <-chan error
	var watcher *watch.Watcher
	if m.Path != "" {
		s.loads.file, s.loads.path, s.loads.searched = m.File, m.Path, m.Searched
		watcher, err = watch.New(m.Path, watch.Options{Debounce: s.opts.Debounce, Complete: s.parses})
		if err != nil {
			s.log.Warn("not watching the manifest", "error", err)
		} else {
			defer watcher.Close()
			events, watchErrs = watcher.Events(), watcher.Errors()
			if content, err := watcher.Read(); err == nil {
				if m2, c2, err := s.parse(content.Data); err == nil {
					m, c, s.loads.applied = m2, c2, content.Seq
				}
				// Else it changed since the load, to content that does
				// not parse: the load stands, and the next change that
				// parses is applied.
			}
		}
	}
	sockPath, err := dirs.SocketPath(runtimeDir, dirs.ControlSocket)
	if err != nil {
		return err
	}
	os.Remove(sockPath) // a stale socket: the lock says nobody uses it
	ln, err := net.Listen("unix", sockPath)
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	if err := dirs.PrivateSocket(sockPath); err != nil {
		ln.Close()
		return err
	}
	defer os.Remove(sockPath)

	// Traces of tool calls, when the OTEL_ variables ask for them.
	tcfg, err := tracing.ReadEnv(envLookup(s.opts.Env))
	if err != nil {
		ln.Close()
		return fmt.Errorf("tracing: %w", err)
	}
	if tcfg != nil {
		s.tracer = tracing.New(tcfg, s.opts.Workspace, s.log)
		s.log.Info("tracing tool calls", "endpoint", tcfg.Endpoint, "service", tcfg.Service)
		defer func() {
			// What waits goes out, within a bound: a receiver that is
			// down does not hold the stop up.
			c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			s.tracer.Shutdown(c)
		}()
	}

	// The HTTP face listens before anything starts, so that an address
	// in use fails the launch; it answers once the servers are up.
	web, err := s.startHTTP(ctx, m)
	if err != nil {
		ln.Close()
		return err
	}
	defer web.stop() // at once, unless the stop below came first

	s.mu.Lock()
	s.started = time.Now()
	loaded := s.started.UTC()
	s.loads.last = ctl.ReloadStatus{At: &loaded, OK: true} // the first load
	if s.metrics != nil {
		s.metrics.Reloaded(true)
	}
	s.m, s.ctx = m, c
	s.builds.ctx = ctx
	s.loads.watcher = watcher
	s.gw = gateway.New(s.log)
	s.http = web
	s.mu.Unlock()

	// The control socket answers from now on, whatever an apply waits
	// for: status, and a stop (see control for the requests that wait
	// for the first apply).
	served := make(chan struct{})
	go func() { defer close(served); s.serveControl(ctx, ln) }()

	// Applying a manifest may wait (for servers to stop, for the state
	// dir), so the applies run on a goroutine of their own (steps), one at
	// a time, and this loop only hands them out: it sees ctx end, for a
	// stop or a signal, whatever they wait for.
	st := &steps{sources: map[string]bool{}}
	st.start(func() {
		s.loads.mu.Lock()
		defer s.loads.mu.Unlock()
		s.apply(m, c, false)
		if watcher != nil {
			s.watchSources(watcher)
		}
	})
	first := true
	idled := closedChan()
	for {
		select {
		case <-ctx.Done():
			// The control socket answers until every server has stopped:
			// status shows the stop, and a second mcpgen stop can hurry it.
			s.shutdown(hurry)
			s.waitStep(st, hurry)
			web.stop()
			ln.Close()
			<-served
			<-idled
			s.log.Info("session stopped")
			return nil
		case <-st.done:
			st.done = nil
			if first {
				first = false
				s.mu.Lock()
				n := len(s.servers) // a reload may be under way already
				s.mu.Unlock()
				s.log.Info("session started", "manifest", m.File, "servers", n, "control", sockPath, "containment", s.contain.Report().String())
				idled = make(chan struct{})
				go func() { defer close(idled); s.watchIdleExit(ctx, sockPath, stopRun) }()
				close(s.up)
			}
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if ev.Manifest != nil {
				st.content = ev.Manifest // a later content replaces one that waits
			}
			for _, name := range ev.Sources {
				st.sources[name] = true
			}
		case err, ok := <-watchErrs:
			if !ok {
				watchErrs = nil
				continue
			}
			s.log.Warn("watching files", "error", err)
		case <-s.loads.requests:
			st.reload = true
		}
		s.nextStep(st)
	}
}

// AlreadyRunning reports whether err is Session.Run's failure for a
// workspace that has a launcher already, and that launcher's pid (0 when
// unknown).
func AlreadyRunning(err error) (pid int, ok bool) {
	var le *dirs.LockedError
	if errors.As(err, &le) {
		return le.Pid, true
	}
	return 0, false
}

// steps is what Run hands the goroutine that applies manifests: the step
// under way, and what waits for it to end (Run's loop owns it all).
type steps struct {
	done    chan struct{}   // closed when the step under way ends; nil when none is
	reload  bool            // a reload (SIGHUP, Reload) waits
	content *watch.Content  // a manifest the watcher read waits
	sources map[string]bool // servers whose sources changed wait to be rebuilt
}

// start runs a step on a goroutine of its own, which ends with it.
func (st *steps) start(step func()) {
	done := make(chan struct{})
	st.done = done
	go func() {
		defer close(done)
		step()
	}()
}

// nextStep starts what waits, once no step is under way: a reload first
// (it reads the manifest as it is now, later than any content that waits,
// which it replaces), then a manifest the watcher read; rebuilds, which do
// not wait, once the manifest is applied, in the order the events came.
func (s *Session) nextStep(st *steps) {
	if st.done != nil {
		return
	}
	switch {
	case st.reload:
		st.reload, st.content = false, nil
		st.start(func() { s.reloadNow(true, nil) })
	case st.content != nil:
		content := st.content
		st.content = nil
		st.start(func() { s.reloadNow(false, content) })
	default:
		for name := range st.sources {
			s.rebuild(name)
		}
		clear(st.sources)
	}
}

// waitStep waits, once the servers have stopped, for the step under way
// to end, at most as long as a step may take (stopping the servers a
// reload removed: their grace periods, then the kill), or until the stop
// is hurried. A step stuck longer is left: the session ends without it,
// and its containment ends whatever it started.
func (s *Session) waitStep(st *steps, hurry context.Context) {
	if st.done == nil {
		return
	}
	bound := s.timing.StdinGrace + s.timing.TermGrace + proc.KillWait
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-st.done:
		return
	default:
	}
	select {
	case <-st.done:
	case <-hurry.Done():
		s.log.Warn(stuckStep, "hurried", true)
	case <-t.C:
		s.log.Warn(stuckStep, "waited", bound.String())
	}
}

// stuckStep is the log message of a stop that leaves a step under way.
const stuckStep = "stopping without waiting for a step that is stuck (applying the manifest)"

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// host is what the session gives a supervisor it makes: see
// supervisorHost.
func (s *Session) host() *supervisorHost {
	h := &supervisorHost{log: s.log, timing: s.timing, env: s.opts.Env, contain: &s.contain,
		logs: &s.logs, catalogs: &s.catalogs, changed: s.changed, idleStop: s.opts.hooks.idleStop}
	if s.metrics != nil {
		h.idleStopped = s.metrics.IdleStopped
	}
	return h
}

func (s *Session) changed() {
	s.mu.Lock()
	close(s.settle)
	s.settle = make(chan struct{})
	s.kickExitLocked()
	s.mu.Unlock()
	if s.opts.Changed != nil {
		s.opts.Changed()
	}
}

// supervisors returns the named servers' supervisors (every one's when
// names is nil), sorted by name; names that have none are left out.
func (s *Session) supervisors(names []string) []*supervisor {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*supervisor
	for _, name := range slices.Sorted(maps.Keys(s.servers)) {
		if names == nil || slices.Contains(names, name) {
			out = append(out, s.servers[name])
		}
	}
	return out
}

// hubOf returns the hub of a server, or an error naming the servers there
// are.
func (s *Session) hubOf(name string) (*hub.Hub, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v := s.servers[name]; v != nil {
		return v.hub, nil
	}
	names := slices.Sorted(maps.Keys(s.servers))
	return nil, fmt.Errorf("workspace %q has no server %q; it has: %s", s.opts.Workspace, name, joinOr(names, "none"))
}

func joinOr(names []string, none string) string {
	if len(names) == 0 {
		return none
	}
	return strings.Join(names, ", ")
}

// envLookup reads a variable of env (KEY=VALUE, the last one winning, as
// a process's environment does).
func envLookup(env []string) func(string) string {
	return func(key string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
				return v
			}
		}
		return ""
	}
}
