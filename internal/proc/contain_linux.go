package proc

import (
	"context"
	"fmt"
)

// autoCgroup is setupCgroup, which tests replace to see the fallbacks.
var autoCgroup = setupCgroup

// setup picks the strongest containment available: a cgroup, else the
// subreaper, else process groups.
func setup(_ context.Context, opts Options) (system, Report, error) {
	switch opts.Mode {
	case ModeCgroup:
		s, err := setupCgroup(opts.Name)
		if err != nil {
			return nil, Report{}, fmt.Errorf("cgroup containment: %w", err)
		}
		s.noKill = opts.noCgroupKill
		return s, s.report(), nil
	case ModeSubreaper:
		s, err := setupSubreaper("no cgroups in use (mcpgen was asked to contain servers as a subreaper)", opts.scanInterval)
		if err != nil {
			return nil, Report{}, fmt.Errorf("subreaper containment: %w", err)
		}
		return s, Report{Mode: ModeSubreaper, Reason: "asked for"}, nil
	case ModeGroups:
		return newGroupSystem("no cgroups in use (mcpgen was asked to contain servers by process groups)"),
			Report{Mode: ModeGroups, Reason: "asked for"}, nil
	case ModeAuto:
	default:
		return nil, Report{}, fmt.Errorf("%s containment: %w", opts.Mode, errUnavailable)
	}
	cg, err := autoCgroup(opts.Name)
	if err == nil {
		cg.noKill = opts.noCgroupKill
		return cg, cg.report(), nil
	}
	why := err.Error()
	noCgroup := "no cgroup that mcpgen can write (" + why + ")"
	sr, err := setupSubreaper(noCgroup, opts.scanInterval)
	if err == nil {
		return sr, Report{Mode: ModeSubreaper, Reason: why}, nil
	}
	why += "; no subreaper: " + err.Error()
	return newGroupSystem(noCgroup), Report{Mode: ModeGroups, Reason: why}, nil
}

// readLeader reads what /proc says of a process just started.
func readLeader(pid int) groupLeader {
	p, err := readProcInfo(pid)
	if err != nil {
		return groupLeader{pid: pid}
	}
	return groupLeader{pid: pid, start: p.start, sid: p.sid, known: true}
}

// groupMembers lists the live processes of each leader's group: those in
// it and in its session (a group never leaves its session) that started no
// earlier than its leader. One scan of /proc serves all leaders.
func groupMembers(leaders []groupLeader) ([][]int, bool) {
	if len(leaders) == 0 {
		return nil, true
	}
	table, err := procTable()
	if err != nil {
		return nil, false
	}
	members := make([][]int, len(leaders))
	for i, l := range leaders {
		if !l.known {
			return nil, false
		}
		for _, p := range table {
			if p.pgid == l.pid && p.sid == l.sid && p.start >= l.start && !p.dead() {
				members[i] = append(members[i], p.pid)
			}
		}
	}
	return members, true
}
