//go:build unix && !linux && !darwin

package proc

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// What these systems lack, for the report and for a LimitError.
const (
	noContainment = "no cgroups or subreaper outside Linux"
	noCgroups     = "no cgroups (they are Linux's)"
)

// setup contains by process groups: these systems have neither cgroups nor
// a subreaper.
func setup(_ context.Context, opts Options) (system, Report, error) {
	switch opts.Mode {
	case ModeAuto, ModeGroups:
		return newGroupSystem(noCgroups), Report{Mode: ModeGroups, Reason: noContainment}, nil
	}
	return nil, Report{}, fmt.Errorf("%s containment: %w", opts.Mode, errUnavailable)
}

// readLeader knows only the pid here: start times come from sysctl
// kern.proc.pid on darwin, which issue 9 brings.
func readLeader(pid int) groupLeader { return groupLeader{pid: pid} }

// groupMembers cannot list a group here; the caller signals it blindly.
func groupMembers([]groupLeader) ([][]int, bool) { return nil, false }

// Tree is not supported here yet.
func Tree(pid int) ([]ProcID, error) {
	return nil, fmt.Errorf("process tree of %d: %w", pid, errors.ErrUnsupported)
}

// Sweep ends what entries name; no container here records any, so
// entries come only from another system's record.
func Sweep(_ context.Context, entries []Entry, _ time.Duration) (ended []ProcID, left []Entry, err error) {
	if len(entries) == 0 {
		return nil, nil, nil
	}
	return nil, entries, fmt.Errorf("sweep %d recorded entries: %w", len(entries), errors.ErrUnsupported)
}
