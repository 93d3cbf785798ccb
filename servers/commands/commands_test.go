package commands

import (
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/mcp"
)

// load parses a manifest and returns its declared server "t".
func load(t *testing.T, text string) (*manifest.Manifest, *manifest.Server) {
	t.Helper()
	m, err := manifest.Parse([]byte(text), "m.toml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return m, m.Server("t")
}

const logManifest = `
[servers.t.tools.log]
run = ["git", "log", "-n", "{count}", "--author={who}", "{path}", "${HOME}/x{count}"]
args.count = { type = "integer", default = 10 }
args.who = { type = "string", enum = ["me", "you"] }
args.path = { type = "string", required = false }
args.all = { type = "boolean", required = false }
args.ratio = { type = "number", required = false }
[servers.t.tools.log.args.unused]
type = "string"
required = false
`

func TestSchema(t *testing.T) {
	_, s := load(t, strings.Replace(logManifest, `"${HOME}/x{count}"`, `"${HOME}/x{count}", "{all}{ratio}{unused}"`, 1))
	got := string(Schema(s.Tools[0]))
	want := `{"type":"object","properties":{"count":{"type":"integer","default":10},"who":{"type":"string","enum":["me","you"]},"path":{"type":"string"},"all":{"type":"boolean"},"ratio":{"type":"number"},"unused":{"type":"string"}},"required":["who"],"additionalProperties":false}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	var v any
	if err := json.Unmarshal([]byte(got), &v); err != nil {
		t.Error(err)
	}
}

func TestValuesAndArgv(t *testing.T) {
	_, s := load(t, strings.Replace(logManifest, `"${HOME}/x{count}"`, `"${HOME}/x{count}", "{all}{ratio}{unused}"`, 1))
	tool := s.Tools[0]
	lookup := func(name string) (string, bool) {
		if name == "HOME" {
			return "/home/u", true
		}
		return "", false
	}
	tests := []struct {
		args    string
		want    string // the argv joined by |, or the error text
		wantErr bool
	}{
		{`{"who":"me"}`, "git|log|-n|10|--author=me|/home/u/x10", false},
		{`{"who":"you","count":3,"path":"a b","all":true,"ratio":0.5}`, "git|log|-n|3|--author=you|a b|/home/u/x3", false},
		{`{"who":"me","count":5.0}`, "git|log|-n|5|--author=me|/home/u/x5", false},
		{`{"who":"me","path":"${HOME}{count}"}`, "git|log|-n|10|--author=me|${HOME}{count}|/home/u/x10", false},
		{`{"who":"me","path":null}`, "git|log|-n|10|--author=me|/home/u/x10", false},
		{`{}`, `missing required argument "who" (string); the tool takes count (integer, optional), who (string), path (string, optional), all (boolean, optional), ratio (number, optional), unused (string, optional)`, true},
		{`{"who":"them"}`, `argument "who" must be one of me, you, not them`, true},
		{`{"who":"me","count":"3"}`, `argument "count" must be an integer, not the string "3"`, true},
		{`{"who":"me","count":1.5}`, `argument "count" must be an integer, not the number 1.5`, true},
		{`{"who":"me","all":"yes"}`, `argument "all" must be a boolean, not the string "yes"`, true},
		{`{"who":"me","path":["a"]}`, `argument "path" must be a string, not an array`, true},
		{`{"who":"me","colour":1,"age":2}`, `unknown arguments "age", "colour"; the tool takes`, true},
		{`[1]`, `arguments must be a JSON object; the tool takes`, true},
	}
	for _, tt := range tests {
		values, err := Values(tool, json.RawMessage(tt.args))
		var got string
		if err == nil {
			var argv []string
			argv, err = Argv(tool, values, lookup)
			got = strings.Join(argv, "|")
		}
		if tt.wantErr {
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("%s: got %v, want error %q", tt.args, err, tt.want)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: got %q, %v; want %q", tt.args, got, err, tt.want)
		}
	}
}

// TestArgvReferenceToNoArgument: a {name} that names no argument (which
// the manifest refuses) fails the call, rather than reach the command as
// text; braces around anything else are text.
func TestArgvReferenceToNoArgument(t *testing.T) {
	text := func(s string) manifest.Template { return manifest.Template{{Text: s}} }
	tool := &manifest.Tool{Name: "log", Run: []manifest.Template{text("git"), text("-n"), text("{count}")}}
	argv, err := Argv(tool, nil, nil)
	if err == nil || err.Error() != `tool "log": {count} in its run names no argument` {
		t.Errorf("got %q, %v; want the reference refused", argv, err)
	}
	tool.Run = []manifest.Template{text("jq"), text("{ a }"), text("{}"), text("{.Name}"), text("x{1}"), text("{{.Names}}"), text("{{json .}}")}
	argv, err = Argv(tool, nil, nil)
	if got, want := strings.Join(argv, "|"), "jq|{ a }|{}|{.Name}|x{1}|{{.Names}}|{{json .}}"; err != nil || got != want {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
	// {{name}} is the text {name}, even when name is an argument.
	tool.Args = []*manifest.Arg{{Name: "rev", Type: manifest.TypeString}}
	tool.Run = []manifest.Template{text("git"), text("log"), text("{rev}@{{upstream}}"), text("{{rev}}")}
	argv, err = Argv(tool, map[string]string{"rev": "main"}, nil)
	if got, want := strings.Join(argv, "|"), "git|log|main@{upstream}|{rev}"; err != nil || got != want {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
}

// TestArgvUnsetVariable: a ${VAR} that is not set fails the call, naming it.
func TestArgvUnsetVariable(t *testing.T) {
	_, s := load(t, "[servers.t.tools.x]\nrun = [\"echo\", \"${NOPE}\"]\n")
	_, err := Argv(s.Tools[0], nil, func(string) (string, bool) { return "", false })
	if err == nil || !strings.Contains(err.Error(), "${NOPE} is not set") {
		t.Errorf("got %v", err)
	}
}

func TestRun(t *testing.T) {
	ctx := context.Background()
	env := os.Environ()
	dir := t.TempDir()

	r := Run(ctx, containment(t), "t", []string{"sh", "-c", "echo out; echo err >&2; exit 3"}, dir, env, time.Minute)
	if r.Exit != 3 || string(r.Stdout) != "out\n" || string(r.Stderr) != "err\n" || r.Err != nil {
		t.Errorf("exit 3: got %+v", r)
	}

	r = Run(ctx, containment(t), "t", []string{"pwd"}, dir, env, time.Minute)
	if strings.TrimSpace(string(r.Stdout)) != dir {
		t.Errorf("pwd: got %q, want %q", r.Stdout, dir)
	}

	r = Run(ctx, containment(t), "t", []string{"no-such-command-mcpgen"}, dir, env, time.Minute)
	if r.Err == nil || !strings.Contains(r.Err.Error(), "not found") {
		t.Errorf("missing command: got %+v", r)
	}

	// Output beyond the cap is counted, not kept, and never blocks the child.
	r = Run(ctx, containment(t), "t", []string{"head", "-c", strconv.Itoa(3 * MaxOutput), "/dev/zero"}, dir, env, time.Minute)
	if len(r.Stdout) != MaxOutput || r.StdoutLen != 3*MaxOutput || r.Exit != 0 {
		t.Errorf("big output: kept %d of %d, exit %d", len(r.Stdout), r.StdoutLen, r.Exit)
	}
}

// TestServer drives the server with the mcp client, as an agent would.
func TestServer(t *testing.T) {
	m, s := load(t, `
[servers.t]
description = "test tools"
tool_timeout = "500ms"
[servers.t.tools.echo]
description = "Echo words"
run = ["echo", "{words}"]
args.words = { type = "string" }
[servers.t.tools.fail]
run = ["sh", "-c", "echo bad input >&2; exit 2"]
[servers.t.tools.hang]
run = ["sleep", "30"]
`)
	srv, err := New(m, s, Options{Dir: t.TempDir(), Env: os.Environ(), Version: "test", Containment: containment(t)})
	if err != nil {
		t.Fatal(err)
	}
	c := connect(t, srv)
	ctx := context.Background()

	tools, err := c.ListTools(ctx)
	if err != nil || len(tools) != 3 {
		t.Fatalf("tools: got %d, %v", len(tools), err)
	}

	check := func(name, args string, wantErr bool, want string) {
		t.Helper()
		res, err := c.CallTool(ctx, name, json.RawMessage(args))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.IsError != wantErr || len(res.Content) != 1 || !strings.Contains(res.Content[0].Text, want) {
			t.Errorf("%s %s: got isError=%v %q, want isError=%v and %q", name, args, res.IsError, res.Content, wantErr, want)
		}
	}
	check("echo", `{"words":"hello world"}`, false, "hello world\n")
	check("echo", `{}`, true, `missing required argument "words"`)
	check("fail", `{}`, true, "tool \"fail\" failed: exit status 2\nstderr:\nbad input\n")
	check("hang", `{}`, true, `tool "hang" timed out after 500ms`)

	if _, err := c.CallTool(ctx, "nope", json.RawMessage(`{}`)); err == nil {
		t.Error("an unknown tool was not a protocol error")
	}
}

func connect(t *testing.T, srv *mcp.Server) *mcp.Client {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(ctx, sr, sw); sw.Close() }()
	c := mcp.NewClient(ctx, cr, cw, mcp.ClientOptions{})
	t.Cleanup(func() {
		cw.Close()
		<-served
		cancel()
		<-c.Done()
	})
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDash is the option-injection attack: run = ["git", "show", "{rev}"]
// with rev = "--output=/x" makes git write where the model says. A string
// argument may not start an argv element with "-" unless the manifest
// allows it.
func TestDash(t *testing.T) {
	_, s := load(t, `
[servers.t.tools.show]
run = ["git", "show", "{rev}"]
args.rev = { type = "string" }
[servers.t.tools.format]
run = ["git", "log", "--format={fmt}"]
args.fmt = { type = "string" }
[servers.t.tools.concat]
run = ["cmd", "{a}{b}"]
args.a = { type = "string" }
args.b = { type = "string" }
[servers.t.tools.vars]
run = ["cmd", "${EMPTY}{c}", "${DASH}{c}"]
args.c = { type = "string" }
[servers.t.tools.grep]
run = ["grep", "{pattern}"]
args.pattern = { type = "string", allow_dash = true }
[servers.t.tools.choice]
run = ["git", "log", "{fmt}", "{mode}"]
args.fmt = { type = "string", enum = ["--oneline", "--stat"] }
args.mode = { type = "string", default = "-v" }
[servers.t.tools.head]
run = ["head", "-n", "{n}", "{x}"]
args.n = { type = "integer" }
args.x = { type = "number", required = false }
[servers.t.tools.paths]
run = ["git", "log", "{rev}", "--", "{path}"]
args.rev = { type = "string" }
args.path = { type = "string" }
[servers.t.tools.eoo]
run = ["git", "rev-parse", "--end-of-options", "{rev}"]
args.rev = { type = "string" }
[servers.t.tools.program]
run = ["{cmd}", "x"]
args.cmd = { type = "string" }
`)
	lookup := func(name string) (string, bool) {
		switch name {
		case "EMPTY":
			return "", true
		case "DASH":
			return "-", true
		}
		return "", false
	}
	tests := []struct {
		tool, args string
		want       string // the argv joined by |; "refused" for the dash error
	}{
		{"show", `{"rev":"--output=/x"}`, "refused"},
		{"show", `{"rev":"-"}`, "refused"},
		{"show", `{"rev":"HEAD~1"}`, "git|show|HEAD~1"},
		{"show", `{"rev":" -x"}`, "git|show| -x"},
		{"format", `{"fmt":"--output=/x"}`, "git|log|--format=--output=/x"},
		{"concat", `{"a":"","b":"-x"}`, "refused"},
		{"concat", `{"a":"x","b":"-y"}`, "cmd|x-y"},
		{"concat", `{"a":"-x","b":"y"}`, "refused"},
		{"vars", `{"c":"-x"}`, "refused"},
		{"vars", `{"c":"x"}`, "cmd|x|-x"},
		{"grep", `{"pattern":"-e"}`, "grep|-e"},
		{"choice", `{"fmt":"--stat"}`, "git|log|--stat|-v"},
		{"choice", `{"fmt":"--stat","mode":"-v"}`, "git|log|--stat|-v"},
		{"choice", `{"fmt":"--stat","mode":"--output=/x"}`, "refused"},
		{"head", `{"n":-5,"x":-1.5}`, "head|-n|-5|-1.5"},
		{"paths", `{"rev":"main","path":"-rf"}`, "git|log|main|--|-rf"},
		{"paths", `{"rev":"--all","path":"x"}`, "refused"},
		{"eoo", `{"rev":"--output=/x"}`, "git|rev-parse|--end-of-options|--output=/x"},
		{"program", `{"cmd":"--help"}`, "refused"},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.args, func(t *testing.T) {
			var tool *manifest.Tool
			for _, x := range s.Tools {
				if x.Name == tt.tool {
					tool = x
				}
			}
			values, err := Values(tool, json.RawMessage(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			argv, err := Argv(tool, values, lookup)
			var argErr *ArgError
			switch {
			case tt.want == "refused":
				if !errors.As(err, &argErr) || !strings.Contains(err.Error(), `which starts with "-": the command would take it for an option`) {
					t.Errorf("got %q, %v; want the dash refused", argv, err)
				}
			case err != nil || strings.Join(argv, "|") != tt.want:
				t.Errorf("got %q, %v; want %q", strings.Join(argv, "|"), err, tt.want)
			}
		})
	}
}

// TestDashResult checks what the model reads when its value is refused:
// why, and how the manifest's author can allow it; nothing runs.
func TestDashResult(t *testing.T) {
	dir := t.TempDir()
	m, s := load(t, `
[servers.t.tools.show]
run = ["touch", "{file}"]
args.file = { type = "string" }
`)
	srv, err := New(m, s, Options{Dir: dir, Env: os.Environ(), Version: "test", Containment: containment(t)})
	if err != nil {
		t.Fatal(err)
	}
	c := connect(t, srv)
	res, err := c.CallTool(t.Context(), "show", json.RawMessage(`{"file":"--version"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `argument "file" is "--version", which starts with "-": the command would take it for an option, not a value, so it is refused; give a value that does not start with "-" (if tool "show" must accept such values, the manifest's author can set allow_dash = true on its argument "file")`
	if !res.IsError || len(res.Content) != 1 || res.Content[0].Text != want {
		t.Errorf("got isError=%v %q\nwant isError and %q", res.IsError, res.Content, want)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the command ran: %v", entries)
	}
}

// TestNoCommand: a run whose first element is an argument that was not
// given has no command; the call says so, and the next element (here
// --version, or a value of the model's) does not become the program.
func TestNoCommand(t *testing.T) {
	m, s := load(t, `
[servers.t.tools.run]
run = ["{cmd}", "--version"]
args.cmd = { type = "string", required = false }
`)
	srv, err := New(m, s, Options{Dir: t.TempDir(), Env: os.Environ(), Version: "test", Containment: containment(t)})
	if err != nil {
		t.Fatal(err)
	}
	c := connect(t, srv)
	res, err := c.CallTool(t.Context(), "run", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `tool "run" cannot run without the argument that names its command; the tool takes cmd (string, optional)`
	if !res.IsError || len(res.Content) != 1 || res.Content[0].Text != want {
		t.Errorf("got isError=%v %q, want isError and %q", res.IsError, res.Content, want)
	}
}
