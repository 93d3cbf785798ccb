package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// procInfo is what containment needs of /proc/PID/stat.
type procInfo struct {
	pid   int
	state byte // R, S, D, Z...
	ppid  int
	pgid  int
	sid   int
	start uint64 // clock ticks after boot
}

func (p procInfo) id() ProcID { return ProcID{Pid: p.pid, Start: p.start} }

// dead reports whether the process has exited: a zombie waits only for its
// parent to reap it, which is the parent's business.
func (p procInfo) dead() bool { return p.state == 'Z' || p.state == 'X' }

// readProcInfo reads /proc/PID/stat; a process that is gone gives an error
// that satisfies errors.Is(err, fs.ErrNotExist).
//
// It reads with bare system calls into a buffer on the stack: a scan reads
// every process's stat, and os.ReadFile's file object, stat and buffer
// sizing cost several times the read itself.
func readProcInfo(pid int) (procInfo, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return procInfo{}, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	// A stat line is ~300 bytes: the command name is at most 64 bytes
	// (TASK_COMM_LEN is 16, kernel threads' names a little more), and 52
	// numbers follow it.
	var buf [1024]byte
	n, err := unix.Read(fd, buf[:])
	unix.Close(fd)
	if err != nil {
		return procInfo{}, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	p, err := parseProcInfo(buf[:max(n, 0)])
	if err != nil {
		return procInfo{}, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// parseProcInfo parses a line of /proc/PID/stat. The command name (field 2)
// is in parentheses and may hold anything, parentheses and spaces
// included, so the fields after it are counted from the last ')'.
func parseProcInfo(b []byte) (procInfo, error) {
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 1 || end < open {
		return procInfo{}, errors.New("no command name in parentheses")
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return procInfo{}, fmt.Errorf("pid: %w", err)
	}
	f := bytes.Fields(b[end+1:]) // f[0] is field 3
	if len(f) < 20 || len(f[0]) != 1 {
		return procInfo{}, fmt.Errorf("%d fields after the command name, want at least 20", len(f))
	}
	p := procInfo{pid: pid, state: f[0][0]}
	var errs [4]error
	p.ppid, errs[0] = strconv.Atoi(string(f[1]))
	p.pgid, errs[1] = strconv.Atoi(string(f[2]))
	p.sid, errs[2] = strconv.Atoi(string(f[3]))
	p.start, errs[3] = strconv.ParseUint(string(f[19]), 10, 64)
	if err := errors.Join(errs[:]...); err != nil {
		return procInfo{}, err
	}
	return p, nil
}

// procTable reads the stat of every process. A process that ends during
// the scan is left out.
func procTable() ([]procInfo, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	procs := make([]procInfo, 0, len(names))
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue // not a process: /proc/self, /proc/meminfo...
		}
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if p, err := readProcInfo(pid); err == nil {
			procs = append(procs, p)
		}
	}
	return procs, nil
}

// A procIndex is a table of processes by pid, by parent, and by process
// group (the members of each group other than its leader).
type procIndex struct {
	byPid    map[int]procInfo
	children map[int][]int
	groups   map[int][]int
}

func indexProcs(table []procInfo) procIndex {
	x := procIndex{byPid: make(map[int]procInfo, len(table)), children: map[int][]int{}, groups: map[int][]int{}}
	for _, p := range table {
		x.byPid[p.pid] = p
		x.children[p.ppid] = append(x.children[p.ppid], p.pid)
		if p.pgid != p.pid {
			x.groups[p.pgid] = append(x.groups[p.pgid], p.pid)
		}
	}
	return x
}

// alive reports whether id is in the table, with its start time, and has
// not exited.
func (x procIndex) alive(id ProcID) bool {
	p, ok := x.byPid[id.Pid]
	return ok && p.start == id.Start && !p.dead()
}

// below returns the processes of the trees rooted at roots (those still in
// the table with their start time), roots included, each once. Zombies
// are included: their children are not reparented until they are reaped.
func (x procIndex) below(roots []ProcID) []procInfo {
	return below(x.byPid, x.children, procInfo.id, roots)
}

// recorded returns what proc entries for roots cover, as Sweep ends it:
// each root (still in the table with its start time), every process below
// it, and, when the root led a process group (as the processes that
// containers start do), the group's members that started no earlier than
// it, with what lies below them: those whose parent died and left them to
// init are found there. A group never leaves its session: while the root
// lives, members are those of its session too. When it is gone, a process
// of a new group with the root's pid, made after the root's group ended
// and whose maker ended in turn, could pass for a member: that takes the
// pid space to turn over within the life of the record.
func (x procIndex) recorded(roots []ProcID) []procInfo {
	all := slices.Clone(roots)
	for _, r := range roots {
		root, ok := x.byPid[r.Pid]
		if ok && root.start != r.Start {
			continue // another process has the pid: our group ended before
		}
		for _, pid := range x.groups[r.Pid] {
			p := x.byPid[pid]
			if p.start >= r.Start && (!ok || p.sid == root.sid) {
				all = append(all, p.id())
			}
		}
	}
	return x.below(all)
}

func (p procInfo) export() Proc {
	return Proc{Pid: p.pid, PPid: p.ppid, Pgid: p.pgid, Sid: p.sid, State: p.state, Start: p.start}
}

// ReadProc reads what /proc says of process pid. A pid that no process
// has gives an error that satisfies errors.Is(err, fs.ErrNotExist).
func ReadProc(pid int) (Proc, error) {
	p, err := readProcInfo(pid)
	return p.export(), err
}

// Procs lists every process. A process that ends during the listing is
// left out.
func Procs() ([]Proc, error) {
	table, err := procTable()
	if err != nil {
		return nil, err
	}
	ps := make([]Proc, len(table))
	for i, p := range table {
		ps[i] = p.export()
	}
	return ps, nil
}

// Tree returns the process pid and every process below it (its children,
// theirs, and so on), with their start times, as /proc shows them now;
// pid comes first. A process whose parent died is no longer below it:
// record trees while they are whole.
func Tree(pid int) ([]ProcID, error) {
	root, err := readProcInfo(pid)
	if err != nil {
		return nil, fmt.Errorf("process tree of %d: %w", pid, err)
	}
	table, err := procTable()
	if err != nil {
		return nil, err
	}
	x := indexProcs(table)
	x.byPid[root.pid] = root // it may have been missed if the scan raced it
	var ids []ProcID
	for _, p := range x.below([]ProcID{root.id()}) {
		ids = append(ids, p.id())
	}
	return ids, nil
}

// signalProc sends sig to the process id, if it still lives with that start
// time. The check and the signal cannot be misdirected to a process that
// took the pid since: a pidfd names one process for good, and the start
// time read after opening it says which. Where pidfds are missing (Linux
// before 5.3), a plain kill follows the check, which leaves the instant
// between them. It reports whether the signal was sent; a process that is
// gone is no error.
func signalProc(id ProcID, sig unix.Signal) (bool, error) {
	fd, err := unix.PidfdOpen(id.Pid, 0)
	switch {
	case errors.Is(err, unix.ESRCH):
		return false, nil
	case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM):
		// No pidfds here (or a seccomp filter forbids them).
		if p, err := readProcInfo(id.Pid); err != nil || p.start != id.Start {
			return false, nil
		}
		if err := unix.Kill(id.Pid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
			return false, fmt.Errorf("process %d: %v: %w", id.Pid, sig, err)
		}
		return true, nil
	case err != nil:
		return false, fmt.Errorf("process %d: pidfd_open: %w", id.Pid, err)
	}
	defer unix.Close(fd)
	if p, err := readProcInfo(id.Pid); err != nil || p.start != id.Start {
		return false, nil // the pid is another process's now, or nobody's
	}
	if err := unix.PidfdSendSignal(fd, sig, nil, 0); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return false, nil
		}
		return false, fmt.Errorf("process %d: %v: %w", id.Pid, sig, err)
	}
	return true, nil
}
