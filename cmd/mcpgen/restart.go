package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mcpgen/mcpgen/launcher/ctl"
)

func (a *app) restartCommand() *cobra.Command {
	var workspace string
	cmd := &cobra.Command{
		Use:   "restart [--workspace ID] SERVER",
		Short: "Restart one server of a workspace session now",
		Long: `Restart asks the workspace's launcher to restart one server now: its
process is stopped as on a reload (stdin closed, then SIGTERM, then
SIGKILL, after grace periods) and started again with the configuration it
has, also when it had failed or waits in backoff. Its clients stay
connected, and status counts the restart.

It waits until the server is ready again, or failed, or crashed (at most
its startup timeout), and exits 1 unless it is ready.

Without --workspace, it works on $MCPGEN_WORKSPACE, else the only running
session.`,
		Example: `  mcpgen restart --workspace ws-42 memory
  MCPGEN_WORKSPACE=ws-42 mcpgen restart files`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := sessionWorkspace(workspace, "")
			if err != nil {
				return err
			}
			name := args[0]
			st, starting, err := ctl.Restart(ctxOf(cmd), ws, name)
			if err != nil {
				return err
			}
			var s *ctl.ServerStatus
			for i := range st.Servers {
				if st.Servers[i].Name == name {
					s = &st.Servers[i]
				}
			}
			switch {
			case s == nil:
				return fmt.Errorf("server %q of workspace %q was removed meanwhile", name, ws)
			case starting:
				return fmt.Errorf("server %q of workspace %q is still starting after its startup timeout: see mcpgen status --workspace %s", name, ws, ws)
			case s.State != ctl.Ready:
				return fmt.Errorf("server %q of workspace %q %s after the restart: %s", name, ws, stateVerb(s.State), s.LastError)
			}
			fmt.Fprintf(a.stdout, "restarted server %q of workspace %q: ready, pid %d, %d tool%s, restart %d\n",
				name, ws, s.Pid, len(s.Tools), plural(len(s.Tools)), s.Restarts)
			return nil
		},
	}
	workspaceFlag(cmd, &workspace)
	cmd.ValidArgsFunction = a.completeSessionServers(&workspace, false)
	return cmd
}

// stateVerb says what a server in the state is, after its name: "is in
// backoff", "failed", "is idle".
func stateVerb(s ctl.State) string {
	switch s {
	case ctl.Backoff:
		return "is in backoff"
	case ctl.Failed:
		return "failed"
	}
	return "is " + string(s)
}
