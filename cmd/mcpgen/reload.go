package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpgen/mcpgen/launcher/ctl"
)

func (a *app) reloadCommand() *cobra.Command {
	var workspace string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "reload [--workspace ID]",
		Short: "Make a workspace's launcher read its manifest again",
		Long: `Reload asks the workspace's launcher to read its manifest again and apply it,
as SIGHUP does: removed servers stop, added ones start, changed ones restart,
and failed servers are tried again even when their configuration did not
change. It returns once the servers that go or change have stopped, and
prints the status then (see mcpgen status).

An invalid manifest changes nothing: reload prints why and exits 1, and the
launcher keeps running the servers of the manifest it loaded last.

Without --workspace, it reloads $MCPGEN_WORKSPACE, else the only running
session.`,
		Example: `  mcpgen reload --workspace ws-42
  MCPGEN_WORKSPACE=ws-42 mcpgen reload --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ws, err := sessionWorkspace(workspace, "")
			if err != nil {
				return err
			}
			st, err := ctl.Reload(ctxOf(cmd), ws)
			if err != nil {
				if st == nil {
					return err // no launcher, or no answer
				}
				return fmt.Errorf("%v\nworkspace %q keeps running the manifest it loaded last: fix this one, then run mcpgen reload again", err, ws)
			}
			if asJSON {
				return a.printJSON(st)
			}
			st.WriteTable(a.stdout, time.Now(), false)
			return nil
		},
	}
	workspaceFlag(cmd, &workspace)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status after the reload as JSON")
	return cmd
}
