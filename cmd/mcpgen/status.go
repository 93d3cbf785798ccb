package main

import (
	"fmt"
	"os"
	"time"

	json "github.com/goccy/go-json"
	"github.com/spf13/cobra"

	"github.com/mcpgen/mcpgen/launcher"
	"github.com/mcpgen/mcpgen/manifest"
)

func (a *app) statusCommand() *cobra.Command {
	var workspace string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status --workspace ID",
		Short: "Show the servers of a running workspace session",
		Long: `Status asks the workspace's launcher for the state of each server: its
process, restarts, tools, connected clients and last error, and the outcome
of the last reload. It exits 1 when no launcher runs for the workspace.`,
		Example: `  mcpgen status --workspace ws-42
  mcpgen status --workspace ws-42 --json | jq '.servers[] | {name, state}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := manifest.CheckWorkspaceID(workspace); err != nil {
				return usageError("%v", err)
			}
			st, err := launcher.QueryStatus(workspace)
			if err != nil {
				return err
			}
			if asJSON {
				out, err := json.MarshalIndent(st, "", "  ")
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "%s\n", out)
				return nil
			}
			st.WriteTable(a.stdout, time.Now())
			return nil
		},
	}
	cmd.Flags().StringVarP(&workspace, "workspace", "w", os.Getenv("MCPGEN_WORKSPACE"), "the workspace `ID` (default $MCPGEN_WORKSPACE)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (a *app) logsCommand() *cobra.Command {
	var workspace string
	var follow bool
	cmd := &cobra.Command{
		Use:   "logs --workspace ID SERVER",
		Short: "Show what a server of a workspace session wrote to stderr",
		Long: `Logs prints the stderr log of one server of the workspace's session (kept in
the state dir, size-capped and rotated). With -f it keeps printing what
the server writes, across restarts and rotations, until interrupted.`,
		Example: `  mcpgen logs --workspace ws-42 memory
  mcpgen logs --workspace ws-42 memory -f`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := manifest.CheckWorkspaceID(workspace); err != nil {
				return usageError("%v", err)
			}
			dir, err := launcher.StateDir(workspace)
			if err != nil {
				return err
			}
			path, err := serverLogPath(dir, args[0])
			if err != nil {
				return err
			}
			return tailFile(cmd.Context(), a.stdout, path, follow)
		},
	}
	cmd.Flags().StringVarP(&workspace, "workspace", "w", os.Getenv("MCPGEN_WORKSPACE"), "the workspace `ID` (default $MCPGEN_WORKSPACE)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing what the server writes")
	return cmd
}
