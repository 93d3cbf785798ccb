package sandbox

// Landlock is reached through github.com/landlock-lsm/go-landlock, kept by
// the Landlock maintainers: it knows each ABI's rights and downgrades a
// ruleset to the running kernel's (best effort), and applies it to every
// thread of the Go runtime, which the raw syscall (one thread) does not.
// It brings kernel.org/.../libcap/psx for that, which links C code into
// cgo builds; the release builds (CGO_ENABLED=0) use Go's own
// AllThreadsSyscall.

import (
	"encoding/json"
	"fmt"
	"github.com/mcpgen/mcpgen/internal/pid1"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// entry is the hidden first argument that makes mcpgen the sandbox's setup
// step (Main): mcpgen ENTRY POLICY-JSON PROGRAM ARGS...
const entry = "__mcpgen_sandbox"

// A plan is what the child does, decided by the parent (Prepare) from the
// policy and what the kernel offers, and passed to Main in argv.
type plan struct {
	Policy Policy `json:"policy"`
	// PidNS: the child is PID 1 of a new PID and mount namespace, mounts
	// its own /proc, and runs the program as its one child.
	PidNS bool `json:"pidns,omitempty"`
	// NetNS: the child is in a new network namespace: with no interface
	// up (none), or its loopback up (loopback, hosts).
	NetNS bool `json:"netns,omitempty"`
	LoUp  bool `json:"lo,omitempty"`
	// Channel is the descriptor of the egress channel (hosts), 0 if none.
	Channel int `json:"channel,omitempty"`
	// UserNS: the namespaces are made inside a new user namespace, where
	// mcpgen is not root (root needs none).
	UserNS bool `json:"userns,omitempty"`
}

// Landlock's ABI versions that add what the Report speaks of.
const (
	abiRefer    = 2 // linking and renaming across directories
	abiTruncate = 3
	abiTCP      = 4
	abiScoped   = 6 // signals and abstract unix sockets stay inside
	abiUnix     = 9 // connecting to a unix socket by its path
	abiUDP      = 10
)

// landlockABI is the running kernel's Landlock ABI, 0 without Landlock.
// A variable, for tests that pretend an older kernel.
var landlockABI = func() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// namespaces reports whether mcpgen can make PID, mount and network
// namespaces for its children, and whether it needs a user namespace to.
var namespaces = func() (ok, userNS bool, why string) {
	if os.Geteuid() == 0 {
		return true, false, ""
	}
	b, err := os.ReadFile("/proc/sys/user/max_user_namespaces")
	if err != nil || strings.TrimSpace(string(b)) == "0" {
		return false, false, "user namespaces are disabled (user.max_user_namespaces)"
	}
	if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return false, false, "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone)"
	}
	if b, err := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); err == nil && strings.TrimSpace(string(b)) == "1" {
		return false, false, "AppArmor restricts unprivileged user namespaces"
	}
	return true, true, ""
}

// decide makes the plan for p on this kernel, and the report of it.
func decide(p *Policy) (plan, Report) {
	pl := plan{Policy: *p}
	var r Report
	abi := landlockABI()
	nsOK, userNS, nsWhy := namespaces()
	pl.PidNS, pl.UserNS = nsOK, nsOK && userNS

	var mech []string
	if abi > 0 {
		mech = append(mech, "landlock ABI "+strconv.Itoa(abi))
		r.Enforced = append(r.Enforced, "files: read only "+list(p.Read, "no extra paths")+" and write only "+list(p.Write, "nowhere")+", besides the system paths a process needs")
		if abi < abiRefer {
			r.NotEnforced = append(r.NotEnforced, "files: links and renames across directories are refused outright (Landlock ABI < 2)")
		}
		if abi < abiTruncate {
			r.NotEnforced = append(r.NotEnforced, "files: truncating a readable file is not confined (Landlock ABI < 3)")
		}
		if abi >= abiScoped {
			r.Enforced = append(r.Enforced, "signals and abstract unix sockets: only within the sandbox")
		} else {
			r.NotEnforced = append(r.NotEnforced, "signals and abstract unix sockets: may reach processes outside (Landlock ABI < 6)")
		}
	} else {
		r.NotEnforced = append(r.NotEnforced, "files: not confined (the kernel has no Landlock)")
	}

	switch p.Network.Mode {
	case NetAll:
		r.Enforced = append(r.Enforced, "network: all (not confined, as asked)")
	case NetNone:
		switch {
		case nsOK:
			pl.NetNS = true
			r.Enforced = append(r.Enforced, "network: none (a network namespace of its own, with no interface up)")
		case abi >= abiUDP:
			r.Enforced = append(r.Enforced, "network: no TCP or UDP (Landlock)")
		case abi >= abiTCP:
			r.Enforced = append(r.Enforced, "network: no TCP connect or bind (Landlock)")
			r.NotEnforced = append(r.NotEnforced, "network: UDP is not confined (no network namespace: "+nsWhy+"; Landlock ABI < 10)")
		default:
			r.NotEnforced = append(r.NotEnforced, "network: not confined (no network namespace: "+nsWhy+"; Landlock ABI < 4)")
		}
	case NetLoopback:
		switch {
		case nsOK:
			pl.NetNS, pl.LoUp = true, true
			r.Enforced = append(r.Enforced, "network: its own loopback only (a network namespace of its own)")
		default:
			// Landlock filters TCP by port, not by host: it cannot tell
			// a loopback from the internet.
			r.NotEnforced = append(r.NotEnforced, "network: loopback only is not enforced, any host is reachable (no network namespace: "+nsWhy+"; Landlock filters ports, not hosts)")
		}
	case NetHosts:
		switch {
		case nsOK:
			pl.NetNS, pl.LoUp = true, true
			r.Enforced = append(r.Enforced, "network: only "+strings.Join(p.Network.Hosts, ", ")+" (a network namespace of its own; HTTPS through mcpgen's egress proxy, HTTPS_PROXY, and this machine's services by their port)")
		case abi >= abiTCP:
			r.Enforced = append(r.Enforced, "network: TCP connect only to the ports of "+strings.Join(p.Network.Hosts, ", ")+" (Landlock)")
			r.NotEnforced = append(r.NotEnforced, "network: the hosts of the allowlist are not enforced, only their ports; UDP is not confined (no network namespace: "+nsWhy+")")
		default:
			r.NotEnforced = append(r.NotEnforced, "network: the allowlist is not enforced (no network namespace: "+nsWhy+"; Landlock ABI < 4)")
		}
	}

	if nsOK {
		ns := "pid, mount"
		if pl.NetNS {
			ns += ", net"
		}
		if pl.UserNS {
			ns += " (in a user namespace)"
		}
		mech = append(mech, "namespaces: "+ns)
		r.Enforced = append(r.Enforced, "other processes: hidden (a PID namespace with its own /proc)")
	} else if abi > 0 {
		// Landlock alone leaves /proc/PID of same-user processes readable
		// (their environ, their maps): restrict grants the program's own
		// /proc/PID only.
		r.Enforced = append(r.Enforced, "other processes: /proc withheld but for the server's own /proc/PID (no PID namespace: "+nsWhy+")")
		r.NotEnforced = append(r.NotEnforced, "other processes: what the server starts cannot read its own /proc/self either")
	} else {
		r.NotEnforced = append(r.NotEnforced, "other processes: /proc/PID of processes outside the sandbox stays readable ("+nsWhy+")")
	}
	switch {
	case abi >= abiUnix:
		r.Enforced = append(r.Enforced, "unix sockets by path: only those under the write grants, or made in the sandbox")
	case abi > 0:
		// Landlock before ABI 9 confines opening files, not connecting
		// to a unix socket by its path. The sandbox lists no directory
		// it was not granted, so a socket's path must be known: the
		// variables that give them away are not passed (see hiddenEnv).
		r.Caveats = append(r.Caveats, "unix sockets by path: connecting is not confined (Landlock ABI "+strconv.Itoa(abi)+"); a server that knows a socket's path (/var/run/docker.sock) can use it, but SSH_AUTH_SOCK and the like are not passed")
	}
	if len(mech) == 0 {
		mech = append(mech, "none (no Landlock, no namespaces)")
	}
	r.Platform = strings.Join(mech, ", ")
	return pl, r
}

// Enforces says whether this platform enforces a sandbox at all.
const Enforces = true

// Inspect says what the platform would enforce of p, without starting
// anything: for validate and status.
func Inspect(p *Policy) Report {
	_, r := decide(p)
	return r
}

// Prepare makes cmd, made by exec.Command with its Env set, start inside
// the sandbox p: cmd then runs mcpgen's hidden entry (Main), which applies
// p to itself and runs the command. It makes the command's private
// temporary directory (its TMPDIR, writable) and, for a host allowlist,
// serves its egress proxy; the Setup's Close releases them once the
// command has exited. A strict policy that cannot be enforced in full is
// a StrictError, and cmd is left as it was. cmd.SysProcAttr is kept, with
// namespaces added to it.
func Prepare(cmd *exec.Cmd, p *Policy) (*Setup, error) {
	pl, s, err := prepare(cmd, p)
	if err != nil {
		return s, err
	}
	self, err := os.Executable()
	if err != nil {
		s.Close()
		return s, fmt.Errorf("sandbox: finding mcpgen itself: %v", err)
	}
	js, err := json.Marshal(pl)
	if err != nil {
		s.Close()
		return s, err
	}
	cmd.Args = append([]string{self, entry, string(js), cmd.Path}, cmd.Args[1:]...)
	cmd.Path = self
	cmd.SysProcAttr = withNamespaces(cmd.SysProcAttr, pl)
	return s, nil
}

// withNamespaces is attr (nil: a new one) with the namespaces of pl added.
func withNamespaces(attr *syscall.SysProcAttr, pl plan) *syscall.SysProcAttr {
	if attr == nil {
		attr = &syscall.SysProcAttr{}
	}
	if pl.PidNS {
		attr.Cloneflags |= unix.CLONE_NEWPID | unix.CLONE_NEWNS
	}
	if pl.NetNS {
		attr.Cloneflags |= unix.CLONE_NEWNET
	}
	if pl.UserNS {
		// mcpgen's own uid and gid, mapped to themselves: files look the
		// same inside, and nothing more is granted. The setup step keeps
		// what it needs to mount /proc and bring up the loopback across
		// its exec (ambient), and drops it before the server runs.
		attr.Cloneflags |= unix.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
		attr.GidMappingsEnableSetgroups = false
		attr.AmbientCaps = append(attr.AmbientCaps, unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN)
	}
	return attr
}

// prepare decides the plan for cmd under p, and makes what lives as long
// as the command: its private temporary directory (in the plan's write
// grants and cmd's TMPDIR) and, for a host allowlist, its egress proxy,
// whose channel is added to cmd.ExtraFiles. cmd.Env is set to what the
// program gets. A strict policy that cannot be enforced in full is a
// StrictError, and nothing is made.
func prepare(cmd *exec.Cmd, p *Policy) (plan, *Setup, error) {
	if err := p.Check(); err != nil {
		return plan{}, nil, err
	}
	pl, r := decide(p)
	return prepareDecided(cmd, p, pl, r)
}

// prepareDecided is prepare for a policy already checked and decided.
func prepareDecided(cmd *exec.Cmd, p *Policy, pl plan, r Report) (plan, *Setup, error) {
	s := &Setup{Report: r}
	if err := strict(p, r); err != nil {
		return pl, s, err
	}
	tmp, err := os.MkdirTemp("", "mcpgen-sandbox-")
	if err != nil {
		return pl, s, fmt.Errorf("sandbox: its temporary directory: %v", err)
	}
	s.TempDir = tmp
	s.release = append(s.release, func() { _ = os.RemoveAll(tmp) })
	pl.Policy.Write = append(slices.Clone(pl.Policy.Write), tmp)
	cmd.Env = sandboxEnv(cmd.Env, []string{"TMPDIR=" + tmp, EnvInside + "=1"})
	if pl.NetNS && p.Network.Mode == NetHosts {
		if pl.Channel, err = startEgress(cmd, p.Network.Hosts, s); err != nil {
			s.Close()
			return pl, s, err
		}
	}
	return pl, s, nil
}

// Main is the sandbox's setup step, when mcpgen was started by Prepare's
// command: it applies the policy to itself and runs the program, and
// returns the status to exit with. ok is false when this process is not
// one, and the caller goes on as mcpgen.
func Main() (code int, ok bool) {
	switch {
	case len(os.Args) == 2 && os.Args[1] == spareEntry:
		return spareMain(), true
	case len(os.Args) < 4 || os.Args[1] != entry:
		return 0, false
	}
	var pl plan
	err := json.Unmarshal([]byte(os.Args[2]), &pl)
	if err != nil {
		err = fmt.Errorf("reading the plan: %v", err)
	} else {
		err = run(pl, os.Args[3], os.Args[4:], nil)
	}
	fmt.Fprintf(os.Stderr, "mcpgen: sandbox: %v\n", err)
	return 126, true // as a shell says of a command it could not run
}

// run applies the plan and runs program: in place of this process, or,
// as PID 1 of a namespace, as its one child (exiting with its status).
func run(pl plan, program string, args []string, l *pid1.Listener) error {
	// Landlock is applied to this thread alone (restrictThread), and its
	// signal scope lets a thread signal only processes of its own domain:
	// the thread that forks the program must be the one that signals it.
	// So all of this runs on one thread, for good (the process execs or
	// exits).
	runtime.LockOSThread()
	path, err := exec.LookPath(program)
	if err != nil {
		return err
	}
	if path, err = filepath.Abs(path); err != nil {
		return err
	}
	if pl.PidNS {
		if err := ownProc(); err != nil {
			return err
		}
	}
	if pl.LoUp {
		if err := loUp(); err != nil {
			return err
		}
	}
	if pl.Channel != 0 {
		proxy, err := forwardInside(pl.Channel, pl.Policy.Network.Hosts)
		if err != nil {
			return err
		}
		for _, kv := range proxyEnv(proxy) {
			k, v, _ := strings.Cut(kv, "=")
			os.Setenv(k, v)
		}
	}
	if pl.UserNS {
		// What the setup needed is done: the server gets no capability.
		if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
			return fmt.Errorf("dropping capabilities: %v", err)
		}
	}
	if err := restrict(&pl, path); err != nil {
		return err
	}
	argv := append([]string{program}, args...)
	if !pl.PidNS {
		return fmt.Errorf("exec %s: %w", path, syscall.Exec(path, argv, os.Environ()))
	}
	os.Exit(reaper(l, path, argv))
	return nil
}

// ownProc mounts a /proc of the new PID namespace over the host's, in a
// mount namespace whose changes stay private to it.
func ownProc() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %v", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting /proc: %v", err)
	}
	return nil
}

// System paths a process needs to start and run: read-only, and ignored
// where missing.
var (
	systemDirs = []string{
		"/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin",
		"/etc/ssl", "/etc/ca-certificates", "/etc/pki", "/etc/ld.so.conf.d",
		"/etc/alternatives", "/usr/share/zoneinfo",
	}
	systemFiles = []string{
		"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.preload",
		"/etc/localtime", "/etc/timezone", "/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf",
		"/etc/passwd", "/etc/group", "/etc/host.conf", "/etc/gai.conf",
		"/etc/mime.types", "/dev/urandom", "/dev/random",
	}
	// Written to by habit (2>/dev/null, a terminal's tty).
	systemRWFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"}
)

// SystemPaths are what every sandboxed process may read on this platform
// besides its grants (restrict grants them whatever the policy): the
// programs and libraries of the system, the dynamic loader's files,
// certificates, name resolution, users and time zones, and the devices
// that programs open without asking. Not the whole of /etc, which holds
// other programs' secrets.
func SystemPaths() []string { return slices.Concat(systemDirs, systemFiles, systemRWFiles) }

// landlockConfig is the newest Landlock that go-landlock knows: on a
// kernel with an older one it is downgraded (BestEffort), and decide's
// Report says what that leaves out.
var landlockConfig = landlock.V11

// restrict applies the plan's Landlock rules to this process and all it
// will start. Landlock absent is not an error: Prepare's Report said so.
func restrict(pl *plan, program string) error {
	if landlockABI() == 0 {
		return nil
	}
	p := &pl.Policy
	rules := []landlock.Rule{
		landlock.RODirs(systemDirs...).IgnoreIfMissing(),
		landlock.ROFiles(systemFiles...).IgnoreIfMissing(),
		landlock.RWFiles(systemRWFiles...).IgnoreIfMissing(),
	}
	// The program itself, where its link points; its directory's
	// libraries are the policy's to grant.
	if real, err := filepath.EvalSymlinks(program); err == nil {
		rules = append(rules, landlock.ROFiles(real, program))
	}
	if pl.PidNS {
		rules = append(rules, landlock.RODirs("/proc")) // its own /proc
	} else {
		// The host's /proc: this process's own directory only, which is
		// the program's after exec; what it starts cannot read theirs.
		rules = append(rules, landlock.RODirs("/proc/"+strconv.Itoa(os.Getpid())))
	}
	for _, path := range slices.Concat(p.System, p.Read) {
		rules = append(rules, pathRule(path, false))
	}
	for _, path := range p.Write {
		rules = append(rules, pathRule(path, true).WithRefer().WithResolveUnix())
	}
	switch {
	case pl.NetNS || p.Network.Mode == NetAll || p.Network.Mode == NetLoopback:
		// The namespace confines the network (or nothing is to be):
		// Landlock's TCP rules would only get in the way of the
		// loopback and the egress proxy's port. Files and the scopes
		// (signals, abstract unix sockets) are still Landlock's.
		cfg := landlockConfig
		cfg.HandledAccessNet = 0
		return restrictThread(cfg, rules)
	case p.Network.Mode == NetHosts:
		for _, hp := range p.Network.Hosts {
			port, err := allowPort(hp)
			if err != nil {
				return err
			}
			rules = append(rules, landlock.ConnectTCP(port))
		}
		// Names are resolved by the process itself here (no proxy
		// without a namespace): DNS over UDP, from a port of its own.
		rules = append(rules, landlock.ConnectSendUDP(53), landlock.BindUDP(0))
	}
	// NetNone and NetHosts: TCP confined to the ports granted, if any.
	return restrictThread(landlockConfig, rules)
}

// restrictThread applies cfg's rules (downgraded to the kernel's ABI) to
// the calling thread alone, which run locked: the program is exec'd, or
// forked, from it, and inherits its domain. The setup step's other
// threads are its own code, not the server's, and stay as they are (a
// domain cannot ptrace or signal out of itself); restricting every thread
// of the Go runtime (what Config.Restrict does before ABI 8) stops them
// all, which cost a start some milliseconds.
func restrictThread(cfg landlock.Config, rules []landlock.Rule) error {
	fd, flags, err := cfg.BestEffort().NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("landlock: %v", err)
	}
	if fd < 0 {
		return nil // nothing the kernel can enforce: the Report said so
	}
	defer unix.Close(fd)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("landlock: no_new_privs: %v", err)
	}
	if err := llsys.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock: %v", err)
	}
	return nil
}

// pathRule grants path for reading (and writing): a directory and all
// under it, or one file. A path that does not exist is granted nothing.
func pathRule(path string, write bool) landlock.FSRule {
	fi, err := os.Stat(path)
	dir := err != nil || fi.IsDir()
	switch {
	case dir && write:
		return landlock.RWDirs(path).IgnoreIfMissing()
	case dir:
		return landlock.RODirs(path).IgnoreIfMissing()
	case write:
		return landlock.RWFiles(path).IgnoreIfMissing()
	default:
		return landlock.ROFiles(path).IgnoreIfMissing()
	}
}

// reaper runs path as the one child of this process, PID 1 of the
// sandbox's PID namespace (see pid1), and returns its status. The child
// leads a process group of its own, so that a signal to mcpgen's group
// reaches it once, through here. l, if not nil, has been catching
// signals since before the order came (a spare's).
func reaper(l *pid1.Listener, path string, argv []string) int {
	if l == nil {
		l = pid1.Listen()
	}
	status, err := l.Run(path, argv, &syscall.SysProcAttr{Setpgid: true})
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcpgen: sandbox: starting %s: %v\n", path, err)
		return 126
	}
	return status
}
