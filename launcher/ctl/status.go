package ctl

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/internal/termtext"
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
	// HTTP is the HTTP face, when the launcher serves one (launch
	// --listen, [session] listen).
	HTTP *HTTPStatus `json:"http,omitempty"`
}

// HTTPStatus is the workspace as served over HTTP.
type HTTPStatus struct {
	// URL is the workspace gateway's endpoint; ServersURL each server's,
	// with {name} for the server's name.
	URL        string `json:"url"`
	ServersURL string `json:"servers_url"`
	// Auth says how agents are admitted: "none", or the ways, never a
	// token.
	Auth string `json:"auth"`
	// Sessions is how many HTTP sessions (the legacy era's) are open;
	// Stateless how many connections carry modern clients' requests, kept
	// for each client and endpoint while it is busy (see httpface).
	Sessions  int `json:"sessions"`
	Stateless int `json:"stateless"`
}

// ReloadStatus is the outcome of the last load of the manifest: the one at
// the start, or the last reload.
type ReloadStatus struct {
	At    *time.Time `json:"at"`
	OK    bool       `json:"ok"`
	Error string     `json:"error"` // empty when OK
}

// A State is where a server is in its life under the launcher.
type State string

const (
	Idle     State = "idle"     // no process: starts when a request needs it (lazy, or stopped for idleness)
	Starting State = "starting" // spawned, not ready yet
	Ready    State = "ready"    // initialized and listed its tools
	Backoff  State = "backoff"  // crashed; waiting before the next start
	Failed   State = "failed"   // given up: a reload (or SIGHUP) tries again
	Stopped  State = "stopped"
)

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
	Notice      string        `json:"notice,omitempty"` // what went wrong that no request shows: a remote server's GET stream given up
	Log         string        `json:"log"`
	Clients     ClientsStatus `json:"clients"`
	Shed        *ShedStatus   `json:"shed,omitempty"`
	// Sandbox is what confines the server, when its manifest enables a
	// sandbox: the mechanisms, and the rules that hold and do not.
	Sandbox *SandboxStatus `json:"sandbox,omitempty"`
}

// SandboxStatus is what the platform enforces of a server's sandbox.
type SandboxStatus struct {
	Platform    string   `json:"platform"`
	Enforced    []string `json:"enforced,omitempty"`
	NotEnforced []string `json:"not_enforced,omitempty"`
	Caveats     []string `json:"caveats,omitempty"`
}

// ShedStatus counts what the clients of a server (connect NAME, gateway
// agents) lost of its notifications because they read them more slowly
// than it sent them, rather than be disconnected.
type ShedStatus struct {
	Dropped   int64 `json:"dropped"`   // log messages dropped
	Coalesced int64 `json:"coalesced"` // progress notifications replaced by a newer one of the same request
}

// ClientsStatus lists the clients connected to a server.
type ClientsStatus struct {
	Count int `json:"count"`
	// Requests counts the requests of each era that the clients sent
	// since the session started, those that left included.
	Requests EraRequests `json:"requests"`
	Names    []string    `json:"names"`
	// Gateway is how many of them are agents of the workspace gateway,
	// which joins every server (they are counted once, in the gateway's
	// status).
	Gateway int `json:"gateway,omitempty"`
	// Eras says, of each client connected (the gateway's agents in the
	// gateway's status), which era it speaks: whether it opened a legacy
	// session, and how many requests of each era it sent.
	Eras []ClientEra `json:"eras,omitempty"`
}

// EraRequests count requests by era.
type EraRequests struct {
	Modern int64 `json:"modern"`
	Legacy int64 `json:"legacy"`
}

// A ClientEra is which era of MCP a client speaks to mcpgen.
type ClientEra struct {
	Name    string `json:"name"`
	Session bool   `json:"session"` // it opened a legacy session (initialize)
	Modern  int64  `json:"modern"`  // its stateless requests of the modern revision
	Legacy  int64  `json:"legacy"`  // its requests of a legacy session
}

// Counts sums up a status for mcpgen ps: servers ready, servers in all,
// and client connections: over every server, and to the gateway (an agent
// of the gateway is a client of every server, and counts once).
func (st *Status) Counts() (ready, total, clients int) {
	for _, s := range st.Servers {
		total++
		if s.State == Ready {
			ready++
		}
		clients += s.Clients.Count - s.Clients.Gateway
	}
	if st.Gateway != nil {
		clients += st.Gateway.Clients.Count
	}
	return ready, total, clients
}

// WriteTable writes the status as an aligned table, for a terminal: what
// the servers and the manifest chose (names, errors) is escaped, so that
// it cannot drive the terminal. A last error too long for its column is
// shown in full below the table. Verbose adds what stays the same during
// the session: how the servers are contained, and why not more strongly.
func (st *Status) WriteTable(w io.Writer, now time.Time, verbose bool) {
	fmt.Fprintf(w, "workspace %s  pid %d  up %s  manifest %s\n", termtext.Line(st.Workspace), st.Pid, since(now, st.StartedAt), termtext.Line(st.Manifest))
	if verbose {
		fmt.Fprintf(w, "containment: %s\n", termtext.Line(st.Containment.String()))
	} else if st.Containment.Reason != "" {
		fmt.Fprintf(w, "containment: %s (mcpgen status -v says why)\n", termtext.Line(st.Containment.Summary()))
	} else {
		fmt.Fprintf(w, "containment: %s\n", termtext.Line(st.Containment.Summary()))
	}
	if st.Reload.At != nil {
		if st.Reload.OK {
			fmt.Fprintf(w, "manifest loaded %s ago\n", since(now, *st.Reload.At))
		} else {
			fmt.Fprintf(w, "last reload: FAILED %s ago, still running the previous manifest:\n  %s\n",
				since(now, *st.Reload.At), indentEscaped(st.Reload.Error))
		}
	}
	if st.IdleExit != "" {
		if st.IdleExitAt != nil {
			fmt.Fprintf(w, "idle: exits in %s (after %s without clients or running servers)\n", since(*st.IdleExitAt, now), st.IdleExit)
		} else {
			fmt.Fprintf(w, "idle exit: after %s without clients or running servers\n", st.IdleExit)
		}
	}
	if h := st.HTTP; h != nil {
		fmt.Fprintf(w, "http: %s (each server at %s; auth: %s; %d sessions, %d stateless)\n", termtext.Line(h.URL), termtext.Line(h.ServersURL), termtext.Line(h.Auth), h.Sessions, h.Stateless)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tKIND\tERA\tSTATE\tPID\tUP\tRESTARTS\tTOOLS\tCLIENTS\tLAST ERROR")
	var cut []ServerStatus // whose last error the column cuts short
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
		lastError, whole := cutLine(s.LastError, lastErrorWidth)
		if !whole {
			cut = append(cut, s)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", termtext.Line(s.Name), s.Kind, cmp.Or(s.Era, "-"), state, pid, up, s.Restarts, len(s.Tools), s.Clients.Count, lastError)
	}
	tw.Flush()
	for _, s := range cut {
		fmt.Fprintf(w, "last error of %s: %s\n", termtext.Line(s.Name), indentEscaped(s.LastError))
	}
	for _, s := range st.Servers {
		if s.Notice != "" {
			fmt.Fprintf(w, "%s: %s\n", termtext.Line(s.Name), termtext.Line(s.Notice))
		}
		if sb := s.Sandbox; sb != nil {
			// Always what is not enforced; what is, with -v.
			switch {
			case verbose:
				fmt.Fprintf(w, "%s: sandbox: %s\n", termtext.Line(s.Name), termtext.Line(sb.Platform))
				for _, e := range sb.Enforced {
					fmt.Fprintf(w, "  enforced: %s\n", termtext.Line(e))
				}
			case len(sb.NotEnforced) == 0:
				fmt.Fprintf(w, "%s: sandbox: every rule enforced (%s; mcpgen status -v lists them)\n", termtext.Line(s.Name), termtext.Line(sb.Platform))
			default:
				fmt.Fprintf(w, "%s: sandbox: %s\n", termtext.Line(s.Name), termtext.Line(sb.Platform))
			}
			for _, e := range sb.NotEnforced {
				fmt.Fprintf(w, "  NOT enforced: %s\n", termtext.Line(e))
			}
			if verbose {
				for _, e := range sb.Caveats {
					fmt.Fprintf(w, "  caveat: %s\n", termtext.Line(e))
				}
			}
		}
		if s.Shed != nil {
			fmt.Fprintf(w, "%s: clients that read too slowly lost %d log messages (dropped) and %d progress notifications (replaced by newer ones)\n",
				termtext.Line(s.Name), s.Shed.Dropped, s.Shed.Coalesced)
		}
	}
	st.writeGateway(w)
}

// lastErrorWidth is how many characters of a last error the table shows.
const lastErrorWidth = 80

// indentEscaped returns text that others chose escaped, its lines after the
// first indented to sit under a heading.
func indentEscaped(text string) string {
	return strings.ReplaceAll(termtext.Text(strings.TrimRight(text, "\n")), "\n", "\n  ")
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

// oneLine returns the first line of s, cut to max characters, escaped: a
// table's cell. It marks what it leaves out with "...".
func oneLine(s string, max int) string {
	cell, _ := cutLine(s, max)
	return cell
}

// cutLine is oneLine, and whether the cell holds the whole of s.
func cutLine(s string, max int) (cell string, whole bool) {
	line := s
	if first, rest, ok := strings.Cut(s, "\n"); ok {
		line = first
		if strings.TrimSpace(rest) != "" {
			line += " ..."
		}
	}
	shown := termtext.Cut(line, max)
	return termtext.Line(shown), shown == s
}
