package manifest

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpgen/mcpgen/templates"
)

// everyKey sets every key the model holds, each to a value other than its
// default, so that a key Format forgets shows as a difference.
const everyKey = `version = 1
name = "acme.app"
prefix = "acme-"

[workspace]
dir = "/srv/${WORKSPACE_ID}"
user = "u-${USER}"
vars.TENANT = "acme"
vars.REGION = "eu-${TENANT}"

[session]
idle_exit = "5m"
listen = "127.0.0.1:0"
tls_cert = "tls/cert.pem"
tls_key = 'C:\tls\key.pem'
session_timeout = "1h"
metrics = "open"
drain_timeout = "45s"

[session.auth]
token_env = "MCPGEN_TOKEN"
tokens_file = "tokens.txt"
issuer = "https://auth.example.com/tenant"
audience = "https://mcp.example.com/mcp"
jwks_url = "https://auth.example.com/keys?v=2"
required_scopes = ["mcp:tools", "read"]

[gateway]
prefix = "always"
tools = "search"
pin = ["db__query", "read_file"]
search_reveal = true

[sandbox]
enabled = true
read = ["~/.npm", "/usr/share", "${HOME}/x"]
write = []
network = "loopback"
enforce = "strict"

[servers.db]
description = "A \"quoted\" description\twith a tab"
command = 'C:\bin\db.exe'
args = ["--dsn", "${DATABASE_URL}", "plain $HOME", "${X:-fallback}"]
build = ["go", "build", "-o", "bin/db", "."]
watch = ["**/*.go"]
env.PATH_EXTRA = "/opt/bin"
env."LC_ALL" = "C"
cwd = "data"
context = ["WORKSPACE_ID", "TENANT"]
enabled = false
providers = ["codex", "claude"]
scope = "project"
startup_timeout = "1m30.5s"
tool_timeout = "250ms"
input_timeout = "90s"
enabled_tools = []
disabled_tools = ["drop"]
start = "lazy"
idle_timeout = "10m"
memory_max = "512M"
cpu_max = 0.5

[servers.db.sandbox]
write = ["{workspace}", "{workspace}/../cache", 'C:\tmp']
network = ["api.github.com:443", "[::1]:8080"]

[servers.files]
builtin = "files"
read_only = true
protect = []
context = false

[servers.files2]
builtin = "files"
protect = [".git/**", "secrets/**"]
sandbox = { enabled = false }

[servers.git]
enabled_tools = ["log"]

[servers.git.tools.log]
description = "Show recent commits"
run = ["git", "log", "-n", "{count}", "{path}", "{mode}", "{ratio}", "{all}"]
timeout = "30s"
args.count = { type = "integer", default = 10, description = "How many" }
args.path = { required = false, allow_dash = true }
args.mode = { enum = ["short", "full"], default = "short" }
args.ratio = { type = "number", default = 2.0, enum = [1.5, 2.0] }
args.all = { type = "boolean", default = false }

[servers.git.tools.grep]
run = ["sh", "-c", "git grep {expr} | head -5"]
args.expr = { allow_shell = true }

[servers.docs]
url = "https://mcp.example.com/mcp?a=1&b=2"
bearer_token_env = "DOCS_TOKEN"
headers.X-Tenant = "${TENANT}"
headers."X.Dotted" = "literal"
tool_timeout = "2m"

[servers.big]
command = "big"
memory_max = 1048577
`

// clearPositions zeroes what depends on the file's layout, not its content.
func clearPositions(m *Manifest) {
	m.pos, m.File = positions{}, ""
	if m.SandboxDefaults != nil {
		m.SandboxDefaults.Pos = Position{}
	}
	for _, s := range m.Servers {
		s.Pos, s.MemoryMaxPos, s.CPUMaxPos = Position{}, Position{}, Position{}
		if s.Sandbox != nil {
			s.Sandbox.Pos = Position{}
		}
		for _, t := range s.Tools {
			t.Pos = Position{}
		}
	}
}

// TestFormatRoundTrip formats manifests and parses the result back: the
// model must be the same, key for key.
func TestFormatRoundTrip(t *testing.T) {
	full, err := os.ReadFile("testdata/full.toml")
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile("../cmd/mcpgen/testdata/golden/mcpgen.toml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data []byte
	}{
		{"every-key", []byte(everyKey)},
		{"full.toml", full},
		{"golden mcpgen.toml", golden},
		{"demo", templates.Demo},
		{"no servers", []byte("version = 1\n")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want, err := Parse(tc.data, "in.toml", "/d")
			if err != nil {
				t.Fatal(err)
			}
			out, err := Format(want, nil)
			if err != nil {
				t.Fatalf("Format: %v", err)
			}
			got, err := Parse(out, "out.toml", "/d")
			if err != nil {
				t.Fatalf("Parse(Format(m)): %v\n%s", err, out)
			}
			clearPositions(want)
			clearPositions(got)
			if !reflect.DeepEqual(got, want) {
				for i := range min(len(got.Servers), len(want.Servers)) {
					if !reflect.DeepEqual(got.Servers[i], want.Servers[i]) {
						t.Errorf("server %s: got %+v, want %+v", want.Servers[i].Name, got.Servers[i], want.Servers[i])
					}
				}
				t.Fatalf("Parse(Format(m)) differs from m\n%s", out)
			}
			// Formatting is stable: the output formats to itself.
			again, err := Format(got, nil)
			if err != nil || string(again) != string(out) {
				t.Errorf("Format(Parse(Format(m))) differs from Format(m): %v\ngot:\n%s\nwant:\n%s", err, again, out)
			}
		})
	}
}

func TestFormatComments(t *testing.T) {
	m := &Manifest{Version: 1, Servers: []*Server{{
		Name: "github", Kind: KindCommand, Enabled: true,
		Command: Template{{Text: "npx"}},
		Env:     []Var{{Name: "TOKEN", Value: Template{{Ref: "TOKEN"}}}},
	}}}
	c := &Comments{
		Head:  []string{"Imported.", "", "multi\nline"},
		Above: map[string][]string{"servers.github": {"From a.toml:3."}, "servers.github.env.TOKEN": {"A secret."}},
		Trail: map[string]string{"servers.github.command": "on PATH"},
	}
	out, err := Format(m, c)
	if err != nil {
		t.Fatal(err)
	}
	want := `# Imported.
#
# multi line

version = 1

# From a.toml:3.
[servers.github]
command = "npx"  # on PATH
# A secret.
env.TOKEN = "${TOKEN}"
`
	if string(out) != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
	if _, err := Parse(out, "out.toml", "/d"); err != nil {
		t.Errorf("the output does not parse: %v", err)
	}
}

// TestFormatRefusesDollarBrace: literal text with "${" has no spelling in
// the manifest; Format names every such value instead of writing a
// reference that was never one.
func TestFormatRefusesDollarBrace(t *testing.T) {
	m := &Manifest{Version: 1, Servers: []*Server{{
		Name: "x", Kind: KindCommand, Enabled: true,
		Command: Template{{Text: "run"}},
		Args:    []Template{{{Text: "ok"}}, {{Text: "${HOME}"}}},
		Env:     []Var{{Name: "A", Value: Template{{Text: "a${b"}}}},
	}}}
	out, err := Format(m, nil)
	if err == nil {
		t.Fatalf("Format: no error, want one\n%s", out)
	}
	for _, want := range []string{`servers.x.args[1]: the text "${HOME}"`, `servers.x.env.A: the text "a${b"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}
