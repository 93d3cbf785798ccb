package claude

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/providers"
)

// formatImported writes the servers of f as the manifest would hold them,
// each with where it came from and what was noted, then what was skipped.
func formatImported(t *testing.T, f *providers.ImportedFile) string {
	t.Helper()
	m := &manifest.Manifest{Version: 1}
	c := &manifest.Comments{Above: map[string][]string{}}
	for _, s := range f.Servers {
		m.Servers = append(m.Servers, s.Server)
		lines := []string{fmt.Sprintf("line %d", s.Line)}
		if s.Managed {
			lines = append(lines, "managed")
		}
		lines = append(lines, s.Notes...)
		keys := make([]string, 0, len(s.KeyNotes))
		for k := range s.KeyNotes {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			lines = append(lines, k+": "+s.KeyNotes[k])
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
		fmt.Fprintf(&b, "skipped %s (line %d): %s\n", sk.Name, sk.Line, sk.Reason)
	}
	for _, n := range f.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	return b.String()
}

func TestImport(t *testing.T) {
	tests := []struct {
		name    string
		kind    string
		project string
		in      string
		want    string
	}{
		{
			name: "project file",
			kind: ProjectFile,
			in: `{
  "mcpServers": {
    "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory", "${DIR:-/tmp/m}"],
               "env": {"Z_FIRST": "${HOME}/mem.json", "A_SECOND": "plain"}, "timeout": 45000, "cwd": "/x"},
    "local": {"type": "stdio", "command": "./bin/server", "alwaysLoad": true, "url": "https://ignored.example.com"},
    "docs": {"type": "http", "url": "https://mcp.example.com/mcp",
             "headers": {"Authorization": "Bearer ${DOCS_TOKEN}", "X-Tenant": "${TENANT}"}, "oauth": {"clientId": "x"}},
    "old": {"type": "sse", "url": "https://sse.example.com/sse"},
    "untyped": {"url": "https://u.example.com/mcp"},
    "wrong": {"command": "x", "args": "not-an-array"},
    "badref": {"command": "x", "args": ["${not-a-name}"]},
    "nothing": {"args": []},
    "notobj": 3
  },
  "otherKey": true
}`,
			want: `
# line 3
# cwd left out: Claude ignores it and runs the server in its own working directory; add cwd to the manifest if the server needs one.
[servers.memory]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-memory", "${DIR:-/tmp/m}"]
env.Z_FIRST = "${HOME}/mem.json"
env.A_SECOND = "plain"
context = false
tool_timeout = "45s"

# line 5
# alwaysLoad left out: mcpgen has no such setting; keep the server in .mcp.json by hand if it needs it.
# url left out: Claude ignores it on a stdio server.
# command: relative: Claude resolved it against its own working directory, mcpgen resolves it against the manifest's
[servers.local]
command = "./bin/server"
context = false

# line 6
# oauth left out: mcpgen has no such setting; keep the server in .mcp.json by hand if it needs it.
[servers.docs]
url = "https://mcp.example.com/mcp"
bearer_token_env = "DOCS_TOKEN"
headers.X-Tenant = "${TENANT}"
skipped old (line 8): an SSE server: mcpgen writes streamable HTTP servers only (SSE is deprecated in MCP); keep it in this file, or move it to streamable HTTP
skipped untyped (line 9): a url without "type": Claude Code skips it too; add "type": "http" if it is a streamable HTTP server
skipped wrong (line 10): "args" is not an array of strings: Claude skips the server too
skipped badref (line 11): args[0]: "${not-a-name}" is not a variable reference: write ${NAME} or ${NAME:-default}, NAME made of letters, digits and _
skipped nothing (line 12): no command and no url: Claude skips it too
skipped notobj (line 13): its value is a number, not an object: Claude skips it too
`,
		},
		{
			name: "Claude Desktop: literal values, stdio only",
			kind: DesktopFile,
			in: `{"mcpServers": {
  "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Documents"], "env": {"A": "$HOME is literal"}},
  "ref": {"command": "npx", "args": ["${HOME}"]},
  "web": {"type": "http", "url": "https://x.example.com/mcp"}
}, "globalShortcut": ""}`,
			want: `
# line 2
[servers.fs]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Documents"]
env.A = "$HOME is literal"
context = false
skipped ref (line 3): args[0] holds the text "${", which Claude Desktop passes as is but mcpgen.toml would read as a variable reference (it has no escape for it)
skipped web (line 4): Claude Desktop runs only stdio servers from its file, and skips this one
`,
		},
		{
			name: "~/.claude.json: the user's servers, and which projects have local ones",
			kind: UserFile,
			in:   claudeJSON,
			want: `
# line 3
# managed
[servers.shared]
command = "user-shared"
context = false

# line 4
[servers.mine]
command = "mine"
context = false
note: Local servers of projects are left out: /home/me/app (shared, db); /home/me/other (x). Pass --project PATH to import those of one project.
`,
		},
		{
			name:    "~/.claude.json with --project: its local servers win",
			kind:    UserFile,
			project: "/home/me/app/",
			in:      claudeJSON,
			want: `
# line 4
[servers.mine]
command = "mine"
context = false

# line 10
# A local server of project /home/me/app.
# Claude Code uses it instead of the user server of the same name at line 3, which is left out.
[servers.shared]
command = "local-shared"
context = false

# line 11
# A local server of project /home/me/app.
[servers.db]
command = "db"
context = false
`,
		},
		{
			// import ~/.claude.json --project "$PWD" in a project that
			// Claude has no local servers for: the user's servers, and why.
			name:    "~/.claude.json with --project of a project it does not know",
			kind:    UserFile,
			project: "/home/me/new",
			in:      claudeJSON,
			want: `
# line 3
# managed
[servers.shared]
command = "user-shared"
context = false

# line 4
[servers.mine]
command = "mine"
context = false
note: No project /home/me/new in the file, so no local servers (Claude keys projects by absolute path; those with local servers: /home/me/app (shared, db); /home/me/other (x)): the user's servers only are imported.
`,
		},
		{
			name:    "~/.claude.json with --project of a project without local servers",
			kind:    UserFile,
			project: "/home/me/empty",
			in:      claudeJSON,
			want: `
# line 3
# managed
[servers.shared]
command = "user-shared"
context = false

# line 4
[servers.mine]
command = "mine"
context = false
note: Project /home/me/empty has no local servers: the user's servers only are imported.
`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Import([]byte(tc.in), ".mcp.json", ImportOptions{Kind: tc.kind, Project: tc.project})
			if err != nil {
				t.Fatal(err)
			}
			if got := formatImported(t, f); got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

const claudeJSON = `{
  "numStartups": 3,
  "mcpServers": {"shared": {"command": "user-shared"},
                 "mine": {"command": "mine"}},
  "_mcpgen": {"managed": {"shared": "sha256:0123456789ab"}},
  "projects": {
    "/home/me/empty": {"allowedTools": []},
    "/home/me/app": {
      "mcpServers": {
        "shared": {"command": "local-shared"},
        "db": {"command": "db"}
      }
    },
    "/home/me/other": {"mcpServers": {"x": {"command": "x"}}}
  }
}`

func TestImportErrors(t *testing.T) {
	tests := []struct {
		name, in string
		o        ImportOptions
		want     string
	}{
		{"not JSON", "{\n  \"mcpServers\": {,}\n}", ImportOptions{Kind: ProjectFile}, "f.json:2:18: invalid JSON"},
		{"not an object", "[1]", ImportOptions{Kind: ProjectFile}, "f.json:1:1: the file holds an array"},
		{"mcpServers not an object", `{"mcpServers": []}`, ImportOptions{Kind: ProjectFile}, `f.json:1:16: "mcpServers" is an array, but Claude reads an object of servers`},
		{"--project on a project file", `{}`, ImportOptions{Kind: ProjectFile, Project: "/x"}, "a project's local servers are in ~/.claude.json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Import([]byte(tc.in), "f.json", tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error:\ngot  %v\nwant %s", err, tc.want)
			}
		})
	}
}

func TestDetect(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{"/home/me/.claude.json", `{}`, UserFile},
		{"claude_desktop_config.json", `{"mcpServers": {}}`, DesktopFile},
		{"x/.mcp.json", `not even json`, ProjectFile},
		{"backup.json", `{"numStartups": 1, "mcpServers": {}}`, UserFile},
		{"backup.json", `{"projects": {}}`, UserFile},
		{"servers.json", `{"mcpServers": {"a": {"command": "a"}}}`, ProjectFile},
		{"package.json", `{"name": "x"}`, ""},
		{"broken.json", `{"mcpServers": `, ""},
	}
	for _, tc := range tests {
		if got := Detect(tc.name, []byte(tc.data)); got != tc.want {
			t.Errorf("Detect(%s, %s) = %q, want %q", tc.name, tc.data, got, tc.want)
		}
	}
}

// FuzzImport: whatever the file, Import returns an error, or servers that
// make one manifest together, each with the line where it starts; it never
// panics.
func FuzzImport(f *testing.F) {
	for _, seed := range []string{
		`{"mcpServers": {"a": {"command": "x", "args": ["${A:-b}"], "env": {"K": "v"}, "timeout": 5}}}`,
		`{"mcpServers": {"b": {"type": "http", "url": "https://b.example.com", "headers": {"Authorization": "Bearer ${T}"}}}}`,
		claudeJSON,
	} {
		f.Add([]byte(seed), uint8(0))
		f.Add([]byte(seed), uint8(1))
		f.Add([]byte(seed), uint8(2))
	}
	f.Fuzz(func(t *testing.T, data []byte, kind uint8) {
		o := ImportOptions{Kind: ImportKinds[int(kind)%len(ImportKinds)]}
		if o.Kind == UserFile && kind >= 128 {
			o.Project = "/home/me/app"
		}
		imported, err := Import(data, "fuzz.json", o)
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

// BenchmarkImport reads a .mcp.json of n servers: the time should grow
// with n, not n².
func BenchmarkImport(b *testing.B) {
	for _, n := range []int{100, 1000} {
		var sb strings.Builder
		sb.WriteString(`{"mcpServers": {`)
		for i := range n {
			if i > 0 {
				sb.WriteString(",\n")
			}
			fmt.Fprintf(&sb, `"s%d": {"command": "npx", "args": ["-y", "pkg-%d", "${DIR:-/tmp}"], "env": {"LEVEL": "info", "N": "%d"}, "timeout": 30000}`, i, i, i)
		}
		sb.WriteString("}}\n")
		data := []byte(sb.String())
		b.Run(fmt.Sprintf("servers=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				f, err := Import(data, ".mcp.json", ImportOptions{Kind: ProjectFile})
				if err != nil || len(f.Servers) != n {
					b.Fatalf("got %v servers, err %v", len(f.Servers), err)
				}
			}
		})
	}
}
