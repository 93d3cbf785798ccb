package proc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// How often the subreaper looks for orphans without a SIGCHLD to prompt
// it, and how long it rests after a scan at least: a process orphaned deep
// in a tree sends us no signal, so a ticker must find it; a storm of
// SIGCHLDs (many servers exiting) must not turn into a storm of scans. The
// rest grows with the scan's cost (ten times it), which bounds the CPU
// spent scanning /proc to a tenth of one.
const (
	scanInterval = 500 * time.Millisecond
	scanRest     = 50 * time.Millisecond
)

// subreaperActive is set while a subreaperSystem is the process's: the
// attribute and the orphans are the process's, not a Containment's.
var subreaperActive atomic.Bool

// A subreaperSystem is ModeSubreaper. The process is a child subreaper
// (PR_SET_CHILD_SUBREAPER): when a process below it loses its parent, the
// kernel makes it our child instead of init's. Any child of ours that no
// container started is therefore an orphan of something we started, and
// is killed and reaped. Each container ends its own process tree, which
// the scans keep track of, so that it can be recorded.
//
// Go's os/exec waits for each of its children by pid (a pidfd); waiting
// for "any child" would steal those. The subreaper therefore waits for
// orphans by pid only, and never for a pid that a container started. A
// consequence: while it runs, every child of this process must be started
// by a Container, or the subreaper takes it for an orphan.
type subreaperSystem struct {
	self     int
	noCgroup string // why cgroups are not used, for a LimitError
	interval time.Duration
	rest     time.Duration

	// starting is held for reading by each start, from the fork until the
	// child is registered, and for writing while orphans are judged: a
	// child is never judged before its starter could register it.
	starting sync.RWMutex

	mu      sync.Mutex
	closed  bool
	holders map[*treeHolder]struct{}
	// started holds every process a container started (pid: start time)
	// until it has been reaped by its os/exec Wait: never ours to wait for.
	started map[int]uint64
	// retired are started processes whose container was released, to
	// forget once reaped.
	retired map[int]uint64
	// inherited are the children this process had before it became a
	// subreaper (a wrapper's: `helper & exec mcpgen launch`), which
	// nothing of ours orphaned. They are left alone, dead or alive:
	// whoever started them may wait for them (os/exec, if it did), and
	// forgotten once reaped.
	inherited map[int]uint64
	pending   map[int]struct{} // orphans killed and not yet reaped
	orphans   int              // orphans killed so far

	// snapMu guards snap, the latest read of the process table: the
	// scanner and every container's kill, signal and pids share reads
	// (see snapshot), so that a thousand servers stopping at once do not
	// read /proc a thousand times each.
	snapMu sync.Mutex
	snap   *snapshot

	change chan struct{} // one pending notice that entries changed
	sigs   chan os.Signal
	stop   chan struct{} // closed by close: the scanner ends
	done   chan struct{} // closed when the scanner has ended
}

// setupSubreaper makes this process a child subreaper and starts the
// scanner, a goroutine that ends when close is called.
func setupSubreaper(noCgroup string, interval time.Duration) (*subreaperSystem, error) {
	if !subreaperActive.CompareAndSwap(false, true) {
		return nil, errors.New("this process has a subreaper containment already")
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		subreaperActive.Store(false)
		return nil, fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err)
	}
	s := &subreaperSystem{
		self:      os.Getpid(),
		noCgroup:  noCgroup,
		interval:  cmp.Or(interval, scanInterval),
		rest:      min(cmp.Or(interval, scanRest), scanRest),
		holders:   map[*treeHolder]struct{}{},
		started:   map[int]uint64{},
		retired:   map[int]uint64{},
		inherited: map[int]uint64{},
		pending:   map[int]struct{}{},
		change:    make(chan struct{}, 1),
		sigs:      make(chan os.Signal, 1),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	// Our children now were not orphaned to us: we were no subreaper.
	if table, err := procTable(); err == nil {
		for _, p := range table {
			if p.ppid == s.self {
				s.inherited[p.pid] = p.start
			}
		}
	}
	signal.Notify(s.sigs, unix.SIGCHLD)
	go s.run()
	return s, nil
}

// run scans on each SIGCHLD (a child died: its children are ours now) and
// on the ticker, resting between scans. It ends when s.stop is closed.
func (s *subreaperSystem) run() {
	defer close(s.done)
	tick := time.NewTicker(s.interval)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-s.sigs:
		case <-tick.C:
		}
		began := time.Now()
		s.scan()
		rest := time.NewTimer(max(s.rest, 10*time.Since(began)))
		select {
		case <-s.stop:
			rest.Stop()
			return
		case <-rest.C:
		}
	}
}

// A snapshot is one read of every process, indexed.
type snapshot struct {
	began time.Time // when the read began
	x     procIndex
	err   error
	done  chan struct{} // closed once read
}

// snapshot returns a read of the process table that began at since or
// later: one under way or done that began late enough serves every caller
// that asks meanwhile.
func (s *subreaperSystem) snapshot(since time.Time) (procIndex, error) {
	s.snapMu.Lock()
	for {
		r := s.snap
		if r != nil && !r.began.Before(since) {
			s.snapMu.Unlock()
			<-r.done
			return r.x, r.err
		}
		if r != nil {
			select {
			case <-r.done:
			default:
				// Under way, begun too early: the next read follows it.
				s.snapMu.Unlock()
				<-r.done
				s.snapMu.Lock()
				continue
			}
		}
		r = &snapshot{began: time.Now(), done: make(chan struct{})}
		s.snap = r
		s.snapMu.Unlock()
		table, err := procTable()
		if err == nil {
			r.x = indexProcs(table)
		}
		r.err = err
		close(r.done)
		return r.x, r.err
	}
}

// scan kills and reaps orphans, and updates what each container holds.
func (s *subreaperSystem) scan() {
	x, err := s.snapshot(time.Now())
	if err != nil {
		return // /proc unreadable for a moment: the next tick tries again
	}
	s.reapOrphans(x)
	s.track(x)
}

// reapOrphans kills every child of ours in x that no container started,
// and reaps those killed before, by pid.
func (s *subreaperSystem) reapOrphans(x procIndex) {
	s.starting.Lock()
	defer s.starting.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, pid := range x.children[s.self] {
		p := x.byPid[pid]
		if s.ours(p.pid, p.start) {
			continue
		}
		if st, ok := s.inherited[p.pid]; ok && st == p.start {
			continue
		}
		// Read again now that no start is under way: since the table was
		// read, the pid may have been reaped by its Wait and given to a
		// child that a container has just started.
		cur, err := readProcInfo(p.pid)
		if err != nil || cur.ppid != s.self || s.ours(cur.pid, cur.start) {
			continue
		}
		if !cur.dead() {
			// Our unreaped child: its pid cannot name another process.
			if unix.Kill(cur.pid, unix.SIGKILL) == nil {
				s.orphans++
			}
		}
		s.pending[cur.pid] = struct{}{}
	}
	for pid := range s.pending {
		var ws unix.WaitStatus
		wpid, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		if wpid == pid || errors.Is(err, unix.ECHILD) {
			delete(s.pending, pid)
		}
	}
	if len(s.inherited) > 0 {
		for pid, start := range s.inherited {
			if p, ok := x.byPid[pid]; !ok || p.start != start {
				delete(s.inherited, pid)
			}
		}
	}
	for pid, start := range s.retired {
		// Forget a released container's process once its Wait has
		// reaped it: until then it is a zombie child that only os/exec
		// may wait for.
		if p, err := readProcInfo(pid); err != nil || p.start != start {
			delete(s.retired, pid)
			if s.started[pid] == start {
				delete(s.started, pid)
			}
		}
	}
}

// ours reports whether a container started the process. Called with s.mu.
func (s *subreaperSystem) ours(pid int, start uint64) bool {
	st, ok := s.started[pid]
	return ok && st == start
}

// track updates each container's descendants and says so on s.change when
// any has changed.
func (s *subreaperSystem) track(x procIndex) {
	s.mu.Lock()
	holders := slices.Collect(maps.Keys(s.holders))
	s.mu.Unlock()
	changed := false
	for _, h := range holders {
		if h.track(x) {
			changed = true
		}
	}
	if changed {
		select {
		case s.change <- struct{}{}:
		default: // a notice is pending already
		}
	}
}

func (s *subreaperSystem) checkLimits(lim Limits) error { return limitsWithoutCgroups(lim, s.noCgroup) }

func (s *subreaperSystem) newHolder(string, Limits) (holder, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("containment closed")
	}
	h := &treeHolder{sys: s, known: map[int]uint64{}}
	s.holders[h] = struct{}{}
	return h, nil
}

// entries implements system: each container's are its own.
func (s *subreaperSystem) entries() []Entry { return nil }

func (s *subreaperSystem) changed() <-chan struct{} { return s.change }

// close kills every container's processes, then every orphan, stops the
// scanner and gives up the subreaper attribute.
func (s *subreaperSystem) close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	holders := slices.Collect(maps.Keys(s.holders))
	s.mu.Unlock()
	var errs []error
	for _, h := range holders {
		if err := h.kill(ctx); err != nil {
			errs = append(errs, err)
		}
		_ = h.release()
	}
	close(s.stop)
	<-s.done
	signal.Stop(s.sigs)
	// The last orphans: those of the containers just killed.
	err := poll(ctx, func() (bool, error) {
		x, err := s.snapshot(time.Now())
		if err != nil {
			return false, err
		}
		s.reapOrphans(x)
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.pending) == 0, nil
	})
	if err != nil {
		errs = append(errs, fmt.Errorf("orphans: %w", err))
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0); err != nil {
		errs = append(errs, fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER, 0): %w", err))
	}
	subreaperActive.Store(false)
	return errors.Join(errs...)
}

// orphansPending reports whether orphans were killed and not yet reaped.
func (s *subreaperSystem) orphansPending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending) > 0
}

// orphanCount is how many orphans the subreaper has killed.
func (s *subreaperSystem) orphanCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.orphans
}

// A treeHolder is a container in ModeSubreaper: the processes it started
// and every process below them.
type treeHolder struct {
	sys *subreaperSystem

	mu       sync.Mutex
	leaders  []procInfo     // started here
	known    map[int]uint64 // descendants seen by the last scan
	released bool
}

// start implements holder.
func (h *treeHolder) start(cmd *exec.Cmd, attached bool) error {
	attr := cmd.SysProcAttr
	if attr == nil {
		attr = &syscall.SysProcAttr{}
	}
	if !attr.Setsid && !attached {
		attr.Setpgid = true
	}
	cmd.SysProcAttr = attr
	s := h.sys
	s.starting.RLock()
	defer s.starting.RUnlock()
	p, err := s.startRead(cmd)
	if err != nil {
		return err
	}
	h.lead(p)
	return nil
}

// adopt implements adopter: the process, a child of ours, becomes a
// leader of the tree.
func (h *treeHolder) adopt(cmd *exec.Cmd) error {
	h.sys.starting.RLock()
	defer h.sys.starting.RUnlock()
	p, err := readProcInfo(cmd.Process.Pid)
	if err != nil {
		return fmt.Errorf("read the process: %w", err)
	}
	h.lead(p)
	return nil
}

// lead makes p, a child of ours that h started or adopted, a leader of
// its tree. s.starting is held for reading.
func (h *treeHolder) lead(p procInfo) {
	h.sys.mu.Lock()
	h.sys.started[p.pid] = p.start
	h.sys.mu.Unlock()
	h.mu.Lock()
	h.leaders = append(h.leaders, p)
	h.mu.Unlock()
}

// startRead starts cmd and reads what /proc says of it; a start whose
// process cannot be read is killed. s.starting is held for reading.
func (s *subreaperSystem) startRead(cmd *exec.Cmd) (procInfo, error) {
	if err := cmd.Start(); err != nil {
		return procInfo{}, err
	}
	// Not reaped until its Wait: /proc has it, zombie or not.
	p, err := readProcInfo(cmd.Process.Pid)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return procInfo{}, fmt.Errorf("read the started process: %w", err)
	}
	return p, nil
}

// startOutside implements outsider: the child is registered as started,
// so that no scan takes it for an orphan, and as retired, so that it is
// forgotten once its Wait has reaped it, as a released container's
// process is (unless a container adopts it meanwhile).
func (s *subreaperSystem) startOutside(cmd *exec.Cmd) error {
	s.starting.RLock()
	defer s.starting.RUnlock()
	p, err := s.startRead(cmd)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.started[p.pid], s.retired[p.pid] = p.start, p.start
	s.mu.Unlock()
	return nil
}

// members returns the container's processes in x: its leaders, what lies
// below them and below the descendants seen before (whose parents may have
// died), and the members of the leaders' process groups.
func (h *treeHolder) members(x procIndex) []procInfo {
	h.mu.Lock()
	roots := make([]ProcID, 0, len(h.leaders)+len(h.known))
	for _, l := range h.leaders {
		roots = append(roots, l.id())
	}
	for pid, start := range h.known {
		roots = append(roots, ProcID{pid, start})
	}
	leaders := append([]procInfo(nil), h.leaders...)
	h.mu.Unlock()
	ms := x.below(roots)
	seen := map[int]bool{}
	for _, m := range ms {
		seen[m.pid] = true
	}
	for _, l := range leaders {
		for _, pid := range x.groups[l.pid] {
			// A group never leaves its session; a member started after
			// the leader did. The leader's pid cannot name another group
			// while this one has members.
			p := x.byPid[pid]
			if !seen[p.pid] && p.sid == l.sid && p.start >= l.start {
				seen[p.pid] = true
				ms = append(ms, p)
			}
		}
	}
	return ms
}

// track records the descendants in x and reports whether they changed.
func (h *treeHolder) track(x procIndex) bool {
	ms := h.members(x)
	known := make(map[int]uint64, len(ms))
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range ms {
		if !m.dead() && !h.isLeader(m) {
			known[m.pid] = m.start
		}
	}
	if maps.Equal(known, h.known) {
		return false
	}
	h.known = known
	return true
}

func (h *treeHolder) isLeader(p procInfo) bool {
	for _, l := range h.leaders {
		if l.pid == p.pid && l.start == p.start {
			return true
		}
	}
	return false
}

// signal implements holder.
func (h *treeHolder) signal(sig syscall.Signal) error {
	x, err := h.sys.snapshot(time.Now())
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range h.members(x) {
		if !m.dead() {
			if _, err := signalProc(m.id(), sig); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// kill implements holder: SIGKILL to every member until none is left.
// What a dying member leaves comes to us, and is killed as an orphan;
// kill returns once the orphans killed are gone too, so that nothing the
// container started runs when it returns.
func (h *treeHolder) kill(ctx context.Context) error {
	err := poll(ctx, func() (bool, error) {
		x, err := h.sys.snapshot(time.Now())
		if err != nil {
			return false, err
		}
		h.sys.reapOrphans(x)
		left := false
		for _, m := range h.members(x) {
			if m.dead() {
				continue
			}
			left = true
			if _, err := signalProc(m.id(), unix.SIGKILL); err != nil {
				return false, err
			}
		}
		return !left && !h.sys.orphansPending(), nil
	})
	if err != nil {
		return fmt.Errorf("process tree: %w", err)
	}
	return nil
}

// release implements holder: the container's started processes are
// forgotten once their Waits have reaped them.
func (h *treeHolder) release() error {
	h.mu.Lock()
	h.released = true
	leaders := h.leaders
	h.known = map[int]uint64{}
	h.mu.Unlock()
	s := h.sys
	s.mu.Lock()
	delete(s.holders, h)
	for _, l := range leaders {
		s.retired[l.pid] = l.start
	}
	s.mu.Unlock()
	return nil
}

// entries implements holder: the leaders and the descendants seen, each
// with what lies below it when the record is swept.
func (h *treeHolder) entries() []Entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return nil
	}
	var es []Entry
	for _, l := range h.leaders {
		es = append(es, Entry{Kind: EntryProc, Proc: l.id()})
	}
	for pid, start := range h.known {
		es = append(es, Entry{Kind: EntryProc, Proc: ProcID{pid, start}})
	}
	return es
}

// pids implements holder.
func (h *treeHolder) pids() ([]int, error) {
	x, err := h.sys.snapshot(time.Now())
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, m := range h.members(x) {
		if !m.dead() {
			pids = append(pids, m.pid)
		}
	}
	return pids, nil
}
