package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/mcp"
	"github.com/mcpgen/mcpgen/servers/commands"
	"github.com/mcpgen/mcpgen/servers/files"
)

func (a *app) serveCommand() *cobra.Command {
	var o serveURLOptions
	cmd := &cobra.Command{
		Use:   "serve NAME | serve --url URL",
		Short: "Run one server of the manifest as a standalone stdio MCP server",
		Long: `Serve runs the manifest's server NAME on stdin and stdout: what emitted
configs and the launcher start. The manifest is the nearest mcpgen.toml
from the current directory up, or --manifest (a relative path is looked
for from the current directory up too): the configs of a project name no
path of its checkout, and agents start their servers in the project's
directory or below it. The workspace context comes from the environment
(WORKSPACE_ID, WORKSPACE_DIR, USER_ID), with the manifest's defaults for
what is missing or empty.

WORKSPACE_DIR, when neither the agent nor the manifest sets it, is the
manifest's directory, wherever below it the agent starts the server
(dir = "${PWD}" in the manifest: where it starts). The files server
refuses to serve the root of the file system or your home directory
unless the manifest's workspace.dir names it.

Built-in and declared servers run inside mcpgen. A command server has its
${VAR}s resolved and then replaces this process (exec), so nothing stays
between the agent and the server; on Windows, which has no exec, it runs
as a child on the same stdin and stdout, is killed with mcpgen, and mcpgen
exits with its status.

A remote (url) server is reached over Streamable HTTP, its url, headers
and bearer token resolved from the environment: what Codex runs for a
server whose url holds a ${VAR} (an API key in the query) or whose header
mixes text and a ${VAR}, which it cannot express itself. When stdin
closes, the answers still owed come back (within the server's timeouts),
then the session ends (DELETE); a session that the server ends, or a
server that cannot be reached, ends serve with an error.

With --url URL instead of NAME, serve relays to that Streamable HTTP
endpoint, with the bearer token of the variable --bearer-token-env
names, and reads no manifest: what emit --gateway-url writes for Claude
Desktop, which runs only stdio servers from its file, to reach a
launcher's gateway served over HTTP.`,
		Example: `  mcpgen serve files
  WORKSPACE_ID=ws-42 mcpgen serve --manifest /srv/mcpgen.toml git
  MCPGEN_TOKEN=... mcpgen serve --url https://mcp.example.com/mcp --bearer-token-env MCPGEN_TOKEN`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case o.url != "" && len(args) > 0:
				return usageError("--url relays to a URL instead of a server of the manifest: drop %q", args[0])
			case o.url != "":
				return nil
			case o.tokenEnv != "":
				return usageError("--bearer-token-env is the token of --url: pass --url URL too")
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		ValidArgsFunction: a.completeServers,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.url != "" {
				return a.serveURL(o)
			}
			return a.serve(args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.url, "url", "", "relay to the Streamable HTTP endpoint at `URL` instead of a server of the manifest")
	f.StringVar(&o.tokenEnv, "bearer-token-env", "", "with --url: the environment `VAR` that holds its bearer token")
	return cmd
}

// completeServers completes the names of the manifest's servers.
func (a *app) completeServers(_ *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	m, err := a.loadManifest()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, s := range m.Servers {
		names = append(names, s.Name+"\t"+s.Kind.String())
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// findServer returns the manifest's server called name, or an error that
// lists the servers there are.
func findServer(m *manifest.Manifest, name string) (*manifest.Server, error) {
	if s := m.Server(name); s != nil {
		return s, nil
	}
	names := make([]string, len(m.Servers))
	for i, s := range m.Servers {
		names[i] = s.Name
	}
	return nil, fmt.Errorf("%s has no server %q; it has: %s", m.File, name, strings.Join(names, ", "))
}

// envContext reads the workspace context from the environment, as the
// agent or the launcher passed it.
func envContext(m *manifest.Manifest) (*manifest.Context, error) {
	return m.Context(manifest.ContextOptions{
		WorkspaceID: os.Getenv(manifest.VarWorkspaceID),
		Dir:         os.Getenv(manifest.VarWorkspaceDir),
		User:        os.Getenv(manifest.VarUserID),
	})
}

func (a *app) serve(name string) error {
	m, err := a.loadManifest()
	if err != nil {
		return err
	}
	s, err := findServer(m, name)
	if err != nil {
		return err
	}
	c, err := envContext(m)
	if err != nil {
		return err
	}
	if s.Kind == manifest.KindRemote {
		// SIGINT and SIGTERM end the session (DELETE) before mcpgen exits.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return a.serveRemote(ctx, m, s, c)
	}

	if ran, err := a.serveSandboxed(m, s, c); ran || err != nil {
		return err
	}
	if s.Kind == manifest.KindCommand {
		return execServer(m, s, c)
	}
	env, err := m.ProcessEnv(s, c, os.Environ())
	if err != nil {
		return err
	}
	// SIGINT and SIGTERM end the server gracefully: requests in flight are
	// cancelled and answered, then it exits 0.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var srv *mcp.Server
	switch s.Kind {
	case manifest.KindBuiltin:
		// / and the home directory only when the manifest names them, not
		// when an agent started there without a WORKSPACE_DIR.
		broad := m.NamesDir(manifest.ContextOptions{WorkspaceID: c.WorkspaceID, User: c.UserID}, c.WorkspaceDir)
		srv, err = files.New(files.Options{Root: c.WorkspaceDir, ReadOnly: s.ReadOnly, Protect: s.Protect, Version: versionString(), BroadRoot: broad})
	case manifest.KindDeclared:
		// Refused before anything starts: the error names the place.
		if errs := m.ShellErrors(s); len(errs) > 0 {
			return errs
		}
		dir, derr := m.WorkDir(s, c, nil)
		if derr != nil {
			return derr
		}
		// Each tool run gets a container. Under a launcher in cgroup
		// mode, this process's cgroup is its server's leaf, and the
		// runs' cgroups are made below it.
		contain, cerr := setupContainment(ctx, name)
		if cerr != nil {
			return fmt.Errorf("server %q: %w", name, cerr)
		}
		defer closeContainment(contain)
		srv, err = commands.New(m, s, commands.Options{Dir: dir, Env: env, Version: versionString(), Containment: contain})
	}
	if err != nil {
		return fmt.Errorf("server %q: %w", name, err)
	}
	err = srv.Serve(ctx, a.stdin, a.stdout)
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// serverProcess is what execServer runs for a command server: its
// process, as the manifest resolves it in mcpgen's environment, and that
// process's environment.
func serverProcess(m *manifest.Manifest, s *manifest.Server, c *manifest.Context) (*manifest.Process, []string, error) {
	base := os.Environ()
	p, err := m.Process(s, c, manifest.EnvLookup(base))
	if err != nil {
		return nil, nil, err
	}
	env, err := m.ProcessEnv(s, c, base)
	if err != nil {
		return nil, nil, err
	}
	return p, env, nil
}
