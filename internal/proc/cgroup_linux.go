package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// A cgroupHost is where this process sits in the cgroup v2 hierarchy, as
// /proc/self/mountinfo and /proc/self/cgroup say.
type cgroupHost struct {
	mount     string // the cgroup2 mount point
	mountRoot string // the part of the hierarchy mounted there, as /proc/PID/cgroup names it
	readOnly  bool   // mounted ro
	self      string // our cgroup, as /proc/PID/cgroup names it ("/" or "/a/b")
	dir       string // our cgroup's directory
	// v1 lists the controllers bound to cgroup v1 hierarchies, which the
	// v2 hierarchy therefore cannot offer (a hybrid layout).
	v1 []string
}

// rel is the name in /proc/PID/cgroup of the cgroup at dir, a directory
// of the mount.
func (h *cgroupHost) rel(dir string) string {
	return path.Join(h.mountRoot, "/"+strings.TrimPrefix(dir, h.mount))
}

// findCgroup locates our cgroup v2 directory. The error says why there is
// none to use, in words for status.
func findCgroup() (*cgroupHost, error) {
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	return locateCgroup(mountinfo, cg)
}

// locateCgroup is findCgroup on the files' contents.
func locateCgroup(mountinfo, cgroup []byte) (*cgroupHost, error) {
	h := &cgroupHost{}
	for _, line := range strings.Split(string(cgroup), "\n") {
		// "ID:CONTROLLERS:PATH"; v2 is "0::PATH".
		id, rest, ok1 := strings.Cut(line, ":")
		ctrls, path, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 {
			continue
		}
		switch {
		case id == "0" && ctrls == "":
			h.self = path
		case ctrls != "":
			for _, c := range strings.Split(ctrls, ",") {
				if !strings.HasPrefix(c, "name=") {
					h.v1 = append(h.v1, c)
				}
			}
		}
	}
	if h.self == "" {
		return nil, errors.New("no cgroup v2 hierarchy: this system has cgroup v1 only")
	}
	// mountinfo: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
	found := false
	for _, line := range strings.Split(string(mountinfo), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 6 || len(g) < 1 || g[0] != "cgroup2" {
			continue
		}
		root, point := unescapeMount(f[3]), unescapeMount(f[4])
		var rel string
		switch {
		case root == "/":
			rel = h.self
		case h.self == root:
			rel = "/"
		case strings.HasPrefix(h.self, root+"/"):
			rel = strings.TrimPrefix(h.self, root)
		default:
			continue // a mount of another part of the hierarchy
		}
		ro := slices.Contains(strings.Split(f[5], ","), "ro")
		if found && (ro || !h.readOnly) {
			continue // keep the first writable mount
		}
		found = true
		h.mount, h.mountRoot, h.readOnly = point, root, ro
		h.dir = filepath.Join(point, rel)
	}
	if !found {
		return nil, fmt.Errorf("mcpgen's cgroup %s is on no mounted cgroup v2 hierarchy", h.self)
	}
	if h.readOnly {
		return nil, fmt.Errorf("cgroup v2 at %s is mounted read-only", h.mount)
	}
	return h, nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// limitControllers are the controllers that Limits use, in report order.
var limitControllers = []string{"memory", "cpu"}

// A cgroupSystem is ModeCgroup: a session cgroup below ours, holding a leaf
// per container.
type cgroupSystem struct {
	host    *cgroupHost
	session string // the session cgroup's directory
	inode   uint64
	// limits are the controllers enabled for the leaves; missing says, for
	// each one that is not, what the system has instead.
	limits  []string
	missing map[string]string
	noKill  bool // pretend cgroup.kill is missing (kernels before 5.14), for tests

	seq    atomic.Int64
	mu     sync.Mutex
	closed bool // no new containers
}

// setupCgroup makes the session cgroup below ours. The error says why
// cgroups cannot be used, for status.
func setupCgroup(name string) (*cgroupSystem, error) {
	host, err := findCgroup()
	if err != nil {
		return nil, err
	}
	var session string
	base := "mcpgen-" + cgroupName(name) + "-" + strconv.Itoa(os.Getpid())
	for i := 1; ; i++ {
		session = filepath.Join(host.dir, base)
		if i > 1 {
			// A dead launcher's, which had our pid: its record sweeps it.
			session += "." + strconv.Itoa(i)
		}
		err = os.Mkdir(session, 0o755)
		if !errors.Is(err, fs.ErrExist) || i == 10 {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cgroups not writable: %w", err)
	}
	ino, err := dirInode(session)
	if err == nil {
		err = probeCloneInto(session)
	}
	if err != nil {
		os.Remove(session)
		return nil, err
	}
	s := &cgroupSystem{host: host, session: session, inode: ino}
	s.limits, s.missing = enableLimits(host, session)
	return s, nil
}

// probeCloneInto checks that a process can be started straight into a
// cgroup below session (clone3 with CLONE_INTO_CGROUP, Linux 5.7), which
// Go's SysProcAttr.UseCgroupFD needs: an older kernel, or a seccomp filter
// that refuses clone3 (some container runtimes'), would fail every start.
// Moving a process after its start is no substitute: what it started in
// between would escape. The probe execs a program that cannot exist (no
// regular file can be made in a cgroup's directory): ENOENT means the
// child was made in the cgroup, and os/exec's machinery has reaped it.
func probeCloneInto(session string) error {
	dir := filepath.Join(session, "probe")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("cgroups not writable: %w", err)
	}
	defer os.Remove(dir)
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	_, err = syscall.ForkExec(filepath.Join(dir, "none"), nil, &syscall.ProcAttr{
		Sys: &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd},
	})
	if errors.Is(err, syscall.ENOENT) {
		return nil
	}
	if err == nil {
		err = errors.New("a program that cannot exist started") // unreachable
	}
	return fmt.Errorf("cannot start a process into a cgroup (clone3 with CLONE_INTO_CGROUP needs Linux 5.7 and no seccomp filter against it): %w", err)
}

// cgroupName makes name safe as a cgroup's name: letters, digits, '_' and
// '-', at most 48 of them.
func cgroupName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) > 48 {
		b = b[:48]
	}
	if len(b) == 0 {
		return "_"
	}
	return string(b)
}

func dirInode(dir string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return 0, &fs.PathError{Op: "stat", Path: dir, Err: err}
	}
	return st.Ino, nil
}

// A cgroupFacts is what enableLimits learns of our cgroup.
type cgroupFacts struct {
	root        bool     // the hierarchy's root, where processes and controllers mix
	controllers []string // offered to us (cgroup.controllers)
	subtree     []string // enabled for our children (cgroup.subtree_control)
	alone       bool     // we are the only process in it
}

// A limitsPlan is what enableLimits does to make limitControllers
// available to the session cgroup.
type limitsPlan struct {
	moveSelf bool     // move ourselves into a leaf, so that controllers can be enabled
	enable   []string // to enable in our cgroup's subtree_control
	use      []string // to enable in the session cgroup's subtree_control
	missing  map[string]string
}

// planLimits decides how to enable the limit controllers. cgroup v2 enables
// a controller for a cgroup's children only when the cgroup holds no
// process (the root excepted): when our cgroup holds us alone, we move into
// a leaf of it first, as systemd's Delegate= expects of a delegated scope;
// when it holds others too, limits are not to be had.
func planLimits(host *cgroupHost, f cgroupFacts) limitsPlan {
	p := limitsPlan{missing: map[string]string{}}
	var offered []string
	for _, c := range limitControllers {
		switch {
		case slices.Contains(f.controllers, c):
			offered = append(offered, c)
		case slices.Contains(host.v1, c):
			p.missing[c] = fmt.Sprintf("cgroup v2 at %s without the %s controller, which is bound to a cgroup v1 hierarchy", host.mount, c)
		default:
			p.missing[c] = fmt.Sprintf("cgroup v2 at %s, whose %s controller is not delegated to mcpgen's cgroup %s", host.mount, c, host.dir)
		}
	}
	var enable []string
	for _, c := range offered {
		if !slices.Contains(f.subtree, c) {
			enable = append(enable, c)
		}
	}
	if len(enable) > 0 && !f.root && !f.alone {
		for _, c := range enable {
			p.missing[c] = fmt.Sprintf("cgroup v2 at %s, where mcpgen's cgroup %s holds other processes too, so that no controller can be enabled below it", host.mount, host.dir)
		}
		offered = slices.DeleteFunc(offered, func(c string) bool { return slices.Contains(enable, c) })
		if len(offered) == 0 {
			offered = nil
		}
		enable = nil
	}
	p.moveSelf = len(enable) > 0 && !f.root
	p.enable, p.use = enable, offered
	return p
}

// launcherLeaf is the cgroup we move into when our own must enable
// controllers for the session's.
const launcherLeaf = "mcpgen-launcher"

// enableLimits makes the limit controllers available to the session's
// leaves, as far as the system allows, and says what is missing.
func enableLimits(host *cgroupHost, session string) ([]string, map[string]string) {
	f := cgroupFacts{
		controllers: readWords(filepath.Join(host.dir, "cgroup.controllers")),
		subtree:     readWords(filepath.Join(host.dir, "cgroup.subtree_control")),
	}
	_, err := os.Stat(filepath.Join(host.dir, "cgroup.type"))
	f.root = errors.Is(err, fs.ErrNotExist) // only the root has no type
	if pids, err := readPids(filepath.Join(host.dir, "cgroup.procs")); err == nil {
		f.alone = len(pids) == 1 && pids[0] == os.Getpid()
	}
	p := planLimits(host, f)
	fail := func(cs []string, err error) {
		for _, c := range cs {
			p.missing[c] = fmt.Sprintf("cgroup v2 at %s, where enabling the %s controller failed (%v)", host.mount, c, err)
		}
	}
	if p.moveSelf {
		leaf := filepath.Join(host.dir, launcherLeaf)
		err := os.Mkdir(leaf, 0o755)
		if err == nil || errors.Is(err, fs.ErrExist) {
			err = writeFile(filepath.Join(leaf, "cgroup.procs"), strconv.Itoa(os.Getpid()))
		}
		if err != nil {
			fail(p.enable, err)
			p.use = slices.DeleteFunc(p.use, func(c string) bool { return slices.Contains(p.enable, c) })
			p.enable = nil
		}
	}
	for _, c := range p.enable {
		if err := writeFile(filepath.Join(host.dir, "cgroup.subtree_control"), "+"+c); err != nil {
			fail([]string{c}, err)
			p.use = slices.DeleteFunc(p.use, func(u string) bool { return u == c })
		}
	}
	var used []string
	for _, c := range p.use {
		if err := writeFile(filepath.Join(session, "cgroup.subtree_control"), "+"+c); err != nil {
			fail([]string{c}, err)
			continue
		}
		used = append(used, c)
	}
	return used, p.missing
}

// checkLimits implements system.
func (s *cgroupSystem) checkLimits(lim Limits) error {
	if lim.MemoryMax > 0 && !slices.Contains(s.limits, "memory") {
		return &LimitError{Key: "memory_max", Controller: "memory", System: s.missing["memory"]}
	}
	if lim.CPUMax > 0 && !slices.Contains(s.limits, "cpu") {
		return &LimitError{Key: "cpu_max", Controller: "cpu", System: s.missing["cpu"]}
	}
	return nil
}

// report implements the cgroup half of Setup's report.
func (s *cgroupSystem) report() Report {
	r := Report{Mode: ModeCgroup, Cgroup: s.session, Limits: slices.Clone(s.limits)}
	var why []string
	for _, c := range limitControllers {
		if m, ok := s.missing[c]; ok {
			why = append(why, "no "+c+": "+m)
		}
	}
	r.Reason = strings.Join(why, "; ")
	return r
}

// cpuPeriod is the cpu.max period, in microseconds: the kernel's default.
const cpuPeriod = 100000

// newHolder implements system: a leaf cgroup with lim written into it.
func (s *cgroupSystem) newHolder(name string, lim Limits) (holder, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, errors.New("containment closed")
	}
	dir := filepath.Join(s.session, cgroupName(name)+"-"+strconv.FormatInt(s.seq.Add(1), 10))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	var err error
	if lim.MemoryMax > 0 {
		err = writeFile(filepath.Join(dir, "memory.max"), strconv.FormatInt(lim.MemoryMax, 10))
		// One server, one outcome: when it runs out, the kernel kills the
		// leaf's processes together rather than one helper at random.
		if err == nil {
			_ = writeFile(filepath.Join(dir, "memory.oom.group"), "1")
		}
	}
	if lim.CPUMax > 0 && err == nil {
		quota := max(int64(lim.CPUMax*cpuPeriod+0.5), 1000) // the kernel's least quota is 1ms
		err = writeFile(filepath.Join(dir, "cpu.max"), fmt.Sprintf("%d %d", quota, cpuPeriod))
	}
	if err != nil {
		os.Remove(dir)
		return nil, err
	}
	return &cgroupHolder{sys: s, dir: dir}, nil
}

func (s *cgroupSystem) entries() []Entry {
	return []Entry{{Kind: EntryCgroup, Path: s.session, Inode: s.inode}}
}

func (s *cgroupSystem) changed() <-chan struct{} { return nil }

// close implements system: one kill for the whole session, then the
// cgroups go, leaves first.
func (s *cgroupSystem) close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	if err := killCgroup(ctx, s.session, s.noKill); err != nil {
		return err
	}
	return removeCgroupTree(s.session)
}

// A cgroupHolder is one container's leaf.
type cgroupHolder struct {
	sys *cgroupSystem
	dir string
}

// start implements holder: the process starts in the leaf (clone3 with
// CLONE_INTO_CGROUP), so that nothing it does can happen outside it.
func (h *cgroupHolder) start(cmd *exec.Cmd, attached bool) error {
	attr := cmd.SysProcAttr
	if attr == nil {
		attr = &syscall.SysProcAttr{}
	}
	if attr.UseCgroupFD {
		return errors.New("the command already names a cgroup")
	}
	fd, err := unix.Open(h.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		// %v: no answer to errors.Is about the command (not found...).
		return fmt.Errorf("open cgroup %s: %v", h.dir, err)
	}
	defer unix.Close(fd)
	attr.UseCgroupFD, attr.CgroupFD = true, fd
	if !attr.Setsid && !attached {
		attr.Setpgid = true
	}
	cmd.SysProcAttr = attr
	return cmd.Start()
}

// adopt implements adopter: the process moves into the leaf.
func (h *cgroupHolder) adopt(cmd *exec.Cmd) error {
	return writeFile(filepath.Join(h.dir, "cgroup.procs"), strconv.Itoa(cmd.Process.Pid))
}

func (h *cgroupHolder) signal(sig syscall.Signal) error {
	return signalCgroup(h.dir, h.sys.host, sig)
}

func (h *cgroupHolder) kill(ctx context.Context) error {
	return killCgroup(ctx, h.dir, h.sys.noKill)
}

func (h *cgroupHolder) release() error { return removeCgroupTree(h.dir) }

func (h *cgroupHolder) entries() []Entry { return nil } // the session's entry covers it

func (h *cgroupHolder) pids() ([]int, error) { return cgroupPids(h.dir) }

// cgroupPids lists the processes in the cgroup at dir and below: a process
// may make cgroups inside its own leaf when it can write there.
func cgroupPids(dir string) ([]int, error) {
	var pids []int
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path != dir && errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		ps, err := readPids(filepath.Join(path, "cgroup.procs"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		pids = append(pids, ps...)
		return nil
	})
	return pids, err
}

// signalCgroup sends sig to every process in the cgroup at dir and below.
// Each is opened as a pidfd and its membership checked through it before
// the signal goes, so that a pid reused since the listing is never hit.
func signalCgroup(dir string, host *cgroupHost, sig syscall.Signal) error {
	pids, err := cgroupPids(dir)
	if err != nil {
		return err
	}
	rel := host.rel(dir)
	var errs []error
	for _, pid := range pids {
		if err := signalMember(pid, rel, sig); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// signalMember sends sig to pid if it is in the cgroup named rel (as in
// /proc/PID/cgroup) or below it.
func signalMember(pid int, rel string, sig syscall.Signal) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err != nil {
		if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("process %d: pidfd_open: %w", pid, err)
		}
		fd = -1 // no pidfds: check, then kill
	} else {
		defer unix.Close(fd)
	}
	cg, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil || !inCgroup(cg, rel) {
		return nil // gone, or no longer ours
	}
	if fd >= 0 {
		err = unix.PidfdSendSignal(fd, sig, nil, 0)
	} else {
		err = unix.Kill(pid, sig)
	}
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("process %d: %v: %w", pid, sig, err)
	}
	return nil
}

// inCgroup reports whether /proc/PID/cgroup's v2 line names rel or a
// cgroup below it.
func inCgroup(procCgroup []byte, rel string) bool {
	for _, line := range bytes.Split(procCgroup, []byte("\n")) {
		if path, ok := bytes.CutPrefix(line, []byte("0::")); ok {
			p := string(path)
			return p == rel || strings.HasPrefix(p, strings.TrimSuffix(rel, "/")+"/")
		}
	}
	return false
}

// killCgroup ends every process in the cgroup at dir and below, and waits
// until the kernel says it is empty. cgroup.kill (Linux 5.14) does it in one
// write that no fork can outrun; before it, the cgroup is frozen, so that
// nothing in it can fork, and its processes are killed until none is left.
func killCgroup(ctx context.Context, dir string, noKill bool) error {
	killFile := filepath.Join(dir, "cgroup.kill")
	if _, err := os.Stat(killFile); err == nil && !noKill {
		if err := writeFile(killFile, "1"); err != nil {
			return err
		}
		return waitEmpty(ctx, dir)
	} else if errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(dir); err != nil {
			return nil // gone already: nothing left in it
		}
	}
	freeze := filepath.Join(dir, "cgroup.freeze")
	frozen := writeFile(freeze, "1") == nil
	err := poll(ctx, func() (bool, error) {
		pids, err := cgroupPids(dir)
		if err != nil {
			return false, err
		}
		for _, pid := range pids {
			// Read from the cgroup: a pid listed there cannot be another
			// process's until it is reaped, and a killed process that was
			// reaped in between has left the list anyway.
			if err := unix.Kill(pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
				return false, fmt.Errorf("process %d: %w", pid, err)
			}
		}
		return cgroupEmpty(dir)
	})
	if frozen {
		// What is left is empty or dying; a frozen empty cgroup still goes.
		_ = writeFile(freeze, "0")
	}
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", dir, err)
	}
	return nil
}

// waitEmpty waits until the cgroup at dir has no process below it.
func waitEmpty(ctx context.Context, dir string) error {
	if err := poll(ctx, func() (bool, error) { return cgroupEmpty(dir) }); err != nil {
		return fmt.Errorf("cgroup %s: %w", dir, err)
	}
	return nil
}

// cgroupEmpty reports whether the cgroup at dir is empty ("populated 0" in
// cgroup.events), counting its descendants; a zombie is not counted. A
// cgroup that is gone is empty.
func cgroupEmpty(dir string) (empty bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "populated "); ok {
			return v == "0", nil
		}
	}
	return false, fmt.Errorf("%s/cgroup.events: no \"populated\" line", dir)
}

// removeCgroupTree removes the cgroup at dir and those below it, deepest
// first. An empty cgroup's interface files go with it, so rmdir is all.
func removeCgroupTree(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range slices.Backward(dirs) {
		if err := unix.Rmdir(d); err != nil && !errors.Is(err, unix.ENOENT) {
			if errors.Is(err, unix.EBUSY) {
				err = errors.New("processes are still in it (the next launch's sweep ends them)")
			}
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// readWords reads a space-separated cgroup file; a missing or unreadable
// file is empty.
func readWords(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return strings.Fields(string(b))
}

// readPids reads a cgroup.procs file.
func readPids(path string) ([]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// writeFile writes s to a cgroup interface file, which takes one write.
func writeFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
