package sandbox

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the profiles of testdata/seatbelt")

// The tests read a profile back as sandbox-exec's reader (TinyScheme)
// would, rather than search its text: what they check is what Seatbelt
// would be given, whatever a path holds.

// sexp is a form: a list, a string (str), or an atom (a symbol, a number).
type sexp struct {
	list  []sexp
	str   *string
	atom  string
	isStr bool
}

func (s sexp) String() string {
	switch {
	case s.isStr:
		return strconv.Quote(*s.str)
	case s.list != nil:
		var parts []string
		for _, e := range s.list {
			parts = append(parts, e.String())
		}
		return "(" + strings.Join(parts, " ") + ")"
	}
	return s.atom
}

// readSBPL reads every form of src: strings with TinyScheme's escapes,
// ; comments, atoms; each (param "NAME") is replaced by its value from
// params (NAME=value), as sandbox-exec -D gives it. A byte outside ASCII
// anywhere (libsandbox's reader aborts on it), a control character in a
// string, an escape the profile should never hold, an unknown parameter
// or an unbalanced form is an error.
func readSBPL(src string, params []string) ([]sexp, error) {
	for i := 0; i < len(src); i++ {
		if src[i] > 0x7e {
			return nil, fmt.Errorf("a byte outside ASCII (%#x) at %d: libsandbox would abort", src[i], i)
		}
	}
	values := map[string]string{}
	for _, kv := range params {
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("parameter %q is not NAME=value", kv)
		}
		values[name] = value
	}
	r := &sbplReader{src: src}
	var forms []sexp
	for {
		r.space()
		if r.i >= len(r.src) {
			return forms, nil
		}
		f, err := r.form()
		if err != nil {
			return nil, err
		}
		if f, err = substitute(f, values); err != nil {
			return nil, err
		}
		forms = append(forms, f)
	}
}

// substitute replaces each (param "NAME") in f by its value.
func substitute(f sexp, values map[string]string) (sexp, error) {
	if len(f.list) == 2 && f.list[0].atom == "param" && f.list[1].isStr {
		v, ok := values[*f.list[1].str]
		if !ok {
			return sexp{}, fmt.Errorf("unknown parameter %q", *f.list[1].str)
		}
		return sexp{str: &v, isStr: true}, nil
	}
	for i, e := range f.list {
		var err error
		if f.list[i], err = substitute(e, values); err != nil {
			return sexp{}, err
		}
	}
	return f, nil
}

type sbplReader struct {
	src string
	i   int
}

func (r *sbplReader) space() {
	for r.i < len(r.src) {
		switch c := r.src[r.i]; {
		case c == ';':
			for r.i < len(r.src) && r.src[r.i] != '\n' {
				r.i++
			}
		case c == ' ' || c == '\n' || c == '\t' || c == '\r':
			r.i++
		default:
			return
		}
	}
}

func (r *sbplReader) form() (sexp, error) {
	switch c := r.src[r.i]; c {
	case '(':
		r.i++
		list := []sexp{}
		for {
			r.space()
			if r.i >= len(r.src) {
				return sexp{}, errors.New("unbalanced (")
			}
			if r.src[r.i] == ')' {
				r.i++
				return sexp{list: list}, nil
			}
			f, err := r.form()
			if err != nil {
				return sexp{}, err
			}
			list = append(list, f)
		}
	case ')':
		return sexp{}, fmt.Errorf("unbalanced ) at %d", r.i)
	case '"':
		r.i++
		var b strings.Builder
		for {
			if r.i >= len(r.src) {
				return sexp{}, errors.New("unterminated string")
			}
			c := r.src[r.i]
			r.i++
			switch c {
			case '"':
				s := b.String()
				return sexp{str: &s, isStr: true}, nil
			case '\\':
				if r.i >= len(r.src) {
					return sexp{}, errors.New("unterminated string")
				}
				e := r.src[r.i]
				r.i++
				if e != '"' && e != '\\' {
					return sexp{}, fmt.Errorf("escape \\%c, which the profile should not hold", e)
				}
				b.WriteByte(e)
			default:
				if c < 0x20 {
					return sexp{}, fmt.Errorf("a control character (%#x) in a string", c)
				}
				b.WriteByte(c)
			}
		}
	case '#':
		return sexp{}, fmt.Errorf("# at %d, which the profile should not hold", r.i)
	default:
		start := r.i
		for r.i < len(r.src) && !strings.ContainsRune(" \n\t\r();\"", rune(r.src[r.i])) {
			r.i++
		}
		return sexp{atom: r.src[start:r.i]}, nil
	}
}

// A rule is an allow or deny form: its operations and its filters.
type rule struct {
	action  string
	ops     []string
	filters []sexp
}

// rules reads a profile's rules, its parameters substituted, and fails
// the test unless it begins with (version 1) (deny default) and holds
// only allow rules after.
func rules(t *testing.T, profile string, params []string) []rule {
	t.Helper()
	forms, err := readSBPL(profile, params)
	if err != nil {
		t.Fatalf("reading the profile back: %v\n%s", err, profile)
	}
	if len(forms) < 2 || forms[0].String() != "(version 1)" || forms[1].String() != "(deny default)" {
		t.Fatalf("the profile does not begin with (version 1) (deny default):\n%s", profile)
	}
	var out []rule
	for _, f := range forms[2:] {
		if len(f.list) < 2 || f.list[0].atom != "allow" {
			t.Fatalf("a form that is not an allow rule: %s", f)
		}
		r := rule{action: "allow"}
		for _, e := range f.list[1:] {
			if e.list == nil && !e.isStr {
				r.ops = append(r.ops, e.atom)
			} else {
				r.filters = append(r.filters, e)
			}
		}
		out = append(out, r)
	}
	return out
}

// grants are the paths a profile's rules allow op on, by kind (literal
// or subpath), as the filters read back: path filters, and those inside a
// unix-socket filter.
func grants(rs []rule, op string) map[string][]string {
	got := map[string][]string{}
	for _, r := range rs {
		if !slices.Contains(r.ops, op) {
			continue
		}
		for _, f := range r.filters {
			collectPaths(f, got)
		}
	}
	return got
}

func collectPaths(f sexp, into map[string][]string) {
	if len(f.list) == 2 && f.list[1].isStr && (f.list[0].atom == "literal" || f.list[0].atom == "subpath") {
		into[f.list[0].atom] = append(into[f.list[0].atom], *f.list[1].str)
		return
	}
	for _, e := range f.list {
		collectPaths(e, into)
	}
}

// covers says whether a grant of kind on g reaches path.
func covers(kind, g, path string) bool {
	if kind == "literal" {
		return path == g
	}
	return path == g || g == "/" || strings.HasPrefix(path, g+"/")
}

// remotes are the addresses of the (remote ip ...) filters of rs.
func remotes(rs []rule) []string {
	var out []string
	var walk func(sexp)
	walk = func(f sexp) {
		if len(f.list) == 3 && f.list[0].atom == "remote" && f.list[1].atom == "ip" && f.list[2].isStr {
			out = append(out, *f.list[2].str)
			return
		}
		for _, e := range f.list {
			walk(e)
		}
	}
	for _, r := range rs {
		for _, f := range r.filters {
			walk(f)
		}
	}
	return out
}

func has(rs []rule, text string) bool {
	for _, r := range rs {
		if r.String() == text {
			return true
		}
	}
	return false
}

func (r rule) String() string {
	parts := append([]string{r.action}, r.ops...)
	for _, f := range r.filters {
		parts = append(parts, f.String())
	}
	return "(" + strings.Join(parts, " ") + ")"
}

// filterless says which operations a profile may allow everywhere: none
// of them reaches a file, a host or another process.
var filterless = []string{"process-fork", "mach-host*", "ipc-posix-sem"}

// TestSeatbeltProfile: each network mode yields its rules and no other's,
// and every rule that reaches a file, a host or a process reaches only
// what the policy, the program or a process's start needs.
func TestSeatbeltProfile(t *testing.T) {
	const program = "/opt/tools/bin/server"
	home := "/Users/ann"
	secrets := []string{home + "/.ssh/id_ed25519", home + "/other-workspace/notes", "/private/etc/master.passwd", "/System/Volumes/Data/Users/ann/.ssh/id_ed25519", "/Library/Keychains/System.keychain"}
	base := Policy{
		// As the manifest gives them on macOS: /System among them.
		System: []string{"/System", "/usr/local", home + "/.nvm/versions/node/v22.0.0"},
		Read:   []string{home + "/.npm"},
		Write:  []string{home + "/ws", "/tmp/scratch"},
	}
	for _, c := range []struct {
		name    string
		network Network
		proxy   int
		want    []string // rules the profile holds, as read back
		wantNot []string // parts no rule may hold
	}{
		{
			name:    "none",
			network: Network{Mode: NetNone},
			want:    []string{`(allow system-socket (socket-domain AF_UNIX))`},
			wantNot: []string{"(remote ip", "(local ip", "network*", "com.apple.trustd", "com.apple.SystemConfiguration", "(allow system-socket)"},
		},
		{
			name:    "loopback",
			network: Network{Mode: NetLoopback},
			want: []string{
				`(allow network-bind network-inbound (local ip "localhost:*"))`,
				`(allow network-outbound (remote ip "localhost:*"))`,
			},
			wantNot: []string{`(remote ip "*`, `(local ip "*`, "network*", "com.apple.trustd", "com.apple.SystemConfiguration", "(allow system-socket)"},
		},
		{
			name:    "hosts",
			network: Network{Mode: NetHosts, Hosts: []string{"api.github.com:443", "localhost:5432", "[::1]:6379"}},
			proxy:   50123,
			want: []string{
				`(allow network-outbound (remote ip "localhost:50123") (remote ip "localhost:5432") (remote ip "localhost:6379"))`,
				`(allow mach-lookup (global-name "com.apple.system.opendirectoryd.libinfo") (global-name "com.apple.system.opendirectoryd.membership") (global-name "com.apple.system.DirectoryService.libinfo_v1") (global-name "com.apple.system.logger") (global-name "com.apple.logd") (global-name "com.apple.logd.events") (global-name "com.apple.diagnosticd") (global-name "com.apple.system.notification_center") (global-name "com.apple.bsd.dirhelper") (global-name "com.apple.trustd.agent") (global-name "com.apple.trustd") (global-name "com.apple.SecurityServer") (global-name "com.apple.ocspd"))`,
			},
			// Not the allowlist's remote port: Seatbelt would match it on
			// the loopback, not at api.github.com.
			wantNot: []string{`"localhost:443"`, `(remote ip "*`, "(local ip", "network*", "com.apple.SystemConfiguration", "(allow system-socket)"},
		},
		{
			name:    "all",
			network: Network{Mode: NetAll},
			want: []string{
				`(allow network-bind network-inbound (local ip "*:*"))`,
				`(allow network-outbound (remote ip "*:*") (literal "/private/var/run/mDNSResponder"))`,
				"(allow system-socket)",
			},
			// The IP network, not every unix socket.
			wantNot: []string{"network*"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := base
			p.Network = c.network
			profile, params, err := seatbeltProfile(&p, program, c.proxy)
			if err != nil {
				t.Fatal(err)
			}
			if params != nil {
				t.Errorf("parameters %q for paths that are all printable ASCII", params)
			}
			golden(t, filepath.Join("testdata", "seatbelt", c.name+".sb"), profile)
			rs := rules(t, profile, params)
			for _, w := range c.want {
				if !has(rs, w) {
					t.Errorf("the profile lacks %s", w)
				}
			}
			for _, r := range rs {
				// Any process's arguments and environment, whatever the
				// mode.
				if strings.Contains(r.String(), "kern.procargs") || has(rs, "(allow sysctl-read)") {
					t.Errorf("a rule lets the sandbox read other processes' arguments: %s", r)
				}
				for _, w := range c.wantNot {
					if strings.Contains(r.String(), w) {
						t.Errorf("a rule holds %q: %s", w, r)
					}
				}
				if len(r.filters) == 0 && !slices.Contains(filterless, r.ops[0]) && !(c.network.Mode == NetAll && r.ops[0] == "system-socket") {
					t.Errorf("a rule with no filter allows %v everywhere: %s", r.ops, r)
				}
				// file-link and file-clone: a hard link or a clone of any
				// file under a write grant would read it by a granted name.
				if slices.Contains(r.ops, "default") || strings.Contains(r.String(), "no-sandbox") ||
					slices.ContainsFunc(r.ops, func(op string) bool { return op == "file*" || op == "file-link" || op == "file-clone" }) {
					t.Errorf("a rule escapes the profile: %s", r)
				}
			}
			checkFileGrants(t, rs, &p, program, secrets)
		})
	}
}

// checkFileGrants fails the test when a rule lets the sandbox write
// outside p.Write, read or run outside p's grants, the program and the
// system's paths, or reach any of secrets at all (but the metadata of
// the directories above a grant).
func checkFileGrants(t *testing.T, rs []rule, p *Policy, program string, secrets []string) {
	t.Helper()
	write := aliases(p.Write)
	readable := slices.Concat(aliases(systemGrants(p.System)), aliases(p.Read), write, []string{program}, seatbeltSystemDirs, seatbeltSystemReads,
		[]string{"/", "/dev/null", "/dev/zero", "/dev/tty", "/dev/dtracehelper", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/fd"})
	within := func(kind, path string, allowed []string) bool {
		for _, a := range allowed {
			if covers("subpath", a, path) && (kind == "literal" || path != "/" || a == "/") {
				return true
			}
		}
		return false
	}
	for _, op := range []string{"file-write*", "file-write-data"} {
		for kind, paths := range grants(rs, op) {
			for _, path := range paths {
				if !within(kind, path, slices.Concat(write, []string{"/dev/null", "/dev/zero", "/dev/tty", "/dev/dtracehelper", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/fd"})) {
					t.Errorf("%s (%s %q): not a write grant", op, kind, path)
				}
			}
		}
	}
	// Unix sockets: only under the write grants (and name resolution's,
	// with the whole network).
	sockets := slices.Clone(write)
	if p.Network.Mode == NetAll {
		sockets = append(sockets, "/private/var/run/mDNSResponder")
	}
	for _, op := range []string{"network-outbound", "network-bind", "network-inbound"} {
		for kind, paths := range grants(rs, op) {
			for _, path := range paths {
				if !within(kind, path, sockets) {
					t.Errorf("%s (%s %q): a socket not under a write grant", op, kind, path)
				}
			}
		}
	}
	for _, op := range []string{"file-read*", "file-read-data", "process-exec", "file-map-executable"} {
		for kind, paths := range grants(rs, op) {
			for _, path := range paths {
				if !within(kind, path, readable) {
					t.Errorf("%s (%s %q): neither a grant, the program nor a system path", op, kind, path)
				}
				if kind == "subpath" && path == "/" {
					t.Errorf("%s of the whole file system", op)
				}
			}
		}
	}
	for _, secret := range secrets {
		for _, r := range rs {
			metadataOnly := !slices.ContainsFunc(r.ops, func(op string) bool {
				return op != "file-read-metadata" && op != "file-test-existence"
			})
			got := map[string][]string{}
			for _, f := range r.filters {
				collectPaths(f, got)
			}
			for kind, paths := range got {
				for _, g := range paths {
					if covers(kind, g, secret) && !(metadataOnly && kind == "literal") {
						t.Errorf("%s reaches %s", r, secret)
					}
				}
			}
		}
	}
}

// TestSeatbeltHostilePaths: a path that holds a quote, a backslash, a
// parenthesis or a comment stays one string of the profile, read back as
// itself, and adds no rule; one that holds a byte outside printable ASCII
// (a user's name, a line break) is a parameter, so that the profile stays
// ASCII, which libsandbox's reader requires; a NUL is refused.
func TestSeatbeltHostilePaths(t *testing.T) {
	benign := "/Users/ann/ws"
	count := func(t *testing.T, path string) (forms int, strs, params []string) {
		t.Helper()
		p := &Policy{Read: []string{path}, Write: []string{path + "/w"}, Network: Network{Mode: NetNone}}
		profile, params, err := seatbeltProfile(p, path+"/bin/server", 0)
		if err != nil {
			t.Fatalf("%q: %v", path, err)
		}
		read, err := readSBPL(profile, params)
		if err != nil {
			t.Fatalf("%q: reading the profile back: %v\n%s", path, err, profile)
		}
		var walk func(sexp)
		walk = func(s sexp) {
			if s.isStr {
				strs = append(strs, *s.str)
			}
			for _, e := range s.list {
				walk(e)
			}
		}
		for _, f := range read {
			walk(f)
		}
		return len(read), strs, params
	}
	wantForms, _, _ := count(t, benign)
	for _, c := range []struct {
		path  string
		param bool // named by a parameter, not inline
	}{
		{`/Users/ann/a"b`, false},
		{`/Users/ann/a\`, false},
		{`/Users/ann/a\"`, false},
		{`/Users/ann/x") (allow default) ("`, false},
		{`/Users/ann/x\") (allow file-write* (subpath "/Users`, false},
		{`/Users/ann/x\\") (allow default) (x "`, false},
		{`/Users/ann/;(allow default)`, false},
		{`/Users/ann/#"(allow default)"`, false},
		{`/Users/ann/sp ace/(tab)`, false},
		{"/Users/jos\u00e9/ws", true},
		{"/Users/ann/\u00fcn\u00efc\u00f6d\u00e9 \u2713\")(allow default)", true},
		{"/Users/ann/new\nline\")\n(allow default)", true},
		{"/Users/ann/del\x7f", true},
		{"/Users/ann/bad\xffutf8", true},
	} {
		t.Run(strconv.Quote(c.path), func(t *testing.T) {
			n, strs, params := count(t, c.path)
			if n != wantForms {
				t.Errorf("%d forms, want %d as for %q: the path added forms", n, wantForms, benign)
			}
			for _, want := range []string{c.path, c.path + "/w", c.path + "/bin/server"} {
				if !slices.Contains(strs, want) {
					t.Errorf("the path %q is not read back as itself; the profile's strings: %q", want, strs)
				}
			}
			if got := len(params) > 0; got != c.param {
				t.Errorf("parameters %q, want some: %v", params, c.param)
			}
		})
	}
	t.Run("NUL", func(t *testing.T) {
		path := "/Users/ann/nul\x00"
		for _, p := range []*Policy{
			{Read: []string{path}, Network: Network{Mode: NetNone}},
			{Write: []string{path}, Network: Network{Mode: NetNone}},
		} {
			_, _, err := seatbeltProfile(p, "/usr/bin/true", 0)
			if err == nil || !strings.Contains(err.Error(), "has a NUL byte") || !strings.Contains(err.Error(), strconv.Quote(path)) {
				t.Errorf("got %v, want an error that names the path and says it has a NUL byte", err)
			}
		}
		if _, _, err := seatbeltProfile(&Policy{Network: Network{Mode: NetNone}}, path, 0); err == nil {
			t.Errorf("a program %q: no error", path)
		}
	})
}

// TestSeatbeltAliases: a grant under /tmp, /var or /etc is granted by
// the /private path Seatbelt sees too, and the other way round.
func TestSeatbeltAliases(t *testing.T) {
	got := aliases([]string{"/tmp/a", "/private/var/folders/x/T/mcpgen-sandbox-1", "/etc", "/Users/ann/tmp", "/tmpfoo", "/tmp/a/"})
	want := []string{"/tmp/a", "/private/tmp/a", "/private/var/folders/x/T/mcpgen-sandbox-1", "/var/folders/x/T/mcpgen-sandbox-1", "/etc", "/private/etc", "/Users/ann/tmp", "/tmpfoo"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestSeatbeltReport: what the Report says, and what a strict policy does
// with it: refused without sandbox-exec, and with a loopback that is the
// machine's; started otherwise.
func TestSeatbeltReport(t *testing.T) {
	for _, c := range []struct {
		name       string
		network    Network
		have       bool
		refused    bool
		enforced   string
		unenforced string
	}{
		{"no sandbox-exec", Network{Mode: NetNone}, false, true, "", "files: not confined"},
		{"none", Network{Mode: NetNone}, true, false, "network: none", ""},
		{"loopback", Network{Mode: NetLoopback}, true, true, "network: loopback only", "every service listening on localhost is reachable"},
		{"hosts", Network{Mode: NetHosts, Hosts: []string{"api.github.com:443"}}, true, false, "network: only api.github.com:443", ""},
		{"all", Network{Mode: NetAll}, true, false, "network: all", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &Policy{Read: []string{"/r"}, Write: []string{"/w"}, Network: c.network, Enforce: EnforceStrict}
			r := seatbeltReport(p, c.have)
			if c.enforced != "" && !slices.ContainsFunc(r.Enforced, func(s string) bool { return strings.Contains(s, c.enforced) }) {
				t.Errorf("enforced: got %q, want %q among them", r.Enforced, c.enforced)
			}
			if c.unenforced != "" && !slices.ContainsFunc(r.NotEnforced, func(s string) bool { return strings.Contains(s, c.unenforced) }) {
				t.Errorf("not enforced: got %q, want %q among them", r.NotEnforced, c.unenforced)
			}
			if c.have && !slices.ContainsFunc(r.Enforced, func(s string) bool { return strings.Contains(s, "read only /r and write only /w") }) {
				t.Errorf("enforced: got %q, want the file grants", r.Enforced)
			}
			cmd := exec.Command("/usr/bin/true", "x")
			before := slices.Clone(cmd.Args)
			s, err := prepareSeatbelt(cmd, p, c.have)
			if s != nil {
				defer s.Close()
			}
			var se *StrictError
			if got := errors.As(err, &se); got != c.refused {
				t.Fatalf("strict: got %v, want refused %v", err, c.refused)
			}
			if c.refused && (cmd.Path != "/usr/bin/true" || !slices.Equal(cmd.Args, before) || cmd.Env != nil) {
				t.Errorf("refused, but cmd was changed: %q %q", cmd.Path, cmd.Args)
			}
		})
	}
	// Without sandbox-exec, a warned policy starts unconfined, as the
	// Report says.
	cmd := exec.Command("/usr/bin/true")
	s, err := prepareSeatbelt(cmd, &Policy{Network: Network{Mode: NetNone}}, false)
	if err != nil || cmd.Path != "/usr/bin/true" || s.TempDir != "" {
		t.Errorf("without sandbox-exec: got %v, %q, temp %q; want cmd as it was", err, cmd.Path, s.TempDir)
	}
}

// TestPrepareSeatbelt: the command becomes sandbox-exec -p PROFILE
// PROGRAM ARGS, with its private TMPDIR granted and set, the credential
// sockets' variables withheld, and for an allowlist a live egress proxy
// named by HTTPS_PROXY and granted by port; Close releases them.
func TestPrepareSeatbelt(t *testing.T) {
	dir := t.TempDir()
	// A grant by a link: where it leads is granted too.
	realWS := filepath.Join(dir, "real-ws")
	if err := os.Mkdir(realWS, 0o700); err != nil {
		t.Fatal(err)
	}
	linkWS := filepath.Join(dir, "ws")
	if err := os.Symlink(realWS, linkWS); err != nil {
		t.Fatal(err)
	}
	// A grant whose name is not ASCII: a parameter of sandbox-exec's.
	accented := filepath.Join(dir, "w\u00f6rk")
	granted, other := echoServer(t), echoServer(t)
	p := &Policy{Write: []string{linkWS, accented}, Network: Network{Mode: NetHosts, Hosts: []string{granted}}}

	cmd := exec.Command("./bin/server", "--flag", "a b")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin", "SSH_AUTH_SOCK=/tmp/agent.sock", "TMPDIR=/elsewhere", "NO_PROXY=*", "HTTPS_PROXY=http://evil:1"}
	s, err := prepareSeatbelt(cmd, p, true)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			s.Close()
		}
	}()
	program := filepath.Join(dir, "bin", "server")
	at := slices.Index(cmd.Args, program)
	if cmd.Path != sandboxExec || at < 3 || cmd.Args[0] != sandboxExec || cmd.Args[1] != "-p" ||
		!slices.Contains(cmd.Args[3:at], "-DP0="+accented) || !slices.Equal(cmd.Args[at+1:], []string{"--flag", "a b"}) {
		t.Fatalf("cmd: got %q %q, want %s -p PROFILE -DP0=%s ... %s --flag \"a b\"", cmd.Path, cmd.Args, sandboxExec, accented, program)
	}
	var params []string
	for _, arg := range cmd.Args[3:at] {
		kv, ok := strings.CutPrefix(arg, "-D")
		if !ok {
			t.Fatalf("cmd: %q between the profile and the program, want only -DNAME=value", arg)
		}
		params = append(params, kv)
	}
	env := map[string]string{}
	for _, kv := range cmd.Env {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := env[k]; dup {
			t.Errorf("env: %s twice", k)
		}
		env[k] = v
	}
	if s.TempDir == "" || env["TMPDIR"] != s.TempDir {
		t.Errorf("TMPDIR: got %q, want the setup's %q", env["TMPDIR"], s.TempDir)
	}
	if v, ok := env["SSH_AUTH_SOCK"]; ok {
		t.Errorf("env: SSH_AUTH_SOCK=%s passed", v)
	}
	// The agent's NO_PROXY is replaced: only the loopback bypasses the
	// proxy, where the granted services of the machine are.
	if env["NO_PROXY"] != "localhost,127.0.0.1,::1" {
		t.Errorf("env: NO_PROXY=%q, want the loopback alone", env["NO_PROXY"])
	}
	if env[EnvInside] != "1" {
		t.Errorf("env: %s=%q, want 1: an mcpgen inside would try a sandbox of its own, which sandbox-exec cannot nest", EnvInside, env[EnvInside])
	}
	if env["PATH"] != "/usr/bin" {
		t.Errorf("env: PATH=%q, want it kept", env["PATH"])
	}
	proxy := strings.TrimPrefix(env["HTTPS_PROXY"], "http://")
	_, port, err := net.SplitHostPort(proxy)
	if err != nil {
		t.Fatalf("HTTPS_PROXY=%q: %v", env["HTTPS_PROXY"], err)
	}

	rs := rules(t, cmd.Args[2], params)
	// The proxy's port, and the allowlist's one service on the loopback
	// (the echo server), by its port: no other.
	_, grantedPort, _ := net.SplitHostPort(granted)
	if got, want := remotes(rs), []string{"localhost:" + port, "localhost:" + grantedPort}; !slices.Equal(got, want) {
		t.Errorf("the profile lets the sandbox connect to %q, want %q", got, want)
	}
	allowed := func(op, path string) bool {
		for kind, paths := range grants(rs, op) {
			for _, g := range paths {
				if covers(kind, g, path) {
					return true
				}
			}
		}
		return false
	}
	for _, want := range []struct{ op, path string }{
		{"file-write*", s.TempDir},
		{"file-write*", filepath.Join(realWS, "file")},
		{"file-write*", filepath.Join(accented, "file")},
		{"file-read*", linkWS}, // the link, read on the way to the grant
		{"process-exec", program},
	} {
		if !allowed(want.op, want.path) {
			t.Errorf("the profile does not allow %s of %s", want.op, want.path)
		}
	}
	// The link itself is the user's: the sandbox may not replace it.
	if allowed("file-write*", linkWS) {
		t.Errorf("the profile allows file-write* of the link %s", linkWS)
	}

	// The proxy the sandbox is sent to tunnels to what the list names,
	// and nowhere else.
	if _, _, status := connect(t, proxy, granted); !strings.Contains(status, " 200 ") {
		t.Errorf("CONNECT %s through HTTPS_PROXY: got %q, want 200", granted, status)
	}
	if _, _, status := connect(t, proxy, other); !strings.Contains(status, " 403 ") {
		t.Errorf("CONNECT %s through HTTPS_PROXY: got %q, want 403", other, status)
	}

	s.Close()
	closed = true
	if _, err := os.Stat(s.TempDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary directory after Close: %v, want it gone", err)
	}
	if c, err := net.DialTimeout("tcp", proxy, testWait); err == nil {
		c.Close()
		t.Errorf("the proxy still accepts after Close")
	}
}

// TestResolve: a path's links are followed a component at a time, as the
// kernel does (relative and absolute, a link to a link, a link in a
// link's target), each met at its own path; a missing tail is kept as
// written; a loop ends.
func TestResolve(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(dir, "real")
	if err := os.MkdirAll(filepath.Join(real, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct{ link, target string }{
		{"a", "b"},                     // relative, to a link
		{"b", filepath.Join(dir, "c")}, // absolute, to a link
		{"c", "real"},                  // to the directory
		{filepath.Join("real", "up"), "../real/sub"}, // inside the target, with ..
		{"loop", "loop"},
	} {
		if err := os.Symlink(l.target, filepath.Join(dir, l.link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		path      string
		wantLinks []string
		wantReal  string
	}{
		{filepath.Join(dir, "real", "sub"), nil, filepath.Join(real, "sub")},
		{filepath.Join(dir, "a", "up", "file"), []string{filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c"), filepath.Join(real, "up")}, filepath.Join(real, "sub", "file")},
		{filepath.Join(dir, "c", "missing", "deeper"), []string{filepath.Join(dir, "c")}, filepath.Join(real, "missing", "deeper")},
		{filepath.Join(dir, "loop", "x"), slices.Repeat([]string{filepath.Join(dir, "loop")}, 32), filepath.Join(dir, "loop", "x")},
	} {
		links, got := resolve(c.path)
		if !slices.Equal(links, c.wantLinks) || got != c.wantReal {
			t.Errorf("resolve(%s): got %q, %s; want %q, %s", c.path, links, got, c.wantLinks, c.wantReal)
		}
	}
}

// TestDeveloperDir: xcode-select's choice is granted as the .app bundle
// that holds it, or as it is; nothing when there is none.
func TestDeveloperDir(t *testing.T) {
	dir := t.TempDir()
	for i, c := range []struct{ target, want string }{
		{"/Applications/Xcode-beta.app/Contents/Developer", "/Applications/Xcode-beta.app"},
		{"/Library/Developer/CommandLineTools", "/Library/Developer/CommandLineTools"},
		{"relative/Developer", ""},
	} {
		link := filepath.Join(dir, strconv.Itoa(i))
		if err := os.Symlink(c.target, link); err != nil {
			t.Fatal(err)
		}
		if got := developerDir(link); got != c.want {
			t.Errorf("developerDir(-> %s): got %q, want %q", c.target, got, c.want)
		}
	}
	if got := developerDir(filepath.Join(dir, "missing")); got != "" {
		t.Errorf("developerDir(missing): got %q, want none", got)
	}
}

// golden compares got with the file at path, or rewrites it (-update).
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (-update rewrites it); got:\n%s", path, got)
	}
}

// BenchmarkSeatbeltProfile: what making the profile adds to each start of
// a sandboxed server on macOS, for a policy of a usual size.
func BenchmarkSeatbeltProfile(b *testing.B) {
	p := &Policy{
		Read:    []string{"/Users/ann/.npm", "/Users/ann/.nvm/versions/node/v22.0.0", "/opt/homebrew/lib/node_modules"},
		Write:   []string{"/Users/ann/ws", "/private/var/folders/xy/abc/T/mcpgen-sandbox-1"},
		Network: Network{Mode: NetHosts, Hosts: []string{"api.github.com:443", "localhost:5432"}},
	}
	for b.Loop() {
		if _, _, err := seatbeltProfile(p, "/Users/ann/.nvm/versions/node/v22.0.0/bin/node", 50123); err != nil {
			b.Fatal(err)
		}
	}
}
