package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpgen/mcpgen/internal/statefile"
	"github.com/mcpgen/mcpgen/launcher"
	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/manifest"
)

type connectOptions struct {
	workspace string
	noStart   bool
	dir, user string
	servers   []string // the gateway's servers (no SERVER)
	tools     string   // the gateway's tools: "all", "search"; "": the workspace's
}

func (a *app) connectCommand() *cobra.Command {
	var o connectOptions
	cmd := &cobra.Command{
		Use:   "connect [--workspace ID] [SERVER | --servers A,B]",
		Short: "Connect an agent to a server of the workspace's session, or to its gateway (stdio)",
		Long: `Connect is what an agent runs instead of the server itself: it bridges its
stdin and stdout to the server's process in the workspace's launcher, which
every agent of the workspace shares. It exits when either side closes.

Without SERVER, it connects to the workspace gateway: one MCP server whose
tools are those of every enabled server of the workspace, stdio and remote
alike (--servers limits it to some). A tool name unique in the workspace
is kept; names that several servers use are all SERVER__TOOL; [gateway]
prefix = "always" prefixes every tool. mcpgen emit --gateway writes an
entry that runs it. --tools search lists only search_tools (which finds
the workspace's tools by what they do), call_tool (which calls them) and
the pinned tools, whatever [gateway] tools says; --tools all, every tool.

When no launcher runs for the workspace, connect starts one in the
background (with the manifest given to connect, else the nearest
mcpgen.toml, here or above; --demo for the embedded one) and waits for
the server, unless --no-start. mcpgen emit --launcher
writes entries that run it.`,
		Example: `  mcpgen connect --workspace ws-42 memory
  MCPGEN_WORKSPACE=ws-42 mcpgen connect --manifest /srv/mcpgen.toml files
  mcpgen connect --workspace ws-42                    # the gateway: every server's tools
  mcpgen connect --workspace ws-42 --servers git,files
  mcpgen connect --workspace ws-42 --tools search      # search_tools and call_tool`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			server := ""
			if len(args) == 1 {
				server = args[0]
			}
			if server != "" && len(o.servers) > 0 {
				return usageError("--servers limits the gateway: connect to %s without it, or to the gateway without a server name", server)
			}
			if server != "" && o.tools != "" {
				return usageError("--tools chooses how the gateway lists tools: connect to %s without it, or to the gateway without a server name", server)
			}
			if o.tools != "" && o.tools != manifest.GatewayToolsAll && o.tools != manifest.GatewayToolsSearch {
				return usageError("--tools %q: use %q (every tool) or %q (search_tools, call_tool and the pinned tools)", o.tools, manifest.GatewayToolsAll, manifest.GatewayToolsSearch)
			}
			return a.connect(ctxOf(cmd), o, server)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.workspace, "workspace", "w", os.Getenv(envWorkspace), "the workspace `ID` (default $"+envWorkspace+")")
	_ = cmd.RegisterFlagCompletionFunc("workspace", completeWorkspaces)
	cmd.ValidArgsFunction = a.completeSessionServers(&o.workspace, false)
	f.BoolVar(&o.noStart, "no-start", false, "fail instead of starting a launcher when none runs")
	f.StringVar(&o.dir, "dir", "", "for a launcher it starts: WORKSPACE_DIR")
	f.StringVar(&o.user, "user", "", "for a launcher it starts: USER_ID")
	f.StringSliceVar(&o.servers, "servers", nil, "without SERVER: the gateway's servers (comma-separated; default all)")
	f.StringVar(&o.tools, "tools", "", "without SERVER: `all` tools, or search (search_tools and call_tool); default: [gateway] tools")
	return cmd
}

func (a *app) connect(ctx context.Context, o connectOptions, server string) error {
	if o.workspace == "" {
		return usageError("no workspace: pass --workspace ID or set MCPGEN_WORKSPACE")
	}
	if err := manifest.CheckWorkspaceID(o.workspace); err != nil {
		return usageError("%v", err)
	}
	conn, passed, err := a.dial(ctx, o, server)
	var notRunning *ctl.NotRunningError
	if errors.As(err, &notRunning) && !o.noStart {
		conn, passed, err = a.autostart(ctx, o, server)
	}
	if err != nil {
		return err
	}
	if passed {
		// The hub speaks on our stdin and stdout itself; the connection
		// ends when it is done with them (or the launcher exits).
		defer conn.Close()
		_, _ = io.Copy(io.Discard, conn)
		return nil
	}
	return bridge(conn, a.stdin, a.stdout)
}

// bridge copies the agent's stdin to the hub and the hub's answers to the
// agent's stdout. When the agent closes stdin, the hub is told (half
// close) and its last answers still come back; when the hub closes, the
// bridge ends at once.
func bridge(conn net.Conn, in io.Reader, out io.Writer) error {
	defer conn.Close()
	go func() {
		// Ends at stdin's EOF, or when conn is closed under it.
		_, _ = io.Copy(conn, in)
		if uc, ok := conn.(*net.UnixConn); ok {
			_ = uc.CloseWrite()
		}
	}()
	_, err := io.Copy(out, conn)
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// dial connects to the server's hub (to the gateway when server is ""),
// handing it stdin and stdout when they are pipes or sockets (passed), so
// that messages need not go through this process at all.
func (a *app) dial(ctx context.Context, o connectOptions, server string) (net.Conn, bool, error) {
	in, _ := a.stdin.(*os.File)
	out, _ := a.stdout.(*os.File)
	if in == nil || out == nil || !ctl.PassableStdio(in) || !ctl.PassableStdio(out) {
		in, out = nil, nil
	}
	if server == "" {
		return ctl.ConnectGateway(ctx, o.workspace, o.servers, o.tools, in, out)
	}
	return ctl.Connect(ctx, o.workspace, server, in, out)
}

// autostartWait bounds how long connect waits for a launcher it started.
const autostartWait = 30 * time.Second

// autostartIdleExit is how long a launcher that connect starts waits with
// no client and no running server before it exits, unless the manifest
// says otherwise ([session] idle_exit).
const autostartIdleExit = 10 * time.Minute

// autostartStarts bounds the launchers one connect starts: one that exits
// at once (it lost the workspace to another, say) may be tried again.
const autostartStarts = 3

// autostart starts a launcher for the workspace in the background and
// connects once it answers. A lock in the runtime dir makes racing connects
// start one launcher: the others wait for it. A launcher that holds the
// workspace but does not answer is starting, or exiting (idle): connect
// waits for it to answer, or to release the workspace, and then starts a
// new one.
func (a *app) autostart(ctx context.Context, o connectOptions, server string) (net.Conn, bool, error) {
	m, err := a.loadManifestQuiet()
	if err != nil {
		return nil, false, err
	}
	dir, err := launcher.RuntimeDir(o.workspace)
	if err != nil {
		return nil, false, err
	}
	unlock, err := lockFile(filepath.Join(dir, "start.lock"))
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	deadline := time.Now().Add(autostartWait)
	var started *startedLauncher // the last one this connect started
	starts := 0
	for {
		// Another connect may have started one while we waited for the
		// lock; or the one we started answers now.
		conn, passed, err := a.dial(ctx, o, server)
		if !isNotRunning(err) {
			return conn, passed, err
		}
		if time.Now().After(deadline) {
			return nil, false, fmt.Errorf("workspace %q: no launcher answered within %s (see %s): %w", o.workspace, autostartWait, autostartLog(o.workspace), err)
		}
		_, held := ctl.Holder(dir)
		if !held && (started == nil || started.exited()) {
			if starts == autostartStarts {
				return nil, false, fmt.Errorf("workspace %q: %d launchers started and exited (see %s): %w", o.workspace, starts, autostartLog(o.workspace), err)
			}
			if started, err = a.startLauncher(o, m); err != nil {
				return nil, false, err
			}
			starts++
		}
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func isNotRunning(err error) bool {
	var nr *ctl.NotRunningError
	return errors.As(err, &nr)
}

// autostartLog names where a launcher that connect starts writes, for
// messages.
func autostartLog(workspace string) string {
	state, err := launcher.StateDir(workspace)
	if err != nil {
		return "the launcher's autostart.log"
	}
	return filepath.Join(state, "autostart.log")
}

// A startedLauncher is a launcher that connect started, until it exits.
type startedLauncher struct{ done chan struct{} }

func (l *startedLauncher) exited() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// startLauncher starts `mcpgen launch` detached from the agent (see
// startDetached): no stdin, its output and events in its logs.
func (a *app) startLauncher(o connectOptions, m *manifest.Manifest) (*startedLauncher, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	manifestFlags := m.Flags()
	if m.Searched {
		// As connect found it, from the directory it runs in, which the
		// launcher inherits: found again so, the manifest's directory is
		// still the default WORKSPACE_DIR (manifest.DefaultDir).
		manifestFlags = []string{"--manifest", m.File}
	}
	args := append([]string{"launch", "--workspace", o.workspace, "--log-format", "text"}, manifestFlags...)
	if m.Session.IdleExit == 0 {
		args = append(args, "--idle-exit", autostartIdleExit.String())
	}
	if o.dir != "" {
		args = append(args, "--dir", o.dir)
	}
	if o.user != "" {
		args = append(args, "--user", o.user)
	}
	state, err := launcher.StateDir(o.workspace)
	if err != nil {
		return nil, err
	}
	logf, err := statefile.OpenFile(filepath.Join(state, "autostart.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd, err := startDetached(func() *exec.Cmd {
		c := exec.Command(self, args...)
		c.Stdout, c.Stderr = logf, logf
		return c
	})
	if err != nil {
		return nil, fmt.Errorf("starting a launcher: %w", err)
	}
	fmt.Fprintf(a.stderr, "mcpgen: started a launcher for workspace %q (pid %d; events in %s)\n", o.workspace, cmd.Process.Pid, logf.Name())
	l := &startedLauncher{done: make(chan struct{})}
	// The launcher outlives connect (init adopts it then); while connect
	// lives, this goroutine reaps it if it exits first.
	go func() {
		_ = cmd.Wait()
		close(l.done)
	}()
	return l, nil
}
