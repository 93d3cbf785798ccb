package launcher

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcpgen/mcpgen/internal/proc"
)

// Status is what `mcpgen status` shows: the session and each server.
type Status struct {
	Workspace string       `json:"workspace"`
	Pid       int          `json:"pid"`
	Manifest  string       `json:"manifest"`
	Dir       string       `json:"dir"`
	User      string       `json:"user"` // USER_ID, as the servers get it
	StartedAt time.Time    `json:"started_at"`
	Reload    ReloadStatus `json:"reload"`
	// IdleExit is how long the launcher waits with no client and no
	// running server before it exits ("" when it does not); IdleExitAt is
	// when it will if nothing changes.
	IdleExit   string     `json:"idle_exit,omitempty"`
	IdleExitAt *time.Time `json:"idle_exit_at,omitempty"`
	// Containment says how the servers are contained: a cgroup, a
	// subreaper, or process groups only, and why nothing stronger.
	Containment proc.Report    `json:"containment"`
	Servers     []ServerStatus `json:"servers"`
	Gateway     *GatewayStatus `json:"gateway,omitempty"`
}

// ReloadStatus is the outcome of the last load of the manifest: the one at
// the start, or the last reload.
type ReloadStatus struct {
	At    *time.Time `json:"at"`
	OK    bool       `json:"ok"`
	Error string     `json:"error"` // empty when OK
}

// ServerStatus is one server of the session.
type ServerStatus struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Era is the protocol era the launcher speaks to the server: modern
	// (2026-07-28, no handshake), legacy (initialize), or unknown until
	// the server was first asked (see the manifest's protocol).
	Era       string     `json:"era"`
	State     State      `json:"state"`
	Pid       int        `json:"pid"`
	Restarts  int        `json:"restarts"`
	Tools     []string   `json:"tools"`
	StartedAt *time.Time `json:"started_at"`
	RetryAt   *time.Time `json:"retry_at,omitempty"`
	// Start is eager or lazy, as the manifest says; IdleTimeout its
	// idle_timeout ("" when none), and IdleStopAt when the server will be
	// stopped for idleness if no client comes.
	Start       string        `json:"start"`
	IdleTimeout string        `json:"idle_timeout,omitempty"`
	IdleStopAt  *time.Time    `json:"idle_stop_at,omitempty"`
	LastError   string        `json:"last_error"`
	Log         string        `json:"log"`
	Clients     ClientsStatus `json:"clients"`
}

// ClientsStatus lists the clients connected to a server.
type ClientsStatus struct {
	Count int      `json:"count"`
	Names []string `json:"names"`
	// Gateway is how many of them are agents of the workspace gateway,
	// which joins every server (they are counted once, in the gateway's
	// status).
	Gateway int `json:"gateway,omitempty"`
}

// WriteTable writes the status as an aligned table.
func (st *Status) WriteTable(w io.Writer, now time.Time) {
	fmt.Fprintf(w, "workspace %s  pid %d  up %s  manifest %s\n", st.Workspace, st.Pid, since(now, st.StartedAt), st.Manifest)
	fmt.Fprintf(w, "containment: %s\n", st.Containment)
	if st.Reload.At != nil {
		if st.Reload.OK {
			fmt.Fprintf(w, "manifest loaded %s ago\n", since(now, *st.Reload.At))
		} else {
			fmt.Fprintf(w, "last reload: FAILED %s ago, still running the previous manifest:\n  %s\n",
				since(now, *st.Reload.At), strings.ReplaceAll(st.Reload.Error, "\n", "\n  "))
		}
	}
	if st.IdleExit != "" {
		if st.IdleExitAt != nil {
			fmt.Fprintf(w, "idle: exits in %s (after %s without clients or running servers)\n", since(*st.IdleExitAt, now), st.IdleExit)
		} else {
			fmt.Fprintf(w, "idle exit: after %s without clients or running servers\n", st.IdleExit)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tKIND\tERA\tSTATE\tPID\tUP\tRESTARTS\tTOOLS\tCLIENTS\tLAST ERROR")
	for _, s := range st.Servers {
		pid, up := "-", "-"
		if s.Pid != 0 {
			pid = fmt.Sprint(s.Pid)
		}
		if s.StartedAt != nil && s.State == Ready {
			up = since(now, *s.StartedAt)
		}
		state := string(s.State)
		switch {
		case s.RetryAt != nil:
			state += " (" + since(*s.RetryAt, now) + ")"
		case s.IdleStopAt != nil:
			state += " (idle in " + since(*s.IdleStopAt, now) + ")"
		case s.State == Idle && s.Start == "lazy":
			state += " (lazy)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", s.Name, s.Kind, cmp.Or(s.Era, "-"), state, pid, up, s.Restarts, len(s.Tools), s.Clients.Count, oneLine(s.LastError, 80))
	}
	tw.Flush()
	st.writeGateway(w)
}

// Since says how long ago t was, as status shows uptimes: to the
// millisecond under a second, the second under an hour, then the minute.
func Since(now, t time.Time) string { return since(now, t) }

func since(now, t time.Time) string {
	d := now.Sub(t)
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	}
	return d.Round(time.Minute).String()
}

func oneLine(s string, max int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " ..."
	}
	if len(s) > max {
		s = s[:max-3] + "..."
	}
	return s
}

// lastLine returns the last non-empty line of b.
func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n \t\r"), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
