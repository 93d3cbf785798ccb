package proc

// On Windows every process the launcher starts is in a Job Object whose
// only handle the launcher holds, with JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE:
// when the launcher ends, however it ends (taskkill /F included), the
// system closes the handle and kills what the job holds. Nothing outlives
// the launcher, so there is nothing to record or reap.

// A Record records nothing on Windows: see above.
type Record struct{}

// NewRecord returns a Record.
func NewRecord(runtimeDir string) (*Record, error) { return &Record{}, nil }

// Add does nothing: the process is in a job that dies with the launcher.
func (r *Record) Add(pid int) error { return nil }

// Remove does nothing.
func (r *Record) Remove(pid int) error { return nil }

// Reap has nothing to end: what an earlier launcher started died with it.
func Reap(runtimeDir string) (reaped []int, err error) { return nil, nil }
