package proc

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// setup is not supported yet: containers on Windows are Job Objects with
// kill-on-close (issue 9), whose shape the system and holder interfaces
// take: newHolder creates the job (limits map to its memory and CPU rate
// limits), start starts the process suspended, assigns it and resumes it,
// kill terminates the job, release closes its handle.
func setup(context.Context, Options) (system, Report, error) {
	return nil, Report{}, fmt.Errorf("process containment on windows (job objects): %w", errors.ErrUnsupported)
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
