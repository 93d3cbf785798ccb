package sandbox

// macOS's sandbox is Seatbelt: a profile in its language (SBPL, a Scheme)
// that sandbox-exec compiles and applies to itself before it execs the
// program, so that the profile covers the program and everything it
// starts. The profile is made here, from the Policy, by a pure function,
// with the rest of what Prepare does on macOS, so that Linux's tests run
// them: sandbox_darwin.go only says whether sandbox-exec is there.
//
// The profile denies everything, then allows what a process needs to
// start and what the Policy grants; it has no deny rule after an allow,
// so no rule's precedence matters. It never allows file-link: Seatbelt
// checks a hard link's new name only, so a link into a write grant would
// give any file a granted name. It is ASCII throughout, as libsandbox's
// reader requires: a path that is not is passed by parameter. Paths are matched as Seatbelt sees
// them, symbolic links resolved: /tmp, /var and /etc are /private/tmp,
// /private/var and /private/etc, and both are granted.

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// sandboxExec is macOS's sandbox-exec, by its full path: found on PATH,
// it would be whoever controls PATH who chose the jailer.
const sandboxExec = "/usr/bin/sandbox-exec"

// System paths every sandboxed process may read, and run programs from
// (process-exec, and map libraries executable): the system's programs,
// libraries and frameworks, the dyld shared cache (under /System/Library,
// and from macOS 13 /System/Volumes/Preboot/Cryptexes), Homebrew's
// prefixes (/usr/local is under /usr), the developer tools. Not /System as a whole: /System/Volumes/Data is every user's
// data, by another path.
var seatbeltSystemDirs = []string{
	"/usr", "/bin", "/sbin",
	"/System/Library", "/System/iOSSupport", "/System/Cryptexes", "/System/Volumes/Preboot/Cryptexes",
	"/Library/Apple", "/Library/Frameworks", "/opt/homebrew",
	// Where /usr/bin's git, python3 and make lead, through xcrun; a
	// bundle whole, since xcrun loads its shared frameworks too. The
	// developer directory xcode-select chose is added by Prepare.
	"/Library/Developer/CommandLineTools", "/Applications/Xcode.app",
}

// System files and directories every sandboxed process may read (not
// run): certificates, name resolution (resolv.conf is a link into
// /private/var/run), users and groups, time zones, the local directory's
// records that getpwuid reads, dyld's own files, the shell /bin/sh runs
// (/private/var/select), what the developer tools' shims read before
// they run (xcode-select's choice, the accepted licence), the system's
// logging and global preferences.
var seatbeltSystemReads = []string{
	"/private/etc/ssl", "/private/etc/resolv.conf", "/private/var/run/resolv.conf", "/private/etc/hosts",
	"/private/etc/services", "/private/etc/protocols", "/private/etc/passwd", "/private/etc/group",
	"/private/etc/localtime", "/private/var/db/timezone", "/private/var/db/DarwinDirectory/local/recordStore.data",
	"/private/var/db/dyld", "/private/var/select", "/private/var/db/xcode_select_link",
	"/Library/Preferences/com.apple.dt.Xcode.plist", "/Library/Preferences/.GlobalPreferences.plist",
	"/Library/Preferences/Logging", "/dev/random", "/dev/urandom",
}

// seatbeltSysctls are the sysctls a process may read: the machine's
// hardware and the kernel's version and limits, which runtimes ask at
// start (Go's, Node's libuv and V8, Python's). Never kern.procargs2 and
// kern.procargs: they tell any process's arguments and, of the same
// user's, its environment (an agent's API keys).
var seatbeltSysctls = []string{
	"kern.argmax", "kern.boottime", "kern.hostname", "kern.maxfiles", "kern.maxfilesperproc",
	"kern.maxproc", "kern.ngroups", "kern.osproductversion", "kern.osrelease", "kern.ostype",
	"kern.osvariant_status", "kern.osversion", "kern.secure_kernel", "kern.usrstack64", "kern.version",
	"kern.tcsm_available", "sysctl.proc_cputype", "vm.loadavg", "machdep.ptrauth_enabled",
	"security.mac.lockdown_mode_state",
}

// seatbeltSysctlPrefixes are sysctl families a process may read: hardware
// and CPU features; the network's interfaces (getifaddrs: Node's
// os.networkInterfaces()); and a process's or a group's kinfo_proc (its
// name, ids and state, not its arguments), which runtimes read of
// themselves (is a debugger attached?) and Codex's and Claude Code's
// profiles allow too.
var seatbeltSysctlPrefixes = []string{"hw.", "machdep.cpu.", "net.routetable.", "kern.proc.pid.", "kern.proc.pgrp."}

// Mach services a process may look up: user and group lookups
// (opendirectoryd), logging, notifications (the time zone's changes),
// its own temporary directories (dirhelper). Not launchservicesd and the
// like, which start programs outside the sandbox.
var seatbeltServices = []string{
	"com.apple.system.opendirectoryd.libinfo", "com.apple.system.opendirectoryd.membership",
	"com.apple.system.DirectoryService.libinfo_v1",
	"com.apple.system.logger", "com.apple.logd", "com.apple.logd.events", "com.apple.diagnosticd",
	"com.apple.system.notification_center", "com.apple.bsd.dirhelper",
}

// seatbeltTrust are the services that check a TLS certificate, where
// programs that use the system's (Go's crypto/x509, curl) ask them: for a
// sandbox with any network.
var seatbeltTrust = []string{"com.apple.trustd.agent", "com.apple.trustd", "com.apple.SecurityServer", "com.apple.ocspd"}

// seatbeltResolve are the services that resolve names and read the
// network's configuration: for network "all" only (with an allowlist,
// mcpgen's proxy resolves names).
var seatbeltResolve = []string{
	"com.apple.SystemConfiguration.configd", "com.apple.SystemConfiguration.DNSConfiguration",
	"com.apple.networkd", "com.apple.dnssd.service",
}

// seatbeltProfile is the Seatbelt profile that confines program (an
// absolute path) to p: read p.System and p.Read, read and write p.Write, run programs
// from either and from the system's paths, and the network p.Network.Mode
// says. For NetHosts, proxy is the egress proxy's loopback port, the one
// TCP port the sandbox may connect to but its allowlist's loopback
// services. params (NAME=value, for sandbox-exec -D) are the paths the
// profile names by parameter, those it cannot hold inline (see
// profileBuilder.path). A path with a NUL byte is an error.
func seatbeltProfile(p *Policy, program string, proxy int) (profile string, params []string, err error) {
	b := profileBuilder{named: map[string]string{}}
	b.line("(version 1)")
	b.line("(deny default)")

	b.comment("processes: fork, exec what may be read (below); signals and process information only within the sandbox")
	b.line("(allow process-fork)")
	b.line("(allow signal (target same-sandbox))")
	b.line("(allow process-info* (target same-sandbox))")
	var sysctls []string
	for _, name := range seatbeltSysctls {
		sysctls = append(sysctls, "(sysctl-name "+sbplString(name)+")")
	}
	for _, prefix := range seatbeltSysctlPrefixes {
		sysctls = append(sysctls, "(sysctl-name-prefix "+sbplString(prefix)+")")
	}
	b.rule("sysctl-read", sysctls)
	// host_processor_info, which Node's os.cpus() calls.
	b.line("(allow mach-host*)")
	services := slices.Clone(seatbeltServices)
	if p.Network.Mode == NetHosts || p.Network.Mode == NetAll {
		services = append(services, seatbeltTrust...)
	}
	if p.Network.Mode == NetAll {
		services = append(services, seatbeltResolve...)
	}
	var names []string
	for _, s := range services {
		names = append(names, "(global-name "+sbplString(s)+")")
	}
	b.rule("mach-lookup", names)
	// Python's multiprocessing locks; a socketpair (a child's pipes, in
	// libuv): no path, so no reach beyond the process.
	b.line("(allow ipc-posix-sem)")
	b.line("(allow system-socket (socket-domain AF_UNIX))")

	b.comment("the system's paths")
	b.paths("file-read* file-test-existence process-exec file-map-executable", "subpath", seatbeltSystemDirs)
	b.paths("file-read* file-test-existence", "subpath", seatbeltSystemReads)
	// Devices programs open without asking: written whole (a shell's >
	// truncates), and dtracehelper, which libSystem opens for writing as
	// a process starts.
	b.line(`(allow file-read* file-write* file-ioctl (literal "/dev/null") (literal "/dev/zero") (literal "/dev/tty") (literal "/dev/dtracehelper") (literal "/dev/stdin") (literal "/dev/stdout") (literal "/dev/stderr"))`)
	b.line(`(allow file-read-data file-write-data (subpath "/dev/fd"))`)
	// The root itself (a process's working directory may be looked up
	// through it), and the links to /private that resolve /etc, /tmp and
	// /var.
	b.line(`(allow file-read* (literal "/"))`)
	b.line(`(allow file-read-metadata file-test-existence (literal "/etc") (literal "/tmp") (literal "/var") (literal "/dev"))`)

	program = filepath.Clean(program)
	read := aliases(slices.Concat(systemGrants(p.System), p.Read))
	write := aliases(p.Write)
	b.comment("the program, and the policy's grants: reading (and running what is there), writing")
	b.paths("file-read* file-test-existence process-exec file-map-executable", "literal", aliases([]string{program}))
	b.paths("file-read* file-test-existence process-exec file-map-executable", "subpath", read)
	b.paths("file-read* file-write* file-test-existence process-exec file-map-executable", "subpath", write)
	// Unix sockets where it may write: a server's processes talking
	// among themselves, or a socket granted by its path. Any other
	// socket (an SSH agent's, Docker's) is denied, whatever the network.
	b.socketPaths(write)
	// Looking a granted path up reads the metadata of each directory
	// above it (realpath, Node's module resolution): that, and not their
	// listing.
	var above []string
	for _, path := range slices.Concat(aliases([]string{program}), read, write) {
		above = append(above, ancestors(path)...)
	}
	b.paths("file-read-metadata file-test-existence", "literal", above)

	b.comment("network: " + string(p.Network.Mode))
	switch p.Network.Mode {
	case NetNone:
		// Nothing: no socket but the unix ones above.
	case NetLoopback:
		// Seatbelt's ip filter knows a host "localhost" (127.0.0.1 and
		// ::1) or "*": the loopback, shared with the machine's services.
		b.line(`(allow network-bind network-inbound (local ip "localhost:*"))`)
		b.line(`(allow network-outbound (remote ip "localhost:*"))`)
	case NetHosts:
		// Seatbelt cannot filter by host name: the proxy does. The
		// sandbox may reach it and the allowlist's loopback services, by
		// their port, and nothing else.
		if proxy <= 0 || proxy > 65535 {
			return "", nil, fmt.Errorf("sandbox: the egress proxy's port %d is not a port", proxy)
		}
		ports := []int{proxy}
		for _, hp := range p.Network.Hosts {
			host, _, err := net.SplitHostPort(hp)
			if err != nil || !isLoopback(host) {
				continue
			}
			port, err := allowPort(hp)
			if err != nil {
				return "", nil, err
			}
			ports = append(ports, int(port))
		}
		var remotes []string
		for _, port := range uniq(ports) {
			remotes = append(remotes, `(remote ip "localhost:`+strconv.Itoa(port)+`")`)
		}
		b.rule("network-outbound", remotes)
	case NetAll:
		// The IP network, TCP and UDP, and name resolution through
		// mDNSResponder's socket; other unix sockets stay those above,
		// as in every mode.
		b.line(`(allow network-bind network-inbound (local ip "*:*"))`)
		b.line(`(allow network-outbound (remote ip "*:*") (literal "/private/var/run/mDNSResponder"))`)
		b.line("(allow system-socket)")
	default:
		return "", nil, fmt.Errorf("sandbox network: unknown mode %q", p.Network.Mode)
	}
	if b.err != nil {
		return "", nil, b.err
	}
	return b.String(), b.params, nil
}

// systemGrants are system, but /System as a whole, should a policy name
// it: it stands for its system parts, since /System/Volumes/Data is every
// user's data by another path.
func systemGrants(system []string) []string {
	var out []string
	for _, path := range system {
		if filepath.Clean(path) == "/System" {
			out = append(out, slices.DeleteFunc(slices.Clone(seatbeltSystemDirs), func(d string) bool {
				return !strings.HasPrefix(d, "/System/")
			})...)
			continue
		}
		out = append(out, path)
	}
	return out
}

// profileBuilder writes a profile line by line, and the parameters its
// paths need; the first path it cannot take is its err.
type profileBuilder struct {
	strings.Builder
	params []string          // NAME=value
	named  map[string]string // value: NAME
	err    error
}

// path is path as the profile names it: a string, escaped, when it is
// printable ASCII; else a parameter, (param "P0"), whose value
// sandbox-exec -D passes as it is. libsandbox's reader aborts on any byte
// outside ASCII, even in a comment, and a user's name may hold one; its
// other escapes differ between versions.
func (b *profileBuilder) path(path string) string {
	if strings.IndexByte(path, 0) >= 0 {
		if b.err == nil {
			b.err = fmt.Errorf("sandbox: path %q has a NUL byte, which no program can be given: leave it out of the grants", path)
		}
		return `""`
	}
	if printableASCII(path) {
		return sbplString(path)
	}
	name, ok := b.named[path]
	if !ok {
		name = "P" + strconv.Itoa(len(b.params))
		b.named[path] = name
		b.params = append(b.params, name+"="+path)
	}
	return `(param "` + name + `")`
}

// printableASCII says whether s holds only the bytes from space to tilde.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func (b *profileBuilder) line(s string) {
	b.WriteString(s)
	b.WriteByte('\n')
}

func (b *profileBuilder) comment(s string) {
	b.line("\n; " + s)
}

// rule allows ops for any of filters, one a line; nothing when there are
// none, since an allow with no filter would allow ops everywhere.
func (b *profileBuilder) rule(ops string, filters []string) {
	if len(filters) == 0 {
		return
	}
	b.line("(allow " + ops)
	for _, f := range filters {
		b.line("  " + f)
	}
	b.line(")")
}

// paths allows ops on each path, matched as kind (literal: the path
// itself; subpath: it and all under it).
func (b *profileBuilder) paths(ops, kind string, paths []string) {
	var filters []string
	for _, path := range uniq(paths) {
		filters = append(filters, "("+kind+" "+b.path(path)+")")
	}
	b.rule(ops, filters)
}

// socketPaths allows binding, accepting on and connecting to unix sockets
// under paths.
func (b *profileBuilder) socketPaths(paths []string) {
	var local, remote []string
	for _, path := range uniq(paths) {
		q := b.path(path)
		local = append(local, "(local unix-socket (subpath "+q+"))")
		remote = append(remote, "(remote unix-socket (subpath "+q+"))")
	}
	b.rule("network-bind network-inbound", local)
	b.rule("network-outbound", remote)
}

// sbplString quotes s, printable ASCII, as a string of SBPL (TinyScheme's
// reader): a backslash and a double quote are escaped, so that no path
// ends the string early and adds rules of its own.
func sbplString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' || s[i] == '"' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}

// aliases are paths, clean, each with the path Seatbelt sees for it when
// it lies under one of macOS's links to /private (/tmp, /var, /etc), or
// the link's when it is given by its /private path.
func aliases(paths []string) []string {
	var out []string
	for _, path := range paths {
		path = filepath.Clean(path)
		out = append(out, path)
		for _, dir := range []string{"/tmp", "/var", "/etc"} {
			switch {
			case path == dir || strings.HasPrefix(path, dir+"/"):
				out = append(out, "/private"+path)
			case path == "/private"+dir || strings.HasPrefix(path, "/private"+dir+"/"):
				out = append(out, strings.TrimPrefix(path, "/private"))
			}
		}
	}
	return uniq(out)
}

// ancestors are the directories above path, but the root.
func ancestors(path string) []string {
	var out []string
	for dir := filepath.Dir(path); dir != "/" && dir != "."; dir = filepath.Dir(dir) {
		out = append(out, dir)
	}
	return out
}

// uniq is list without its repeats, in its order.
func uniq[T comparable](list []T) []T {
	seen := make(map[T]bool, len(list))
	var out []T
	for _, v := range list {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// seatbeltReport says what Seatbelt enforces of p; have says whether
// sandbox-exec is there to enforce anything.
func seatbeltReport(p *Policy, have bool) Report {
	if !have {
		return Report{
			Platform: "none (" + sandboxExec + " is missing)",
			NotEnforced: []string{
				"files: not confined",
				"network: not confined",
				"other processes: the same user's arguments and environment are readable (sysctl kern.procargs2)",
			},
		}
	}
	r := Report{Platform: "seatbelt (sandbox-exec)"}
	r.Enforced = append(r.Enforced, "files: read only "+list(p.Read, "no extra paths")+" and write only "+list(p.Write, "nowhere")+
		", besides the system paths a process needs; links are followed to where they point and checked there")
	switch p.Network.Mode {
	case NetNone:
		r.Enforced = append(r.Enforced, "network: none (unix sockets only under its write grants)")
	case NetLoopback:
		r.Enforced = append(r.Enforced, "network: loopback only (localhost)")
		r.NotEnforced = append(r.NotEnforced, "network: the loopback is the machine's, not the sandbox's own: every service listening on localhost is reachable (Seatbelt has no network namespace)")
	case NetHosts:
		r.Enforced = append(r.Enforced, "network: only "+strings.Join(p.Network.Hosts, ", ")+
			" (HTTPS through mcpgen's egress proxy on a loopback port, HTTPS_PROXY; Seatbelt allows no other connection but to the machine's services the list names)")
		r.Caveats = append(r.Caveats,
			"network: the egress proxy's loopback port is open to the user's other processes, which may use the allowlist through it",
			"network: certificates are checked by macOS's trustd, which may fetch revocation data (OCSP, CRL) from the addresses a certificate names",
			"network: the server has no loopback of its own (Seatbelt cannot tell one from the machine's)")
	case NetAll:
		r.Enforced = append(r.Enforced, "network: all (not confined, as asked; unix sockets only under its write grants)")
	}
	r.Enforced = append(r.Enforced, "other processes: signals and process information only within the sandbox; others' arguments and environment withheld (no kern.procargs2 sysctl)")
	r.Caveats = append(r.Caveats,
		"files: hard links are refused, even within the grants (Seatbelt would check only the new name, so a link would give a granted name to any file), and so are clones; a tool that links files (pnpm) fails or copies instead",
		"other processes: their names and ids can be listed (the kern.proc sysctls, which runtimes read of themselves)",
		"other processes: there is no /proc on macOS; macOS itself shields other users' processes, the profile the same user's",
		"mach services: a few of the system's are reachable (user lookups, logging, notifications, and certificate checks with a network), the rest denied",
		"sandbox-exec is deprecated by Apple, though macOS still ships it and uses Seatbelt for its own services",
		"inside another Seatbelt sandbox (an agent's own shell), sandbox-exec cannot apply its profile, and the server does not start")
	return r
}

// prepareSeatbelt is Prepare on macOS, have saying whether sandbox-exec
// is there: cmd is rewritten to run sandbox-exec -p PROFILE
// [-DNAME=path ...] PROGRAM ARGS..., with a private TMPDIR, without the
// variables of hiddenEnv, and, for a host allowlist, with HTTPS_PROXY
// naming an egress proxy on a loopback port. Without sandbox-exec, cmd is
// left as it is: the Report says that nothing is enforced, and a strict
// policy refuses.
func prepareSeatbelt(cmd *exec.Cmd, p *Policy, have bool) (*Setup, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	s := &Setup{Report: seatbeltReport(p, have)}
	if err := strict(p, s.Report); err != nil {
		return s, err
	}
	if !have {
		return s, nil
	}
	program := cmd.Path
	if !filepath.IsAbs(program) {
		// Relative to cmd.Dir, as exec.Cmd runs it.
		abs, err := filepath.Abs(filepath.Join(cmd.Dir, program))
		if err != nil {
			return s, fmt.Errorf("sandbox: %s: %v", program, err)
		}
		program = abs
	}
	tmp, err := os.MkdirTemp("", "mcpgen-sandbox-")
	if err != nil {
		return s, fmt.Errorf("sandbox: its temporary directory: %v", err)
	}
	s.TempDir = tmp
	s.release = append(s.release, func() { _ = os.RemoveAll(tmp) })
	// Seatbelt checks a path where its links lead, and reads each link on
	// the way at its own path: a grant through links (a workspace under a
	// linked directory, the program by a link of Homebrew's) is granted
	// where it leads, and its links may be read (not replaced).
	pol := *p
	pol.Read, pol.Write = nil, nil
	for _, path := range slices.Concat(p.System, p.Read, []string{program}) {
		links, real := resolve(path)
		pol.Read = append(append(pol.Read, path), append(links, real)...)
	}
	for _, path := range append(slices.Clone(p.Write), tmp) {
		links, real := resolve(path)
		pol.Read = append(pol.Read, links...)
		if !slices.Contains(links, filepath.Clean(path)) {
			pol.Write = append(pol.Write, path)
		}
		pol.Write = append(pol.Write, real)
	}
	if dir := developerDir(xcodeSelectLink); dir != "" {
		pol.Read = append(pol.Read, dir)
	}
	pol.Read, pol.Write = uniq(pol.Read), uniq(pol.Write)
	set := []string{"TMPDIR=" + tmp, EnvInside + "=1"}
	port := 0
	if p.Network.Mode == NetHosts {
		addr, stop, err := listenEgress(p.Network.Hosts)
		if err != nil {
			s.Close()
			return s, err
		}
		s.release = append(s.release, stop)
		_, ps, _ := net.SplitHostPort(addr)
		port, _ = strconv.Atoi(ps)
		set = append(set, proxyEnv(addr)...)
	}
	env := sandboxEnv(cmd.Env, set)
	profile, params, err := seatbeltProfile(&pol, program, port)
	if err != nil {
		s.Close()
		return s, err
	}
	args := []string{sandboxExec, "-p", profile}
	for _, kv := range params {
		args = append(args, "-D"+kv)
	}
	cmd.Env = env
	cmd.Args = append(append(args, program), cmd.Args[1:]...)
	cmd.Path = sandboxExec
	return s, nil
}

// xcodeSelectLink is where xcode-select records the developer directory
// that /usr/bin's shims (git, python3, make) run their tools from.
const xcodeSelectLink = "/private/var/db/xcode_select_link"

// developerDir is the developer directory link names, or the .app bundle
// that holds it, whole (xcrun loads the bundle's shared frameworks too);
// "" when link is not there or names no absolute path.
func developerDir(link string) string {
	dir, err := os.Readlink(link)
	if err != nil || !filepath.IsAbs(dir) {
		return ""
	}
	dir = filepath.Clean(dir)
	for d := dir; d != "/"; d = filepath.Dir(d) {
		if strings.HasSuffix(strings.ToLower(d), ".app") {
			return d
		}
	}
	return dir
}

// resolve follows path's links as the kernel does, a component at a time:
// links are those met on the way, by their own paths, and real is where
// path leads. What does not exist ends the walk: real is then what was
// resolved of it, with the rest as written.
func resolve(path string) (links []string, real string) {
	rest := strings.Split(strings.TrimPrefix(filepath.Clean(path), "/"), "/")
	cur := "/"
	// As the kernel, give up after so many links (MAXSYMLINKS is 32).
	for hops := 0; len(rest) > 0; {
		next := filepath.Join(cur, rest[0])
		fi, err := os.Lstat(next)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 || hops == 32 {
			if err != nil {
				return links, filepath.Join(append([]string{cur}, rest...)...)
			}
			cur, rest = next, rest[1:]
			continue
		}
		hops++
		links = append(links, next)
		target, err := os.Readlink(next)
		if err != nil {
			return links, filepath.Join(append([]string{next}, rest[1:]...)...)
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		rest = append(strings.Split(target, "/"), rest[1:]...)
	}
	return links, cur
}
