package proc

import (
	"errors"
	"testing"
)

func TestEntryRoundTrip(t *testing.T) {
	tests := []struct {
		name  string
		entry Entry
		line  string
	}{
		{"cgroup", Entry{Kind: EntryCgroup, Path: "/sys/fs/cgroup/user.slice/mcpgen-ws-42", Inode: 9876}, "cgroup 9876 /sys/fs/cgroup/user.slice/mcpgen-ws-42"},
		{"cgroup with spaces", Entry{Kind: EntryCgroup, Path: "/sys/fs/cgroup/a b/mcpgen-x-1", Inode: 7}, "cgroup 7 /sys/fs/cgroup/a b/mcpgen-x-1"},
		{"proc", Entry{Kind: EntryProc, Proc: ProcID{Pid: 4242, Start: 123456789}}, "proc 4242 123456789"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.entry.String(); got != tt.line {
				t.Errorf("String: got %q, want %q", got, tt.line)
			}
			got, err := ParseEntry(tt.line + "\n")
			if err != nil || got != tt.entry {
				t.Errorf("ParseEntry(%q): got %+v, %v; want %+v", tt.line, got, err, tt.entry)
			}
		})
	}
}

func TestParseEntryRefuses(t *testing.T) {
	for _, line := range []string{
		"",
		"cgroup",
		"cgroup 12",
		"cgroup 0 /sys/fs/cgroup/mcpgen-x-1", // no inode is 0
		"cgroup x /sys/fs/cgroup/mcpgen-x-1",
		"cgroup 12 relative/path",
		"proc 1 100",   // init
		"proc 0 100",   // kill(0) would hit our own group
		"proc -5 100",  // a group
		"proc 12",      // no start
		"proc 12 3 4",  // too much
		"proc 12 -3",   // not a tick count
		"group 12 3 4", // the launcher's own record kind, not ours
	} {
		if e, err := ParseEntry(line); err == nil {
			t.Errorf("ParseEntry(%q): got %+v, want an error", line, e)
		}
	}
}

func TestModeText(t *testing.T) {
	for _, m := range []Mode{ModeAuto, ModeGroups, ModeSubreaper, ModeCgroup, ModeJob} {
		b, _ := m.MarshalText()
		var got Mode
		if err := got.UnmarshalText(b); err != nil || got != m {
			t.Errorf("%v: round trip gave %v, %v", m, got, err)
		}
	}
	var m Mode
	if err := m.UnmarshalText([]byte("cgroups")); err == nil {
		t.Errorf(`UnmarshalText("cgroups"): got %v, want an error`, m)
	}
}

func TestReportString(t *testing.T) {
	tests := []struct {
		name          string
		r             Report
		want, summary string
	}{
		{"cgroup with limits", Report{Mode: ModeCgroup, Cgroup: "/sys/fs/cgroup/u/mcpgen-w-1", Limits: []string{"memory", "cpu"}},
			"cgroup v2 at /sys/fs/cgroup/u/mcpgen-w-1, limits: memory, cpu", "cgroup v2, limits: memory, cpu"},
		{"cgroup without limits", Report{Mode: ModeCgroup, Cgroup: "/sys/fs/cgroup/unified/mcpgen-w-1", Reason: "no memory: bound to v1"},
			"cgroup v2 at /sys/fs/cgroup/unified/mcpgen-w-1, limits: none (no memory: bound to v1)", "cgroup v2, limits: none"},
		{"subreaper", Report{Mode: ModeSubreaper, Reason: "cgroups not writable: mkdir /sys/fs/cgroup/x: permission denied"},
			"subreaper (cgroups not writable: mkdir /sys/fs/cgroup/x: permission denied)", "subreaper"},
		{"groups", Report{Mode: ModeGroups, Reason: "no cgroups or subreaper outside Linux"},
			"process groups only (no cgroups or subreaper outside Linux)", "process groups only"},
		{"job objects", Report{Mode: ModeJob}, "job objects", "job objects"},
	}
	for _, tt := range tests {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
		if got := tt.r.Summary(); got != tt.summary {
			t.Errorf("%s: summary %q, want %q", tt.name, got, tt.summary)
		}
	}
}

func TestLimitsWithoutCgroups(t *testing.T) {
	tests := []struct {
		name string
		lim  Limits
		want string // empty: no error
	}{
		{"none", Limits{}, ""},
		{"memory", Limits{MemoryMax: 1 << 30}, "memory_max needs the cgroup v2 memory controller delegated to mcpgen; this system has SYS: run the launcher under systemd-run --user --scope -p Delegate=yes, or remove memory_max"},
		{"cpu", Limits{CPUMax: 0.5}, "cpu_max needs the cgroup v2 cpu controller delegated to mcpgen; this system has SYS: run the launcher under systemd-run --user --scope -p Delegate=yes, or remove cpu_max"},
	}
	for _, tt := range tests {
		err := limitsWithoutCgroups(tt.lim, "SYS")
		got := ""
		if err != nil {
			got = err.Error()
			var le *LimitError
			if !errors.As(err, &le) {
				t.Errorf("%s: got %T, want a *LimitError", tt.name, err)
			}
		}
		if got != tt.want {
			t.Errorf("%s:\ngot  %q\nwant %q", tt.name, got, tt.want)
		}
	}
}
