package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpgen/mcpgen/launcher"
)

func (a *app) psCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ps",
		Short: "List the running workspace sessions of this user",
		Long: `Ps lists every workspace session of this user that runs now: its
workspace, launcher pid, uptime, servers ready out of all, connected
clients and manifest. It finds them by their held locks in the runtime
dirs, and creates nothing; a session that ended, however it ended, is not
listed. A launcher that does not answer (starting, stopping, or stuck) is
listed with why.`,
		Example: `  mcpgen ps
  mcpgen ps --json | jq -r '.[].workspace'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sessions, err := launcher.Sessions(ctxOf(cmd))
			if err != nil {
				return err
			}
			rows := psRows(sessions, time.Now())
			if asJSON {
				return a.printJSON(rows)
			}
			if len(rows) == 0 {
				fmt.Fprintln(a.stderr, "no workspace session is running")
				return nil
			}
			writePS(a.stdout, rows)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// A psRow is one session as mcpgen ps shows it.
type psRow struct {
	Workspace string     `json:"workspace"`
	Pid       int        `json:"pid"`
	StartedAt *time.Time `json:"started_at"`
	Uptime    string     `json:"uptime"` // as the table shows it
	Manifest  string     `json:"manifest"`
	Dir       string     `json:"dir"`
	Servers   psServers  `json:"servers"`
	Clients   int        `json:"clients"`
	Error     string     `json:"error,omitempty"` // why the launcher did not answer
}

type psServers struct {
	Ready int `json:"ready"`
	Total int `json:"total"`
}

func psRows(sessions []launcher.SessionInfo, now time.Time) []psRow {
	rows := []psRow{} // [] in JSON when none runs
	for _, s := range sessions {
		r := psRow{Workspace: s.Workspace, Pid: s.Pid}
		if s.Err != nil || s.Status == nil {
			r.Error = fmt.Sprint(s.Err)
			rows = append(rows, r)
			continue
		}
		st := s.Status
		started := st.StartedAt
		r.Pid, r.StartedAt, r.Uptime = st.Pid, &started, launcher.Since(now, started)
		r.Manifest, r.Dir = st.Manifest, st.Dir
		r.Servers.Ready, r.Servers.Total, r.Clients = st.Counts()
		rows = append(rows, r)
	}
	return rows
}

func writePS(w io.Writer, rows []psRow) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKSPACE\tPID\tUP\tSERVERS\tCLIENTS\tMANIFEST")
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t%d\t-\t-\t-\t(not answering: %s)\n", r.Workspace, r.Pid, r.Error)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d/%d\t%d\t%s\n", r.Workspace, r.Pid, r.Uptime, r.Servers.Ready, r.Servers.Total, r.Clients, r.Manifest)
	}
	tw.Flush()
}
