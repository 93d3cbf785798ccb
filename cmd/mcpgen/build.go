package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	json "github.com/goccy/go-json"
	"github.com/spf13/cobra"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/launcher"
	"github.com/mcpgen/mcpgen/manifest"
)

type buildOptions struct {
	json, force          bool
	workspace, dir, user string
}

func (a *app) buildCommand() *cobra.Command {
	var o buildOptions
	cmd := &cobra.Command{
		Use:   "build [NAME...]",
		Short: "Build the servers, then start each one and list its tools",
		Long: `Build runs the build step of each server that has one (skipped when its
command is newer than every file its watch patterns match, unless
--force), then starts every stdio server (all of them, or those named),
performs the MCP handshake, lists its tools and stops it.

It prints a table, or JSON with --json, and exits 1 if any server fails to
build or to start, naming it and showing the tail of its stderr.

For a workspace (--workspace, or $WORKSPACE_ID), it keeps what each server
offered in the workspace's catalog cache, as the launcher does: a lazy
server (start = "lazy") then answers initialize and tools/list before its
first start.`,
		Example: `  mcpgen build
  mcpgen build acme-tools --force
  mcpgen build --json --workspace ws-42`,
		ValidArgsFunction: a.completeServers,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.build(cmd.Context(), args, o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.json, "json", false, "print JSON")
	f.BoolVar(&o.force, "force", false, "build even when up to date")
	f.StringVarP(&o.workspace, "workspace", "w", os.Getenv(manifest.VarWorkspaceID), "the workspace `ID` the servers run for (default $WORKSPACE_ID)")
	f.StringVar(&o.dir, "dir", "", "WORKSPACE_DIR (default: the manifest's workspace.dir, else the manifest's directory)")
	f.StringVar(&o.user, "user", "", "USER_ID (default: the manifest's workspace.user, else $USER)")
	return cmd
}

// buildReport is one server's line of mcpgen build, and its JSON.
type buildReport struct {
	Name      string   `json:"name"`
	Kind      string   `json:"kind"`
	Build     string   `json:"build"`
	BuildMs   int64    `json:"build_ms,omitempty"`
	Tools     []string `json:"tools"`
	StartupMs int64    `json:"startup_ms"`
	Error     string   `json:"error,omitempty"`
}

func (a *app) build(ctx context.Context, names []string, o buildOptions) error {
	m, err := a.loadManifest()
	if err != nil {
		return err
	}
	servers, err := selectServers(m, names)
	if err != nil {
		return err
	}
	c, err := m.Context(manifest.ContextOptions{WorkspaceID: o.workspace, Dir: o.dir, User: o.user})
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	base := os.Environ()
	contain, err := setupContainment(ctx, "build")
	if err != nil {
		return err
	}
	defer closeContainment(contain)
	reports := make([]*buildReport, len(servers))
	var failed []error

	// Builds run one after another (they compete for the same CPUs and
	// may share a module cache); servers then start all at once.
	for i, s := range servers {
		r := &buildReport{Name: s.Name, Kind: s.Kind.String(), Tools: []string{}}
		reports[i] = r
		sb, err := m.SandboxPolicy(s, c, manifest.EnvLookup(base))
		if err != nil {
			r.Build, r.Error = "failed", err.Error()
			failed = append(failed, fmt.Errorf("server %q: %w", s.Name, err))
			continue
		}
		state, took, err := launcher.Build(ctx, contain, m, s, sb, base, o.force)
		r.Build, r.BuildMs = string(state), took.Milliseconds()
		if err != nil {
			r.Build = "failed"
			r.Error = err.Error()
			failed = append(failed, err)
		} else if state == launcher.Built && !o.json {
			fmt.Fprintf(a.stderr, "built %s in %s\n", s.Name, took.Round(time.Millisecond))
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, s := range servers {
		r := reports[i]
		if r.Error != "" {
			continue
		}
		wg.Go(func() {
			err := probe(ctx, contain, m, s, c, self, base, r)
			if err != nil {
				mu.Lock()
				r.Error = err.Error()
				failed = append(failed, fmt.Errorf("server %q: %w", s.Name, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()

	if o.json {
		out, _ := json.MarshalIndent(reports, "", "  ")
		fmt.Fprintf(a.stdout, "%s\n", out)
	} else {
		a.printBuildTable(reports)
	}
	if len(failed) > 0 {
		return &exitError{code: exitFail, err: errors.Join(failed...)}
	}
	return nil
}

func probe(ctx context.Context, contain *proc.Containment, m *manifest.Manifest, s *manifest.Server, c *manifest.Context, self string, base []string, r *buildReport) error {
	tools, took, err := launcher.Probe(ctx, contain, m, s, c, self, base)
	r.StartupMs = took.Milliseconds()
	if err != nil {
		return err
	}
	for _, t := range tools {
		r.Tools = append(r.Tools, t.Name)
	}
	return nil
}

func (a *app) printBuildTable(reports []*buildReport) {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tKIND\tBUILD\tTOOLS\tSTARTUP\t")
	for _, r := range reports {
		status := fmt.Sprintf("%d\t%dms", len(r.Tools), r.StartupMs)
		if r.Error != "" {
			status = "-\tFAILED"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", r.Name, r.Kind, r.Build, status)
	}
	tw.Flush()
}

// selectServers returns the stdio servers named, or every enabled one.
func selectServers(m *manifest.Manifest, names []string) ([]*manifest.Server, error) {
	var out []*manifest.Server
	if len(names) == 0 {
		for _, s := range m.Servers {
			if s.Kind.Stdio() && s.Enabled {
				out = append(out, s)
			}
		}
		return out, nil
	}
	for _, n := range slices.Compact(names) {
		s, err := findServer(m, n)
		if err != nil {
			return nil, err
		}
		if !s.Kind.Stdio() {
			return nil, fmt.Errorf("server %q is remote (url): there is nothing to build or start", n)
		}
		out = append(out, s)
	}
	return out, nil
}
