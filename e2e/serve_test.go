//go:build unix

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	json "github.com/goccy/go-json"
)

// serveManifest has a server of each kind that mcpgen serve runs: built
// in, declared, and a third-party command server that serve resolves and
// then execs.
func serveManifest(wsRoot string) string {
	return fmt.Sprintf(`[workspace]
dir = %q

[servers.files]
builtin = "files"

[servers.shell.tools.echo]
run = ["echo", "{text}"]
args.text = { type = "string" }

[servers.shell.tools.count]
run = ["seq", "{n}"]
args.n = { type = "integer" }

[servers.shell.tools.ls]
run = ["ls", "-1", "{dir}"]
args.dir = { type = "string", default = "." }

[servers.memory]
command = %q
args = [%q]
env = { MEMORY_FILE_PATH = "${WORKSPACE_DIR}/memory.json" }
`, wsRoot+"/${WORKSPACE_ID}", node, os.Getenv("SERVER_MEMORY"))
}

// sdkCall is one tool call for sdk-client.mjs, and what must come back.
type sdkCall struct {
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`

	isError  bool
	text     string // the whole text, when set
	contains string // part of the text, when set
	code     int    // a JSON-RPC error instead of a result, when set
}

// sdkOutput is what sdk-client.mjs prints.
type sdkOutput struct {
	ServerInfo struct {
		Name string `json:"name"`
	} `json:"serverInfo"`
	Tools   []string `json:"tools"`
	Results []struct {
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
		Error   string `json:"error"`
		Code    int    `json:"code"`
	} `json:"results"`
}

// TestServeWithSDKClient drives mcpgen serve with the official TypeScript
// SDK client and checks what the tools really return.
func TestServeWithSDKClient(t *testing.T) {
	sb := newSandbox(t)
	manifest := sb.write("mcpgen.toml", serveManifest(sb.path("ws")))
	ws := sb.path("ws", "ws-sdk")
	sb.write("ws/ws-sdk/notes.txt", "hello from the workspace\n")
	sb.write("ws/ws-sdk/docs/guide.md", "# Guide\n")
	sb.write("ws/outside.txt", "not for the model\n")
	env := []string{"WORKSPACE_ID=ws-sdk", "USER_ID=e2e"}

	for _, tc := range []struct {
		server string
		tools  []string
		calls  []sdkCall
		after  func(t *testing.T)
	}{
		{
			server: "files",
			tools:  []string{"edit_file", "file_info", "list_directory", "read_file", "search_files", "write_file"},
			calls: []sdkCall{
				{Tool: "read_file", Arguments: map[string]any{"path": "notes.txt"}, text: "hello from the workspace\n"},
				{Tool: "list_directory", Arguments: map[string]any{}, contains: "notes.txt"},
				{Tool: "list_directory", Arguments: map[string]any{"path": "."}, contains: "docs/"},
				{Tool: "read_file", Arguments: map[string]any{"path": "../outside.txt"}, isError: true, contains: "outside the workspace"},
				{Tool: "read_file", Arguments: map[string]any{"path": ws + "/../outside.txt"}, isError: true, contains: "outside the workspace"},
				{Tool: "read_file", Arguments: map[string]any{"path": 42}, isError: true, contains: "path"},
				{Tool: "write_file", Arguments: map[string]any{"path": "written.txt", "content": "by the SDK\n"}},
				{Tool: "read_file", Arguments: map[string]any{"path": "written.txt"}, text: "by the SDK\n"},
				{Tool: "no_such_tool", Arguments: map[string]any{}, code: -32602},
			},
			after: func(t *testing.T) {
				if data, err := os.ReadFile(filepath.Join(ws, "written.txt")); err != nil || string(data) != "by the SDK\n" {
					t.Errorf("written.txt holds %q (%v), want %q", data, err, "by the SDK\n")
				}
			},
		},
		{
			server: "shell",
			tools:  []string{"count", "echo", "ls"},
			calls: []sdkCall{
				{Tool: "echo", Arguments: map[string]any{"text": "hello e2e"}, text: "hello e2e\n"},
				{Tool: "count", Arguments: map[string]any{"n": 3}, text: "1\n2\n3\n"},
				{Tool: "ls", Arguments: map[string]any{}, contains: "notes.txt"},
				{Tool: "count", Arguments: map[string]any{"n": "three"}, isError: true, text: `argument "n" must be an integer, not the string "three"`},
				{Tool: "echo", Arguments: map[string]any{}, isError: true, contains: `"text"`},
			},
		},
		{
			server: "memory",
			tools:  []string{"create_entities", "read_graph", "search_nodes"},
			calls: []sdkCall{
				{Tool: "create_entities", Arguments: map[string]any{"entities": []any{map[string]any{"name": "mcpgen-e2e", "entityType": "test", "observations": []any{"made by the SDK client"}}}}, contains: "mcpgen-e2e"},
				{Tool: "read_graph", Arguments: map[string]any{}, contains: "made by the SDK client"},
			},
			after: func(t *testing.T) {
				// MEMORY_FILE_PATH was resolved to the workspace by mcpgen
				// serve, before it exec'd the server.
				data, err := os.ReadFile(filepath.Join(ws, "memory.json"))
				if err != nil || !strings.Contains(string(data), "mcpgen-e2e") {
					t.Errorf("the memory file in the workspace holds %q (%v), want the entity", data, err)
				}
			},
		},
	} {
		t.Run(tc.server, func(t *testing.T) {
			calls, err := json.Marshal(tc.calls)
			if err != nil {
				t.Fatal(err)
			}
			res := sb.must(run{env: append(env, "MCP_NODE_MODULES="+os.Getenv("MCP_NODE_MODULES")), args: []string{
				node, filepath.Join(testdata(t), "sdk-client.mjs"), string(calls), "--", mcpgen, "serve", "--manifest", manifest, tc.server,
			}})
			var out sdkOutput
			if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
				t.Fatalf("sdk-client.mjs: %v\n%s", err, res)
			}
			for _, tool := range tc.tools {
				if !strings.Contains(","+strings.Join(out.Tools, ",")+",", ","+tool+",") {
					t.Errorf("tools/list: got %q, want %s among them", out.Tools, tool)
				}
			}
			if len(out.Results) != len(tc.calls) {
				t.Fatalf("got %d results, want %d:\n%s", len(out.Results), len(tc.calls), res.stdout)
			}
			for i, c := range tc.calls {
				got := out.Results[i]
				desc := fmt.Sprintf("%s %v", c.Tool, c.Arguments)
				switch {
				case c.code != 0:
					if got.Code != c.code {
						t.Errorf("%s: got code %d (%q), want a JSON-RPC error %d", desc, got.Code, got.Error, c.code)
					}
					continue
				case got.Error != "":
					t.Errorf("%s: got JSON-RPC error %q, want a result", desc, got.Error)
					continue
				}
				if got.IsError != c.isError {
					t.Errorf("%s: got isError=%v (%q), want %v", desc, got.IsError, got.Text, c.isError)
				}
				if c.text != "" && got.Text != c.text {
					t.Errorf("%s: got %q, want %q", desc, got.Text, c.text)
				}
				if c.contains != "" && !strings.Contains(got.Text, c.contains) {
					t.Errorf("%s: got %q, want it to contain %q", desc, got.Text, c.contains)
				}
			}
			if tc.after != nil {
				tc.after(t)
			}
		})
	}
}

// benchOutput is the part of bench.mjs's JSON that the test reads.
type benchOutput struct {
	ToolCount int     `json:"toolCount"`
	Calls     int     `json:"calls"`
	ConnectMs float64 `json:"connectMs"`
	Latency   struct {
		P50 float64 `json:"p50"`
		P99 float64 `json:"p99"`
	} `json:"latencyMs"`
}

// TestServeWithMCPBench has bench.mjs (the TypeScript SDK client, which
// fails on any isError result) call mcpgen serve's tools many times. The
// latencies are logged for comparison, never asserted.
func TestServeWithMCPBench(t *testing.T) {
	sb := newSandbox(t)
	manifest := sb.write("mcpgen.toml", serveManifest(sb.path("ws")))
	sb.write("ws/ws-bench/notes.txt", "hello from the workspace\n")
	env := []string{"WORKSPACE_ID=ws-bench"}
	bench := func(server, tool, args string, calls int) result {
		return sb.try(run{env: env, args: []string{
			node, os.Getenv("MCP_BENCH"), "--calls", fmt.Sprint(calls), "--warmup", "10", "--tool", tool, "--args", args,
			"--", mcpgen, "serve", "--manifest", manifest, server,
		}})
	}

	for _, tc := range []struct {
		server, tool, args string
		tools              int
	}{
		{"files", "read_file", `{"path":"notes.txt"}`, 6},
		{"shell", "echo", `{"text":"hello $i"}`, 3},
	} {
		res := bench(tc.server, tc.tool, tc.args, 200)
		if res.err != nil {
			t.Fatalf("bench.mjs %s %s: %s", tc.server, tc.tool, res)
		}
		var out benchOutput
		if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
			t.Fatalf("bench.mjs %s: %v\n%s", tc.server, err, res)
		}
		if out.ToolCount != tc.tools || out.Calls != 200 {
			t.Errorf("bench.mjs %s: got %d tools and %d calls, want %d and 200", tc.server, out.ToolCount, out.Calls, tc.tools)
		}
		t.Logf("mcpgen serve %s, %s x200 through the TS SDK: connect %.1f ms, p50 %.3f ms, p99 %.3f ms", tc.server, tc.tool, out.ConnectMs, out.Latency.P50, out.Latency.P99)
	}

	// A bad argument is an isError result, which bench.mjs treats as a failure.
	res := bench("shell", "count", `{"n":"three"}`, 1)
	if res.err == nil || !strings.Contains(res.stderr, "isError") || !strings.Contains(res.stderr, "must be an integer") {
		t.Errorf("bench.mjs with a bad argument: got %s\nwant a failure naming the isError result", res)
	}
}

// testdata returns the absolute path of this package's testdata.
func testdata(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
