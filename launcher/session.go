package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/dirs"
	"github.com/mcpgen/mcpgen/launcher/internal/gateway"
	"github.com/mcpgen/mcpgen/launcher/internal/hub"
	"github.com/mcpgen/mcpgen/launcher/internal/logfile"
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
	opts       Options
	timing     Timing
	log        *slog.Logger
	runtimeDir string
	stateDir   string
	started    time.Time
	// contain holds every process the session starts, and record names
	// what it holds for the next launch, should this one be killed.
	contain     *proc.Containment
	record      *proc.Record
	stopRefresh func() // ends the goroutine that refreshes the record
	// startSlots bounds the servers starting at once: each start holds
	// a few descriptors, and a manifest of thousands must not spend them
	// all at once.
	startSlots chan struct{}

	// reloading serializes reloads: the watcher's, Reload's and the
	// control socket's, so that a manifest read earlier is never applied
	// after one read later.
	reloading sync.Mutex
	// applied is the number of the watcher's content applied last
	// (watch.Content.Seq); guarded by reloading.
	applied uint64
	// file and path name the manifest as it was loaded first, for parsing
	// the content the watcher reads, and searched says how it was found
	// (manifest.Manifest.Searched); set before the watcher starts.
	file, path string
	searched   bool
	// reloads holds Reload's request until Run takes it; requests made
	// meanwhile merge into it.
	reloads chan struct{}
	// rebuilds are the goroutines of rebuild; shutdown waits for them.
	rebuilds sync.WaitGroup

	mu       sync.Mutex
	m        *manifest.Manifest
	ctx      *manifest.Context
	servers  map[string]*supervisor
	logs     map[string]*logfile.File
	lastLoad ctl.ReloadStatus
	catalogs map[string][32]byte // a sum of each server's catalog as kept last (keepCatalog)
	building map[string]bool     // servers being rebuilt after a source change
	again    map[string]bool     // ... whose sources changed again meanwhile
	closing  bool                // shutdown has begun: nothing starts any more
	sessCtx  context.Context
	watcher  *watch.Watcher // nil when the manifest is not a file, or cannot be watched
	hurried  bool           // Hurry was called
	hurry    func()         // cuts the stop's grace periods short; set by Run
	stopRun  func()         // ends Run, for a stop request; set by Run
	stops    int            // stop requests so far
	// settle is closed, and replaced, at every event: what waitSettled
	// waits on.
	settle chan struct{}
	// ended is closed when Run has returned everything it held: every
	// server stopped, the lock released.
	ended chan struct{}
	// up is closed once Run has started the servers and answers on its
	// control socket.
	up   chan struct{}
	exit sessionExit // the idle exit (exit.go)

	gw *gateway.Gateway // the workspace gateway; set by Run
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
	return &Session{
		opts:     opts,
		timing:   opts.Timing.withDefaults(),
		log:      opts.Log,
		servers:  make(map[string]*supervisor),
		logs:     make(map[string]*logfile.File),
		catalogs: make(map[string][32]byte),
		building: make(map[string]bool),
		again:    make(map[string]bool),
		reloads:  make(chan struct{}, 1),
		settle:   make(chan struct{}),
		ended:    make(chan struct{}),
		up:       make(chan struct{}),
		exit:     sessionExit{kick: make(chan struct{}, 1)},

		startSlots: make(chan struct{}, startConcurrency),
	}
}

// startConcurrency is how many servers start at once, at most: enough to
// keep two cores busy with spawns, few enough that their descriptors stay
// a small part of what a launch needs (proc.FilesPerStart each).
const startConcurrency = 16

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
	defer close(s.ended)
	// The stop outlives ctx, which has ended by then; Hurry ends this.
	hurry, hurryNow := context.WithCancel(context.WithoutCancel(ctx))
	defer hurryNow()
	ctx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	s.mu.Lock()
	s.hurry, s.stopRun = hurryNow, stopRun
	if s.hurried {
		hurryNow()
	}
	s.mu.Unlock()

	var err error
	if s.runtimeDir, err = RuntimeDir(s.opts.Workspace); err != nil {
		return err
	}
	if s.stateDir, err = StateDir(s.opts.Workspace); err != nil {
		return err
	}
	held, err := dirs.Lock(s.runtimeDir)
	if err != nil {
		return err
	}
	defer held.Unlock()

	// What a launcher killed with -9 left behind goes first; then this
	// one's containment is recorded, before anything starts.
	if err := s.setupContainment(ctx); err != nil {
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
		s.file, s.path, s.searched = m.File, m.Path, m.Searched
		watcher, err = watch.New(m.Path, watch.Options{Debounce: s.opts.Debounce, Complete: s.parses})
		if err != nil {
			s.log.Warn("not watching the manifest", "error", err)
		} else {
			defer watcher.Close()
			events, watchErrs = watcher.Events(), watcher.Errors()
			if content, err := watcher.Read(); err == nil {
				if m2, c2, err := s.parse(content.Data); err == nil {
					m, c, s.applied = m2, c2, content.Seq
				}
				// Else it changed since the load, to content that does
				// not parse: the load stands, and the next change that
				// parses is applied.
			}
		}
	}
	sockPath, err := dirs.SocketPath(s.runtimeDir, dirs.ControlSocket)
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

	s.mu.Lock()
	s.started = time.Now()
	loaded := s.started.UTC()
	s.lastLoad = ctl.ReloadStatus{At: &loaded, OK: true} // the first load
	s.m, s.ctx = m, c
	s.sessCtx = ctx
	s.watcher = watcher
	s.gw = gateway.New(s.log)
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
		s.reloading.Lock()
		defer s.reloading.Unlock()
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
			ln.Close()
			<-served
			<-idled
			s.log.Info("session stopped", "workspace", s.opts.Workspace)
			return nil
		case <-st.done:
			st.done = nil
			if first {
				first = false
				s.mu.Lock()
				n := len(s.servers) // a reload may be under way already
				s.mu.Unlock()
				s.log.Info("session started", "workspace", s.opts.Workspace, "manifest", m.File, "servers", n, "control", sockPath, "containment", s.contain.Report().String())
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
		case <-s.reloads:
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

// setupContainment ends what the record of an earlier launcher names
// (one killed with SIGKILL), sets up the session's containment and starts
// its record. An unreadable record stops the launch: what it names is no
// launcher's to guess at.
func (s *Session) setupContainment(ctx context.Context) error {
	entries, err := proc.ReadRecord(s.runtimeDir)
	if err != nil {
		return err
	}
	var left []proc.Entry
	if len(entries) > 0 {
		// Bounded: a process stuck in the kernel must not hold the launch.
		sctx, cancel := context.WithTimeout(ctx, s.timing.TermGrace+proc.KillWait)
		var ended []proc.ProcID
		ended, left, err = proc.Sweep(sctx, entries, s.timing.TermGrace)
		cancel()
		if err != nil {
			s.log.Warn("ending what an earlier launcher left: what is left stays recorded for the next launch", "error", err)
		}
		if len(ended) > 0 {
			pids := make([]int, len(ended))
			for i, id := range ended {
				pids[i] = id.Pid
			}
			s.log.Info("ended processes an earlier launcher left behind", "pids", pids)
		}
	}
	c, err := proc.Setup(ctx, proc.Options{Name: s.opts.Workspace, Mode: s.opts.Containment})
	if err != nil {
		return err
	}
	rec, err := proc.NewRecord(s.runtimeDir, c, left)
	if err != nil {
		_ = c.Close(ctx)
		return err
	}
	s.mu.Lock()
	s.contain, s.record = c, rec
	s.mu.Unlock()
	stop, refreshed := make(chan struct{}), make(chan struct{})
	s.stopRefresh = func() { close(stop); <-refreshed }
	go func() {
		// Records what containers' processes start (ModeSubreaper's
		// Changed); ends with closeContainment.
		defer close(refreshed)
		for {
			select {
			case <-stop:
				return
			case <-c.Changed():
				if err := rec.Refresh(); err != nil {
					s.log.Warn("recording what servers started", "error", err)
				}
			}
		}
	}()
	return nil
}

// closeContainment ends whatever is still contained (what the agent of
// launch -- CMD left, say) and, when nothing is left, the record.
func (s *Session) closeContainment() {
	s.stopRefresh()
	ctx, cancel := context.WithTimeout(context.Background(), proc.KillWait)
	defer cancel()
	if err := s.contain.Close(ctx); err != nil {
		s.log.Warn("processes outlived the session: they stay recorded for the next launch to end", "error", err)
		return
	}
	if err := s.record.Remove(); err != nil {
		s.log.Warn("removing the containment record", "error", err)
	}
}

// StartAttached starts cmd in a container of the session, sharing the
// launcher's terminal and process group: the agent that launch -- CMD
// runs (see proc.Container.StartAttached). The caller waits for it; the
// session's end ends whatever it leaves. It fails before Run has set up
// the containment.
func (s *Session) StartAttached(name string, cmd *exec.Cmd) error {
	s.mu.Lock()
	c, closing := s.contain, s.closing
	s.mu.Unlock()
	if c == nil || closing {
		return fmt.Errorf("start %s: the session is not running", name)
	}
	k, err := c.New(name, proc.Limits{})
	if err != nil {
		return err
	}
	if err := k.StartAttached(cmd); err != nil {
		_ = k.Close(context.Background())
		return err
	}
	return nil
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

// CheckCapacity refuses, with the numbers, a manifest whose servers a
// session could not hold within the file descriptor limit (raised to the
// hard limit first): see proc.CheckCapacity. A session checks every
// manifest it loads; launch checks the first before anything else.
func CheckCapacity(m *manifest.Manifest) error {
	n := 0
	for _, srv := range m.Servers {
		if srv.Enabled && srv.Kind.Stdio() {
			n++
		}
	}
	if err := proc.CheckCapacity(proc.Capacity{Servers: n, Starts: min(n, startConcurrency)}); err != nil {
		return fmt.Errorf("%s: %w", m.File, err)
	}
	return nil
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
	case s.reloads <- struct{}{}:
	default: // one is waiting already
	}
}

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

// reloadNow reads the manifest again (or takes content, as the watcher
// read it) and applies it, then watches the sources of the servers it has;
// it returns once removed and changed servers have stopped. retryFailed
// restarts failed servers even when their configuration did not change.
func (s *Session) reloadNow(retryFailed bool, content *watch.Content) {
	s.reload(retryFailed, content)
	s.mu.Lock()
	w, closing := s.watcher, s.closing
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
	s.reloading.Lock()
	defer s.reloading.Unlock()
	s.mu.Lock()
	w := s.watcher
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
		if content.Seq < s.applied {
			return // a later content was applied already
		}
		s.applied = content.Seq
		m, c, err = s.parse(content.Data)
	default:
		m, c, err = s.load()
	}
	now := time.Now().UTC()
	s.mu.Lock()
	s.lastLoad = ctl.ReloadStatus{At: &now, OK: err == nil}
	if err != nil {
		s.lastLoad.Error = err.Error()
	}
	s.mu.Unlock()
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
	m, err := manifest.Parse(data, s.file, filepath.Dir(s.path))
	if err != nil {
		return nil, nil, err
	}
	m.Path, m.Searched = s.path, s.searched
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
	if s.closing || s.exit.exiting {
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
			v := newSupervisor(s, want[name], hub.New(name, c.WorkspaceDir, s.log))
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
			if cat := s.cachedCatalog(v.name, cfg.catKey); cat != nil {
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
		cfg.err = checkLimits(s.contain, m, srv, cfg.limits)
	}
	cfg.key = restartKey(srv, cfg.spec, cfg.err)
	cfg.catKey = catalogKey(m, srv, c, cfg.spec, s.opts.Env, cfg.err)
	return cfg
}

// checkLimits says, at the key's place in the manifest, why a server's
// memory_max or cpu_max cannot be enforced here.
func checkLimits(c *proc.Containment, m *manifest.Manifest, srv *manifest.Server, lim proc.Limits) error {
	err := c.Check(lim)
	var le *proc.LimitError
	if !errors.As(err, &le) {
		return err
	}
	pos := srv.MemoryMaxPos
	if le.Key == "cpu_max" {
		pos = srv.CPUMaxPos
	}
	return &manifest.Error{File: m.File, Pos: pos, Server: srv.Name, Key: le.Key, Msg: le.Error()}
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
	if spec != nil {
		env = slices.Sorted(slices.Values(spec.Env))
		path, dir, args = spec.Path, spec.Dir, spec.Args
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
		Err   string
	}{def, tools, path, args, dir, env, errText})
	return string(b)
}

// sortedVars returns vars in name order, which is the same set of
// variables or headers as in file order.
func sortedVars(vars []manifest.Var) []manifest.Var {
	return slices.SortedFunc(slices.Values(vars), func(a, b manifest.Var) int { return strings.Compare(a.Name, b.Name) })
}

func (v *supervisor) config() *serverConfig {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.cfg
}

func (v *supervisor) currentState() ctl.State {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.state
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
	if v == nil || s.closing {
		s.mu.Unlock()
		return
	}
	if s.building[name] {
		s.again[name] = true
		s.mu.Unlock()
		return
	}
	s.building[name] = true
	ctx := s.sessCtx
	s.mu.Unlock()
	s.rebuilds.Go(func() {
		for {
			s.rebuildOnce(ctx, v)
			s.mu.Lock()
			again := s.again[name] && ctx.Err() == nil
			delete(s.again, name)
			if !again {
				delete(s.building, name)
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
	_, took, err := Build(ctx, s.contain, cfg.m, cfg.server, s.opts.Env, true)
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
func (s *Session) build(ctx context.Context, cfg *serverConfig) error {
	state, took, err := Build(ctx, s.contain, cfg.m, cfg.server, s.opts.Env, false)
	if state == Built && err == nil {
		s.log.Info("built", "server", cfg.server.Name, "took", took.Round(time.Millisecond).String())
	}
	return err
}

// start starts a server's process once a start slot is free (see
// startConcurrency), or fails when ctx ends first.
func (s *Session) start(ctx context.Context, spec *proc.Spec) (*proc.Process, error) {
	select {
	case s.startSlots <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	defer func() { <-s.startSlots }()
	return proc.Start(spec)
}

// contained logs, once a server's process has been stopped or killed, why
// its container could not be closed, if so.
func (s *Session) contained(server string, p *proc.Process) {
	if err := p.CloseErr(); err != nil {
		s.log.Warn("processes of a stopped server are left: they stay recorded for the next launch to end", "server", server, "error", err)
	}
}

// serverLog returns the server's stderr log, opened once per session.
func (s *Session) serverLog(name string) (*logfile.File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.logs[name]; l != nil {
		return l, nil
	}
	l, err := logfile.Open(s.logPath(name), logfile.DefaultMaxBytes, logfile.DefaultKeep)
	if err != nil {
		return nil, err
	}
	s.logs[name] = l
	return l, nil
}

// SessionLog opens the launcher's own log in the workspace's state dir,
// launcher.log, capped and rotated as the servers' logs are: where a launch
// writes its events when its terminal belongs to a live table or an agent.
func SessionLog(workspace string) (io.WriteCloser, error) {
	dir, err := StateDir(workspace)
	if err != nil {
		return nil, err
	}
	return logfile.Open(filepath.Join(dir, "launcher.log"), logfile.DefaultMaxBytes, logfile.DefaultKeep)
}

// logPath is where a server's stderr goes.
func (s *Session) logPath(name string) string {
	return filepath.Join(s.stateDir, name+".log")
}

// event logs a server's state change.
func (s *Session) event(server string, state ctl.State, detail string, err error) {
	attrs := []any{"server", server, "state", string(state)}
	if detail != "" {
		attrs = append(attrs, "detail", detail)
	}
	level := slog.LevelInfo
	if err != nil {
		attrs = append(attrs, "error", err.Error())
		if state == ctl.Failed || state == ctl.Backoff {
			level = slog.LevelWarn
		}
	}
	s.log.Log(context.Background(), level, "server "+string(state), attrs...)
	s.changed()
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

// settleMargin is added to the longest startup timeout to bound a wait for
// the servers: the time to spawn a process, or to stop the one before.
const settleMargin = 5 * time.Second

// waitSettled waits until none of the named servers (every server, when
// names is nil) is starting: each is ready, failed or in backoff. It waits
// at most their longest startup timeout (plus a margin), and returns the
// servers still starting then, or when ctx ends.
func (s *Session) waitSettled(ctx context.Context, names []string) (starting []string) {
	var bound time.Duration
	for _, v := range s.supervisors(names) {
		bound = max(bound, v.config().server.Startup())
	}
	t := time.NewTimer(bound + settleMargin)
	defer t.Stop()
	for {
		// Taken before the states are read: a change after the read
		// closes it.
		s.mu.Lock()
		changed := s.settle
		s.mu.Unlock()
		starting = starting[:0]
		for _, v := range s.supervisors(names) {
			if v.currentState() == ctl.Starting {
				starting = append(starting, v.name)
			}
		}
		if len(starting) == 0 {
			return nil
		}
		select {
		case <-changed:
		case <-t.C:
			return starting
		case <-ctx.Done():
			return starting
		}
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

// restartServer restarts a server now, for mcpgen restart: whatever its
// state, failed included, with the configuration it has; it counts as a
// restart. It returns once the server is ready, failed or in backoff
// again, or with its name when it is still starting after its startup
// timeout.
func (s *Session) restartServer(ctx context.Context, name string) ([]string, error) {
	s.mu.Lock()
	v, closing := s.servers[name], s.closing || s.exit.exiting
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

// Status returns the session's status.
func (s *Session) Status() *ctl.Status {
	s.mu.Lock()
	st := &ctl.Status{
		Workspace: s.opts.Workspace,
		Pid:       os.Getpid(),
		StartedAt: s.started.UTC(),
		Reload:    s.lastLoad,
	}
	if s.contain != nil {
		st.Containment = s.contain.Report()
	}
	if s.m != nil {
		st.Manifest = s.m.File
		if s.m.Path != "" {
			st.Manifest = s.m.Path
		}
	}
	if s.ctx != nil {
		st.Dir, st.User = s.ctx.WorkspaceDir, s.ctx.UserID
	}
	servers := slices.Collect(maps.Values(s.servers))
	order := map[string]int{}
	if s.m != nil {
		for i, srv := range s.m.Servers {
			order[srv.Name] = i
		}
	}
	s.mu.Unlock()
	for _, v := range servers {
		st.Servers = append(st.Servers, v.status())
	}
	sort.Slice(st.Servers, func(i, j int) bool { return order[st.Servers[i].Name] < order[st.Servers[j].Name] })
	st.Gateway = s.gatewayStatus()
	s.idleExitStatus(st)
	return st
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
