package proc

import "fmt"

// What a launch holds open, in file descriptors. Counted for the launcher
// as it is (launcher.Start, a LogFile per server) and checked by
// measurement: 50 servers started as the supervisor starts them hold 252
// descriptors more than none (5.04 each).
const (
	// FilesPerServer: the server's stdin and stdout pipe ends, the read end
	// of its stderr pipe, its log file, and the pidfd os/exec keeps for
	// its Wait.
	FilesPerServer = 5
	// FilesPerClient: a connected client's socket.
	FilesPerClient = 1
	// FilesPerStart: held only while a server starts: the child's three
	// pipe ends, os/exec's exec-status pipe (two), the cgroup directory.
	FilesPerStart = 6
	// FilesReserved: the launcher's own: stdio, the session lock, the
	// control socket, the runtime's epoll and its wakeup, the watcher's
	// inotify, a record being rewritten, /proc and cgroup files being
	// read, with room to spare for what a library opens.
	FilesReserved = 64
)

// A Capacity is what a launch is asked to hold at once.
type Capacity struct {
	Servers int // stdio servers running
	Clients int // clients connected, over all servers
	Starts  int // servers starting at the same time
}

// Files is how many file descriptors c needs.
func (c Capacity) Files() int {
	return FilesReserved + c.Servers*FilesPerServer + c.Clients*FilesPerClient + c.Starts*FilesPerStart
}

// A CapacityError is a launch that cannot fit in the file descriptor
// limit.
type CapacityError struct {
	Need       Capacity
	Soft, Hard uint64 // the limit, after raising the soft one as far as allowed
}

func (e *CapacityError) Error() string {
	n := e.Need
	return fmt.Sprintf("%d servers need about %d file descriptors (%d each, %d for %d clients, %d for %d starting at once, %d for the launcher), but the limit is %d (hard limit %d): raise the hard limit (ulimit -Hn as root, LimitNOFILE= in a systemd unit) or run fewer servers",
		n.Servers, n.Files(), FilesPerServer, n.Clients*FilesPerClient, n.Clients, n.Starts*FilesPerStart, n.Starts, FilesReserved, e.Soft, e.Hard)
}

// CheckCapacity refuses, with a *CapacityError, a launch that cannot hold
// c in the file descriptor limit, raised to the hard limit first: better
// refused at the start with the numbers than failing at the thousandth
// server, with "too many open files" and half a session running.
func CheckCapacity(c Capacity) error {
	soft, hard, err := RaiseFileLimit()
	if err != nil {
		return err
	}
	if soft != Unlimited && uint64(c.Files()) > soft {
		return &CapacityError{Need: c, Soft: soft, Hard: hard}
	}
	return nil
}
