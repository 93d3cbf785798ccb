package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/internal/sandbox"
	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/hub"
	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/mcp"
	"github.com/mcpgen/mcpgen/mcp/streamable"
)

// Timing holds the supervisor's delays and limits. The zero value of a
// field means its default; tests shorten them.
type Timing struct {
	BackoffBase   time.Duration // first delay after a crash (1s), doubled each time
	BackoffMax    time.Duration // longest delay (60s)
	StableAfter   time.Duration // a run this long resets the delay (30s)
	FailureLimit  int           // this many crashes (5) ...
	FailureWindow time.Duration // ... within this window (5m) make the server failed
	PingInterval  time.Duration // how often a ready server is pinged (30s)
	PingTimeout   time.Duration // how long a ping may take (10s)
	PingMisses    int           // unanswered pings in a row that count as a crash (2)
	StdinGrace    time.Duration // a stopping server's time to exit after its stdin closes (2s)
	TermGrace     time.Duration // ... and then after SIGTERM, before SIGKILL (3s)
	// RemoteReconnects is how many reconnections in a row of a remote
	// server's stream may fail or bring no message before it is given up
	// (streamable.DefaultMaxReconnects).
	RemoteReconnects int
}

func (t Timing) withDefaults() Timing {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&t.BackoffBase, time.Second)
	def(&t.BackoffMax, time.Minute)
	def(&t.StableAfter, 30*time.Second)
	def(&t.FailureWindow, 5*time.Minute)
	def(&t.PingInterval, 30*time.Second)
	def(&t.PingTimeout, 10*time.Second)
	def(&t.StdinGrace, proc.StdinGrace)
	def(&t.TermGrace, proc.TermGrace)
	if t.FailureLimit <= 0 {
		t.FailureLimit = 5
	}
	if t.PingMisses <= 0 {
		t.PingMisses = 2
	}
	return t
}

// backoff returns the delay before start number attempt+1 after a crash:
// exponential, capped, with jitter so that servers that crashed together do
// not restart in lockstep.
func (t Timing) backoff(attempt int) time.Duration {
	d := t.BackoffBase << min(attempt, 30)
	if d <= 0 || d > t.BackoffMax {
		d = t.BackoffMax
	}
	jitter := time.Duration(rand.Int64N(int64(d)/5 + 1)) // up to +20%
	return d + jitter
}

// serverConfig is what a supervisor needs to run one server of a manifest.
type serverConfig struct {
	server *manifest.Server
	m      *manifest.Manifest
	spec   *proc.Spec // nil when err is set, and for a remote server
	remote *manifest.Remote
	limits proc.Limits // memory_max, cpu_max
	err    error       // why the server cannot be started: no retry can fix it
	key    string      // what a restart depends on: when it changes, restart
	catKey string      // the key of its catalog in the cache (catalogKey)
	// sandbox is what the platform enforces of the server's sandbox, nil
	// when it has none.
	sandbox *sandbox.Report
}

// A supervisor keeps one server running: it starts the process, makes it
// ready through its hub, pings it, restarts it after a crash with backoff,
// and gives up after too many crashes. Its goroutine (run) ends after stop.
type supervisor struct {
	name   string
	hub    *hub.Hub
	host   *supervisorHost
	timing Timing
	cmds   chan supervisorCmd
	done   chan struct{}
	// stopping is cancelled by stop, to cut a build or a handshake short.
	stopping context.Context
	cancel   context.CancelFunc

	mu        sync.Mutex
	cfg       *serverConfig
	state     ctl.State
	pid       int
	restarts  int
	startedAt time.Time
	lastError string
	retryAt   time.Time
	idle      supervisorIdle // lazy start and idle stop (idle.go)
	eraKnown  eraKnown       // era.go
	// remote is a remote server's session while it runs: status asks
	// it what went wrong that no request sees (its Notice).
	remote *streamable.Transport
}

type supervisorCmd struct {
	stop  bool
	hurry context.Context // for stop: when done, skip the grace periods
	cfg   *serverConfig   // for restart: the new configuration
	start bool            // for restart: start an idle server too (mcpgen restart)
	ack   chan struct{}   // closed once handled
	// idle, from the supervisor itself, stops the process for idleness:
	// the server is idle then, until this is closed.
	idle <-chan struct{}
}

// A supervisorHost is what a supervisor has of its session, given at its
// creation; it reaches nothing else of it. Each part belongs to one concern
// of the session (contain.go, logs.go, catalog.go); changed is the
// session's, told of every event.
type supervisorHost struct {
	log      *slog.Logger
	timing   Timing
	env      []string     // the environment servers inherit: a build's too
	contain  *containment // starts the server's processes, each contained
	logs     *serverLogs
	catalogs *catalogCache
	// changed is called after every event (a server's state changed): the
	// session wakes what waits for the servers, its idle exit, and its
	// owner (Options.Changed).
	changed func()
	// idleStop is a test's hook (testHooks.idleStop); nil outside tests.
	idleStop func(server string)
	// idleStopped hears of a server stopped for idleness (metrics); nil:
	// nobody counts them.
	idleStopped func(server string)
}

func newSupervisor(host *supervisorHost, cfg *serverConfig, h *hub.Hub) *supervisor {
	stopping, cancel := context.WithCancel(context.Background())
	v := &supervisor{
		stopping: stopping,
		cancel:   cancel,
		name:     cfg.server.Name,
		hub:      h,
		host:     host,
		timing:   host.timing,
		cmds:     make(chan supervisorCmd),
		done:     make(chan struct{}),
		cfg:      cfg,
		state:    ctl.Starting,
		idle:     supervisorIdle{pokes: make(chan struct{}, 1)},
	}
	h.SetFilter(toolFilter(cfg.server))
	h.SetTimeouts(cfg.server.Startup(), cfg.server.ToolCall())
	h.SetInputTimeout(cfg.server.Input())
	return v
}

// restart replaces the server's process, with a new configuration; it
// returns once the old process is gone (or there was none).
func (v *supervisor) restart(cfg *serverConfig) {
	ack := make(chan struct{})
	select {
	case v.cmds <- supervisorCmd{cfg: cfg, ack: ack}:
		<-ack
	case <-v.done:
	}
}

// restartNow is restart for mcpgen restart: an idle server starts too.
func (v *supervisor) restartNow(cfg *serverConfig) {
	ack := make(chan struct{})
	select {
	case v.cmds <- supervisorCmd{cfg: cfg, start: true, ack: ack}:
		<-ack
	case <-v.done:
	}
}

// stop stops the server and waits for its goroutine to end.
func (v *supervisor) stop(hurry context.Context) {
	v.cancel()
	select {
	case v.cmds <- supervisorCmd{stop: true, hurry: hurry}:
	case <-v.done:
	}
	<-v.done
}

// run is the supervisor's life: start, watch, restart, until stopped. A
// lazy server starts idle, and any server is idle after a stop for
// idleness: then it starts when a request needs it. Nothing starts before
// begin is closed (the apply that made the supervisor is ready for it);
// a stop that comes first ends it then and there.
func (v *supervisor) run(begin <-chan struct{}) {
	defer close(v.done)
	select {
	case <-begin:
	case <-v.stopping.Done():
	}
	if v.stopping.Err() != nil {
		v.setState(ctl.Stopped, "")
		return
	}
	var crashes []time.Time
	attempt := 0
	var demand <-chan struct{} // while idle: closed when a request needs the server
	if cfg := v.config(); cfg.server.Lazy && cfg.err == nil {
		demand = v.hub.Idle() // one that cannot start fails at once instead
	}
	for {
		woken := demand != nil
		if woken {
			cmd := v.sleep(demand)
			switch {
			case cmd != nil && cmd.stop:
				v.setState(ctl.Stopped, "")
				return
			case cmd != nil:
				attempt, crashes = 0, nil
				if !v.restartIdle(cmd) {
					continue // still idle, with the new configuration
				}
			}
			demand = nil
		}
		cmd, crash := v.runOnce()
		switch {
		case cmd != nil && cmd.stop:
			v.setState(ctl.Stopped, "")
			return
		case cmd != nil && cmd.idle != nil:
			attempt, crashes = 0, nil
			demand = cmd.idle
			continue
		case cmd != nil:
			attempt, crashes = 0, nil
			v.restartFor(cmd, true)
			continue
		}
		if woken && !crash.ready {
			// The requests that started it learn why it did not.
			v.hub.StartFailed(crash.err)
		}

		// A crash, or a start that failed.
		var permanent *proc.PermanentError
		if errors.As(crash.err, &permanent) {
			stopped, idle := v.failUntilCommand(crash.err.Error())
			if stopped {
				return
			}
			attempt, crashes, demand = 0, nil, idle
			continue
		}
		if crash.stable {
			attempt, crashes = 0, nil
		}
		now := time.Now()
		crashes = append(recent(crashes, now.Add(-v.timing.FailureWindow)), now)
		if len(crashes) >= v.timing.FailureLimit {
			msg := fmt.Sprintf("%d crashes within %s, giving up (a reload or SIGHUP tries again); last: %v", len(crashes), v.timing.FailureWindow, crash.err)
			stopped, idle := v.failUntilCommand(msg)
			if stopped {
				return
			}
			attempt, crashes, demand = 0, nil, idle
			continue
		}
		if woken && !crash.ready {
			// Started for a request, and not ready: idle again, without a
			// backoff; the next request tries again.
			demand = v.idleAfter(crash.err)
			continue
		}
		// Counted here, where a restart is decided: a crash that gives up
		// restarts nothing.
		delay := v.timing.backoff(attempt)
		attempt++
		v.mu.Lock()
		v.restarts++
		v.state, v.pid, v.lastError, v.retryAt = ctl.Backoff, 0, crash.err.Error(), now.Add(delay)
		v.mu.Unlock()
		v.event(ctl.Backoff, "restarting in "+delay.Round(time.Millisecond).String(), crash.err)
		if stop := v.waitOrCommand(delay); stop {
			return
		}
	}
}

// recent returns the times after since.
func recent(times []time.Time, since time.Time) []time.Time {
	out := times[:0]
	for _, t := range times {
		if t.After(since) {
			out = append(out, t)
		}
	}
	return out
}

// waitOrCommand waits out a backoff delay; a command cuts it short. It
// reports whether the supervisor was stopped.
func (v *supervisor) waitOrCommand(d time.Duration) (stopped bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return false
	case cmd := <-v.cmds:
		if cmd.stop {
			v.setState(ctl.Stopped, "")
			return true
		}
		// The restart that the backoff counted, only sooner.
		v.restartFor(&cmd, false)
		return false
	}
}

// failUntilCommand marks the server failed and waits for a restart (a
// reload) or a stop. It reports whether the supervisor was stopped; a lazy
// server that a reload retries is idle then (idle is what it sleeps on).
func (v *supervisor) failUntilCommand(reason string) (stopped bool, idle <-chan struct{}) {
	v.setState(ctl.Failed, reason)
	v.hub.Fail(fmt.Errorf("server %q failed: %s", v.name, reason))
	if v.stopping.Err() != nil {
		<-v.cmds // the stop that cancelled it
		v.setState(ctl.Stopped, "")
		return true, nil
	}
	cmd := <-v.cmds
	if cmd.stop {
		v.setState(ctl.Stopped, "")
		return true, nil
	}
	return false, v.retryFailed(&cmd)
}

// restartFor takes a restart command: the server is starting (with the
// command's configuration) before the command is acknowledged, so that
// whoever asked sees the new start in status, never the process that ended
// or the state it had. counted adds it to the restarts that status shows.
func (v *supervisor) restartFor(cmd *supervisorCmd, counted bool) {
	v.mu.Lock()
	v.cfg = cmd.cfg
	if counted {
		v.restarts++
	}
	v.state, v.pid, v.retryAt = ctl.Starting, 0, time.Time{}
	v.mu.Unlock()
	close(cmd.ack)
}

func (v *supervisor) adopt(cfg *serverConfig) {
	v.mu.Lock()
	v.cfg = cfg
	v.mu.Unlock()
	v.hub.SetFilter(toolFilter(cfg.server))
	v.hub.SetTimeouts(cfg.server.Startup(), cfg.server.ToolCall())
	v.hub.SetInputTimeout(cfg.server.Input())
	v.poke() // its idle_timeout may have changed
}

// crashInfo says how a run ended when no command ended it.
type crashInfo struct {
	err    error
	stable bool // it had run long enough to reset the backoff
	ready  bool // it had been ready
}

// runOnce starts the server, makes it ready and watches it until it
// crashes or a command comes.
func (v *supervisor) runOnce() (*supervisorCmd, crashInfo) {
	v.mu.Lock()
	cfg := v.cfg
	v.mu.Unlock()
	if cfg.err != nil {
		return nil, crashInfo{err: &proc.PermanentError{Err: cfg.err}}
	}
	v.hub.SetTimeouts(cfg.server.Startup(), cfg.server.ToolCall())
	v.hub.SetInputTimeout(cfg.server.Input())
	if cfg.remote != nil {
		return v.runRemote(cfg)
	}
	v.setState(ctl.Starting, "")
	if err := v.build(v.stopping, cfg); err != nil {
		return v.commandOr(crashInfo{err: &proc.PermanentError{Err: err}})
	}

	spec := *cfg.spec
	log, err := v.host.logs.file(v.name)
	if err != nil {
		return nil, crashInfo{err: err}
	}
	tail := proc.NewTail(2 << 10)
	stderr := log.HeldStream() // until the line that says it started
	// The tail first: what is in the log is in the tail.
	spec.Stderr = io.MultiWriter(tail, stderr)
	spec.StdinGrace, spec.TermGrace = v.timing.StdinGrace, v.timing.TermGrace
	// A container of its own, recorded before the start returns; a
	// process whose container cannot be recorded does not start.
	spec.Name, spec.Limits = v.name, cfg.limits
	child, err := v.host.contain.start(v.stopping, &spec)
	if err != nil {
		log.Mark("failed to start: %v", err)
		return v.commandOr(crashInfo{err: err})
	}
	if r := cfg.sandbox; r != nil && len(r.NotEnforced) > 0 {
		log.Mark("sandbox (%s): not enforced: %s", r.Platform, strings.Join(r.NotEnforced, "; "))
	}
	defer v.host.contain.contained(v.name, child)
	v.mu.Lock()
	v.pid, v.startedAt = child.Pid, child.Started
	restarts := v.restarts
	v.mu.Unlock()
	if restarts > 0 {
		stderr.Begin("started pid %d (restart %d)", child.Pid, restarts)
	} else {
		stderr.Begin("started pid %d", child.Pid)
	}
	// How the process ended, for its log: stopped by a command (a restart,
	// a reload, the session's stop), or a crash, or a failed handshake.
	stopped, why := false, error(nil)
	defer func() {
		// Every path out has waited for the process.
		switch {
		case stopped:
			log.Mark("stopped pid %d: %v", child.Pid, exitError(child.ExitErr()))
		case why != nil:
			log.Mark("pid %d: %v", child.Pid, why)
		default:
			log.Mark("pid %d %v", child.Pid, exitError(child.ExitErr()))
		}
	}()

	up := v.hub.NewUpstream(child.Stdout(), child.Stdin())
	go up.Run() // ends when the process closes its stdout

	r, cmd := v.handshake(cfg, up, v.openOptions(cfg))
	if cmd != nil {
		stopped = true
		return v.end(cmd, child, up), crashInfo{}
	}
	v.handshook(cfg, up, &r)
	init, tools := r.init, r.tools
	if err := r.err; err != nil {
		err = fmt.Errorf("handshake: %w", err)
		if !r.cut {
			// Neither the startup timeout nor a stop: most likely the
			// server exited, which says more than what became of the
			// request it left unanswered.
			if exit := exitWithin(child, exitWait); exit != nil {
				err = fmt.Errorf("%v before it was ready", exit)
			}
		}
		why = err
		child.Kill()
		<-up.Done()
		return v.commandOr(crashInfo{err: withStderr(err, child, tail)})
	}
	v.hub.Attach(up, init, tools)
	keep := v.keepCatalog(cfg, up, init, tools)
	names := v.hub.Tools()
	// What it wrote until now (a banner, say) is a healthy server's: only
	// what it writes from here on can say why it ends.
	tail.Reset()
	v.mu.Lock()
	v.state, v.lastError = ctl.Ready, ""
	v.mu.Unlock()
	v.event(ctl.Ready, fmt.Sprintf("pid %d, %d tools", child.Pid, len(names)), nil)

	cmd, err = v.watch(child, up, keep)
	// Detached before its stdin closes (end, Kill): a request that took
	// this process from the hub just now is then refused, and goes to the
	// next process, instead of failing on a closed pipe.
	v.hub.Detach(up)
	if cmd != nil {
		stopped = true
		return v.end(cmd, child, up), crashInfo{}
	}
	why = err
	child.Kill() // its container: what the crashed server left behind
	<-up.Done()
	return nil, crashInfo{err: withStderr(err, child, tail), stable: time.Since(child.Started) >= v.timing.StableAfter, ready: true}
}

// end stops the process for a command: gracefully (stdin, SIGTERM, SIGKILL),
// so that the server can answer what it already read.
func (v *supervisor) end(cmd *supervisorCmd, child *proc.Process, up *hub.Upstream) *supervisorCmd {
	hurry := cmd.hurry
	if hurry == nil {
		hurry = context.Background()
	}
	_ = child.Stop(hurry)
	<-up.Done()
	return cmd
}

// commandOr returns the command that interrupted a start (a stop cancels
// v.stopping before it sends), else the crash.
func (v *supervisor) commandOr(c crashInfo) (*supervisorCmd, crashInfo) {
	if v.stopping.Err() != nil {
		cmd := <-v.cmds
		return &cmd, crashInfo{}
	}
	select {
	case cmd := <-v.cmds:
		return &cmd, crashInfo{}
	default:
		return nil, c
	}
}

// A catalogKeep keeps a ready process's catalog in the cache once its hub
// has listed what the server offers besides tools (see keepCatalog).
type catalogKeep struct {
	listed <-chan struct{} // nil once kept
	keep   func()
}

// keepCatalog keeps the catalog of up, just attached to the hub, in the
// cache: at once when the hub has nothing more to list (nil is returned),
// else once it has (watch waits on the catalogKeep returned), so that the
// prompts, resources and templates that the gateway lists are kept too.
func (v *supervisor) keepCatalog(cfg *serverConfig, up *hub.Upstream, init *mcp.InitializeResult, tools []*mcp.Tool) *catalogKeep {
	k := &catalogKeep{listed: v.hub.Listed(up), keep: func() {
		v.host.catalogs.keep(v.name, cfg.catKey, &catalog{init, tools, v.hub.Catalog().Lists})
	}}
	select {
	case <-k.listed:
		k.keep()
		return &catalogKeep{}
	default:
		return k
	}
}

// A handshake is what a server's initialize and first tools/list gave.
type handshake struct {
	init  *mcp.InitializeResult
	tools []*mcp.Tool
	err   error
	cut   bool // the startup timeout, or the session's stop, ended it
}

// handshake runs the server's handshake aside, so that a stop or a
// restart need not wait for a slow server's startup timeout: it returns
// what the handshake gave, or the command that came first (the handshake
// then cut short and over). opts say in which era (see era.go).
func (v *supervisor) handshake(cfg *serverConfig, up *hub.Upstream, opts mcp.OpenOptions) (handshake, *supervisorCmd) {
	ctx, cancel := context.WithTimeoutCause(v.stopping, cfg.server.Startup(),
		fmt.Errorf("not ready within %s (startup_timeout)", cfg.server.Startup()))
	defer cancel()
	hs := make(chan handshake, 1)
	go func() {
		init, tools, err := up.Open(ctx, opts)
		hs <- handshake{init, tools, pinHint(cfg.server.Protocol, err), ctx.Err() != nil}
	}()
	select {
	case r := <-hs:
		return r, nil
	case cmd := <-v.cmds:
		cancel()
		<-hs
		return handshake{}, &cmd
	}
}

// watch waits for the ready server to exit (for a remote one, child is
// nil: for its session to end), to stop answering pings, for a command, or
// for the server to have been idle for its idle_timeout.
func (v *supervisor) watch(child *proc.Process, up *hub.Upstream, keep *catalogKeep) (*supervisorCmd, error) {
	var exited <-chan struct{} // stays nil for a remote server: never fires
	if child != nil {
		exited = child.Exited()
	}
	ping := time.NewTicker(v.timing.PingInterval)
	defer ping.Stop()
	idle := v.watchIdle()
	defer idle.stop()
	pong := make(chan error, 1)
	pinging, misses := false, 0
	for {
		select {
		case <-keep.listed:
			keep.listed = nil
			keep.keep()
		case <-exited:
			return nil, exitError(child.ExitErr())
		case <-up.Done():
			// A process's output closed: it is exiting, most likely.
			if child != nil {
				if exit := exitWithin(child, exitWait); exit != nil {
					return nil, exit
				}
			}
			return nil, up.Err()
		case cmd := <-v.cmds:
			return &cmd, nil
		case since := <-idle.c:
			if cmd := v.idleStop(up, since); cmd != nil {
				return cmd, nil
			}
		case <-ping.C:
			if pinging {
				continue
			}
			pinging = true
			go func() {
				// Ends within PingTimeout; pong has room for its answer.
				ctx, cancel := context.WithTimeout(context.Background(), v.timing.PingTimeout)
				defer cancel()
				pong <- up.Ping(ctx)
			}()
		case err := <-pong:
			pinging = false
			if err == nil {
				misses = 0
				continue
			}
			misses++
			if misses >= v.timing.PingMisses {
				return nil, fmt.Errorf("no answer to %d pings in a row: %v", misses, err)
			}
		}
	}
}

// exitWait is how long a server whose output closed has to exit before it
// is taken for one that closed its output and lives on.
const exitWait = time.Second

// exitWithin says how the process exited if it does within d, else nil.
func exitWithin(child *proc.Process, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-child.Exited():
		return exitError(child.ExitErr())
	case <-t.C:
		return nil
	}
}

// exitError says how a process ended.
func exitError(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return &signalExit{ws.Signal()}
		}
		return fmt.Errorf("exited with status %d", ee.ExitCode())
	}
	if err == nil {
		return errors.New("exited with status 0")
	}
	return err
}

// A signalExit is a process that a signal ended.
type signalExit struct{ sig syscall.Signal }

func (e *signalExit) Error() string { return "killed by " + signalName(e.sig) }

// fromOutside reports whether the signal is one that others send to end a
// process (kill -9, a shutdown, Ctrl-C), rather than one a process gets for
// its own fault (SIGSEGV, SIGABRT): the process had no say, so what it
// wrote last says nothing of why it ended.
func (e *signalExit) fromOutside() bool {
	switch e.sig {
	case syscall.SIGKILL, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP:
		return true
	}
	return false
}

// withStderr adds the last line the server wrote to stderr, which usually
// says why it failed; not for a kill from outside, for which that line is
// whatever the server last said while healthy (its banner, say).
func withStderr(err error, child *proc.Process, tail *proc.Tail) error {
	<-child.Exited()
	if se := (*signalExit)(nil); errors.As(err, &se) && se.fromOutside() {
		return err
	}
	last := lastLine(tail.Bytes())
	if last == "" {
		return err
	}
	return fmt.Errorf("%w; stderr: %s", err, last)
}

// lastLine returns the last non-empty line of b.
func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n \t\r"), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// event logs a server's state change.
func (v *supervisor) event(state ctl.State, detail string, err error) {
	attrs := []any{"server", v.name, "state", string(state)}
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
	v.host.log.Log(context.Background(), level, "server "+string(state), attrs...)
	v.host.changed()
}

func (v *supervisor) setState(state ctl.State, lastError string) {
	v.mu.Lock()
	v.state = state
	if state != ctl.Ready && state != ctl.Starting {
		v.pid = 0
	}
	if lastError != "" {
		v.lastError = lastError
	}
	v.mu.Unlock()
	var err error
	if lastError != "" {
		err = errors.New(lastError)
	}
	v.event(state, "", err)
}

// status returns the supervisor's part of mcpgen status.
func (v *supervisor) status() ctl.ServerStatus {
	v.mu.Lock()
	defer v.mu.Unlock()
	st := ctl.ServerStatus{
		Name:      v.name,
		Kind:      v.cfg.server.Kind.String(),
		Era:       v.eraStatusLocked().String(),
		State:     v.state,
		Pid:       v.pid,
		Restarts:  v.restarts,
		LastError: v.lastError,
		Tools:     v.hub.Tools(),
		Log:       v.host.logs.path(v.name),
	}
	if v.remote != nil {
		st.Notice = v.remote.Notice()
	}
	if r := v.cfg.sandbox; r != nil {
		st.Sandbox = &ctl.SandboxStatus{Platform: r.Platform, Enforced: r.Enforced, NotEnforced: r.NotEnforced, Caveats: r.Caveats}
	}
	if shed := v.hub.Shed(); shed != (hub.Shed{}) {
		st.Shed = &ctl.ShedStatus{Dropped: shed.Dropped, Coalesced: shed.Coalesced}
	}
	st.Clients.Names = v.hub.Clients()
	st.Clients.Count = len(st.Clients.Names)
	st.Clients.Gateway = v.hub.Members()
	st.Clients.Eras = clientEras(v.hub.Eras())
	st.Clients.Requests.Modern, st.Clients.Requests.Legacy = v.hub.Requests()
	if st.Clients.Names == nil {
		st.Clients.Names = []string{} // [] in JSON, as tools are
	}
	if !v.startedAt.IsZero() && (v.pid != 0 || v.cfg.remote != nil && v.state == ctl.Ready) {
		t := v.startedAt.UTC()
		st.StartedAt = &t
	}
	if v.state == ctl.Backoff {
		t := v.retryAt.UTC()
		st.RetryAt = &t
	}
	st.Start = "eager"
	if v.cfg.server.Lazy {
		st.Start = "lazy"
	}
	if d := v.cfg.server.IdleTimeout; d > 0 {
		st.IdleTimeout = d.String()
	}
	st.IdleStopAt = v.idleStopAtLocked()
	return st
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
