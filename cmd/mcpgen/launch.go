package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/mcpgen/mcpgen/launcher"
	"github.com/mcpgen/mcpgen/manifest"
)

type launchOptions struct {
	workspace string
	dir, user string
	logFormat string
	timing    launcher.Timing
	debounce  time.Duration
}

func (a *app) launchCommand() *cobra.Command {
	var o launchOptions
	cmd := &cobra.Command{
		Use:   "launch --workspace ID [-- CMD [ARGS...]]",
		Short: "Run the workspace's servers: supervised, reloaded, shared by its agents",
		Long: `Launch runs one session for the workspace: it starts every stdio server of
the manifest once, each contained with all it starts, restarts the ones that
crash (with backoff), reloads when the manifest changes (or on SIGHUP, or
mcpgen reload), rebuilds servers whose sources change, and shares each
server among every agent of the workspace (mcpgen connect, emit --launcher).

It runs in the foreground until SIGINT or SIGTERM, then stops every server
and exits 0; a second signal skips the grace periods. On a terminal it
shows a live table of the servers; elsewhere it logs one line per event
(--log-format json for platforms).

With -- CMD, it runs CMD (an agent: codex, claude) once the servers are
up, with the workspace context and MCPGEN_WORKSPACE in its environment;
when CMD exits, the session stops and launch exits with CMD's status.`,
		Example: `  mcpgen launch --workspace ws-42
  mcpgen launch --workspace ws-42 --manifest /srv/mcpgen.toml --log-format json
  mcpgen launch --workspace ws-42 -- codex`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 0 && len(args) > 0 {
				return usageError("unexpected argument %q: put the agent's command after --", args[0])
			}
			return a.launch(o, args)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.workspace, "workspace", "w", "", "the workspace `ID` (required)")
	f.StringVar(&o.dir, "dir", "", "WORKSPACE_DIR (default: the manifest's workspace.dir, else the current directory)")
	f.StringVar(&o.user, "user", "", "USER_ID (default: the manifest's workspace.user, else $USER)")
	f.StringVar(&o.logFormat, "log-format", "", "text or json: one line per event on stderr (default: a live table on a terminal, text elsewhere)")
	_ = cmd.MarkFlagRequired("workspace")
	_ = cmd.RegisterFlagCompletionFunc("log-format", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))
	// Timings, for tests and for platforms with unusual servers.
	f.DurationVar(&o.timing.BackoffBase, "backoff", 0, "first delay before restarting a crashed server (default 1s)")
	f.DurationVar(&o.timing.BackoffMax, "backoff-max", 0, "longest delay before a restart (default 1m)")
	f.IntVar(&o.timing.FailureLimit, "max-crashes", 0, "crashes within --crash-window after which a server is failed (default 5)")
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
	// Load once now, so that a bad manifest, or one too big for the file
	// descriptor limit, fails the command before anything starts; reloads
	// read it again.
	m, err := a.loadManifest(true)
	if err != nil {
		return err
	}
	if err := launcher.CheckCapacity(m); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	mode, err := containmentMode()
	if err != nil {
		return err
	}

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	live := o.logFormat == "" && len(agent) == 0 && isTerminal(a.stderr)
	logger, closeLog, err := a.sessionLogger(o, live || len(agent) > 0)
	if err != nil {
		return err
	}
	defer closeLog()

	opts := launcher.Options{
		Workspace: o.workspace,
		Load:      func() (*manifest.Manifest, error) { return a.loadManifestQuiet() },
		Context:   manifest.ContextOptions{Dir: o.dir, User: o.user},
		Self:      self,
		Log:       logger,
		Debounce:  o.debounce,
		Timing:    o.timing,

		Containment: mode,
	}
	var table *liveTable
	if live {
		table = &liveTable{w: a.stderr, kick: make(chan struct{}, 1), done: make(chan struct{})}
		opts.Changed = table.changed
	}
	session := launcher.NewSession(opts)
	if live {
		table.start(session)
		defer table.stop()
	}

	var agentDone chan int
	var agentProc *os.Process
	if len(agent) > 0 {
		agentDone = make(chan int, 1)
	}

	runErr := make(chan error, 1)
	go func() { runErr <- session.Run(ctx) }()

	if len(agent) > 0 {
		if err := waitStarted(o.workspace, runErr); err != nil {
			return err
		}
		agentProc, err = a.startAgent(session, o, agent, agentDone)
		if err != nil {
			stop()
			<-runErr
			return err
		}
	}

	signals := 0
	agentStatus := -1
	for {
		select {
		case err := <-runErr:
			if err != nil {
				return err
			}
			if agentStatus >= 0 {
				return exitCode(agentStatus)
			}
			return nil
		case status := <-agentDone:
			agentStatus = status
			stop()
		case sig := <-sigs:
			switch {
			case sig == syscall.SIGHUP:
				session.Reload() // retries failed servers too
			case agentProc != nil && agentStatus < 0:
				// The agent runs the terminal: Ctrl-C is the agent's to
				// handle (it got it from the terminal too). SIGTERM sent to
				// the launcher is passed on; the session stops when the
				// agent exits.
				if sig == syscall.SIGTERM {
					_ = agentProc.Signal(syscall.SIGTERM)
				}
			default:
				signals++
				if signals == 1 {
					logger.Info("stopping: a second signal skips the grace periods", "signal", sig.String())
					stop()
				} else {
					session.Hurry()
				}
			}
		}
	}
}

// exitCode makes launch exit with the agent's status.
func exitCode(status int) error {
	if status == 0 {
		return nil
	}
	return &exitError{code: status, err: errors.New("")}
}

// waitStarted waits until the session answers on its control socket (its
// servers are starting), or fails.
func waitStarted(workspace string, runErr chan error) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-runErr:
			if err == nil {
				err = errors.New("the session ended before the agent started")
			}
			runErr <- err
			return err
		default:
		}
		if _, err := launcher.QueryStatus(workspace); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("the session did not start within 30s")
}

// startAgent runs the agent in the foreground with the workspace context
// in its environment, contained by the session (what it leaves behind ends
// with the session); agentDone receives its exit status.
func (a *app) startAgent(session *launcher.Session, o launchOptions, argv []string, done chan int) (*os.Process, error) {
	st, err := launcher.QueryStatus(o.workspace)
	if err != nil {
		return nil, err
	}
	user := o.user
	if user == "" {
		user = os.Getenv("USER")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(),
		"MCPGEN_WORKSPACE="+o.workspace,
		manifest.VarWorkspaceID+"="+o.workspace,
		manifest.VarWorkspaceDir+"="+st.Dir,
	)
	if user != "" {
		cmd.Env = append(cmd.Env, manifest.VarUserID+"="+user)
	}
	if err := session.StartAttached("agent", cmd); err != nil {
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
	return a.loadManifest(true)
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

func (t *liveTable) loop() {
	tick := time.NewTicker(time.Second) // uptimes move
	defer tick.Stop()
	for {
		select {
		case <-t.done:
			return
		case <-t.kick:
		case <-tick.C:
		}
		// Clear the screen, then draw from the top left.
		fmt.Fprint(t.w, "\x1b[H\x1b[2J")
		t.session.Status().WriteTable(t.w, time.Now())
		fmt.Fprintln(t.w, "\nCtrl-C stops the session; SIGHUP (or mcpgen reload) reloads the manifest.")
		time.Sleep(100 * time.Millisecond)
	}
}

func (t *liveTable) stop() {
	t.once.Do(func() { close(t.done) })
	t.wg.Wait()
}
