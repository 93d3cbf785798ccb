package proc

// Unlimited is a limit that does not bound.
const Unlimited = ^uint64(0)

// RaiseFileLimit has nothing to raise on Windows: a process's handles are
// not bounded by a per-process limit that a launch could reach.
func RaiseFileLimit() (soft, hard uint64, err error) { return Unlimited, Unlimited, nil }
