package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/internal/termtext"
	"github.com/mcpgen/mcpgen/launcher"
	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/manifest"
)

type launchOptions struct {
	workspace string
	dir, user string
	logFormat string
	timing    launcher.Timing
	debounce  time.Duration
	idleExit  time.Duration
	// agentGrace bounds how long an agent that was told to stop (SIGTERM
	// or SIGINT passed on, mcpgen stop) may take before it is killed; 0
	// waits for it.
	agentGrace time.Duration
	http       launcher.HTTPOptions
}

func (a *app) launchCommand() *cobra.Command {
	var o launchOptions
	cmd := &cobra.Command{
		Use:   "launch --workspace ID [-- CMD [ARGS...]]",
		Short: "Run the workspace's servers: supervised, reloaded, shared by its agents",
		Long: `Launch runs one session for the workspace: it starts every stdio server of
the manifest once, in process groups of their own, restarts the ones that
crash (with backoff), reloads when the manifest changes (or on SIGHUP, or
mcpgen reload), rebuilds servers whose sources change, and shares each
server among every agent of the workspace (mcpgen connect, emit --launcher).

It runs in the foreground until SIGINT or SIGTERM, then stops every server
and exits 0; a second signal skips the grace periods. SIGTERM drains first
(as Kubernetes expects): no new client or request, /readyz false, the
requests under way finish, all within [session] drain_timeout (30s); a
second signal then stops at once. With [session]
idle_exit in the manifest, or --idle-exit, it also exits (0) once it has
had no client and no running server for that long; a launcher that
mcpgen connect starts does so after 10 minutes, unless the manifest says
otherwise. On a terminal it
shows a live table of the servers; elsewhere it logs one line per event
(--log-format json for platforms).

With -- CMD, it runs CMD (an agent: codex, claude) once the servers are
up, with the workspace context and MCPGEN_WORKSPACE in its environment;
when CMD exits, the session stops and launch exits with CMD's status.

With --listen ADDR (or [session] listen in the manifest), it serves the
workspace over HTTP too: the gateway at /mcp, each server at
/servers/NAME/mcp. An address beyond loopback needs [session.auth] (a
bearer token, or JWTs of an OAuth issuer): without it launch refuses to
start, unless --no-auth. /healthz and /readyz answer there without a token,
and /metrics (Prometheus) behind it unless [session] metrics = "open".`,
		Example: `  mcpgen launch --workspace ws-42
  mcpgen launch --workspace ws-42 --manifest /srv/mcpgen.toml --log-format json
  mcpgen launch --workspace ws-42 -- codex
  mcpgen launch --workspace ws-42 --listen 127.0.0.1:8080`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 0 && len(args) > 0 {
				return usageError("unexpected argument %q: put the agent's command after --", args[0])
			}
			return a.launch(o, args)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.workspace, "workspace", "w", "", "the workspace `ID` (required)")
	f.StringVar(&o.dir, "dir", "", "WORKSPACE_DIR (default: the manifest's workspace.dir, else the manifest's directory)")
	f.StringVar(&o.user, "user", "", "USER_ID (default: the manifest's workspace.user, else $USER)")
	f.StringVar(&o.logFormat, "log-format", "", "text or json: one line per event on stderr (default: a live table on a terminal, text elsewhere)")
	f.DurationVar(&o.idleExit, "idle-exit", 0, "exit after this long with no client and no running server, whatever the manifest's [session] idle_exit says (default: as it says; never when it says nothing)")
	f.StringVar(&o.http.Listen, "listen", "", "serve the workspace over HTTP at `HOST:PORT` too (port 0 picks one), whatever the manifest's [session] listen says")
	f.DurationVar(&o.agentGrace, "agent-grace", 0, "with -- CMD: once CMD has been told to stop (SIGTERM or SIGINT passed on, mcpgen stop), kill it if it still runs after this long, so that the servers stop within a container's grace period (default: wait for it)")
	f.BoolVar(&o.http.NoAuth, "no-auth", false, "with --listen beyond loopback: serve without [session.auth] (behind a proxy that authenticates)")
	_ = cmd.MarkFlagRequired("workspace")
	_ = cmd.RegisterFlagCompletionFunc("log-format", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))
	// Timings, for tests and for platforms with unusual servers.
	f.DurationVar(&o.timing.BackoffBase, "backoff", 0, "first delay before restarting a crashed server (default 1s)")
	f.DurationVar(&o.timing.BackoffMax, "backoff-max", 0, "longest delay before a restart (default 1m)")
	f.IntVar(&o.timing.FailureLimit, "max-crashes", 0, "crashes within --crash-window after which the launcher gives up on a server (default 5)")
	f.DurationVar(&o.timing.FailureWindow, "crash-window", 0, "see --max-crashes (default 5m)")
	f.DurationVar(&o.timing.StableAfter, "stable-after", 0, "a run this long resets the backoff (default 30s)")
	f.DurationVar(&o.timing.PingInterval, "ping-interval", 0, "how often ready servers are pinged (default 30s)")
	f.DurationVar(&o.timing.PingTimeout, "ping-timeout", 0, "how long a ping may take (default 10s)")
	f.DurationVar(&o.timing.StdinGrace, "stdin-grace", 0, "how long a stopping server has to exit once its stdin is closed (default 2s)")
	f.DurationVar(&o.timing.TermGrace, "term-grace", 0, "how long it then has after SIGTERM, before SIGKILL (default 3s)")
	f.DurationVar(&o.debounce, "debounce", 0, "quiet time after a file change before reloading (default 200ms)")
	for _, name := range []string{"backoff", "backoff-max", "max-crashes", "crash-window", "stable-after", "ping-interval", "ping-timeout", "stdin-grace", "term-grace", "debounce"} {
		_ = f.MarkHidden(name)
	}
	return cmd
}

func (a *app) launch(o launchOptions, agent []string) error {
	if err := manifest.CheckWorkspaceID(o.workspace); err != nil {
		return usageError("%v", err)
	}
	switch o.logFormat {
	case "", "text", "json":
	default:
		return usageError("unknown --log-format %q: use text or json", o.logFormat)
	}
	if o.http.Listen != "" {
		if err := manifest.CheckListen(o.http.Listen); err != nil {
			return usageError("--listen: %v", err)
		}
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, launchSignals...)
	defer signal.Stop(sigs)

	// An agent for a workspace that has a launcher runs with that one.
	if len(agent) > 0 {
		if pid, running, err := ctl.IsRunning(o.workspace); err == nil && running {
			return a.attach(ctx, o, agent, pid, sigs)
		}
	}
	// Load once now, so that a bad manifest, or one too big for the file
	// descriptor limit, fails the command before anything starts; reloads
	// read it again.
	m, err := a.loadManifest()
	if err != nil {
		return err
	}
	if err := launcher.CheckCapacity(m); err != nil {
		return err
	}
	// Before anything starts: an address beyond loopback without
	// [session.auth] is refused here, with how to add a token.
	plan, err := launcher.PlanHTTP(m, o.http, nil)
	if err != nil {
		return err
	}
	if plan != nil && plan.Warning() != "" {
		fmt.Fprintf(a.stderr, "mcpgen: %s\n", plan.Warning())
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	mode, err := containmentMode()
	if err != nil {
		return err
	}

	live := o.logFormat == "" && len(agent) == 0 && isTerminal(a.stderr)
	logger, closeLog, err := a.sessionLogger(o, live || len(agent) > 0)
	if err != nil {
		return err
	}
	defer closeLog()

	// mcpgen stop, through the control socket: handled below as SIGTERM
	// is (hurry: as a second signal). The handler never blocks the
	// socket; a hurry that finds the queue full hurries at once.
	stopReqs := make(chan bool, 4)
	var session *launcher.Session
	opts := launcher.Options{
		Workspace: o.workspace,
		Load:      func() (*manifest.Manifest, error) { return a.loadManifestQuiet() },
		Context:   manifest.ContextOptions{Dir: o.dir, User: o.user},
		Self:      self,
		Log:       logger,
		Debounce:  o.debounce,
		Timing:    o.timing,
		IdleExit:  o.idleExit,
		HTTP:      o.http,

		Containment: mode,
		Stop: func(hurry bool) {
			select {
			case stopReqs <- hurry:
			default:
				if hurry {
					session.Hurry()
				}
			}
		},
	}
	if len(agent) > 0 {
		// The session lasts as long as the agent, idle or not.
		opts.IdleExit = -1
	}
	var table *liveTable
	if live {
		table = &liveTable{w: a.stderr, kick: make(chan struct{}, 1), done: make(chan struct{})}
		opts.Changed = table.changed
	}
	session = launcher.NewSession(opts)
	if live {
		table.start(session)
		defer table.stop()
	}

	runErr := make(chan error, 1)
	go func() { runErr <- session.Run(ctx) }()

	// With an agent: it starts once the servers are up (ready, failed or
	// in backoff; not starting), which settled says.
	var settled chan []string
	up := session.Up()
	if len(agent) == 0 {
		up = nil
	}
	var agentDone chan int
	var agentProc *os.Process
	var grace agentGrace
	defer grace.stop()
	agentStatus := -1
	stops := 0 // signals and stop requests: the first stops, the next hurry
	stopNow := func(why string, hurry bool) {
		stops++
		if stops == 1 {
			logger.Info("stopping: a second signal skips the grace periods", "signal", why)
			stop()
		}
		if stops > 1 || hurry {
			session.Hurry()
		}
	}
	for {
		select {
		case err := <-runErr:
			if pid, locked := launcher.AlreadyRunning(err); locked && len(agent) > 0 {
				// Another launch took the workspace first.
				return a.attach(ctx, o, agent, pid, sigs)
			}
			if err != nil {
				return err
			}
			if agentStatus >= 0 {
				return exitCode(agentStatus)
			}
			if len(agent) > 0 {
				return fmt.Errorf("the session of workspace %q stopped before %s started", o.workspace, agent[0])
			}
			return nil
		case <-up:
			up = nil
			settled = make(chan []string, 1)
			go func() { settled <- session.WaitSettled(ctx) }() // bounded; ends with ctx too
		case starting := <-settled:
			settled = nil
			if ctx.Err() != nil {
				continue // stopping: the agent does not start
			}
			a.warnStarting(o.workspace, agent[0], starting)
			agentDone = make(chan int, 1)
			// Contained by the session: what the agent leaves behind
			// ends with it (and a subreaper does not take it for an
			// orphan).
			start := func(cmd *exec.Cmd) error { return session.StartAttached("agent", cmd) }
			agentProc, err = a.startAgent(o.workspace, session.Status(), agent, start, agentDone)
			if err != nil {
				stop()
				<-runErr
				return err
			}
		case status := <-agentDone:
			agentStatus = status
			agentProc = nil
			grace.stop()
			stop()
		case <-grace.expired():
			if agentProc != nil {
				logger.Warn("the agent still runs after --agent-grace: killing it", "agent_grace", o.agentGrace.String())
				_ = agentProc.Kill()
			}
		case hurry := <-stopReqs:
			if agentProc != nil {
				// As SIGTERM: the agent's to handle, and the session stops
				// when it exits; hurried, it is killed.
				if hurry {
					_ = agentProc.Kill()
					session.Hurry()
				} else {
					_ = agentProc.Signal(syscall.SIGTERM)
					grace.start(o.agentGrace)
				}
				continue
			}
			stopNow("mcpgen stop", hurry)
		case sig := <-sigs:
			switch {
			case isReloadSignal(sig):
				session.Reload() // retries failed servers too
			case agentProc != nil:
				// SIGTERM sent to the launcher is passed on; the session
				// stops when the agent exits. So is SIGINT, unless the
				// agent runs on a terminal, whose Ctrl-C it got too: a
				// container runtime sends it to the launcher alone.
				if forwardToAgent(sig) {
					_ = agentProc.Signal(sig)
					grace.start(o.agentGrace)
				}
			case sig == syscall.SIGTERM && stops == 0 && len(agent) == 0 && !session.Draining():
				// As Kubernetes asks: /readyz false, no new clients, the
				// requests under way finish, then the servers stop, all
				// within [session] drain_timeout. A second signal stops
				// at once, a third skips the grace periods.
				logger.Info("draining: a second signal stops at once", "signal", sig.String())
				session.Drain()
			default:
				stopNow(sig.String(), false)
			}
		}
	}
}

// warnStarting says which servers an agent starts without: still starting
// after their startup timeout.
func (a *app) warnStarting(workspace, agent string, starting []string) {
	if len(starting) > 0 {
		fmt.Fprintf(a.stderr, "mcpgen: starting %s while these servers of workspace %q are still starting: %s (see mcpgen status)\n",
			agent, workspace, termtext.Line(strings.Join(starting, ", ")))
	}
}

// attach runs the agent with the workspace's launcher that runs already,
// rather than fail after it ran: once that launcher's servers are up, with
// the context its servers have. The launcher keeps running when the agent
// exits; launch exits with the agent's status.
func (a *app) attach(ctx context.Context, o launchOptions, agent []string, pid int, sigs <-chan os.Signal) error {
	fmt.Fprintf(a.stderr, "mcpgen: workspace %q already has a launcher (pid %d): running %s with its servers, which keep running after it\n", o.workspace, pid, agent[0])
	// Ctrl-C while waiting for the servers gives up the wait.
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	type settledResult struct {
		st       *ctl.Status
		starting []string
		err      error
	}
	settled := make(chan settledResult, 1)
	go func() { // bounded by the launcher; ends with waitCtx too
		st, starting, err := ctl.WaitSettled(waitCtx, o.workspace)
		settled <- settledResult{st, starting, err}
	}()
	var r settledResult
	for waiting := true; waiting; {
		select {
		case r = <-settled:
			waiting = false
		case sig := <-sigs:
			if !isReloadSignal(sig) {
				cancel()
				return fmt.Errorf("interrupted before %s started", agent[0])
			}
		}
	}
	if r.err != nil {
		return r.err
	}
	a.warnStarting(o.workspace, agent[0], r.starting)
	a.warnContext(o, r.st)

	done := make(chan int, 1)
	proc, err := a.startAgent(o.workspace, r.st, agent, (*exec.Cmd).Start, done)
	if err != nil {
		return err
	}
	var grace agentGrace
	defer grace.stop()
	for {
		select {
		case status := <-done:
			return exitCode(status)
		case <-grace.expired():
			fmt.Fprintf(a.stderr, "mcpgen: %s still runs after --agent-grace %s: killing it\n", agent[0], o.agentGrace)
			_ = proc.Kill()
		case sig := <-sigs:
			switch {
			case isReloadSignal(sig):
				if _, err := ctl.Reload(ctx, o.workspace); err != nil {
					fmt.Fprintf(a.stderr, "mcpgen: reload: %s\n", termtext.Text(err.Error()))
				}
			case forwardToAgent(sig):
				_ = proc.Signal(sig)
				grace.start(o.agentGrace)
			}
		}
	}
}

// agentGrace is the timer of --agent-grace: started by the first stop
// passed on to the agent, it says when the agent is to be killed. Its
// zero value never expires.
type agentGrace struct{ t *time.Timer }

// start starts the timer, unless d is 0 or it runs already.
func (g *agentGrace) start(d time.Duration) {
	if d > 0 && g.t == nil {
		g.t = time.NewTimer(d)
	}
}

// expired returns the timer's channel: nil (never ready) when not started.
func (g *agentGrace) expired() <-chan time.Time {
	if g.t == nil {
		return nil
	}
	return g.t.C
}

func (g *agentGrace) stop() {
	if g.t != nil {
		g.t.Stop()
	}
}

// forwardToAgent reports whether a signal that stops the launcher is
// passed on to its agent: SIGTERM always, SIGINT when the agent has no
// terminal (on one, Ctrl-C reached the agent too, and it is the agent's to
// handle).
func forwardToAgent(sig os.Signal) bool {
	return sig == syscall.SIGTERM || (sig == os.Interrupt && !isTerminal(os.Stdin))
}

// warnContext says which of launch's settings the running launcher does
// not share: its servers keep the context they have, and the agent gets
// the same.
func (a *app) warnContext(o launchOptions, st *ctl.Status) {
	if o.user != "" && o.user != st.User {
		fmt.Fprintf(a.stderr, "mcpgen: --user %q not used: the launcher gives its servers USER_ID %q, and so does the agent get\n", o.user, st.User)
	}
	if o.dir != "" && absPath(o.dir) != st.Dir {
		fmt.Fprintf(a.stderr, "mcpgen: --dir %s not used: the launcher's WORKSPACE_DIR is %s\n", o.dir, termtext.Line(st.Dir))
	}
	if o.http.Listen != "" {
		fmt.Fprintf(a.stderr, "mcpgen: --listen %s not used: the launcher runs already, and serves what its own start said\n", o.http.Listen)
	}
	if a.manifestPath != "" && absPath(a.manifestPath) != st.Manifest {
		fmt.Fprintf(a.stderr, "mcpgen: --manifest %s not used: the launcher runs %s\n", a.manifestPath, termtext.Line(st.Manifest))
	}
}

// exitCode makes launch exit with the agent's status.
func exitCode(status int) error {
	if status == 0 {
		return nil
	}
	return &exitError{code: status, err: errors.New("")}
}

// startAgent runs the agent in the foreground with the session's context
// in its environment, as its servers have it (st is the session's status),
// started by start (the session's container, when this process runs the
// session); agentDone receives its exit status.
func (a *app) startAgent(workspace string, st *ctl.Status, argv []string, start func(*exec.Cmd) error, done chan int) (*os.Process, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(),
		envWorkspace+"="+workspace,
		manifest.VarWorkspaceID+"="+workspace,
		manifest.VarWorkspaceDir+"="+st.Dir,
		manifest.VarUserID+"="+st.User,
	)
	// On Windows, an agent installed by npm is a batch file (codex.cmd).
	err := proc.Prepare(cmd)
	if err == nil {
		err = start(cmd)
	}
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	go func() {
		// The agent's one Wait; it ends when the agent exits.
		err := cmd.Wait()
		status := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			status = ee.ExitCode()
			if status < 0 {
				status = 128 + int(ee.Sys().(syscall.WaitStatus).Signal())
			}
		} else if err != nil {
			status = 1
		}
		done <- status
	}()
	return cmd.Process, nil
}

// sessionLogger returns where the session's events go: stderr, as text or
// JSON lines; or, when the terminal belongs to the live table or to an
// agent, the launcher's log file in the state dir.
func (a *app) sessionLogger(o launchOptions, toFile bool) (*slog.Logger, func(), error) {
	var w io.Writer = a.stderr
	closeFn := func() {}
	if toFile {
		f, err := launcher.SessionLog(o.workspace)
		if err != nil {
			return nil, nil, err
		}
		w, closeFn = f, func() { f.Close() }
	}
	var h slog.Handler
	if o.logFormat == "json" {
		h = slog.NewJSONHandler(w, nil)
	} else {
		h = slog.NewTextHandler(w, nil)
	}
	return slog.New(h), closeFn, nil
}

// loadManifestQuiet is loadManifest for reloads: the demo notice was said
// once at the start.
func (a *app) loadManifestQuiet() (*manifest.Manifest, error) {
	stderr := a.stderr
	a.stderr = io.Discard
	defer func() { a.stderr = stderr }()
	return a.loadManifest()
}

// isTerminal reports whether w is a terminal, which the live table needs.
// A character device is not enough: /dev/null is one.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// liveTable redraws the servers' status on a terminal when something
// changes, at most ten times a second. Its goroutine ends with stop.
type liveTable struct {
	w       io.Writer
	session *launcher.Session
	kick    chan struct{}
	done    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
}

func (t *liveTable) start(s *launcher.Session) {
	t.session = s
	t.wg.Go(t.loop)
}

func (t *liveTable) changed() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// liveHint ends the table.
const liveHint = "Ctrl-C (or mcpgen stop) stops the session; " + reloadHint + " reloads the manifest."

func (t *liveTable) loop() {
	tick := time.NewTicker(time.Second) // uptimes move
	defer tick.Stop()
	var text bytes.Buffer
	var frame []byte
	for {
		select {
		case <-t.done:
			return
		case <-t.kick:
		case <-tick.C:
		}
		text.Reset()
		t.session.Status().WriteTable(&text, time.Now(), false)
		text.WriteString("\n" + liveHint + "\n")
		cols, rows := terminalSize(t.w)
		frame = drawFrame(frame[:0], strings.Split(strings.TrimSuffix(text.String(), "\n"), "\n"), cols, rows)
		_, _ = t.w.Write(frame)
		time.Sleep(100 * time.Millisecond)
	}
}

func (t *liveTable) stop() {
	t.once.Do(func() { close(t.done) })
	t.wg.Wait()
}

// terminalSize returns the size of the terminal w writes to, or zeros when
// it cannot tell.
func terminalSize(w io.Writer) (cols, rows int) {
	f, ok := w.(*os.File)
	if !ok {
		return 0, 0
	}
	cols, rows, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0, 0
	}
	return cols, rows
}

// drawFrame appends to dst what draws lines over the last frame: from the
// top left, each line clearing what is left of the one it replaces, then
// the rest of the screen cleared. Nothing is cleared before it is drawn
// again, so the table does not flicker, and it never scrolls: it is kept
// within rows lines (what does not fit is counted in its last line) and
// each line within cols columns. Zero cols or rows means no bound.
func drawFrame(dst []byte, lines []string, cols, rows int) []byte {
	if rows > 0 && len(lines) > rows {
		more := len(lines) - (rows - 1)
		lines = append(lines[:rows-1:rows-1], fmt.Sprintf("... %d more lines: see mcpgen status", more))
	}
	dst = append(dst, "\x1b[H"...) // home
	for i, line := range lines {
		if cols > 0 {
			line = cutColumns(line, cols)
		}
		dst = append(dst, line...)
		dst = append(dst, "\x1b[K"...) // the rest of the line
		if i < len(lines)-1 {
			dst = append(dst, "\r\n"...)
		}
	}
	return append(dst, "\x1b[J"...) // the rest of the screen
}

// cutColumns cuts s to n columns, taking a rune for a column (the table is
// text, without wide characters but in names and paths).
func cutColumns(s string, n int) string {
	if len(s) <= n {
		return s
	}
	col := 0
	for i := range s {
		if col == n {
			return s[:i]
		}
		col++
	}
	return s
}
