package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpgen/mcpgen/launcher/ctl"
)

type stopOptions struct {
	workspace string
	all       bool
	force     bool
	timeout   time.Duration
}

func (a *app) stopCommand() *cobra.Command {
	var o stopOptions
	cmd := &cobra.Command{
		Use:   "stop [--workspace ID | --all] [--force]",
		Short: "Stop a workspace session: every server, then its launcher",
		Long: `Stop asks the workspace's launcher to stop, as SIGTERM does: it stops
every server (closing its stdin, then SIGTERM, then SIGKILL to its
process group, after grace periods), disconnects their clients and exits.
Stop waits until it has, at most --timeout. A launcher that runs an agent
(launch -- CMD) passes the request to the agent and stops when it exits.

--force, or a second stop while the first waits, skips the grace periods
as a second signal does: the servers are killed (and so is the agent).

Without --workspace, it stops $MCPGEN_WORKSPACE, else the only running
session; --all stops every running session of this user.`,
		Example: `  mcpgen stop --workspace ws-42
  mcpgen stop --all --force`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.stop(ctxOf(cmd), o)
		},
	}
	workspaceFlag(cmd, &o.workspace)
	f := cmd.Flags()
	f.BoolVar(&o.all, "all", false, "stop every running session of this user")
	f.BoolVar(&o.force, "force", false, "skip the servers' grace periods: kill them")
	f.DurationVar(&o.timeout, "timeout", 30*time.Second, "how long to wait for the launcher to exit")
	cmd.MarkFlagsMutuallyExclusive("workspace", "all")
	return cmd
}

func (a *app) stop(ctx context.Context, o stopOptions) error {
	if o.timeout <= 0 {
		return usageError("--timeout %s: want a positive duration", o.timeout)
	}
	var workspaces []string
	if o.all {
		running, err := ctl.RunningSessions()
		if err != nil {
			return err
		}
		if len(running) == 0 {
			fmt.Fprintln(a.stderr, "no workspace session is running")
			return nil
		}
		for _, r := range running {
			workspaces = append(workspaces, r.Workspace)
		}
	} else {
		ws, err := sessionWorkspace(o.workspace, "")
		if err != nil {
			return err
		}
		workspaces = []string{ws}
	}

	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	errs := make([]error, len(workspaces))
	var mu sync.Mutex // one line at a time on stdout
	var wg sync.WaitGroup
	for i, ws := range workspaces {
		wg.Go(func() {
			started := time.Now()
			st, err := ctl.Stop(ctx, ws, o.force)
			if err != nil {
				var nr *ctl.NotRunningError
				if errors.As(err, &nr) {
					err = fmt.Errorf("no launcher is running for workspace %q: nothing to stop", ws)
				}
				errs[i] = err
				return
			}
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(a.stdout, "stopped workspace %q (launcher pid %d, %d server%s) in %s\n",
				ws, st.Pid, len(st.Servers), plural(len(st.Servers)), time.Since(started).Round(time.Millisecond))
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return nil
}
