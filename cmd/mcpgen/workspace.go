package main

import (
	"context"
	"errors"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/manifest"
)

// envWorkspace names the workspace that session commands work on when
// --workspace does not: what launch -- CMD gives the agent, and what a
// user sets in a shell.
const envWorkspace = "MCPGEN_WORKSPACE"

// workspaceFlag adds --workspace to a command that works on a running
// session (or its logs): its default is $MCPGEN_WORKSPACE, and it
// completes the running sessions.
func workspaceFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVarP(p, "workspace", "w", os.Getenv(envWorkspace),
		"the workspace `ID` (default $"+envWorkspace+", else the only running session)")
	_ = cmd.RegisterFlagCompletionFunc("workspace", completeWorkspaces)
}

// sessionWorkspace returns the workspace a session command works on: the
// one given (by --workspace or $MCPGEN_WORKSPACE), else the only running
// session. When none runs, or several do, the error says what to pass;
// hint, if set, says what else would do.
func sessionWorkspace(given, hint string) (string, error) {
	if given != "" {
		if err := manifest.CheckWorkspaceID(given); err != nil {
			return "", usageError("%v", err)
		}
		return given, nil
	}
	running, err := ctl.RunningSessions()
	if err != nil {
		return "", err
	}
	switch len(running) {
	case 0:
		msg := "no workspace session is running: pass --workspace ID (or set " + envWorkspace + ")"
		if hint != "" {
			msg += ", " + hint
		}
		return "", errors.New(msg)
	case 1:
		return running[0].Workspace, nil
	}
	ids := make([]string, len(running))
	for i, r := range running {
		ids[i] = r.Workspace
	}
	return "", usageError("%d workspace sessions are running (%s): pass --workspace ID, or set %s", len(running), strings.Join(ids, ", "), envWorkspace)
}

// completeWorkspaces completes --workspace with the running sessions.
func completeWorkspaces(_ *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	running, err := ctl.RunningSessions()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, r := range running {
		out = append(out, r.Workspace+"\tlauncher pid "+strconv.Itoa(r.Pid))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeSessionServers completes a server name of the session that
// *workspace names (or the only running one): the servers it runs, else
// the ones whose logs its state dir holds (withLogs), else the manifest's.
func (a *app) completeSessionServers(workspace *string, withLogs bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ws, err := sessionWorkspace(*workspace, "")
		if err == nil {
			if st, err := ctl.QueryStatus(ctxOf(cmd), ws); err == nil {
				var out []string
				for _, s := range st.Servers {
					out = append(out, s.Name+"\t"+string(s.State))
				}
				return out, cobra.ShellCompDirectiveNoFileComp
			}
			if withLogs {
				if logs, err := ctl.ServerLogs(ws); err == nil && len(logs) > 0 {
					return slices.Sorted(maps.Keys(logs)), cobra.ShellCompDirectiveNoFileComp
				}
			}
		}
		return a.completeServers(cmd, args, toComplete)
	}
}

// ctxOf returns the command's context: the one run gives it, or, for a
// command that cobra runs itself (completion), a background one.
func ctxOf(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
