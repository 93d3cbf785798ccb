package commands

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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

	r := Run(ctx, []string{"sh", "-c", "echo out; echo err >&2; exit 3"}, dir, env, time.Minute)
	if r.Exit != 3 || string(r.Stdout) != "out\n" || string(r.Stderr) != "err\n" || r.Err != nil {
		t.Errorf("exit 3: got %+v", r)
	}

	r = Run(ctx, []string{"pwd"}, dir, env, time.Minute)
	if strings.TrimSpace(string(r.Stdout)) != dir {
		t.Errorf("pwd: got %q, want %q", r.Stdout, dir)
	}

	r = Run(ctx, []string{"no-such-command-mcpgen"}, dir, env, time.Minute)
	if r.Err == nil || !strings.Contains(r.Err.Error(), "not found") {
		t.Errorf("missing command: got %+v", r)
	}

	// Output beyond the cap is counted, not kept, and never blocks the child.
	r = Run(ctx, []string{"head", "-c", strconv.Itoa(3 * MaxOutput), "/dev/zero"}, dir, env, time.Minute)
	if len(r.Stdout) != MaxOutput || r.StdoutLen != 3*MaxOutput || r.Exit != 0 {
		t.Errorf("big output: kept %d of %d, exit %d", len(r.Stdout), r.StdoutLen, r.Exit)
	}
}

// TestRunKillsTheGroup: a timeout kills the tool and what it started, and
// so does a normal exit that leaves a background process behind.
func TestRunKillsTheGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	for _, tc := range []struct {
		name    string
		script  string
		timeout time.Duration
	}{
		{"timeout", "sleep 300 & echo $! > " + pidFile + "; wait", 500 * time.Millisecond},
		{"left behind", "sleep 300 & echo $! > " + pidFile, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Run(context.Background(), []string{"sh", "-c", tc.script}, dir, os.Environ(), tc.timeout)
			if tc.name == "timeout" && !r.TimedOut {
				t.Errorf("not timed out: %+v", r)
			}
			data, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
			waitGone(t, pid)
		})
	}
}

// waitGone fails unless process pid is gone (or a zombie) within a while.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for range 200 {
		if syscall.Kill(pid, 0) != nil || isZombie(pid) {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Errorf("process %d is still running", pid)
}

func isZombie(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
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
	srv, err := New(m, s, Options{Dir: t.TempDir(), Env: os.Environ(), Version: "test"})
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
