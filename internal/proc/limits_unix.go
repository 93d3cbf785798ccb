//go:build unix

package proc

import (
	"fmt"
	"syscall"
)

// Unlimited is a limit that does not bound.
const Unlimited = ^uint64(0)

// RaiseFileLimit raises the soft limit on open files (RLIMIT_NOFILE) to
// the hard one, and returns both as they then are.
//
// Go's runtime has done it already at start (since Go 1.19, on every
// Unix: to the hard limit minus one, and on darwin no higher than
// kern.maxfilesperproc), and restores the old soft limit in the processes
// it starts, for programs that still use select(2). RaiseFileLimit
// therefore sets nothing when the soft limit is within one of the hard
// one: a setrlimit of ours would end that restoring, and servers would
// inherit the raised limit. It sets the limit only when something lowered
// it since the start (prlimit from outside).
func RaiseFileLimit() (soft, hard uint64, err error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, 0, fmt.Errorf("file descriptor limit: %w", err)
	}
	cur, max := uint64(lim.Cur), uint64(lim.Max)
	if max == Unlimited || cur+1 >= max {
		return cur, max, nil
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return cur, max, nil // darwin refuses more than kern.maxfilesperproc: keep what we have
	}
	return max, max, nil
}
