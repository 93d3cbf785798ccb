package proc

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// setup contains each container in a Job Object (job.go, job_windows.go)
// with kill-on-close: its processes, and every process they start, die
// when the job's handle is closed, which the system does when this process
// ends however it ends (taskkill /F included). Limits map to the job's
// memory limit and CPU rate cap.
func setup(_ context.Context, opts Options) (system, Report, error) {
	switch opts.Mode {
	case ModeAuto, ModeJob:
		return newJobSystem(winJobs{}), Report{Mode: ModeJob}, nil
	}
	return nil, Report{}, fmt.Errorf("%s containment: %w", opts.Mode, errUnavailable)
}

// Tree is not supported on Windows yet.
func Tree(pid int) ([]ProcID, error) {
	return nil, fmt.Errorf("process tree of %d: %w", pid, errors.ErrUnsupported)
}

// Sweep has nothing to do on Windows: a job with kill-on-close ends with
// the launcher that held it.
func Sweep(_ context.Context, entries []Entry, _ time.Duration) (ended []ProcID, left []Entry, err error) {
	if len(entries) == 0 {
		return nil, nil, nil
	}
	return nil, entries, fmt.Errorf("sweep %d recorded entries: %w", len(entries), errors.ErrUnsupported)
}
