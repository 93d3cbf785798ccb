package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/templates"
)

func TestLoadFull(t *testing.T) {
	m, err := Load("testdata/full.toml")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range m.Servers {
		names = append(names, s.Name+":"+s.Kind.String())
	}
	want := []string{"memory:command", "acme-tools:command", "files:builtin", "git:declared", "docs:remote"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("servers in file order: got %v, want %v", names, want)
	}

	mem := m.Server("memory")
	if mem.Command.String() != "npx" || len(mem.Args) != 2 || mem.Args[1].String() != "@modelcontextprotocol/server-memory" {
		t.Errorf("memory command: got %q %v", mem.Command, mem.Args)
	}
	if mem.StartupTimeout != 30*time.Second || mem.ToolCall() != 2*time.Minute || mem.Input() != DefaultInputTimeout {
		t.Errorf("memory timeouts: got %v %v %v", mem.StartupTimeout, mem.ToolCall(), mem.Input())
	}
	if got := mem.Env[0].Name + "=" + mem.Env[0].Value.String(); got != "MEMORY_FILE_PATH=${WORKSPACE_DIR}/.memory.json" {
		t.Errorf("memory env in file order: got %s", got)
	}

	files := m.Server("files")
	if files.Builtin != "files" || !files.ReadOnly || files.Startup() != DefaultStartupTimeout {
		t.Errorf("files: got %+v", files)
	}

	git := m.Server("git")
	if len(git.Tools) != 2 || git.Tools[0].Name != "status" || git.Tools[1].Name != "log" {
		t.Fatalf("git tools: got %v", git.Tools)
	}
	count := git.Tools[1].Args[0]
	if count.Name != "count" || count.Type != TypeInteger || count.Default != int64(10) || count.Required {
		t.Errorf("log count arg: got %+v", count)
	}
	if path := git.Tools[1].Args[1]; path.Required || path.Default != nil {
		t.Errorf("log path arg: got %+v", path)
	}

	docs := m.Server("docs")
	if docs.URL.String() != "https://mcp.example.com/mcp" || docs.BearerTokenEnv != "DOCS_TOKEN" || docs.Headers[0].Name != "X-Tenant" {
		t.Errorf("docs: got %+v", docs)
	}
	if docs.Pos.Line != 45 {
		t.Errorf("docs table position: got line %d, want 45", docs.Pos.Line)
	}
	if got := m.Where("servers", "docs", "headers", "X-Tenant"); got != "testdata/full.toml:48:24" {
		t.Errorf("Where: got %s", got)
	}
}

func TestEmbeddedManifestsAreValid(t *testing.T) {
	for name, data := range map[string][]byte{"starter": templates.Starter, "demo": templates.Demo} {
		if _, err := Parse(data, name, t.TempDir()); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestErrors checks one message per rule of the contract. Each case is a
// manifest and the errors it must produce, in order.
func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"syntax", "version = 1\n[servers.x\n", []string{
			`m.toml:2:11: invalid TOML: `}},
		{"unknown top-level key", "verison = 1\n", []string{
			`m.toml:1:1: unknown key "verison" (did you mean "version"?)`}},
		{"unsupported version", "version = 2\n", []string{
			`m.toml:1:11: unsupported version 2: this mcpgen reads version 1`}},
		{"typo in kind key", "[servers.git]\ncomand = \"git\"\n", []string{
			`m.toml:2:1: server "git": unknown key "comand" (did you mean "command"?)`}},
		{"no kind", "[servers.git]\ndescription = \"x\"\n", []string{
			`m.toml:1:10: server "git": no kind: set one of "command" (a stdio process), "builtin", "tools" (declared tools) or "url" (remote)`}},
		{"two kinds", "[servers.x]\ncommand = \"a\"\nurl = \"https://x.example/mcp\"\n", []string{
			`m.toml:3:1: server "x": "url" cannot be used with "command": a server is exactly one kind (command, builtin, tools or url)`}},
		{"key of another kind", "[servers.docs]\nurl = \"https://x.example/mcp\"\nargs = [\"a\"]\ncwd = \"/\"\n", []string{
			`m.toml:3:1: server "docs": "args" is not allowed with "url"`,
			`m.toml:4:1: server "docs": "cwd" is not allowed with "url"`}},
		{"build without command", "[servers.f]\nbuiltin = \"files\"\nbuild = [\"make\"]\n", []string{
			`m.toml:3:1: server "f": "build" is not allowed with "builtin"`}},
		{"reserved name", "[servers.workspace]\ncommand = \"x\"\n", []string{
			`m.toml:1:10: server "workspace": the name is reserved by Claude Code; choose another`}},
		{"bad name", "[servers.\"a b\"]\ncommand = \"x\"\n", []string{
			`m.toml:1:10: server "a b": server name "a b" is not valid: use 1 to 64 letters, digits, _ or -`}},
		{"wrong types", "[servers.x]\ncommand = 1\nargs = \"-v\"\nenv = { PORT = 8080 }\nenabled = \"yes\"\n", []string{
			`m.toml:2:11: server "x": "command" must be a string, not an integer`,
			`m.toml:3:8: server "x": "args" must be an array of strings: write ["-v"]`,
			`m.toml:4:16: server "x": "env.PORT" must be a string, not an integer (write "8080")`,
			`m.toml:5:11: server "x": "enabled" must be true or false, not a string`}},
		{"durations", "[servers.x]\ncommand = \"a\"\nstartup_timeout = 30\ntool_timeout = \"soon\"\ninput_timeout = \"-1m\"\n", []string{
			`m.toml:3:19: server "x": "startup_timeout" must be a duration such as "30s"`,
			`m.toml:4:16: server "x": "tool_timeout": "soon" is not a positive duration (write "30s", "1m30s", "500ms")`,
			`m.toml:5:17: server "x": "input_timeout": "-1m" is not a positive duration (write "30s", "1m30s", "500ms")`}},
		{"bad template", "[servers.x]\ncommand = \"a\"\nargs = [\"${X\", \"${1A}\"]\n", []string{
			`m.toml:3:9: server "x": "args[0]": unterminated "${X": close it with "}"`,
			`m.toml:3:16: server "x": "args[1]": "${1A}" is not a variable reference: write ${NAME} or ${NAME:-default}, NAME made of letters, digits and _`}},
		{"unknown builtin", "[servers.f]\nbuiltin = \"file\"\nread_only = 1\n", []string{
			`m.toml:2:11: server "f": unknown builtin "file" (did you mean "files"?); mcpgen has: files`,
			`m.toml:3:13: server "f": "read_only" must be true or false, not an integer`}},
		{"providers", "[servers.x]\ncommand = \"a\"\nproviders = [\"codx\", \"claude\"]\n", []string{
			`m.toml:3:14: server "x": unknown provider "codx" (did you mean "codex"?); use ` + strings.Join(Providers, ", ")}},
		{"scope", "[servers.x]\ncommand = \"a\"\nscope = \"projct\"\n[servers.y]\ncommand = \"b\"\nscope = [\"user\"]\n", []string{
			`m.toml:3:9: server "x": unknown scope "projct" (did you mean "project"?); use user or project`,
			`m.toml:6:1: server "y": "scope" must be a string, not an array`}},
		{"context names", "[workspace.vars]\nTENANT = \"a\"\n[servers.x]\ncommand = \"a\"\ncontext = [\"TENANTS\", \"WORKSPACE_ID\"]\n", []string{
			`m.toml:5:12: server "x": TENANTS is not a context variable (did you mean "TENANT"?); the context is WORKSPACE_ID, WORKSPACE_DIR, USER_ID, TENANT`}},
		{"workspace var shadows context", "[workspace.vars]\nUSER_ID = \"x\"\n", []string{
			`m.toml:2:1: "USER_ID" is set by mcpgen itself; choose another name`}},
		{"remote url", "[servers.d]\nurl = \"mcp.example.com\"\nbearer_token_env = \"$TOKEN\"\n", []string{
			`m.toml:2:7: server "d": "url" must be an absolute http or https URL, such as "https://mcp.example.com/mcp"`,
			`m.toml:3:20: server "d": "bearer_token_env" names the variable that holds the token, e.g. "DOCS_TOKEN"; "$TOKEN" is not a variable name`}},
		{"authorization twice", "[servers.d]\nurl = \"https://x.example\"\nbearer_token_env = \"T\"\nheaders = { Authorization = \"Bearer x\" }\n", []string{
			`m.toml:4:13: server "d": an Authorization header conflicts with "bearer_token_env": keep one of them`}},
		{"declared tools", `[servers.g.tools.log]
run = ["git", "log", "-n", "{count}"]
args.count = { type = "int", default = 10 }
args.path = { type = "string" }
args.n = { type = "integer", default = "ten" }
args.e = { type = "string", enum = ["a", "b"], default = "c" }
args.r = { type = "string", required = true, default = "a" }
[servers.g.tools.bad]
description = "no run"
timout = "1s"
`, []string{
			`m.toml:3:23: server "g": unknown type "int" (did you mean "integer"?); use string, integer, number, boolean`,
			`m.toml:4:6: server "g": argument "path" is not used: put {path} in an element of "run"`,
			`m.toml:5:6: server "g": argument "n" is not used: put {n} in an element of "run"`,
			`m.toml:5:40: server "g": ten is a string, but the argument's type is integer`,
			`m.toml:6:6: server "g": argument "e" is not used: put {e} in an element of "run"`,
			`m.toml:6:58: server "g": the default c is not one of "enum"`,
			`m.toml:7:6: server "g": argument "r" is not used: put {r} in an element of "run"`,
			`m.toml:7:29: server "g": required = true contradicts the default: remove one of them`,
			`m.toml:8:18: server "g": tool "bad" has no "run": give the command to run as an argv`,
			`m.toml:10:1: server "g": unknown key "timout" (did you mean "timeout"?)`}},
		{"version as a float", "version = 1.0\n", []string{
			`m.toml:1:11: "version" must be the integer 1, not a number`}},
		{"top-level keys", "name = \"-x\"\nprefix = \"a.b\"\n[session]\nidle_exit = 10\nidle = \"1m\"\n[gateway]\nprefix = \"allways\"\n", []string{
			`m.toml:1:8: "name" "-x" is not valid: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit`,
			`m.toml:2:10: "prefix" "a.b" is not valid: use 1 to 32 letters, digits, _ or -, such as "acme-"`,
			`m.toml:4:13: "session.idle_exit" must be a duration such as "10s"`,
			`m.toml:5:1: unknown key "idle" (did you mean "idle_exit"?)`,
			`m.toml:7:10: unknown prefix mode "allways" (did you mean "always"?); use conflicts or always`}},
		{"gateway search", "[gateway]\ntools = \"serch\"\npin = [\"git__log\", \"read file\", \"git__log\"]\nsearch_reveal = \"yes\"\nsearch = true\n", []string{
			`m.toml:2:9: unknown tools mode "serch" (did you mean "search"?); use "all" (every tool) or "search" (search_tools, call_tool and the pinned tools)`,
			`m.toml:3:20: "gateway.pin": "read file" is not a tool name of the gateway: 1 to 64 letters, digits, _ or -, as mcpgen tools ls shows it (SERVER__TOOL when two servers share a name)`,
			`m.toml:3:33: "gateway.pin": "git__log" is pinned twice; remove one`,
			`m.toml:4:17: "gateway.search_reveal" must be true or false, not a string`,
			`m.toml:5:1: unknown key "search" (did you mean "search_reveal"?)`}},
		{"prefix makes a name too long", "prefix = \"abcdefghij\"\n[servers.abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij]\ncommand = \"a\"\n", []string{
			`m.toml:2:10: server "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij": with prefix "abcdefghij" the entry name "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij" is longer than 64 characters: shorten the name or the prefix`}},
		{"lifecycle and limits", "[servers.x]\ncommand = \"a\"\nstart = \"later\"\nidle_timeout = \"0s\"\nmemory_max = \"lots\"\ncpu_max = 0\n[servers.r]\nurl = \"https://x.example\"\nmemory_max = \"1G\"\n", []string{
			`m.toml:3:9: server "x": "start" must be "eager" or "lazy", not "later"`,
			`m.toml:4:16: server "x": "idle_timeout": "0s" is not a positive duration (write "30s", "1m30s", "500ms")`,
			`m.toml:5:14: server "x": "memory_max": "lots" is not a size: write a size such as "512M" or "2G"`,
			`m.toml:6:11: server "x": "cpu_max" must be between 0.01 and 1024 CPUs, not 0`,
			`m.toml:9:1: server "r": "memory_max" is not allowed with "url"`}},
		{"protocol", "[servers.x]\ncommand = \"a\"\nprotocol = \"2025-11-52\"\n[servers.y]\nurl = \"https://x.example\"\nprotocol = \"modern\"\n[servers.z]\nbuiltin = \"files\"\nprotocol = 2026\nprotocoll = \"auto\"\n", []string{
			`m.toml:3:12: server "x": unknown protocol "2025-11-52" (did you mean "2025-11-25"?); use auto, 2026-07-28 (modern: no handshake) or a legacy revision: 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05`,
			`m.toml:6:12: server "y": unknown protocol "modern"; use auto, 2026-07-28 (modern: no handshake) or a legacy revision: 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05`,
			`m.toml:9:12: server "z": "protocol" must be a string, not an integer`,
			`m.toml:10:1: server "z": unknown key "protocoll" (did you mean "protocol"?)`}},
		{"tool filters", "[servers.g.tools.log]\nrun = [\"git\", \"log\"]\n[servers.g]\nenabled_tools = [\"logg\"]\ndisabled_tools = \"log\"\n", []string{
			`m.toml:4:18: server "g": "enabled_tools": the server declares no tool "logg" (did you mean "log"?)`,
			`m.toml:5:18: server "g": "disabled_tools" must be an array of strings: write ["log"]`}},
		{"protect and allow_dash", "[servers.f]\nbuiltin = \"files\"\nprotect = [\"../x\"]\n[servers.g.tools.show]\nrun = [\"git\", \"show\", \"{n}\"]\nargs.n = { type = \"integer\", allow_dash = true }\n[servers.c]\ncommand = \"a\"\nprotect = [\"x\"]\n", []string{
			`m.toml:3:12: server "f": "protect": patterns are relative to the manifest's directory and stay inside it`,
			`m.toml:6:30: server "g": "allow_dash" applies to string arguments; "n" is an integer`,
			`m.toml:9:1: server "c": "protect" is not allowed with "command"`}},
		{"typo in kind key hides nothing", "[servers.git]\ncomand = \"git\"\nargs = \"status --short\"\ncwd = 1\nheaders = { A = \"b\" }\n", []string{
			`m.toml:2:1: server "git": unknown key "comand" (did you mean "command"?)`,
			`m.toml:3:8: server "git": "args" must be an array of strings, one per argument (no shell splits them): write ["status", "--short"]`,
			`m.toml:4:7: server "git": "cwd" must be a string, not an integer`,
			`m.toml:5:1: server "git": "headers" is not allowed with "command"`}},
		{"no kind, keys of one kind", "[servers.x]\nargs = [\"a\"]\nenv = { A = 1 }\n", []string{
			`m.toml:1:10: server "x": no kind: set one of "command" (a stdio process), "builtin", "tools" (declared tools) or "url" (remote); "args" suggests "command"`,
			`m.toml:3:13: server "x": "env.A" must be a string, not an integer (write "1")`}},
		{"a command line where an argv goes", "[servers.g.tools.st]\nrun = \"git status\"\n[servers.g.tools.lg]\nrun = \"git log | head -5\"\n[servers.g.tools.q]\nrun = \"grep 'a b' x\"\n[servers.b]\ncommand = \"a\"\nbuild = \"make\"\n", []string{
			`m.toml:2:7: server "g": "tools.st.run" must be an array of strings, one per argument (no shell splits them): write ["git", "status"]`,
			`m.toml:4:7: server "g": "tools.lg.run" must be an array of strings, run without a shell: to use one, write ["sh", "-c", "git log | head -5"]`,
			`m.toml:6:7: server "g": "tools.q.run" must be an array of strings, one per argument (no shell splits them): write ["grep", "a b", "x"]`,
			`m.toml:9:9: server "b": "build" must be an array of strings: write ["make"]`}},
		{"a command line as the command", "[servers.m]\ncommand = \"npx -y @modelcontextprotocol/server-memory\"\n[servers.p]\ncommand = \"/opt/My Tools/bin/x\"\n", []string{
			`m.toml:2:11: server "m": "command" names one program, run without a shell, not a command line: write command = "npx" and put ["-y", "@modelcontextprotocol/server-memory"] at the start of args`}},
		{"prefix makes a reserved name", "prefix = \"work\"\n[servers.space]\ncommand = \"a\"\n", []string{
			`m.toml:2:10: server "space": with prefix "work" the entry name is "workspace", which Claude Code reserves: choose another name or prefix`}},
		{"misspelled env", "[servers.x]\ncommand = \"a\"\nenviroment = { A = \"1\" }\nenvironment = { B = \"2\" }\nworking_dir = \"/\"\n", []string{
			`m.toml:3:1: server "x": unknown key "enviroment" (did you mean "env"?)`,
			`m.toml:4:1: server "x": unknown key "environment" (did you mean "env"?)`,
			`m.toml:5:1: server "x": unknown key "working_dir" (did you mean "cwd"?)`}},
		{"transposed run: one error", "[servers.g.tools.hi]\nrnu = [\"echo\", \"hi\"]\n[servers.g.tools.ho]\ncommand = [\"echo\", \"ho\"]\n", []string{
			`m.toml:2:1: server "g": unknown key "rnu" (did you mean "run"?)`,
			`m.toml:4:1: server "g": unknown key "command" (did you mean "run"?)`}},
		{"a reference to no argument", "[servers.g.tools.log]\nrun = [\"git\", \"log\", \"-n\", \"{count}\", \"--format={fmt}\", \"{}\", \"{ a }\", \"{.Name}\", \"${HOME}\"]\nargs.cuont = { type = \"integer\" }\n", []string{
			`m.toml:2:28: server "g": "tools.log.run[3]": {count} names no argument of tool "log" (did you mean {cuont}?): declare args.count, or write {{count}} to pass the text {count}`,
			`m.toml:2:39: server "g": "tools.log.run[4]": {fmt} names no argument of tool "log": declare args.fmt, or write {{fmt}} to pass the text {fmt}`,
			`m.toml:3:6: server "g": argument "cuont" is not used: put {cuont} in an element of "run"`}},
		{"session: listening", "[session]\nlisten = \"localhost\"\ntls_cert = \"cert.pem\"\nsession_timeout = 30\nlisen = \"x\"\n[servers.x]\ncommand = \"a\"\n", []string{
			`m.toml:2:10: "session.listen": "localhost" is not host:port: write "127.0.0.1:8080" (port 0 picks a free one)`,
			`m.toml:3:1: "session.tls_cert" needs "tls_key" too: HTTPS needs the certificate and its private key`,
			`m.toml:4:19: "session.session_timeout" must be a duration such as "30s"`,
			`m.toml:5:1: unknown key "lisen" (did you mean "listen"?)`}},
		{"session: listen", "[session]\nlisten = \"127.0.0.1:99999\"\n[gateway]\n[session.auth]\nissuer = \"https://a.example\"\n", []string{
			`m.toml:2:10: "session.listen": "127.0.0.1:99999": the port must be a number from 0 (a free one) to 65535`}},
		{"session: auth values", `[session.auth]
token_env = "$TOKEN"
issuer = "http://auth.example.com"
audience = "https://mcp.example.com/mcp#x"
jwks_url = "https://user:pw@auth.example.com/jwks"
required_scopes = ["mcp:tools", "a b"]
tokens_flie = "t"
`, []string{
			`m.toml:2:13: "session.auth.token_env" names the variable that holds the token, e.g. "MCPGEN_TOKEN"; "$TOKEN" is not a variable name`,
			`m.toml:3:10: "session.auth.issuer": "http://auth.example.com" is fetched over plain http: use https (http only on loopback)`,
			`m.toml:4:12: "session.auth.audience": "https://mcp.example.com/mcp#x" has a fragment (#...), which an identifier of OAuth must not: remove it`,
			`m.toml:5:12: "session.auth.jwks_url": "https://user:pw@auth.example.com/jwks" holds credentials, which a URL of the manifest must not: remove "user:pw@"`,
			`m.toml:6:33: "session.auth.required_scopes": "a b" is not a scope: a scope is printable ASCII without spaces, '"' or '\'`,
			`m.toml:7:1: unknown key "tokens_flie" (did you mean "tokens_file"?)`}},
		{"session: auth for JWTs without an issuer", "[session.auth]\naudience = \"https://mcp.example.com/mcp\"\nissuer = 1\nrequired_scopes = []\n", []string{
			`m.toml:3:10: "session.auth.issuer" must be a string, not an integer`}},
		{"session: auth admits no one", "[session.auth]\naudience = \"https://mcp.example.com/mcp\"\n", []string{
			`m.toml:1:10: "session.auth" admits no one: set token_env or tokens_file (bearer tokens), or issuer (the JWT access tokens of an OAuth server)`,
			`m.toml:2:1: "session.auth.audience" needs "issuer" too: it applies to the JWT access tokens of an issuer`}},
		{"session: an issuer with a query", "[session]\nauth = { issuer = \"https://a.example/?tenant=1\", tokens_file = \" \" }\n", []string{
			`m.toml:2:19: "session.auth.issuer": "https://a.example/?tenant=1" has a query (?...), which an issuer must not (RFC 8414): remove it`,
			`m.toml:2:64: "session.auth.tokens_file" is empty: name a file, relative to the manifest's directory`}},
		{"watch glob", "[servers.x]\ncommand = \"a\"\nwatch = [\"../x\", \"a/[b\"]\n", []string{
			`m.toml:3:10: server "x": "watch": patterns are relative to the manifest's directory and stay inside it`,
			`m.toml:3:18: server "x": "watch": malformed pattern (use *, ?, [a-z] within a name and ** for any directories)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in), "m.toml", "/")
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("got %v, want Errors", err)
			}
			if len(errs) != len(tt.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(tt.want), err)
			}
			for i, e := range errs {
				got := e.Error()
				if got != tt.want[i] && !(strings.HasSuffix(tt.want[i], ": ") && strings.HasPrefix(got, tt.want[i])) {
					t.Errorf("error %d:\ngot  %s\nwant %s", i, got, tt.want[i])
				}
			}
		})
	}
}

func TestNewKeys(t *testing.T) {
	m, err := Parse([]byte(`name = "acme.web"
prefix = "acme-"
[session]
idle_exit = "10m"
[gateway]
prefix = "always"
[servers.mem]
command = "npx"
start = "lazy"
idle_timeout = "5m"
memory_max = "1.5G"
cpu_max = 0.5
enabled_tools = ["a", "b"]
disabled_tools = ["b"]
[servers.files]
builtin = "files"
[servers.open]
builtin = "files"
protect = []
[servers.git.tools.show]
run = ["git", "show", "{rev}"]
args.rev = { type = "string", allow_dash = true }
`), "m.toml", "/")
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "acme.web" || m.Prefix != "acme-" || m.OwnerID() != "acme.web" {
		t.Errorf("name, prefix: got %q %q %q", m.Name, m.Prefix, m.OwnerID())
	}
	if m.Session.IdleExit != 10*time.Minute || m.Gateway.Prefix != GatewayPrefixAlways {
		t.Errorf("session, gateway: got %+v %+v", m.Session, m.Gateway)
	}
	mem := m.Server("mem")
	if !mem.Lazy || mem.IdleTimeout != 5*time.Minute || mem.MemoryMax != 3<<29 || mem.CPUMax != 0.5 {
		t.Errorf("mem: got lazy %v idle %v memory %d cpu %v", mem.Lazy, mem.IdleTimeout, mem.MemoryMax, mem.CPUMax)
	}
	for tool, want := range map[string]bool{"a": true, "b": false, "c": false} {
		if got := mem.ExposesTool(tool); got != want {
			t.Errorf("mem exposes %q: got %v, want %v", tool, got, want)
		}
	}
	if got := m.Server("files").Protect; !reflect.DeepEqual(got, DefaultProtect) {
		t.Errorf("files protects by default: got %q", got)
	}
	if got := m.Server("open").Protect; got == nil || len(got) != 0 {
		t.Errorf("protect = [] protects nothing: got %#v", got)
	}
	if !m.Server("git").Tools[0].Args[0].AllowDash {
		t.Error("allow_dash not read")
	}
	if d, err := Parse([]byte("[servers.x]\ncommand = \"a\"\n"), "m.toml", "/"); err != nil || d.Server("x").ExposesTool("any") != true || d.Gateway.Prefix != GatewayPrefixConflicts ||
		d.Server("x").Protocol != "" {
		t.Errorf("defaults: got %v", err)
	}
}

// TestProtocol: the protocol key pins a revision; auto, the default, is
// the same as no key.
func TestProtocol(t *testing.T) {
	m, err := Parse([]byte("[servers.a]\ncommand = \"a\"\nprotocol = \"auto\"\n"+
		"[servers.m]\nbuiltin = \"files\"\nprotocol = \"2026-07-28\"\n"+
		"[servers.l]\nurl = \"https://x.example\"\nprotocol = \"2025-06-18\"\n"+
		"[servers.n]\ncommand = \"a\"\n"), "m.toml", "/")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a": "", "m": "2026-07-28", "l": "2025-06-18", "n": ""} {
		if got := m.Server(name).Protocol; got != want {
			t.Errorf("server %s: got protocol %q, want %q", name, got, want)
		}
	}
	// A server that says auto is the server that says nothing (the
	// launcher's keys of what it runs depend on it).
	a, n := *m.Server("a"), *m.Server("n")
	a.Name, a.Pos, n.Name, n.Pos = "", Position{}, "", Position{}
	if !reflect.DeepEqual(a, n) {
		t.Errorf("protocol = \"auto\" differs from none:\n%+v\n%+v", a, n)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"512M": 512 << 20, "2G": 2 << 30, "1.5GiB": 3 << 29, "64MB": 64 << 20, "1048576": 1 << 20, "1t": 1 << 40} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q): got %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "M", "-1G", "1X", "1 GB B"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q): got %d, want an error", in, got)
		}
	}
}

func TestErrorFields(t *testing.T) {
	_, err := Parse([]byte("[servers.git]\ncommand = \"git\"\nenv = { A = 1 }\n"), "m.toml", "/")
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 1 {
		t.Fatalf("got %v", err)
	}
	if e := errs[0]; e.Server != "git" || e.Key != "env.A" || e.Path != "servers.git.env.A" || e.Pos != (Position{3, 13}) || e.Suggestion != `"1"` {
		t.Errorf("got server %q key %q path %q pos %v suggestion %q", e.Server, e.Key, e.Path, e.Pos, e.Suggestion)
	}
}

// TestSuggestions checks the fix that tools read (validate --json), by
// the manifest that needs it.
func TestSuggestions(t *testing.T) {
	tests := []struct {
		in, path, want string
	}{
		{"[servers.git]\ncomand = \"git\"\n", "servers.git.comand", "command"},
		{"[servers.g.tools.s]\nrun = \"git status\"\n", "servers.g.tools.s.run", `["git", "status"]`},
		{"[servers.g.tools.s]\nrun = \"ls *.go\"\n", "servers.g.tools.s.run", `["sh", "-c", "ls *.go"]`},
		{"[servers.x]\ncommand = \"a\"\nstartup_timeout = 30\n", "servers.x.startup_timeout", `"30s"`},
		{"[servers.f]\nbuiltin = \"file\"\n", "servers.f.builtin", "files"},
		{"[servers.x]\nargs = [\"a\"]\n", "servers.x", "command"},
		{"verison = 1\n", "verison", "version"},
		{"[servers.x]\ncommand = \"a\"\nprotocol = \"2025-11-52\"\n", "servers.x.protocol", "2025-11-25"},
		{"[servers.x]\ncommand = \"a\"\nenviroment = {}\n", "servers.x.enviroment", "env"},
		{"[servers.g.tools.s]\nrnu = [\"ls\"]\n", "servers.g.tools.s.rnu", "run"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			_, err := Parse([]byte(tt.in), "m.toml", "/")
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("got %v, want Errors", err)
			}
			for _, e := range errs {
				if e.Path == tt.path {
					if e.Suggestion != tt.want {
						t.Errorf("suggestion at %s: got %q, want %q", tt.path, e.Suggestion, tt.want)
					}
					return
				}
			}
			t.Errorf("no error at %s: got %v", tt.path, err)
		})
	}
}

func TestSplitCommand(t *testing.T) {
	tests := []struct {
		in     string
		want   []string
		simple bool
	}{
		{"git status", []string{"git", "status"}, true},
		{`git log --format="%h %s"`, []string{"git", "log", "--format=%h %s"}, true},
		{`echo 'a  b' c\ d`, []string{"echo", "a  b", "c d"}, true},
		{"echo ${WORKSPACE_DIR}", []string{"echo", "${WORKSPACE_DIR}"}, true},
		{"git log | head", []string{"git", "log", "|", "head"}, false},
		{"echo $HOME", []string{"echo", "$HOME"}, false},
		{"ls *.go", []string{"ls", "*.go"}, false},
		{`echo "unterminated`, []string{"echo", "unterminated"}, false},
		{"", nil, true},
	}
	for _, tt := range tests {
		got, simple := splitCommand(tt.in)
		if !slices.Equal(got, tt.want) || simple != tt.simple {
			t.Errorf("splitCommand(%q): got %q, %v; want %q, %v", tt.in, got, simple, tt.want, tt.simple)
		}
	}
}

// TestFind finds the manifest as git finds .git: in the directory, else
// in the nearest one above that holds it.
func TestFind(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"a/mcpgen.toml", "a/b/c/d/x", "a/deploy/tools.toml", "a/b/mcpgen.toml/x"} {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		dir, name, want string
	}{
		{"a", "mcpgen.toml", "a/mcpgen.toml"},
		{"a/b/c/d", "mcpgen.toml", "a/mcpgen.toml"}, // a/b/mcpgen.toml is a directory
		{"a/b/c", "deploy/tools.toml", "a/deploy/tools.toml"},
		{"a/deploy", "deploy/tools.toml", "a/deploy/tools.toml"},
		{".", "mcpgen.toml", ""},
	}
	for _, tt := range tests {
		got, err := Find(filepath.Join(root, tt.dir), tt.name)
		switch {
		case tt.want == "":
			var nf *NotFoundError
			if !errors.As(err, &nf) || nf.Error() != "no mcpgen.toml in "+root+" or above" {
				t.Errorf("Find(%s, %s): got %q, %v; want a NotFoundError", tt.dir, tt.name, got, err)
			}
		case err != nil || got != filepath.Join(root, tt.want):
			t.Errorf("Find(%s, %s): got %q, %v; want %s", tt.dir, tt.name, got, err, tt.want)
		}
	}
	// A ceiling: the search does not go up into it.
	if got, err := Find(filepath.Join(root, "a/b/c/d"), "mcpgen.toml", filepath.Join(root, "a")); err == nil {
		t.Errorf("Find below the ceiling a: got %s, want a NotFoundError", got)
	}
	if got, err := Find(filepath.Join(root, "a/b/c/d"), "mcpgen.toml", root); err != nil || got != filepath.Join(root, "a/mcpgen.toml") {
		t.Errorf("Find below the ceiling %s: got %q, %v; want a/mcpgen.toml", root, got, err)
	}
}

// TestOwnerID: the name when there is one, else the path with the
// symlinks of its directory resolved, but not the file's own link.
func TestOwnerID(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "real")
	if err := os.MkdirAll(filepath.Join(real, "v2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "v2", "mcpgen.toml"), []byte("version = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("v2", "mcpgen.toml"), filepath.Join(real, "mcpgen.toml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	realRoot, err := filepath.EvalSymlinks(real)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(real, "mcpgen.toml"), filepath.Join(root, "link", "mcpgen.toml")} {
		m, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := m.OwnerID(), filepath.Join(realRoot, "mcpgen.toml"); got != want {
			t.Errorf("Load(%s).OwnerID(): got %s, want %s", path, got, want)
		}
	}
	m, err := Parse([]byte("name = \"acme\"\n"), "m.toml", "/")
	if err != nil || m.OwnerID() != "acme" {
		t.Errorf("a named manifest: got %q, %v; want acme", m.OwnerID(), err)
	}
	if m, _ := Parse([]byte("version = 1\n"), "demo", "/"); m.OwnerID() != "demo" {
		t.Errorf("the demo: got %q, want demo", m.OwnerID())
	}
}

// TestNamesDir: only a workspace.dir of the manifest names a directory.
func TestNamesDir(t *testing.T) {
	tests := []struct {
		manifest, dir string
		want          bool
	}{
		{"[workspace]\ndir = \"/\"\n", "/", true},
		{"[workspace]\ndir = \"/srv/${WORKSPACE_ID}\"\n", "/srv/ws", true},
		{"[workspace]\ndir = \"/srv/${WORKSPACE_ID}\"\n", "/", false},
		{"version = 1\n", "/", false},
	}
	for _, tt := range tests {
		m, err := Parse([]byte(tt.manifest), "m.toml", "/m")
		if err != nil {
			t.Fatal(err)
		}
		if got := m.NamesDir(ContextOptions{WorkspaceID: "ws", Dir: tt.dir, Cwd: "/"}, tt.dir); got != tt.want {
			t.Errorf("%q names %s: got %v, want %v", tt.manifest, tt.dir, got, tt.want)
		}
	}
}

func TestContext(t *testing.T) {
	m, err := Load("testdata/full.toml")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"USER": "alice", "MEMORY_API_KEY": "s3cret"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }

	c, err := m.Context(ContextOptions{WorkspaceID: "ws-1", Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	want := &Context{WorkspaceID: "ws-1", WorkspaceDir: "/srv/workspaces/ws-1", UserID: "alice", Vars: []EnvVar{{"TENANT", "acme"}}}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got %+v, want %+v", c, want)
	}

	// Flags win over the manifest.
	c, err = m.Context(ContextOptions{WorkspaceID: "ws-1", Dir: "/tmp/w", User: "bob", Getenv: getenv})
	if err != nil || c.WorkspaceDir != "/tmp/w" || c.UserID != "bob" {
		t.Errorf("flags: got %+v, %v", c, err)
	}

	// workspace.dir needs the id.
	_, err = m.Context(ContextOptions{Getenv: getenv})
	if err == nil || err.Error() != `testdata/full.toml:5:8: workspace.dir: ${WORKSPACE_ID} is not set (set it, or give a default: ${WORKSPACE_ID:-value})` {
		t.Errorf("missing id: got %v", err)
	}

	if _, err := m.Context(ContextOptions{WorkspaceID: "../etc"}); err == nil {
		t.Error("a workspace id with .. was accepted")
	}

	// The process of a command server: context, then its env, resolved.
	c, _ = m.Context(ContextOptions{WorkspaceID: "ws-1", Getenv: getenv})
	p, err := m.Process(m.Server("memory"), c, getenv)
	if err != nil {
		t.Fatal(err)
	}
	wantEnv := []EnvVar{
		{"WORKSPACE_ID", "ws-1"}, {"WORKSPACE_DIR", "/srv/workspaces/ws-1"}, {"USER_ID", "alice"}, {"TENANT", "acme"},
		{"MEMORY_FILE_PATH", "/srv/workspaces/ws-1/.memory.json"}, {"API_KEY", "s3cret"},
	}
	if p.Path != "npx" || p.Dir != "/srv/workspaces/ws-1" || !reflect.DeepEqual(p.Env, wantEnv) {
		t.Errorf("process: got %+v", p)
	}
	abs, _ := filepath.Abs("testdata")
	if p, err := m.Process(m.Server("acme-tools"), c, getenv); err != nil || p.Path != filepath.Join(abs, "bin/acme-tools") {
		t.Errorf("relative command: got %+v, %v", p, err)
	}

	// A secret that is not set names the server, the key and the variable.
	delete(env, "MEMORY_API_KEY")
	_, err = m.Process(m.Server("memory"), c, getenv)
	if err == nil || err.Error() != `testdata/full.toml:15:75: server "memory": env.API_KEY: ${MEMORY_API_KEY} is not set (set it, or give a default: ${MEMORY_API_KEY:-value})` {
		t.Errorf("unset secret: got %v", err)
	}
}

func TestCheckWorkspaceID(t *testing.T) {
	for _, id := range []string{"ws1", "A.b_c-9", strings.Repeat("a", 64)} {
		if err := CheckWorkspaceID(id); err != nil {
			t.Errorf("%q: %v", id, err)
		}
	}
	for _, id := range []string{"", ".hidden", "-x", "a/b", "a..b", "..", strings.Repeat("a", 65), "a b", "é"} {
		if CheckWorkspaceID(id) == nil {
			t.Errorf("%q was accepted", id)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"testdata/full.toml"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add(templates.Starter)
	f.Add(templates.Demo)
	f.Add([]byte("[servers.x]\ncommand = \"${A:-b}\"\nargs = [1, \"${\"]\n"))
	f.Add([]byte("servers = { x = { tools = { t = { run = [\"a\", \"{b}\"], args = { b = { enum = [1] } } } } } }"))
	f.Add([]byte(""))
	f.Add([]byte("[session]\nlisten = \"[::1]:0\"\ntls_cert = \"c\"\n[session.auth]\nissuer = \"http://127.0.0.1:1/a?b#c\"\naudience = \"x\"\nrequired_scopes = [\"a\\\\b\"]\n"))
	f.Add([]byte("\xEF\xBB\xBFversion = 1\n"))
	f.Add([]byte("[sandbox]\nenabled = true\nread = [\"~/.npm\", \"${H}/x\"]\nnetwork = [\"[::1]:80\", \"h:0\"]\n[servers.x]\ncommand = \"npx\"\nsandbox = { write = [\"{workspace}/a\"], network = \"loopback\", enforce = \"strict\" }\n"))
	f.Add([]byte(nest("inline table", MaxDepth+1)))
	f.Add([]byte(nest("header and inline table", MaxDepth)))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data, "f.toml", "/")
		if err != nil {
			var errs Errors
			if errors.As(err, &errs) && len(errs) == 0 {
				t.Fatal("empty error list")
			}
			return
		}
		c := &Context{WorkspaceDir: "/w"}
		getenv := func(string) (string, bool) { return "", false }
		for _, s := range m.Servers {
			_ = m.Where("servers", s.Name)
			_, _ = m.SandboxPaths(s, c, getenv)
		}
		_ = m.SandboxHints("windows")
	})
}

func TestInputTimeout(t *testing.T) {
	m, err := Parse([]byte("[servers.x]\ncommand = \"a\"\ninput_timeout = \"90s\"\n"), "m.toml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Server("x").Input(); got != 90*time.Second {
		t.Errorf("input_timeout: got %v, want 1m30s", got)
	}
}
