// Package sandbox confines what mcpgen starts to what its manifest grants:
// the paths it may read and write, and the network it may reach. A Policy
// says what is granted, the same on every platform; each platform enforces
// what it can of it, and a Report says what it does and does not enforce,
// so that status and validate can show it and a strict policy can refuse
// to start a server whose rules would not all hold.
//
// On Linux the rules are applied in the child, between fork and exec: the
// child is mcpgen itself, started with a hidden entry (Main), which takes
// on the policy (Landlock, namespaces) and then runs the server's command,
// so that the policy covers everything the server starts. On macOS,
// sandbox-exec applies a Seatbelt profile made from the policy before it
// execs the command (seatbelt.go), to the same end.
package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// A NetMode is how much of the network a sandboxed process may reach.
type NetMode string

const (
	// NetNone: no network at all.
	NetNone NetMode = "none"
	// NetLoopback: a loopback of the sandbox's own, where the server and
	// what it starts may talk among themselves; nothing outside. (A
	// service of the host is reached by naming it: localhost:5432.)
	NetLoopback NetMode = "loopback"
	// NetAll: the whole network, unconfined.
	NetAll NetMode = "all"
	// NetHosts: only the host:port pairs of Network.Hosts.
	NetHosts NetMode = "hosts"
)

// Network is what a sandboxed process may connect to.
type Network struct {
	Mode NetMode `json:"mode"`
	// Allow lists host:port pairs (NetHosts).
	Hosts []string `json:"hosts,omitempty"`
}

// An Enforce says what happens when the platform cannot enforce a rule.
type Enforce string

const (
	// EnforceWarn starts the process anyway; the Report says what is not
	// enforced (status, validate and the log show it).
	EnforceWarn Enforce = "warn"
	// EnforceStrict refuses to start a process whose rules would not all
	// be enforced.
	EnforceStrict Enforce = "strict"
)

// A Policy is what a sandboxed process is granted, besides what a process
// needs to start (its own program and libraries, the system paths): the
// paths it may read, those it may also write, and the network. Paths are
// absolute; the manifest expands ~, {workspace} and ${VAR} before.
type Policy struct {
	// System is what the process reads to start, whatever is granted:
	// the system's programs and libraries, the server's own program.
	// Read-only, like Read, but not spoken of in the Report.
	System  []string `json:"system,omitempty"`
	Read    []string `json:"read,omitempty"`
	Write   []string `json:"write,omitempty"`
	Network Network  `json:"network"`
	Enforce Enforce  `json:"enforce,omitempty"`
}

// Check says what is wrong with p, if anything: a relative path, an
// unknown mode, an allowlist entry that is not host:port.
func (p *Policy) Check() error {
	var errs []error
	for _, list := range []struct {
		name  string
		paths []string
	}{{"system", p.System}, {"read", p.Read}, {"write", p.Write}} {
		for _, path := range list.paths {
			if !filepath.IsAbs(path) {
				errs = append(errs, fmt.Errorf("sandbox %s: %q is not an absolute path (expand ~ and {workspace} first)", list.name, path))
			}
		}
	}
	switch p.Network.Mode {
	case NetNone, NetLoopback, NetAll:
		if len(p.Network.Hosts) > 0 {
			errs = append(errs, fmt.Errorf("sandbox network: an allowlist with mode %q (use mode %q)", p.Network.Mode, NetHosts))
		}
	case NetHosts:
		if len(p.Network.Hosts) == 0 {
			errs = append(errs, fmt.Errorf("sandbox network: an empty allowlist (use %q for no network)", NetNone))
		}
		for _, hp := range p.Network.Hosts {
			if _, err := allowPort(hp); err != nil {
				errs = append(errs, err)
			}
		}
	default:
		errs = append(errs, fmt.Errorf("sandbox network: unknown mode %q (want none, loopback, all or an allowlist of host:port)", p.Network.Mode))
	}
	switch p.Enforce {
	case "", EnforceWarn, EnforceStrict:
	default:
		errs = append(errs, fmt.Errorf("sandbox enforce: unknown value %q (want warn or strict)", p.Enforce))
	}
	return errors.Join(errs...)
}

// allowPort is the port of an allowlist entry, host:port.
func allowPort(hostport string) (uint16, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err == nil && host == "" {
		err = errors.New("no host")
	}
	if err != nil {
		return 0, fmt.Errorf("sandbox network: %q: %v (want host:port, as in api.github.com:443)", hostport, err)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("sandbox network: %q: port %q is not a number from 1 to 65535", hostport, port)
	}
	return uint16(n), nil
}

// A Report says what the platform enforces of a Policy and what it cannot.
type Report struct {
	// Platform names the mechanisms in use ("landlock ABI 7, namespaces:
	// pid, mount, net"), or says there are none.
	Platform string `json:"platform"`
	// Enforced lists the rules that hold, one phrase each.
	Enforced []string `json:"enforced,omitempty"`
	// NotEnforced lists the rules that do not, and why: a strict policy
	// refuses to start when there are any.
	NotEnforced []string `json:"not_enforced,omitempty"`
	// Caveats are the known gaps of the mechanisms themselves, which no
	// setting closes: said, but no reason to refuse a strict policy.
	Caveats []string `json:"caveats,omitempty"`
}

// String is the report in a few lines, for validate and the log.
func (r Report) String() string {
	var b strings.Builder
	b.WriteString("sandbox: " + r.Platform)
	for _, s := range r.Enforced {
		b.WriteString("\n  enforced: " + s)
	}
	for _, s := range r.NotEnforced {
		b.WriteString("\n  NOT enforced: " + s)
	}
	for _, s := range r.Caveats {
		b.WriteString("\n  caveat: " + s)
	}
	return b.String()
}

// EnvInside is set in the environment of every sandboxed process: an
// mcpgen started inside (mcpgen serve, the launcher's built-in and
// declared servers) is in its sandbox already, and does not try to make
// another, which it could not (Landlock forbids mounting).
const EnvInside = "MCPGEN_SANDBOXED"

// Inside reports whether this process runs in a sandbox of mcpgen's.
func Inside() bool { return os.Getenv(EnvInside) == "1" }

// list is paths for a Report, or none when there are none.
func list(paths []string, none string) string {
	if len(paths) == 0 {
		return none
	}
	return strings.Join(paths, ", ")
}

// A Setup is a sandbox prepared for one command: what the platform
// enforces of its policy, and what lives as long as the command (its
// private temporary directory, its egress proxy), released by Close once
// the command has exited.
type Setup struct {
	Report Report
	// TempDir is the command's private temporary directory (its TMPDIR),
	// removed by Close; "" when none was made.
	TempDir string

	once    sync.Once
	release []func()
}

// Close releases what the sandbox holds for its command, once it has
// exited: the egress proxy's connections end, the temporary directory is
// removed. Safe on nil, and more than once.
func (s *Setup) Close() {
	if s == nil {
		return
	}
	s.once.Do(func() {
		for i := len(s.release) - 1; i >= 0; i-- {
			s.release[i]()
		}
	})
}

// hiddenEnv are variables a sandboxed process does not get: each is the
// path of a socket that holds a credential (an SSH agent, a session bus,
// a container engine), which Landlock would not stop it from using.
// Seatbelt would, but the path is of no use to a server either.
var hiddenEnv = []string{"SSH_AUTH_SOCK", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS", "DOCKER_HOST", "CONTAINER_HOST", "XDG_RUNTIME_DIR", "KRB5CCNAME"}

// sandboxEnv is env (nil: this process's) without hiddenEnv, with set
// (NAME=value) in place of what it had of those names.
func sandboxEnv(env, set []string) []string {
	if env == nil {
		env = os.Environ()
	}
	drop := slices.Clone(hiddenEnv)
	for _, kv := range set {
		name, _, _ := strings.Cut(kv, "=")
		drop = append(drop, name)
	}
	env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(drop, name)
	})
	return append(env, set...)
}

// StrictError is returned when a strict policy has rules the platform
// cannot enforce: the process is not started.
type StrictError struct{ Report Report }

func (e *StrictError) Error() string {
	return "sandbox: enforce = \"strict\" and the platform cannot enforce: " +
		strings.Join(e.Report.NotEnforced, "; ") + ` (set enforce = "warn" to start anyway)`
}

// strict returns a StrictError when p is strict and r has unenforced rules.
func strict(p *Policy, r Report) error {
	if p.Enforce == EnforceStrict && len(r.NotEnforced) > 0 {
		return &StrictError{r}
	}
	return nil
}
