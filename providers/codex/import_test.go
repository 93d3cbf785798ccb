package codex

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/providers"
)

// formatImported writes the servers of f as the manifest would hold them,
// with a line per server saying where it came from and what was noted.
func formatImported(t *testing.T, f *providers.ImportedFile) string {
	t.Helper()
	m := &manifest.Manifest{Version: 1}
	c := &manifest.Comments{Above: map[string][]string{}}
	for _, s := range f.Servers {
		m.Servers = append(m.Servers, s.Server)
		lines := []string{"line " + itoa(s.Line)}
		if s.Managed {
			lines = append(lines, "managed")
		}
		lines = append(lines, s.Notes...)
		for k, n := range s.KeyNotes {
			lines = append(lines, k+": "+n)
		}
		c.Above["servers."+s.Server.Name] = lines
	}
	out, err := manifest.Format(m, c)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(strings.TrimPrefix(string(out), "version = 1\n"))
	for _, sk := range f.Skipped {
		b.WriteString("skipped " + sk.Name + " (line " + itoa(sk.Line) + "): " + sk.Reason + "\n")
	}
	for _, n := range f.Notes {
		b.WriteString("note: " + n + "\n")
	}
	return b.String()
}

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}

func TestImport(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{
			name: "stdio, every key",
			in: `model = "o3"

[mcp_servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]
env = { LOG_LEVEL = "info", GITHUB_TOKEN = "plain-for-now" }
env_vars = ["PATH_EXTRA", { name = "REMOTE_ONE", source = "remote" }, { name = "LOCAL_ONE", source = "local" }]
cwd = "/srv/gh"
startup_timeout_sec = 20
tool_timeout_sec = 90.5
enabled = false
enabled_tools = ["create_issue"]
disabled_tools = []

[mcp_servers.github.tools.create_issue]
approval_mode = "approve"
`,
			want: `
# line 3
# env_vars[1]: source = "remote" left out: mcpgen passes the variable from the agent's own environment.
[servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]
env.LOG_LEVEL = "info"
env.GITHUB_TOKEN = "plain-for-now"
env.PATH_EXTRA = "${PATH_EXTRA}"
env.REMOTE_ONE = "${REMOTE_ONE}"
env.LOCAL_ONE = "${LOCAL_ONE}"
cwd = "/srv/gh"
context = false
enabled = false
startup_timeout = "20s"
tool_timeout = "1m30.5s"
enabled_tools = ["create_issue"]
disabled_tools = []
note: Codex's approval settings ([mcp_servers.github.tools.*]) are not servers: they stay in config.toml, and emit keeps them in place.
`,
		},
		{
			name: "http",
			in: `[mcp_servers.docs]
url = "https://mcp.example.com/mcp"
bearer_token_env_var = "DOCS_TOKEN"
http_headers = { X-Tenant = "acme" }
env_http_headers = { X-Org = "DOCS_ORG" }
startup_timeout_ms = 2500
required = true
oauth_resource = "https://mcp.example.com"
`,
			want: `
# line 1
# required = true left out: mcpgen has no such setting (Codex refuses to start a session when a required server fails).
# oauth_resource left out: mcpgen has no such setting; keep the server in config.toml by hand if it needs it.
[servers.docs]
url = "https://mcp.example.com/mcp"
bearer_token_env = "DOCS_TOKEN"
headers.X-Org = "${DOCS_ORG}"
headers.X-Tenant = "acme"
startup_timeout = "2.5s"
`,
		},
		{
			name: "file order, dotted keys, inline tables and mcpgen's mark",
			in: `[mcp_servers]
gamma = { url = "https://g.example.com/mcp" }
zeta.command = "z"

# mcpgen: managed entry sha256:0123456789ab; edit the manifest and re-run mcpgen emit
[mcp_servers.beta]
command = "b"
args = []

[mcp_servers.alpha]
command = "a"
cwd = "rel/dir"
`,
			want: `
# line 2
[servers.gamma]
url = "https://g.example.com/mcp"

# line 3
[servers.zeta]
command = "z"
context = false

# line 6
# managed
[servers.beta]
command = "b"
context = false

# line 10
# cwd: relative: Codex resolved it against its own working directory, mcpgen resolves it against the manifest's
[servers.alpha]
command = "a"
cwd = "rel/dir"
context = false
`,
		},
		{
			name: "what mcpgen cannot hold stays in the file",
			in: `[mcp_servers."my.server"]
command = "x"

[mcp_servers.workspace]
command = "x"

[mcp_servers.dollar]
command = "echo"
args = ["${HOME}"]

[mcp_servers.web]
url = "ftp://files.example.com"

[mcp_servers.inline]
url = "https://i.example.com/mcp"
bearer_token = "inline-token-value"

[mcp_servers.unknown]
command = "u"
comand = "typo"
`,
			want: `
# line 14
# bearer_token (which Codex rejects) became a variable of the environment.
[servers.inline]
url = "https://i.example.com/mcp"
headers.Authorization = "Bearer inline-token-value"

# line 18
# Unknown key "comand" left out (Codex's strict loader rejects it too).
[servers.unknown]
command = "u"
context = false
skipped my.server (line 1): mcpgen cannot hold it: server name "my.server" is not valid: use 1 to 64 letters, digits, _ or -
skipped workspace (line 4): mcpgen cannot hold it: the name is reserved by Claude Code; choose another
skipped dollar (line 7): args[0] holds the text "${", which Codex passes as is but mcpgen.toml would read as a variable reference (it has no escape for it)
skipped web (line 11): mcpgen cannot hold it: "url" must be an absolute http or https URL, such as "https://mcp.example.com/mcp"
`,
		},
		{
			name: "no servers",
			in:   "model = \"o3\"\n",
			want: "",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Import([]byte(tc.in), "config.toml")
			if err != nil {
				t.Fatal(err)
			}
			if got := formatImported(t, f); got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestImportErrors: what Codex itself rejects is an error at FILE:LINE:COL,
// every one of them.
func TestImportErrors(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"invalid TOML", "[mcp_servers.x\ncommand = 1\n", []string{"config.toml:1:"}},
		{"both transports", "[mcp_servers.x]\ncommand = \"c\"\nurl = \"https://x.example.com\"\n", []string{`config.toml:3:1: server "x": a server has command (stdio) or url (streamable HTTP), not both`}},
		{"no transport", "[mcp_servers.x]\nargs = []\n", []string{`config.toml:1:14: server "x": no command and no url`}},
		{"wrong types, all of them", "[mcp_servers.x]\ncommand = \"c\"\nenv = { N = 1 }\ntool_timeout_sec = \"5\"\n\n[mcp_servers.y]\nurl = \"https://y.example.com\"\nstartup_timeout_sec = -1\nenv = {}\n", []string{
			`config.toml:3:9: server "x": "env.N" must be a string`,
			`config.toml:4:1: server "x": "tool_timeout_sec" must be a number`,
			`config.toml:9:1: server "y": "env" is not supported for a streamable HTTP server`,
			`config.toml:8:1: server "y": "startup_timeout_sec" must be a positive number`,
		}},
		{"mcp_servers not a table", "mcp_servers = 3\n", []string{"config.toml:1:1: mcp_servers must be a table of servers"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Import([]byte(tc.in), "config.toml")
			if err == nil {
				t.Fatalf("no error, want one; got %+v", f)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// FuzzImport: whatever the file, Import returns an error, or servers that
// make one manifest together, each with the line where it starts; it never
// panics.
func FuzzImport(f *testing.F) {
	for _, seed := range []string{
		"[mcp_servers.a]\ncommand = \"x\"\nargs = [\"-y\"]\nenv = { A = \"1\" }\n",
		"[mcp_servers.b]\nurl = \"https://b.example.com\"\nhttp_headers = { \"X-A\" = \"v\" }\nenv_http_headers = { X-B = \"V\" }\n",
		"# mcpgen: managed\n[mcp_servers.c]\ncommand = \"c\"\n[mcp_servers.c.tools.t]\napproval_mode = \"approve\"\n",
		"mcp_servers = { d = { command = \"d\", env_vars = [\"X\", { name = \"Y\" }] } }\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		imported, err := Import(data, "fuzz.toml")
		if err != nil {
			return
		}
		m := &manifest.Manifest{Version: 1}
		for _, s := range imported.Servers {
			m.Servers = append(m.Servers, s.Server)
			if s.Line <= 0 {
				t.Errorf("server %q: no line", s.Server.Name)
			}
		}
		for _, s := range imported.Skipped {
			if s.Line <= 0 {
				t.Errorf("skipped server %q: no line", s.Name)
			}
		}
		out, err := manifest.Format(m, nil)
		if err != nil {
			t.Fatalf("the imported servers do not format: %v", err)
		}
		back, err := manifest.Parse(out, "out.toml", "/")
		if err != nil || len(back.Servers) != len(m.Servers) {
			t.Fatalf("the imported servers do not make a manifest: %v\n%s", err, out)
		}
	})
}

// BenchmarkImport reads a config.toml of n servers, each with args, env
// and an approval table: the time should grow with n, not n².
func BenchmarkImport(b *testing.B) {
	for _, n := range []int{100, 1000} {
		var sb strings.Builder
		for i := range n {
			fmt.Fprintf(&sb, "[mcp_servers.s%d]\ncommand = \"npx\"\nargs = [\"-y\", \"pkg-%d\"]\nenv = { LEVEL = \"info\", N = \"%d\" }\nstartup_timeout_sec = 20\n\n[mcp_servers.s%d.tools.t]\napproval_mode = \"approve\"\n\n", i, i, i, i)
		}
		data := []byte(sb.String())
		b.Run(fmt.Sprintf("servers=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				f, err := Import(data, "config.toml")
				if err != nil || len(f.Servers) != n {
					b.Fatalf("got %v servers, err %v", len(f.Servers), err)
				}
			}
		})
	}
}
