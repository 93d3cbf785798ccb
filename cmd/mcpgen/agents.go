package main

import (
	"bytes"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mcpgen/mcpgen/internal/termtext"
	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/providers"
	"github.com/mcpgen/mcpgen/providers/registry"
)

type agentsOptions struct {
	workspace, dir, user string
	mcpgenPath           string
}

func (a *app) agentsCommand() *cobra.Command {
	var o agentsOptions
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "List the agents whose MCP configs mcpgen finds, and what emit would write to each",
		Long: `Agents lists, for every agent mcpgen writes for, its project config
(in the manifest's directory) and its user config, whether each is there,
and what mcpgen emit --write would do to it for this manifest: nothing
(up to date), write N servers, or fail, and why. The rows marked * are
those that mcpgen emit --provider all --write writes: the agent's usual
scope, where its config (or, for a user config, its directory) exists.

--workspace, --dir, --user and --mcpgen-path are emit's: the context that the entries
would hold. Nothing is written.`,
		Example: `  mcpgen agents
  mcpgen agents --workspace ws-42`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.agents(o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.workspace, "workspace", "w", "", "as emit --workspace: write the context of workspace `ID` literally")
	f.StringVar(&o.dir, "dir", "", "as emit --dir")
	f.StringVar(&o.user, "user", "", "as emit --user")
	f.StringVar(&o.mcpgenPath, "mcpgen-path", "", "as emit --mcpgen-path: the mcpgen that entries run")
	return cmd
}

func (a *app) agents(o agentsOptions) error {
	m, merr := a.loadManifest()
	quiet := *a
	quiet.stderr = &bytes.Buffer{} // emit's notes are for emit
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tSCOPE\tFILE\tSTATUS")
	for _, p := range registry.All() {
		for _, scope := range []string{"project", "user"} {
			if !hasScope(p, scope) {
				continue
			}
			eo := emitOptions{provider: p.Name(), write: true, scope: scope, workspace: o.workspace, dir: o.dir, user: o.user, gatewayName: "mcpgen", mcpgenPath: o.mcpgenPath}
			if eo.oneFile() {
				eo.scope = "" // its one file, which --scope cannot choose
			}
			status, place := "", placement{}
			if merr == nil {
				var err error
				place, err = eo.placement(m, p)
				if err != nil {
					status = "error: " + err.Error()
				}
			} else if scope == "project" {
				place.target, place.scope = providers.ProjectFile(p, "."), providers.ScopeProject
			} else {
				place.target, _ = providers.UserFile(p)
			}
			mark := ""
			missing := absent(place)
			if missing == "" && scopeName(p.Files().Default, p) == scope {
				mark = "*"
			}
			switch {
			case status != "":
			case merr != nil && missing != "":
				status = "not found"
			case merr != nil:
				status = "found"
			default:
				status = quiet.agentStatus(m, p, eo, place, missing)
			}
			fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\n", p.Name(), mark, scope, termtext.Line(place.target), termtext.Line(status))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(a.stdout, "\n* written by mcpgen emit --provider all --write; with --scope user or --scope project, the rows of that scope that exist")
	if merr != nil {
		fmt.Fprintf(a.stderr, "mcpgen: no manifest, so what emit would write is not shown: %v\n", merr)
	}
	return nil
}

// agentStatus says what emit --write would do to the config at place.
func (a *app) agentStatus(m *manifest.Manifest, p providers.Provider, o emitOptions, place placement, missing string) string {
	if err := o.checkFlags(); err != nil {
		return "error: " + err.Error()
	}
	pl, err := a.plan(m, p, o, place)
	if err != nil {
		return "error: " + err.Error()
	}
	switch {
	case pl.old != nil && bytes.Equal(pl.old, pl.out):
		return fmt.Sprintf("up to date (%d server%s)", pl.n, plural(pl.n))
	case pl.old != nil:
		return fmt.Sprintf("out of date: would write %d server%s", pl.n, plural(pl.n))
	case missing != "":
		return fmt.Sprintf("not found: would create it with %d server%s", pl.n, plural(pl.n))
	}
	if _, err := os.Stat(pl.target); err != nil {
		return fmt.Sprintf("not there: would create it with %d server%s", pl.n, plural(pl.n))
	}
	return fmt.Sprintf("would write %d server%s", pl.n, plural(pl.n))
}

// scopeName is "user" or "project": the scope --write writes for p without
// --scope.
func scopeName(s providers.Scope, p providers.Provider) string {
	if s == providers.ScopeProject || p.Files().User == nil {
		return "project"
	}
	return "user"
}
