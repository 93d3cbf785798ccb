package manifest

import (
	"encoding/json"
	"errors"
	"github.com/mcpgen/mcpgen/internal/sandbox"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestSandboxErrors checks every rule of the sandbox keys: each bad value
// is reported at its place, says what is wrong and what to write.
func TestSandboxErrors(t *testing.T) {
	tests := []struct {
		name, doc string
		want      []string
	}{
		{"relative paths", "[sandbox]\nread = [\"src\", \"./cache\", \"\"]\nwrite = [\"~bob/x\", \"/a/{workspace}\"]\n", []string{
			`m.toml:2:9: "sandbox.read": "src" is a relative path: a sandbox path starts with /, ~ or {workspace} (write "{workspace}/src" for one in the workspace)`,
			`m.toml:2:16: "sandbox.read": "./cache" is a relative path: a sandbox path starts with /, ~ or {workspace} (write "{workspace}/cache" for one in the workspace)`,
			`m.toml:2:27: "sandbox.read": an empty path: remove it, or name a directory`,
			`m.toml:3:10: "sandbox.write": "~bob/x": ~ stands only for your own home directory (~/...); write another user's path in full`,
			`m.toml:3:20: "sandbox.write": "/a/{workspace}": {workspace} goes only at the start of a path: "{workspace}/..."`}},
		{"paths not a list", "[servers.x]\ncommand = \"a\"\n[servers.x.sandbox]\nread = \"/usr\"\nwrite = 1\n", []string{
			`m.toml:4:8: server "x": "sandbox.read" must be an array of strings: write ["/usr"]`,
			`m.toml:5:9: server "x": "sandbox.write" must be an array of strings, not an integer`}},
		{"bad host:port", "[sandbox]\nnetwork = [\"api.github.com\", \"h:0\", \"h:70000\", \"*.github.com:443\", \":443\", \"a_b.example:443\", \"h:https\", 7]\n", []string{
			`m.toml:2:106: "sandbox.network" must hold only strings; element 8 is an integer`}},
		{"bad host:port, strings", "[sandbox]\nnetwork = [\"api.github.com\", \"h:0\", \"h:70000\", \"*.github.com:443\", \":443\", \"a_b.example:443\", \"h:https\", \"[::1]:80\", \"10.0.0.1:5432\"]\n", []string{
			`m.toml:2:12: "network": "api.github.com" is not host:port: write the host and its port, such as "api.github.com:443" ("[::1]:8080" for IPv6)`,
			`m.toml:2:30: "network": "h:0": the port must be a number from 1 to 65535`,
			`m.toml:2:37: "network": "h:70000": the port must be a number from 1 to 65535`,
			`m.toml:2:48: "network": "*.github.com:443": wildcards are not allowed; list each host`,
			`m.toml:2:68: "network": ":443" has no host: write one, such as "api.github.com:443"`,
			`m.toml:2:76: "network": "a_b.example:443": "a_b.example" is not a host name or an IP address`,
			`m.toml:2:95: "network": "h:https": the port must be a number from 1 to 65535`}},
		{"unknown network word", "[servers.x]\ncommand = \"a\"\nsandbox.network = \"loopbak\"\n[servers.y]\ncommand = \"a\"\nsandbox.network = \"internet\"\n", []string{
			`m.toml:3:19: server "x": unknown network "loopbak" (did you mean "loopback"?); use "none", "loopback", "all" or a list of "host:port", such as ["api.github.com:443"]`,
			`m.toml:6:19: server "y": unknown network "internet"; use "none", "loopback", "all" or a list of "host:port", such as ["api.github.com:443"]`}},
		{"a host where a list goes", "[sandbox]\nnetwork = \"api.github.com:443\"\n", []string{
			`m.toml:2:11: network "api.github.com:443" must be a list to name a host: write ["api.github.com:443"]`}},
		{"empty network list", "[sandbox]\nnetwork = []\n", []string{
			`m.toml:2:1: "network" is an empty list: write "none" for no network`}},
		{"network of another type", "[sandbox]\nnetwork = false\n", []string{
			`m.toml:2:11: "network" must be a string or a list of strings, not a boolean: use "none", "loopback", "all" or a list of "host:port", such as ["api.github.com:443"]`}},
		{"enforce and enabled", "[sandbox]\nenabled = \"yes\"\nenforce = \"strickt\"\n", []string{
			`m.toml:2:11: "sandbox.enabled" must be true or false, not a string`,
			`m.toml:3:11: unknown enforce mode "strickt" (did you mean "strict"?); use "warn" (run, and say what is not enforced) or "strict" (refuse to start the server)`}},
		{"unknown key", "[sandbox]\nenable = true\n[servers.x]\ncommand = \"a\"\n[servers.x.sandbox]\nnet = \"none\"\n", []string{
			`m.toml:2:1: unknown key "enable" (did you mean "enabled"?)`,
			`m.toml:6:1: server "x": unknown key "net" (did you mean "network"?)`}},
		{"a boolean for the table", "sandbox = true\n[servers.x]\ncommand = \"a\"\nsandbox = false\n", []string{
			`m.toml:1:11: "sandbox" is a table: write sandbox.enabled = true`,
			`m.toml:4:11: server "x": "sandbox" is a table: write sandbox.enabled = false`}},
		{"a remote server has no process", "[servers.r]\nurl = \"https://x.example\"\nsandbox.enabled = true\n", []string{
			`m.toml:3:1: server "r": "sandbox" is not allowed with "url"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), "m.toml", "/m")
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("got %v, want Errors", err)
			}
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors:\ngot:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestSandboxWarnings: a grant of the whole file system or home
// directory is valid but no sandbox, and validate says so.
func TestSandboxWarnings(t *testing.T) {
	m, err := Parse([]byte("[sandbox]\nread = [\"/\", \"~/\", \"~/.npm\"]\n[servers.x]\ncommand = \"a\"\nsandbox.write = [\"${HOME}\", \"/tmp\"]\n"), "m.toml", "/m")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range m.Warnings {
		got = append(got, w.Error())
	}
	want := []string{
		`m.toml:2:9: warning: "sandbox.read": "/" grants the whole file system, which is no sandbox: grant the directories the server needs`,
		`m.toml:2:14: warning: "sandbox.read": "~/" grants your whole home directory, its keys and tokens (~/.ssh, ~/.aws) included: grant the directories the server needs, such as "~/.npm"`,
		`m.toml:5:18: warning: server "x": "sandbox.write": "${HOME}" grants your whole home directory, its keys and tokens (~/.ssh, ~/.aws) included: grant the directories the server needs, such as "~/.npm"`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("warnings:\ngot:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSandboxSuggestions checks the fixes that validate --json gives.
func TestSandboxSuggestions(t *testing.T) {
	_, err := Parse([]byte("[sandbox]\nread = [\"src\"]\nnetwork = \"loopbak\"\nenforce = \"warm\"\n[servers.x]\ncommand = \"a\"\nsandbox.network = \"h.example:443\"\n"), "m.toml", "/m")
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("got %v, want Errors", err)
	}
	var got []string
	for _, e := range errs {
		got = append(got, e.Path+" "+e.Suggestion)
	}
	want := []string{`sandbox.read[0] "{workspace}/src"`, `sandbox.network loopback`, `sandbox.enforce warn`, `servers.x.sandbox.network ["h.example:443"]`}
	if !slices.Equal(got, want) {
		t.Errorf("suggestions:\ngot:  %q\nwant: %q", got, want)
	}
}

// TestSandboxMerge checks how a server's table combines with [sandbox]:
// key by key, a list replaced as a whole; a server without a table takes
// the defaults, and a remote server has no sandbox.
func TestSandboxMerge(t *testing.T) {
	m, err := Parse([]byte(`[sandbox]
enabled = true
read = ["~/.npm", "/opt/a"]
network = "loopback"

[servers.plain]
command = "a"

[servers.own]
command = "a"
[servers.own.sandbox]
read = ["/opt/b"]
write = []
network = ["api.github.com:443"]
enforce = "strict"

[servers.off]
builtin = "files"
sandbox.enabled = false

[servers.remote]
url = "https://x.example"
`), "m.toml", "/m")
	if err != nil {
		t.Fatal(err)
	}
	reads := func(sb Sandbox) []string {
		var out []string
		for _, r := range sb.Read {
			out = append(out, r.String())
		}
		return out
	}
	plain := m.Sandbox(m.Server("plain"))
	if !plain.Enabled || !slices.Equal(reads(plain), []string{"~/.npm", "/opt/a"}) || plain.Write != nil || plain.Network.Mode != NetworkLoopback || plain.Enforce != EnforceWarn {
		t.Errorf("plain: got %+v, want the defaults: enabled, read [~/.npm /opt/a], write unset, loopback, warn", plain)
	}
	own := m.Sandbox(m.Server("own"))
	if !own.Enabled || !slices.Equal(reads(own), []string{"/opt/b"}) || own.Write == nil || len(own.Write) != 0 ||
		own.Network.Mode != NetworkHosts || !slices.Equal(own.Network.Hosts, []string{"api.github.com:443"}) || own.Enforce != EnforceStrict {
		t.Errorf("own: got %+v, want enabled, read [/opt/b] only, write [], hosts [api.github.com:443], strict", own)
	}
	if off := m.Sandbox(m.Server("off")); off.Enabled {
		t.Errorf("off: got enabled, want the server's enabled = false over the default")
	}
	if r := m.Sandbox(m.Server("remote")); r.Enabled {
		t.Errorf("remote: got enabled, want no sandbox for a server that runs no process")
	}

	// Without [sandbox] the sandbox is off, with no network.
	bare, err := Parse([]byte("[servers.x]\ncommand = \"a\"\n"), "m.toml", "/m")
	if err != nil {
		t.Fatal(err)
	}
	if sb := bare.Sandbox(bare.Servers[0]); sb.Enabled || sb.Network.Mode != NetworkNone || sb.Enforce != EnforceWarn || sb.Read != nil || sb.Write != nil {
		t.Errorf("no [sandbox]: got %+v, want off, none, warn, no grants", sb)
	}
}

// TestSandboxPaths checks the grants resolved: ~, {workspace} and ${VAR}
// expanded, made absolute and clean, the defaults when unset, the system
// paths and the program's own installation added, and a variable that
// resolves to a relative path refused at its place.
func TestSandboxPaths(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("paths are Unix paths here; the sandbox is not enforced on Windows")
	}
	// A program installed as a prefix does (bin/, lib/ beside it), reached
	// through a link on PATH, as nvm's node and npx are.
	root := t.TempDir()
	prefix := filepath.Join(root, "node")
	if err := os.MkdirAll(filepath.Join(prefix, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(prefix, "bin", "npx"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	onPath := filepath.Join(root, "path")
	if err := os.Mkdir(onPath, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(prefix, "bin", "npx"), filepath.Join(onPath, "npx")); err != nil {
		t.Fatal(err)
	}
	realPrefix, err := filepath.EvalSymlinks(prefix)
	if err != nil {
		t.Fatal(err)
	}

	m, err := Parse([]byte(`[sandbox]
enabled = true

[servers.dflt]
command = "npx"

[servers.own]
command = "npx"
[servers.own.sandbox]
read = ["~/.npm", "{workspace}/../shared/", "${CACHE}/x", "{workspace}"]
write = ["{workspace}/out", "/tmp/./own"]

[servers.bad]
command = "npx"
[servers.bad.sandbox]
write = ["${REL}"]
`), "m.toml", "/m")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": "/home/alice", "CACHE": "/var/cache", "REL": "rel/dir", "PATH": onPath}
	getenv := func(n string) (string, bool) { v, ok := env[n]; return v, ok }
	c := &Context{WorkspaceID: "w", WorkspaceDir: "/srv/ws/w", UserID: "alice"}

	dflt, err := m.SandboxPaths(m.Server("dflt"), c, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/srv/ws/w"}; !slices.Equal(dflt.Write, want) {
		t.Errorf("default write: got %q, want %q", dflt.Write, want)
	}
	for _, p := range append(slices.Clone(SystemReadPaths), filepath.Join(onPath, "npx"), filepath.Join(realPrefix, "bin", "npx"), realPrefix) {
		if !slices.Contains(dflt.Start, p) {
			t.Errorf("start: %q missing from %q", p, dflt.Start)
		}
	}
	if len(dflt.Read) != 0 {
		t.Errorf("default read: got %q, want nothing: the workspace is in write, which implies read", dflt.Read)
	}

	own, err := m.SandboxPaths(m.Server("own"), c, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/srv/ws/w/out", "/tmp/own"}; !slices.Equal(own.Write, want) {
		t.Errorf("own write: got %q, want %q", own.Write, want)
	}
	if want := []string{"/home/alice/.npm", "/srv/ws/shared", "/var/cache/x", "/srv/ws/w"}; !slices.Equal(own.Read, want) {
		t.Errorf("own read: got %q, want %q", own.Read, want)
	}

	_, err = m.SandboxPaths(m.Server("bad"), c, getenv)
	if want := `m.toml:16:10: server "bad": sandbox.write[0]: "rel/dir" is not an absolute path: a sandbox path starts with /, ~ or {workspace}`; err == nil || err.Error() != want {
		t.Errorf("a variable that holds a relative path:\ngot:  %v\nwant: %s", err, want)
	}

	// A declared server's programs are its tools' run[0], looked for on
	// the PATH of its own env; a program that the model chooses adds
	// nothing.
	decl, err := Parse([]byte(`[sandbox]
enabled = true
[servers.decl]
env.PATH = "${ALT}"
[servers.decl.tools.mem]
run = ["npx", "x"]
[servers.decl.tools.any]
run = ["{prog}"]
args.prog = { enum = ["/opt/evil/bin/x"] }
`), "m.toml", "/m")
	if err != nil {
		t.Fatal(err)
	}
	altEnv := map[string]string{"ALT": onPath, "PATH": "/nonexistent"}
	got, err := decl.SandboxPaths(decl.Servers[0], c, func(n string) (string, bool) { v, ok := altEnv[n]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got.Start, realPrefix) || slices.ContainsFunc(got.Start, func(p string) bool { return strings.HasPrefix(p, "/opt/evil") }) {
		t.Errorf("declared: got start %q, want %s (npx on the server's PATH) and nothing of /opt/evil", got.Start, realPrefix)
	}

	// ~ needs a HOME to stand for.
	delete(env, "HOME")
	if _, err := m.SandboxPaths(m.Server("own"), c, getenv); err == nil || !strings.Contains(err.Error(), "HOME is not an absolute path") {
		t.Errorf("~ without HOME: got %v, want an error that says HOME is not set", err)
	}
}

// TestSandboxHints checks what validate suggests: the sandbox for servers
// that npx or uvx fetch, and that Windows does not enforce it.
func TestSandboxHints(t *testing.T) {
	doc := `[servers.mem]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-memory"]

[servers.git]
command = "/usr/local/bin/uvx"

[servers.boxed]
command = "npx.cmd"
sandbox.enabled = true

[servers.own]
command = "node"

[servers.remote]
url = "https://x.example"
`
	m, err := Parse([]byte(doc), "m.toml", "/m")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range m.SandboxHints("linux") {
		got = append(got, h.Error()+" | "+h.Suggestion)
	}
	want := []string{
		`m.toml:2:11: hint: server "mem": npx fetches and runs someone else's code with your rights: consider sandbox.enabled = true, which confines it to the workspace; to fetch, npx needs write = ["{workspace}", "~/.npm"] and network = ["registry.npmjs.org:443"] | sandbox.enabled = true`,
		`m.toml:6:11: hint: server "git": uvx fetches and runs someone else's code with your rights: consider sandbox.enabled = true, which confines it to the workspace; to fetch, uvx needs write = ["{workspace}", "~/.cache/uv"] and network = ["pypi.org:443", "files.pythonhosted.org:443"] | sandbox.enabled = true`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("hints on linux:\ngot:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	got = nil
	for _, h := range m.SandboxHints("windows") {
		got = append(got, h.Error())
	}
	want = []string{
		want[0][:strings.Index(want[0], " | ")],
		want[1][:strings.Index(want[1], " | ")],
		`m.toml:8:10: hint: server "boxed": the sandbox is not enforced on Windows yet: the server runs with your full rights`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("hints on windows:\ngot:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSandboxJSON: the launcher keys a server by its JSON, so a server
// without a sandbox must marshal as it did before the key existed, and a
// comment added above a sandbox table must change nothing.
func TestSandboxJSON(t *testing.T) {
	marshal := func(doc string) string {
		t.Helper()
		m, err := Parse([]byte(doc), "m.toml", "/m")
		if err != nil {
			t.Fatal(err)
		}
		s := *m.Servers[0]
		s.Pos = Position{}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := marshal("[servers.x]\ncommand = \"a\"\n"); strings.Contains(got, "Sandbox") {
		t.Errorf("a server without a sandbox: got %s, want no Sandbox key", got)
	}
	a := marshal("[servers.x]\ncommand = \"a\"\n[servers.x.sandbox]\nenabled = true\n")
	b := marshal("[servers.x]\ncommand = \"a\"\n\n# why\n[servers.x.sandbox]\nenabled = true\n")
	if a != b || !strings.Contains(a, `"Sandbox":{"Enabled":true`) {
		t.Errorf("a sandbox moved by a comment:\ngot  %s\nand  %s\nwant the same, with the sandbox", a, b)
	}
}

// TestSandboxNotEnforced: validate says, at the server's sandbox, what
// the platform cannot enforce, and that a strict one will not start.
func TestSandboxNotEnforced(t *testing.T) {
	doc := `[servers.a]
command = "node"
sandbox.enabled = true

[servers.b]
command = "node"

[servers.b.sandbox]
enabled = true
enforce = "strict"
network = ["api.github.com:443"]

[servers.c]
command = "node"
`
	m, err := Parse([]byte(doc), "m.toml", "/m")
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	inspect := func(p *sandbox.Policy) sandbox.Report {
		asked = append(asked, string(p.Network.Mode)+" "+strings.Join(p.Network.Hosts, ","))
		return sandbox.Report{NotEnforced: []string{"network: pretended"}}
	}
	var got []string
	for _, w := range m.SandboxWarnings("linux", inspect) {
		got = append(got, w.Error())
	}
	want := []string{
		`m.toml:3:1: warning: server "a": the sandbox cannot enforce here: network: pretended`,
		`m.toml:8:12: warning: server "b": the sandbox cannot enforce here: network: pretended (enforce = "strict": the server will not start)`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("warnings:\ngot:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !slices.Equal(asked, []string{"none ", "hosts api.github.com:443"}) {
		t.Errorf("inspected %q", asked)
	}
	if w := m.SandboxWarnings("windows", inspect); len(w) != 0 {
		t.Errorf("windows: %v, want none (SandboxHints says it)", w)
	}
}
