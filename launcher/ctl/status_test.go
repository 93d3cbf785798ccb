package ctl

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/internal/proc"
)

// hostile is what a server wrote to stderr before it exited: a window
// title, a clear screen, a colour, and a carriage return that puts "boom"
// over "FAKE OK".
const hostile = "\x1b]0;TITLE\x07\x1b[2J\x1b[31mFAKE OK\rboom"

// escapedHostile is hostile as the table shows it.
const escapedHostile = `\x1b]0;TITLE\a\x1b[2J\x1b[31mFAKE OK\rboom`

// controls matches what a terminal would act on (the table's newlines
// apart).
var controls = regexp.MustCompile("[\x00-\x09\x0b-\x1f\x7f]|\u009b|\u202e")

// TestWriteTableEscapes checks that what servers and the manifest chose
// reaches the table (status, reload, and the launcher's live table)
// escaped, and that a last error the column cuts is shown in full below.
func TestWriteTableEscapes(t *testing.T) {
	now := time.Now()
	at := now.Add(-time.Minute)
	st := &Status{
		Workspace: "ws", Pid: 42, Manifest: "/tmp/m\x1b[2J/mcpgen.toml", StartedAt: at,
		Reload:      ReloadStatus{At: &at, Error: "mcpgen.toml:3:1: a problem with " + hostile + "\nmcpgen.toml:4:1: another\u009b2J"},
		Containment: proc.Report{Mode: proc.ModeSubreaper, Reason: "cgroups not writable"},
		Servers: []ServerStatus{
			{Name: "evil", Kind: "command", State: Backoff, LastError: "exited with status 1 before it was ready; stderr: " + hostile},
			{Name: "short", Kind: "command", State: Failed, LastError: "stderr: a\u202eb"},
			{Name: "ok", Kind: "declared", State: Ready, Pid: 7, StartedAt: &at},
		},
		Gateway: &GatewayStatus{
			Prefix:    "conflicts",
			Tools:     []GatewayName{{Name: "evil__t\x1b[2J", Server: "evil", Original: "t\x1b[2J"}},
			Conflicts: []GatewayConflict{{URI: "mem://\x1b]0;x\x07", Servers: []string{"evil", "ok"}}},
		},
	}
	var b strings.Builder
	st.WriteTable(&b, now, false)
	table := b.String()
	if loc := controls.FindStringIndex(table); loc != nil {
		t.Errorf("the table holds a control character at %d:\n%q", loc[0], table)
	}
	for _, want := range []string{
		`manifest /tmp/m\x1b[2J/mcpgen.toml`,
		"\n  mcpgen.toml:3:1: a problem with " + escapedHostile + "\n  mcpgen.toml:4:1: another\\u009b2J\n",
		"  exited with status 1 before it was ready; stderr: \\x1b]0;TITLE\\a\\x1b[2J\\x1b[31mFAKE OK\\rboo...\n",
		"\nlast error of evil: exited with status 1 before it was ready; stderr: " + escapedHostile + "\n",
		`  stderr: a\u202eb` + "\n",
		`evil__t\x1b[2J  evil    tool t\x1b[2J`,
		`resource mem://\x1b]0;x\a: served by evil, also offered by ok`,
		"\ncontainment: subreaper (mcpgen status -v says why)\n",
		`; prefix = "conflicts" (SERVER__ only on names that several servers share)`,
	} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
	// A last error that fits its column is not repeated.
	if strings.Contains(table, "last error of short") || strings.Contains(table, "last error of ok") {
		t.Errorf("the table repeats a last error that it shows whole:\n%s", table)
	}
	if strings.Contains(table, "cgroups not writable") {
		t.Errorf("the plain table explains the containment:\n%s", table)
	}

	b.Reset()
	st.WriteTable(&b, now, true)
	if !strings.Contains(b.String(), "\ncontainment: subreaper (cgroups not writable)\n") {
		t.Errorf("the verbose table does not explain the containment:\n%s", b.String())
	}
}
