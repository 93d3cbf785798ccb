//go:build linux || darwin

package proc

// A Proc is a process as the system shows it (/proc/PID/stat on Linux,
// sysctl kern.proc on macOS): what the sweep, tests that look for
// leftovers, and the declared tools' search for processes that hold their
// output need. Pid and Start together name a process: a pid alone may be
// reused.
type Proc struct {
	Pid, PPid, Pgid, Sid int
	State                byte // R, S, D, Z (a zombie: dead, not yet waited for)...
	// Start is when the process started: clock ticks after boot on Linux,
	// microseconds since 1970 on macOS.
	Start uint64
}

// ID names the process for as long as it lives.
func (p Proc) ID() ProcID { return ProcID{Pid: p.Pid, Start: p.Start} }

// Dead reports whether the process has exited (a zombie has).
func (p Proc) Dead() bool { return p.State == 'Z' || p.State == 'X' }

// below returns the processes of the trees rooted at roots (those still in
// byPid with their start time), roots included, each once, parents before
// their children. id names a process of the table; children lists each
// pid's children.
func below[P any](byPid map[int]P, children map[int][]int, id func(P) ProcID, roots []ProcID) []P {
	seen := map[int]bool{}
	var out, queue []P
	for _, r := range roots {
		if p, ok := byPid[r.Pid]; ok && id(p) == r && !seen[r.Pid] {
			seen[r.Pid] = true
			queue = append(queue, p)
		}
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		out = append(out, p)
		for _, c := range children[id(p).Pid] {
			if !seen[c] {
				seen[c] = true
				queue = append(queue, byPid[c])
			}
		}
	}
	return out
}
