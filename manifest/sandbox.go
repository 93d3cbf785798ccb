package manifest

import (
	"cmp"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpgen/mcpgen/internal/lazyregexp"
	"github.com/mcpgen/mcpgen/internal/sandbox"
)

// The sandbox confines a stdio server to what the manifest grants it
// (issue 21). This file owns its keys as the manifest writes them, how a
// server's own table combines with the top-level defaults, and the grants
// resolved to absolute paths. Enforcing them is internal/sandbox's.

// The values of a sandbox's network key.
const (
	NetworkNone     = "none"     // no network at all
	NetworkLoopback = "loopback" // this machine only
	NetworkAll      = "all"      // anywhere
	NetworkHosts    = "hosts"    // only the host:port pairs of Network.Hosts
)

// NetworkModes are the words network may be; a list of host:port pairs
// is NetworkHosts.
var NetworkModes = []string{NetworkNone, NetworkLoopback, NetworkAll}

// The values of a sandbox's enforce key: what happens when the platform
// cannot enforce a rule.
const (
	EnforceWarn   = "warn"   // the server runs; status, validate and the log say what is not enforced
	EnforceStrict = "strict" // the server is not started
)

// EnforceModes are the values of enforce.
var EnforceModes = []string{EnforceWarn, EnforceStrict}

// SystemReadPaths are what every sandboxed process may read on this
// platform besides its grants: the sandbox's own list, which it grants
// whatever the policy says (sandbox.SystemPaths).
var SystemReadPaths = sandbox.SystemPaths()

// WorkspaceRef, at the start of a sandbox path, stands for WORKSPACE_DIR.
const WorkspaceRef = "{workspace}"

// Network is what a sandboxed server may connect to.
type Network struct {
	Mode  string   // NetworkNone, NetworkLoopback, NetworkAll or NetworkHosts
	Hosts []string // NetworkHosts: "host:port" pairs, as written
}

// SandboxRules are one [sandbox] or [servers.NAME.sandbox] table as
// written: a key the table does not set is nil (or empty), so that a
// server's table overrides only what it sets.
type SandboxRules struct {
	Enabled *bool
	// Read and Write are nil when unset; [] grants nothing beyond what
	// every sandbox gets.
	Read, Write []Template
	Network     *Network
	Enforce     string // "" when unset
	// Pos is the table's header, for messages; left out of JSON, so that
	// a comment added above the table changes no launcher key.
	Pos Position `json:"-"`
}

// A Sandbox is a server's sandbox: its own [servers.NAME.sandbox] keys
// over the top-level [sandbox] defaults, key by key. A list is replaced
// as a whole, never merged: a server that sets read reads only what its
// list says (and what every sandbox reads, see SandboxPaths).
type Sandbox struct {
	Enabled bool
	// Read and Write are the grants as written, with ~, {workspace} and
	// ${VAR} unresolved; nil: the default, the workspace.
	Read, Write []Template
	Network     Network // NetworkNone unless set
	Enforce     string  // EnforceWarn unless set
}

// Sandbox returns server s's sandbox. A remote server runs no process and
// has none: its Sandbox is not enabled.
func (m *Manifest) Sandbox(s *Server) Sandbox {
	sb := Sandbox{Network: Network{Mode: NetworkNone}, Enforce: EnforceWarn}
	if !s.Kind.Stdio() {
		return sb
	}
	for _, r := range []*SandboxRules{m.SandboxDefaults, s.Sandbox} {
		if r == nil {
			continue
		}
		if r.Enabled != nil {
			sb.Enabled = *r.Enabled
		}
		if r.Read != nil {
			sb.Read = r.Read
		}
		if r.Write != nil {
			sb.Write = r.Write
		}
		if r.Network != nil {
			sb.Network = *r.Network
		}
		if r.Enforce != "" {
			sb.Enforce = r.Enforce
		}
	}
	return sb
}

// SandboxPaths are a sandbox's file grants, resolved: absolute, clean, each
// once, in order, and each in one list only.
type SandboxPaths struct {
	// Start is what every sandboxed process reads to start, whatever the
	// manifest grants: the system paths (SystemReadPaths) and the
	// server's own programs with their installations. Kept apart from
	// Read, for an enforcer that finds these itself.
	Start []string
	// Read is what the manifest grants for reading: read, else the
	// workspace. What the server may write it may read too, and is not
	// repeated here.
	Read []string
	// Write is what the server may write: write, else the workspace.
	// Every sandbox also gets a private temporary directory, writable, as
	// TMPDIR: its enforcer makes it, one per start, so it is not here.
	Write []string
}

// SandboxPaths resolves server s's grants for the context c, whether its
// sandbox is enabled or not (the caller asks Sandbox): ${VAR} from
// the context, then getenv; ~ from HOME; {workspace} as WORKSPACE_DIR. A
// path that is not absolute once resolved (a variable that held a
// relative one) is an error at its place in the manifest.
func (m *Manifest) SandboxPaths(s *Server, c *Context, getenv Lookup) (*SandboxPaths, error) {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	sb := m.Sandbox(s)
	lookup := m.lookup(c, getenv)
	where := func(key string, i int) []string {
		if s.Sandbox != nil && (key == "read" && s.Sandbox.Read != nil || key == "write" && s.Sandbox.Write != nil) {
			return []string{"servers", s.Name, "sandbox", key, indexKey(i)}
		}
		return []string{"sandbox", key, indexKey(i)}
	}
	resolve := func(key string, ts []Template) ([]string, error) {
		if ts == nil {
			return []string{c.WorkspaceDir}, nil
		}
		var out []string
		for i, t := range ts {
			p, err := m.expand(t, lookup, where(key, i)...)
			if err != nil {
				return nil, err
			}
			abs, err := resolveSandboxPath(p, c.WorkspaceDir, getenv)
			if err != nil {
				return nil, m.errorAt(where(key, i), err)
			}
			out = append(out, abs)
		}
		return out, nil
	}
	read, err := resolve("read", sb.Read)
	if err != nil {
		return nil, err
	}
	write, err := resolve("write", sb.Write)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	paths := &SandboxPaths{Write: dedupe(write, seen)}
	paths.Read = dedupe(read, seen)
	paths.Start = dedupe(append(slices.Clone(SystemReadPaths), m.programPaths(s, c, getenv)...), seen)
	return paths, nil
}

// resolveSandboxPath makes one sandbox path absolute, once its ${VAR}
// references are expanded: ~ is HOME, {workspace} is WORKSPACE_DIR.
func resolveSandboxPath(p, workspace string, getenv Lookup) (string, error) {
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		home, ok := getenv("HOME")
		if !ok || !filepath.IsAbs(home) {
			return "", fmt.Errorf("%q starts with ~, but HOME is not an absolute path: set HOME, or write the path in full", p)
		}
		p = filepath.Join(home, p[1:])
	case p == WorkspaceRef || strings.HasPrefix(p, WorkspaceRef+"/"):
		p = filepath.Join(workspace, p[len(WorkspaceRef):])
	}
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%q is not an absolute path: a sandbox path starts with /, ~ or {workspace}", p)
	}
	return filepath.Clean(p), nil
}

// programPaths are what a server needs to read to run its own programs:
// each program itself, through its links, and, when it sits in a bin
// directory, the installation above it (lib, share: node_modules, a
// Python's site-packages). A command server's program is its command, a
// declared server's the first element of each tool's run (when it names
// no argument), a builtin server's mcpgen itself. A program that cannot
// be found adds nothing: starting it will say why.
func (m *Manifest) programPaths(s *Server, c *Context, getenv Lookup) []string {
	env, err := m.Environ(s, c, getenv)
	if err != nil {
		return nil
	}
	// The program is looked for on the PATH the server gets.
	path, _ := getenv("PATH")
	for _, v := range env {
		if v.Name == "PATH" {
			path = v.Value
		}
	}
	var progs, extra []string
	switch s.Kind {
	case KindCommand:
		if p, err := m.Process(s, c, getenv); err == nil {
			progs = append(progs, p.Path)
			extra = scriptPaths(p.Args)
		}
	case KindDeclared:
		lookup := m.lookup(c, getenv)
		for _, t := range s.Tools {
			if len(t.Run) == 0 {
				continue
			}
			if p, err := t.Run[0].Expand(lookup); err == nil && p != "" && !strings.Contains(p, "{") {
				progs = append(progs, m.ResolvePath(p))
			}
		}
	case KindBuiltin:
		if exe, err := os.Executable(); err == nil {
			progs = append(progs, exe)
		}
	}
	out := extra
	for _, prog := range progs {
		if !filepath.IsAbs(prog) {
			prog = lookPathIn(prog, path)
		}
		if prog == "" {
			continue
		}
		for _, p := range []string{prog, evalSymlinks(prog)} {
			if p == "" {
				continue
			}
			out = append(out, p)
			if dir := filepath.Dir(p); filepath.Base(dir) == "bin" {
				out = append(out, filepath.Dir(dir))
			}
		}
	}
	return out
}

// scriptPaths are what a command's arguments name of its own program: a
// script given to an interpreter by its absolute path (node
// /opt/mcp/node_modules/server-memory/dist/index.js), and, for one inside
// a node_modules tree, that tree, where its dependencies are. A script's
// directory is not granted: it may be the home directory.
func scriptPaths(args []string) []string {
	var out []string
	for _, a := range args {
		if !filepath.IsAbs(a) {
			continue
		}
		fi, err := os.Stat(a)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		a = filepath.Clean(a)
		out = append(out, a)
		if i := strings.Index(a, string(filepath.Separator)+"node_modules"+string(filepath.Separator)); i >= 0 {
			out = append(out, a[:i+len("/node_modules")])
		}
	}
	return out
}

// SandboxPolicy is server s's sandbox as internal/sandbox enforces it, for
// the context c: nil when s has none (not enabled, or remote). Its reads
// are the grants and what every sandbox reads to start (SandboxPaths),
// and, for a server mcpgen serves itself, the manifest.
func (m *Manifest) SandboxPolicy(s *Server, c *Context, getenv Lookup) (*sandbox.Policy, error) {
	sb := m.Sandbox(s)
	if !sb.Enabled {
		return nil, nil
	}
	paths, err := m.SandboxPaths(s, c, getenv)
	if err != nil {
		return nil, err
	}
	p := &sandbox.Policy{
		System:  paths.Start,
		Read:    paths.Read,
		Write:   paths.Write,
		Network: sandbox.Network{Mode: sandbox.NetMode(sb.Network.Mode), Hosts: sb.Network.Hosts},
		Enforce: sandbox.Enforce(sb.Enforce),
	}
	if s.Kind == KindBuiltin || s.Kind == KindDeclared {
		if abs, err := filepath.Abs(cmp.Or(m.Path, m.File)); err == nil {
			p.System = append(p.System, abs)
		}
	}
	return p, nil
}

// lookPathIn finds a program in the directories of path, as the server's
// own process will; relative directories are skipped, as exec skips them.
func lookPathIn(name, path string) string {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			if _, err := exec.LookPath(p); err == nil {
				return p
			}
		}
	}
	return ""
}

func evalSymlinks(p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return ""
	}
	return r
}

// dedupe returns the paths of ps that seen does not hold, in order, and
// adds them to seen: a map, since a hostile manifest may list thousands.
func dedupe(ps []string, seen map[string]bool) []string {
	var out []string
	for _, p := range ps {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// sandboxPathError checks a sandbox path as written: absolute (/, a Windows
// drive or share), or starting with ~, {workspace} or a ${VAR} that the
// context resolves when the server starts. It returns what is wrong, or
// "".
func sandboxPathError(p string) string {
	switch {
	case p == "":
		return "an empty path: remove it, or name a directory"
	case strings.Contains(p, WorkspaceRef) && p != WorkspaceRef && !strings.HasPrefix(p, WorkspaceRef+"/"):
		return fmt.Sprintf("%q: {workspace} goes only at the start of a path: \"{workspace}/...\"", p)
	case strings.HasPrefix(p, "/"), strings.HasPrefix(p, `\\`), len(p) >= 3 && p[1] == ':' && (p[2] == '/' || p[2] == '\\'):
		return ""
	case p == "~" || strings.HasPrefix(p, "~/"):
		return ""
	case strings.HasPrefix(p, "~"):
		return fmt.Sprintf("%q: ~ stands only for your own home directory (~/...); write another user's path in full", p)
	case p == WorkspaceRef || strings.HasPrefix(p, WorkspaceRef+"/"):
		return ""
	case strings.HasPrefix(p, "${"):
		return "" // checked once resolved
	}
	return fmt.Sprintf("%q is a relative path: a sandbox path starts with /, ~ or {workspace} (write \"{workspace}/%s\" for one in the workspace)", p, strings.TrimPrefix(p, "./"))
}

// sandboxPaths decodes read or write: a list of paths.
func (d *decoder) sandboxPaths(path []string, v any) []Template {
	ps, ok := d.strs(path, v)
	if !ok {
		return nil
	}
	out := make([]Template, 0, len(ps))
	for i, p := range ps {
		at := child(path, indexKey(i))
		if msg := sandboxPathError(p); msg != "" {
			e := d.valueError(at, "%q: %s", name(path), msg)
			if strings.HasPrefix(msg, fmt.Sprintf("%q is a relative", p)) {
				e.Suggestion = TOMLString(WorkspaceRef + "/" + strings.TrimPrefix(p, "./"))
			}
			continue
		}
		switch strings.TrimRight(p, "/") {
		case "":
			d.valueWarning(at, "%q: %q grants the whole file system, which is no sandbox: grant the directories the server needs", name(path), p)
		case "~", "${HOME}":
			d.valueWarning(at, "%q: %q grants your whole home directory, its keys and tokens (~/.ssh, ~/.aws) included: grant the directories the server needs, such as \"~/.npm\"", name(path), p)
		}
		out = append(out, d.template(at, p))
	}
	return out
}

// network decodes network: one of NetworkModes, or a list of host:port.
func (d *decoder) network(path []string, v any) *Network {
	const use = "use \"none\", \"loopback\", \"all\" or a list of \"host:port\", such as [\"api.github.com:443\"]"
	switch x := v.(type) {
	case string:
		if !slices.Contains(NetworkModes, x) {
			e := d.valueError(path, "unknown network %q%s; %s", x, suggest(x, NetworkModes), use)
			e.Suggestion = closestOr(x, NetworkModes)
			if e.Suggestion == "" && checkHostPort(x) == nil {
				e.Msg = fmt.Sprintf("network %q must be a list to name a host: write [%q]", x, x)
				e.Suggestion = TOMLArray([]string{x})
			}
			return nil
		}
		return &Network{Mode: x}
	case []any:
		hosts, ok := d.strs(path, v)
		if !ok {
			return nil
		}
		if len(hosts) == 0 {
			d.valueError(path, "\"network\" is an empty list: write \"none\" for no network").Suggestion = `"none"`
			return nil
		}
		for i, h := range hosts {
			if err := checkHostPort(h); err != nil {
				d.valueError(child(path, indexKey(i)), "\"network\": %v", err)
			}
		}
		return &Network{Mode: NetworkHosts, Hosts: hosts}
	}
	d.valueError(path, "\"network\" must be a string or a list of strings, not %s: %s", describe(v), use)
	return nil
}

// hostName is a DNS name: labels of letters, digits and inner hyphens.
var hostName = lazyregexp.New(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$`)

// checkHostPort checks one host:port of a network list: a DNS name or an
// IP address (IPv6 in brackets), and a port from 1 to 65535.
func checkHostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("%q is not host:port: write the host and its port, such as \"api.github.com:443\" (\"[::1]:8080\" for IPv6)", s)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%q: the port must be a number from 1 to 65535", s)
	}
	switch {
	case host == "":
		return fmt.Errorf("%q has no host: write one, such as \"api.github.com:%s\"", s, port)
	case strings.Contains(host, "*"):
		return fmt.Errorf("%q: wildcards are not allowed; list each host", s)
	case net.ParseIP(host) != nil:
		return nil
	case !hostName.MatchString(host):
		return fmt.Errorf("%q: %q is not a host name or an IP address", s, host)
	}
	return nil
}

// sandbox decodes a [sandbox] or [servers.NAME.sandbox] table.
func (d *decoder) sandbox(path []string, v any) *SandboxRules {
	if b, isBool := v.(bool); isBool {
		// sandbox = true reads well, but the table has more than one key.
		fix := fmt.Sprintf("sandbox.enabled = %v", b)
		d.valueError(path, "%q is a table: write %s", name(path), fix).Suggestion = fix
		return nil
	}
	t, ok := d.table(path, v)
	if !ok {
		return nil
	}
	r := &SandboxRules{Pos: d.pos.key(path)}
	decodeKeys(d, sandboxKeys, path, t, r)
	return r
}

// fetcherNeeds is what npx and uvx need of a sandbox to fetch a server:
// their cache and their registry.
var fetcherNeeds = map[string]string{
	"npx": `to fetch, npx needs write = ["{workspace}", "~/.npm"] and network = ["registry.npmjs.org:443"]`,
	"uvx": `to fetch, uvx needs write = ["{workspace}", "~/.cache/uv"] and network = ["pypi.org:443", "files.pythonhosted.org:443"]`,
}

// SandboxHints are what validate suggests about the sandbox, at each
// server's table: to enable it for servers that npx or uvx fetch, which
// run someone else's code with the user's rights, and, on Windows
// (goos), that it is not enforced there yet.
func (m *Manifest) SandboxHints(goos string) Errors {
	var hints Errors
	hint := func(s *Server, path []string, format string, args ...any) {
		at := s.Pos
		if len(path) > 2 {
			at = m.pos.value(path)
		}
		hints = append(hints, &Error{File: m.File, Pos: at, Server: s.Name, Key: dotted(path[2:]), Path: dotted(path), Msg: fmt.Sprintf(format, args...), Hint: true})
	}
	for _, s := range m.Servers {
		if !s.Kind.Stdio() {
			continue
		}
		sb := m.Sandbox(s)
		switch {
		case sb.Enabled && goos == "windows":
			hint(s, []string{"servers", s.Name}, "the sandbox is not enforced on Windows yet: the server runs with your full rights")
		case !sb.Enabled && s.Kind == KindCommand:
			prog, _ := s.Command.Literal()
			base := strings.TrimSuffix(strings.ToLower(filepath.Base(filepath.ToSlash(prog))), ".cmd")
			base = strings.TrimSuffix(base, ".exe")
			if base == "npx" || base == "uvx" {
				hint(s, []string{"servers", s.Name, "command"}, "%s fetches and runs someone else's code with your rights: consider sandbox.enabled = true, which confines it to the workspace; %s", base, fetcherNeeds[base])
				hints[len(hints)-1].Suggestion = "sandbox.enabled = true"
			}
		}
	}
	return hints
}

// SandboxWarnings say, at each server whose sandbox is enabled, what the
// platform (inspect, sandbox.Inspect on this machine) cannot enforce of
// it: a warning, which for enforce = "strict" says the server will not
// start. Windows, where nothing is enforced yet, has SandboxHints' one
// line instead.
func (m *Manifest) SandboxWarnings(goos string, inspect func(*sandbox.Policy) sandbox.Report) Errors {
	if goos == "windows" {
		return nil
	}
	var warnings Errors
	for _, s := range m.Servers {
		sb := m.Sandbox(s)
		if !sb.Enabled {
			continue
		}
		r := inspect(&sandbox.Policy{
			Network: sandbox.Network{Mode: sandbox.NetMode(sb.Network.Mode), Hosts: sb.Network.Hosts},
			Enforce: sandbox.Enforce(sb.Enforce),
		})
		path, at := []string{"servers", s.Name}, s.Pos
		if s.Sandbox != nil {
			path, at = []string{"servers", s.Name, "sandbox"}, s.Sandbox.Pos
		}
		for _, ne := range r.NotEnforced {
			msg := "the sandbox cannot enforce here: " + ne
			if sb.Enforce == EnforceStrict {
				msg += ` (enforce = "strict": the server will not start)`
			}
			warnings = append(warnings, &Error{File: m.File, Pos: at, Server: s.Name, Key: dotted(path[2:]), Path: dotted(path), Msg: msg, Warning: true})
		}
	}
	return warnings
}
