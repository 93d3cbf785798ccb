//go:build linux || darwin

package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// pgidsFile is the record of process groups in a runtime dir.
const pgidsFile = "pgids"

// ReapKillWait is how long Reap waits for groups to vanish after SIGKILL:
// only a process stuck in the kernel (a hung NFS mount) takes that long.
const ReapKillWait = 5 * time.Second

// reapPoll is how often Reap looks at the processes while it waits: processes that
// are not its children give no other sign of their end.
const reapPoll = 20 * time.Millisecond

// A groupEntry is one recorded process group.
type groupEntry struct {
	pid   int    // the leader's pid, which is the group's id
	start uint64 // the leader's start time, in clock ticks after boot
	sid   int    // the group's session
}

// A Record is the runtime dir's list of the process groups a launcher has
// started and not yet stopped. A launcher killed with SIGKILL cannot stop
// its servers, and their groups live on; the record lets the next launch
// of the workspace end them (Reap) before it starts anything.
//
// A pid alone is no safe name for a group: once the group is gone, the
// kernel may give the pid to an unrelated process, which a blind kill
// would hit. An entry therefore names the leader by its pid and its start
// time (on Linux field 22 of /proc/PID/stat, in clock ticks after boot; on
// macOS kinfo_proc's p_starttime, from sysctl kern.proc.pid), a pair that
// does not repeat, and also keeps the group's session (field 6; getsid on
// macOS).
//
// Every change rewrites the file atomically (a temporary file renamed over
// it), so that a launcher killed at any moment leaves the old list or the
// new one. A Record is safe for concurrent use. It reads /proc on Linux
// and sysctl kern.proc on macOS (stat_*.go); on Windows a Job Object does
// its work (reap_windows.go).
type Record struct {
	path string

	mu     sync.Mutex
	groups map[int]groupEntry
}

// NewRecord opens the record of runtimeDir. Entries already there (groups
// that Reap could not end) are kept for the next Reap.
func NewRecord(runtimeDir string) (*Record, error) {
	r := &Record{path: filepath.Join(runtimeDir, pgidsFile), groups: map[int]groupEntry{}}
	entries, err := readRecord(r.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range entries {
		r.groups[e.pid] = e
	}
	return r, nil
}

// Add records the process group that pid leads, as started with Setpgid.
// Call it as soon as the process has started: its start time is read from
// the system (ReadStat), so a process already gone cannot be recorded (the
// error then satisfies errors.Is(err, fs.ErrNotExist)).
func (r *Record) Add(pid int) error {
	if pid <= 1 {
		return fmt.Errorf("record process group %d: not a server's pid", pid)
	}
	st, err := ReadStat(pid)
	if err != nil {
		return fmt.Errorf("record process group %d: %w", pid, err)
	}
	if st.Pgid != pid {
		return fmt.Errorf("record process group %d: process %d leads no group (its group is %d): start it with Setpgid", pid, pid, st.Pgid)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.groups[pid] = groupEntry{pid: pid, start: st.Start, sid: st.Sid}
	return r.save()
}

// Remove forgets the group that pid leads. Call it once the group has been
// stopped (Process.Stop ends the group with SIGKILL).
func (r *Record) Remove(pid int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.groups[pid]; !ok {
		return nil
	}
	delete(r.groups, pid)
	return r.save()
}

func (r *Record) save() error {
	entries := make([]groupEntry, 0, len(r.groups))
	for _, e := range r.groups {
		entries = append(entries, e)
	}
	return writeRecord(r.path, entries)
}

// Reap ends the process groups that the record in runtimeDir names, as left
// by a launcher that died without stopping them, and clears the record.
// Call it while holding the session lock and before starting anything:
// the record is then no live launcher's. It returns the leader pids of the
// groups that still had processes to end.
//
// For each entry, Reap signals:
//
//   - the whole group, when its leader lives with the recorded start time:
//     while a group has a member, the kernel does not reuse its id, so the
//     living leader vouches for every member;
//   - when the leader is gone, each process whose group is the recorded one,
//     whose session is the recorded one (a group never leaves its session)
//     and which started no earlier than the leader did (ours all started
//     after it): what passes these checks is a member of our group, unless
//     the pid came back as the leader of a new group in the same session
//     and died in turn, which takes a full turn of the pid space;
//   - nothing when another process has the leader's pid: the group ended
//     before that, since its id was free to be reused.
//
// Checking and signalling are two steps: a process that exits between them
// frees its pid, and only a reuse of that pid within that instant could
// misdirect the signal. pidfd_send_signal would close the gap for a single
// process but cannot signal a group; the gap is accepted.
//
// Signals go as when a launcher stops its servers: SIGTERM, a grace period
// (TermGrace), SIGKILL, then a wait until the processes are gone
// (ReapKillWait at most), for all groups at once. A zombie counts as gone:
// it is dead, and reaping it is its parent's business. Groups that survive
// stay recorded for the next Reap, and the error names them.
func Reap(runtimeDir string) (reaped []int, err error) {
	path := filepath.Join(runtimeDir, pgidsFile)
	entries, err := readRecord(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	live, err := liveGroups(entries)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, g := range live {
		reaped = append(reaped, g.entry.pid)
	}
	if len(live) > 0 {
		errs = append(errs, signalGroups(live, syscall.SIGTERM)...)
		live, err = waitGroups(entries, TermGrace)
		if err == nil && len(live) > 0 {
			errs = append(errs, signalGroups(live, syscall.SIGKILL)...)
			live, err = waitGroups(entries, ReapKillWait)
		}
		if err != nil {
			return reaped, err // the record stays for the next try
		}
	}
	var left []groupEntry
	for _, g := range live {
		left = append(left, g.entry)
		errs = append(errs, fmt.Errorf("process group %d: processes %v outlived SIGKILL: they stay recorded in %s for the next launch", g.entry.pid, g.pids(), path))
	}
	if err := writeRecord(path, left); err != nil {
		errs = append(errs, err)
	}
	slices.Sort(reaped)
	return reaped, errors.Join(errs...)
}

// A liveGroup is a recorded group with processes still running.
type liveGroup struct {
	entry  groupEntry
	leader bool // the leader lives with the recorded start time
	procs  []Stat
}

func (g *liveGroup) pids() []int {
	pids := make([]int, len(g.procs))
	for i, p := range g.procs {
		pids[i] = p.Pid
	}
	return pids
}

// liveGroups scans the processes for what is left of each recorded group, by the
// rules in Reap's comment; zombies are not counted.
func liveGroups(entries []groupEntry) ([]liveGroup, error) {
	procs, err := Scan()
	if err != nil {
		return nil, err
	}
	self, own := os.Getpid(), syscall.Getpgrp()
	var live []liveGroup
	for _, e := range entries {
		if e.pid <= 1 || e.pid == own {
			continue // only a corrupt record could name init or our own group
		}
		g := liveGroup{entry: e}
		recycled := false
		for _, p := range procs {
			if p.Pid == e.pid {
				g.leader = p.Start == e.start
				recycled = !g.leader
			}
		}
		if recycled {
			continue
		}
		for _, p := range procs {
			// A leader that moved to another group still counts.
			ours := (g.leader && (p.Pgid == e.pid || p.Pid == e.pid)) ||
				(p.Pgid == e.pid && p.Sid == e.sid && p.Start >= e.start)
			if ours && p.State != 'Z' && p.Pid != self {
				g.procs = append(g.procs, p)
			}
		}
		if len(g.procs) > 0 {
			live = append(live, g)
		}
	}
	return live, nil
}

// signalGroups sends sig to each live group: to the whole group when its
// leader vouches for it, else to each process found. ESRCH (gone already)
// is what we want.
func signalGroups(live []liveGroup, sig syscall.Signal) []error {
	var errs []error
	name := map[syscall.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGKILL: "SIGKILL"}[sig]
	kill := func(pid int) {
		if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			what := fmt.Sprintf("process %d", pid)
			if pid < 0 {
				what = fmt.Sprintf("process group %d", -pid)
			}
			errs = append(errs, fmt.Errorf("%s: %s: %w", what, name, err))
		}
	}
	for _, g := range live {
		if g.leader {
			kill(-g.entry.pid)
			continue
		}
		for _, p := range g.procs {
			kill(p.Pid)
		}
	}
	return errs
}

// waitGroups waits up to d for the recorded groups to have no live process,
// and returns those that still do.
func waitGroups(entries []groupEntry, d time.Duration) ([]liveGroup, error) {
	deadline := time.Now().Add(d)
	for {
		live, err := liveGroups(entries)
		if err != nil || len(live) == 0 || time.Now().After(deadline) {
			return live, err
		}
		time.Sleep(reapPoll)
	}
}

// recordHeader opens the record for whoever reads it.
const recordHeader = "# mcpgen process groups: leader pid, leader start time (" + startUnit + "), session id\n"

// writeRecord replaces the record at path with entries, atomically; no
// entries remove it.
func writeRecord(path string, entries []groupEntry) error {
	if len(entries) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("process group record: %w", err)
		}
		return nil
	}
	slices.SortFunc(entries, func(a, b groupEntry) int { return a.pid - b.pid })
	b := []byte(recordHeader)
	for _, e := range entries {
		b = fmt.Appendf(b, "%d %d %d\n", e.pid, e.start, e.sid)
	}
	f, err := os.CreateTemp(filepath.Dir(path), pgidsFile+".*.tmp") // mode 0600
	if err != nil {
		return fmt.Errorf("process group record: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	// No fsync: the record guards against the launcher's death, not the
	// machine's, and after a reboot its processes are gone anyway.
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("process group record: %w", err)
	}
	return nil
}

// readRecord reads the record at path.
func readRecord(path string) ([]groupEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	entries, err := parseRecord(data)
	if err != nil {
		return nil, fmt.Errorf("%s:%w: if no process of an earlier launcher is left, remove the file", path, err)
	}
	return entries, nil
}

// A recordError is a malformed line of the record, which only a bug or a
// hand could write.
type recordError struct {
	line int
	text string
}

func (e *recordError) Error() string {
	return fmt.Sprintf("%d: want \"PID START SID\", got %q", e.line, e.text)
}

func parseRecord(data []byte) ([]groupEntry, error) {
	var entries []groupEntry
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, &recordError{n, line}
		}
		pid, err1 := strconv.Atoi(f[0])
		start, err2 := strconv.ParseUint(f[1], 10, 64)
		sid, err3 := strconv.Atoi(f[2])
		// pid 1 is init, and kill(-1) would reach every process.
		if err1 != nil || err2 != nil || err3 != nil || pid <= 1 || sid < 0 {
			return nil, &recordError{n, line}
		}
		entries = append(entries, groupEntry{pid: pid, start: start, sid: sid})
	}
	return entries, nil
}
