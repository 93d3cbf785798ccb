package main

import (
	"fmt"
	"time"

	json "github.com/goccy/go-json"
	"github.com/spf13/cobra"

	"github.com/mcpgen/mcpgen/launcher/ctl"
)

func (a *app) statusCommand() *cobra.Command {
	var workspace string
	var asJSON, verbose bool
	cmd := &cobra.Command{
		Use:   "status [--workspace ID]",
		Short: "Show the servers of a running workspace session",
		Long: `Status asks the workspace's launcher for the state of each server: its
process, restarts, tools, connected clients and last error, and the outcome
of the last reload. It exits 1 when no launcher runs for the workspace.
A last error too long for its column follows the table in full; -v adds
how the servers are contained, and why not more strongly.

What the servers wrote is shown with its control characters escaped
(ESC as \x1b), so that it cannot drive the terminal; --json shows it as
it is, in JSON.

Without --workspace, it shows $MCPGEN_WORKSPACE, else the only running
session (mcpgen ps lists them).`,
		Example: `  mcpgen status --workspace ws-42
  mcpgen status --workspace ws-42 -v
  mcpgen status --workspace ws-42 --json | jq '.servers[] | {name, state}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ws, err := sessionWorkspace(workspace, "")
			if err != nil {
				return err
			}
			st, err := ctl.QueryStatus(ctxOf(cmd), ws)
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(st)
			}
			st.WriteTable(a.stdout, time.Now(), verbose)
			return nil
		},
	}
	workspaceFlag(cmd, &workspace)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "say how the servers are contained, and why not more strongly")
	return cmd
}

// printJSON prints v as indented JSON on stdout.
func (a *app) printJSON(v any) error {
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "%s\n", out)
	return nil
}

func (a *app) logsCommand() *cobra.Command {
	var workspace string
	var follow, raw bool
	cmd := &cobra.Command{
		Use:   "logs [--workspace ID] [SERVER]",
		Short: "Show what the servers of a workspace session wrote to stderr",
		Long: `Logs prints the stderr log of one server of the workspace's session, or
with no SERVER, the logs of every server as one, line by line in the order
of their times, each line prefixed with its server's name. The logs are
kept in the state dir, size-capped and rotated, after the session ends
too; each line carries the time the launcher read it, and a line marks
each start of the server (with its pid and restart count) and each end.

With -f it keeps printing what the servers write, across restarts and
rotations, until interrupted.

Control characters that a server wrote are shown escaped, as journalctl
shows them (ESC as \x1b, CR as \x0d; tabs and newlines as they are), so
that a server cannot drive the terminal; --raw prints the bytes as they
were written.

Without --workspace, it reads $MCPGEN_WORKSPACE, else the only running
session.`,
		Example: `  mcpgen logs --workspace ws-42 memory
  mcpgen logs --workspace ws-42 memory -f
  mcpgen logs --workspace ws-42 -f
  mcpgen logs --workspace ws-42 memory --raw > memory.log`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := sessionWorkspace(workspace, "to read the logs of one that ended")
			if err != nil {
				return err
			}
			dir, err := ctl.FindStateDir(ws)
			if err != nil {
				return err
			}
			logs, err := ctl.ServerLogs(ws)
			if err != nil {
				return err
			}
			if len(args) == 1 {
				path, err := serverLogPath(logs, dir, args[0])
				if err != nil {
					return err
				}
				return tailFile(ctxOf(cmd), a.stdout, path, follow, raw)
			}
			if len(logs) == 0 && !follow {
				return fmt.Errorf("no server logs in %s: has the workspace been launched?", dir)
			}
			list := func() (map[string]string, error) { return ctl.ServerLogs(ws) }
			return mergeLogs(ctxOf(cmd), a.stdout, logs, list, follow, raw)
		},
	}
	workspaceFlag(cmd, &workspace)
	cmd.ValidArgsFunction = a.completeSessionServers(&workspace, true)
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing what the servers write")
	cmd.Flags().BoolVar(&raw, "raw", false, "print the bytes as the servers wrote them, control characters too")
	return cmd
}
