package main

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpgen/mcpgen/internal/termtext"
	"github.com/mcpgen/mcpgen/launcher/ctl"
)

func (a *app) psCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ps",
		Short: "List the running workspace sessions of this user",
		Long: `Ps lists every workspace session of this user that runs now: its
workspace, launcher pid, uptime, servers ready out of all (and how many
are idle: not started yet, or stopped for idleness), connected clients,
when the launcher exits for idleness if nothing changes, how many servers
speak each protocol era (modern, legacy; --json: each server's), and
manifest. It finds them by their held locks in the runtime
dirs, and creates nothing; a session that ended, however it ended, is not
listed. A launcher that does not answer (starting, stopping, or stuck) is
listed with why.`,
		Example: `  mcpgen ps
  mcpgen ps --json | jq -r '.[].workspace'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sessions, err := ctl.Sessions(ctxOf(cmd))
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
			writePS(a.stdout, rows, time.Now())
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
	// IdleExit is how long the launcher waits, with no client and no
	// running server, before it exits ("" when it does not);
	// IdleExitAt is when it will if nothing changes.
	IdleExit   string     `json:"idle_exit,omitempty"`
	IdleExitAt *time.Time `json:"idle_exit_at,omitempty"`
	Error      string     `json:"error,omitempty"` // why the launcher did not answer
}

type psServers struct {
	// Eras is each server's protocol era (modern, legacy, unknown), as
	// mcpgen status shows it.
	Eras  map[string]string `json:"eras"`
	Ready int               `json:"ready"`
	Idle  int               `json:"idle"`
	Total int               `json:"total"`
}

func psRows(sessions []ctl.SessionInfo, now time.Time) []psRow {
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
		r.Pid, r.StartedAt, r.Uptime = st.Pid, &started, ctl.Since(now, started)
		r.Manifest, r.Dir = st.Manifest, st.Dir
		r.Servers.Ready, r.Servers.Total, r.Clients = st.Counts()
		r.Servers.Eras = map[string]string{}
		for _, srv := range st.Servers {
			if srv.State == ctl.Idle {
				r.Servers.Idle++
			}
			r.Servers.Eras[srv.Name] = cmp.Or(srv.Era, "unknown")
		}
		r.IdleExit, r.IdleExitAt = st.IdleExit, st.IdleExitAt
		rows = append(rows, r)
	}
	return rows
}

// writePS writes the sessions as a table. SERVERS is ready/total, with
// the idle ones; IDLE EXIT when the launcher exits if nothing changes
// ("after D" while it is not idle, "-" when it never does); ERAS how many
// servers speak each era ("2 modern, 1 legacy"). What a launcher answered
// (the manifest's path, why it did not answer) is escaped: it may have
// been anyone's.
func writePS(w io.Writer, rows []psRow, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKSPACE\tPID\tUP\tSERVERS\tCLIENTS\tIDLE EXIT\tERAS\tMANIFEST")
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t%d\t-\t-\t-\t-\t-\t(not answering: %s)\n", termtext.Line(r.Workspace), r.Pid, termtext.Line(r.Error))
			continue
		}
		servers := fmt.Sprintf("%d/%d", r.Servers.Ready, r.Servers.Total)
		if r.Servers.Idle > 0 {
			servers += fmt.Sprintf(" (%d idle)", r.Servers.Idle)
		}
		exit := "-"
		switch {
		case r.IdleExitAt != nil:
			exit = "in " + ctl.Since(*r.IdleExitAt, now)
		case r.IdleExit != "":
			exit = "after " + r.IdleExit
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%s\t%s\t%s\n", termtext.Line(r.Workspace), r.Pid, r.Uptime, servers, r.Clients, exit, eraCounts(r.Servers.Eras), termtext.Line(r.Manifest))
	}
	tw.Flush()
}

// eraCounts says how many servers speak each era, modern first: "2
// modern, 1 legacy"; "-" when there is no server.
func eraCounts(eras map[string]string) string {
	n := map[string]int{}
	for _, e := range eras {
		n[e]++
	}
	var parts []string
	for _, e := range []string{"modern", "legacy", "unknown"} {
		if n[e] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[e], e))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}
