//go:build linux || darwin

package proc

// A Stat is what the reaper, and tests looking for leftovers, need to know
// of a process: on Linux from /proc/PID/stat (the fields named below), on
// macOS from sysctl kern.proc. Pid and Start together name a process: a
// pid alone may be reused.
type Stat struct {
	Pid   int
	Comm  string // field 2, the command name
	State byte   // field 3: R, S, D, Z (a zombie: dead, not yet waited for)...
	PPid  int    // field 4, the parent
	Pgid  int    // field 5, the process group
	Sid   int    // field 6, the session
	Start uint64 // field 22: see startUnit
}
