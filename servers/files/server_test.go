package files

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

// connect serves the files server for opts over pipes and returns an
// initialized client. Cleanup closes the client's end and waits for Serve.
func connect(t *testing.T, opts Options) *mcp.Client {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	clientR, serverW := io.Pipe()
	serverR, clientW := io.Pipe()
	// Not t.Context: it ends before the cleanup that closes the pipe.
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- s.Serve(ctx, serverR, serverW)
		serverW.Close()
	}()
	c := mcp.NewClient(ctx, clientR, clientW, mcp.ClientOptions{})
	t.Cleanup(func() {
		clientW.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		c.Close()
		cancel()
	})
	res, err := c.Initialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.ServerInfo.Name != "files" || !strings.Contains(res.Instructions, opts.Root) {
		t.Errorf("initialize = %+v, want serverInfo files and instructions naming %s", res, opts.Root)
	}
	return c
}

func toolNames(t *testing.T, c *mcp.Client) []string {
	t.Helper()
	tools, err := c.ListTools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

func TestEndToEnd(t *testing.T) {
	w, top := fixture(t)
	c := connect(t, Options{Root: w.dir, Version: "1.2.3"})
	ctx := t.Context()

	want := []string{"edit_file", "file_info", "list_directory", "read_file", "search_files", "write_file"}
	if got := toolNames(t, c); !slices.Equal(got, want) {
		t.Errorf("tools/list = %v, want %v", got, want)
	}

	res, err := c.CallTool(ctx, "write_file", map[string]any{"path": "notes/todo.txt", "content": "one\ntwo\n"})
	if err != nil || res.IsError {
		t.Fatalf("write_file = %v, %v", res, err)
	}
	res, err = c.CallTool(ctx, "edit_file", map[string]any{"path": "notes/todo.txt", "old_text": "two", "new_text": "2"})
	if err != nil || res.IsError {
		t.Fatalf("edit_file = %v, %v", res, err)
	}
	res, err = c.CallTool(ctx, "read_file", map[string]any{"path": "notes/todo.txt"})
	if err != nil || res.IsError || resultText(res) != "one\n2\n" {
		t.Fatalf("read_file = %+v, %v; want the edited file", res, err)
	}

	// A name that JSON cannot carry is listed quoted, and the quoted form
	// reads the file.
	res, err = c.CallTool(ctx, "list_directory", nil)
	if err != nil || !strings.Contains(resultText(res), "\n"+`"bad\xff\xfe.txt"`+"  14 bytes\n") {
		t.Fatalf("list_directory = %+v, %v; want the odd name quoted", res, err)
	}
	res, err = c.CallTool(ctx, "read_file", map[string]any{"path": `"bad\xff\xfe.txt"`})
	if err != nil || res.IsError || resultText(res) != "odd bad\ufffd\ufffd.txt\n" {
		t.Fatalf("read_file of the quoted name = %+v, %v", res, err)
	}

	// An escape is a result with isError, not a protocol error, and
	// nothing changes.
	before := snapshot(t, top)
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{"read_file", map[string]any{"path": "../outside/secret.txt"}},
		{"write_file", map[string]any{"path": "link-out-dir/x", "content": "x"}},
		{"edit_file", map[string]any{"path": "link-out-file", "old_text": "secret", "new_text": "x"}},
		{"list_directory", map[string]any{"path": "abs-out-dir"}},
		{"search_files", map[string]any{"pattern": "secret", "path": filepath.Join(top, "outside")}},
		{"file_info", map[string]any{"path": "/etc/passwd"}},
	} {
		res, err := c.CallTool(ctx, call.tool, call.args)
		if err != nil {
			t.Errorf("%s(%v): %v, want an isError result", call.tool, call.args, err)
			continue
		}
		if !res.IsError || !strings.Contains(resultText(res), "is outside the workspace "+w.dir) {
			t.Errorf("%s(%v) = %+v, want isError saying the path is outside", call.tool, call.args, res)
		}
	}
	if diff := diffSnapshots(before, snapshot(t, top)); len(diff) > 0 {
		t.Errorf("refused calls changed the tree: %v", diff)
	}

	// Bad arguments are results too; an unknown tool is a JSON-RPC error.
	res, err = c.CallTool(ctx, "read_file", map[string]any{"path": 7})
	if err != nil || !res.IsError || resultText(res) != `argument "path" must be a string, not a number (7)` {
		t.Errorf("read_file with a number = %+v, %v", res, err)
	}
	_, err = c.CallTool(ctx, "delete_file", map[string]any{"path": "a.txt"})
	if !errors.Is(err, mcp.ErrInvalidParams) {
		t.Errorf("unknown tool: error %v, want -32602", err)
	}
}

func TestReadOnly(t *testing.T) {
	w, top := fixture(t)
	c := connect(t, Options{Root: w.dir, ReadOnly: true})
	want := []string{"file_info", "list_directory", "read_file", "search_files"}
	if got := toolNames(t, c); !slices.Equal(got, want) {
		t.Errorf("read-only tools/list = %v, want %v", got, want)
	}
	before := snapshot(t, top)
	for _, tool := range []string{"write_file", "edit_file"} {
		_, err := c.CallTool(t.Context(), tool, map[string]any{"path": "a.txt", "content": "x", "old_text": "hello", "new_text": "x"})
		if !errors.Is(err, mcp.ErrInvalidParams) {
			t.Errorf("read-only %s: error %v, want unknown tool (-32602)", tool, err)
		}
	}
	if diff := diffSnapshots(before, snapshot(t, top)); len(diff) > 0 {
		t.Errorf("read-only server changed the tree: %v", diff)
	}
	res, err := c.CallTool(t.Context(), "read_file", map[string]any{"path": "a.txt"})
	if err != nil || res.IsError || resultText(res) != "hello\n" {
		t.Errorf("read-only read_file = %+v, %v", res, err)
	}
}

func TestNew(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ root, want string }{
		{"", "files: no workspace directory; set WORKSPACE_DIR to an absolute path"},
		{"relative/dir", `files: workspace directory "relative/dir" is not absolute; set WORKSPACE_DIR to an absolute path`},
		{"/no/such/dir", "files: workspace directory /no/such/dir: no such file or directory"},
		{file, "files: workspace directory " + file + ": not a directory"},
	}
	for _, tt := range tests {
		_, err := New(Options{Root: tt.root})
		if err == nil || err.Error() != tt.want {
			t.Errorf("New(%q) error:\n got %v\nwant %s", tt.root, err, tt.want)
		}
	}
}

// TestSchemas checks every tool's schema against its handler: the schema
// is an object that refuses other properties, its required names are among
// its properties, and the handler knows exactly the schema's properties
// and refuses values of the wrong type, naming the argument.
func TestSchemas(t *testing.T) {
	w, _ := fixture(t)
	for _, tl := range tools(w, false) {
		t.Run(tl.Name, func(t *testing.T) {
			var schema struct {
				Type       string                     `json:"type"`
				Properties map[string]json.RawMessage `json:"properties"`
				Required   []string                   `json:"required"`
				Additional *bool                      `json:"additionalProperties"`
			}
			if err := json.Unmarshal(tl.InputSchema, &schema); err != nil {
				t.Fatalf("schema: %v", err)
			}
			if schema.Type != "object" || schema.Additional == nil || *schema.Additional {
				t.Errorf("schema is not a closed object: %s", tl.InputSchema)
			}
			for _, r := range schema.Required {
				if _, ok := schema.Properties[r]; !ok {
					t.Errorf("required %q is not a property", r)
				}
			}
			if tl.Description == "" || tl.Annotations == nil || tl.Annotations.ReadOnlyHint == nil {
				t.Errorf("tool lacks a description or annotations")
			}
			call := func(args string) (*mcp.CallToolResult, error) {
				return tl.Handler(t.Context(), &mcp.CallToolRequest{Name: tl.Name, Arguments: json.RawMessage(args)})
			}
			for name := range schema.Properties {
				args := map[string]any{}
				for _, r := range schema.Required {
					args[r] = "a.txt"
				}
				args[name] = map[string]int{"x": 1}
				b, _ := json.Marshal(args)
				_, err := call(string(b))
				if want := `argument "` + name + `" must be`; err == nil || !strings.HasPrefix(err.Error(), want) {
					t.Errorf("%s of the wrong type: %v, want an error starting %q", name, err, want)
				}
			}
			_, err := call(`{"nonsense":true}`)
			if err == nil || !strings.HasPrefix(err.Error(), `unknown argument "nonsense"; this tool takes`) {
				t.Errorf("unknown argument: %v", err)
			}
			if len(schema.Required) > 0 {
				_, err := call(`{}`)
				if err == nil || err.Error() != `missing required argument "`+schema.Required[0]+`"` {
					t.Errorf("no arguments: %v", err)
				}
			}
		})
	}
}

func TestArguments(t *testing.T) {
	tests := []struct {
		args string
		want string // the error, or the values read
	}{
		{`{"path":"a","offset":3,"limit":10}`, "a 3 10 false"},
		{`{"path":"a"}`, "a 1 2000 false"},
		{`{"path":"a","offset":null,"all":null}`, "a 1 2000 false"},
		{`{"path":"a","offset":3.0,"limit":1e2,"all":true}`, "a 3 100 true"},
		{`{"path":"a","offset":99999999999}`, "a 2147483647 2000 false"},
		{``, `missing required argument "path"`},
		{`null`, `missing required argument "path"`},
		{`{"path":null}`, `missing required argument "path"`},
		{`{"path":""}`, " 1 2000 false"},
		{`{"path":["a"]}`, `argument "path" must be a string, not an array (["a"])`},
		{`{"path":{"a":1}}`, `argument "path" must be a string, not an object ({"a":1})`},
		{`{"path":true}`, `argument "path" must be a string, not a boolean (true)`},
		{`{"path":"a","offset":1.5}`, `argument "offset" must be an integer, not a number (1.5)`},
		{`{"path":"a","offset":-1}`, `argument "offset" must be at least 1, not -1`},
		{`{"path":"a","offset":"3"}`, `argument "offset" must be an integer, not a string ("3")`},
		{`{"path":"a","all":"yes"}`, `argument "all" must be true or false, not a string ("yes")`},
		{`{"path":"a","all":1}`, `argument "all" must be true or false, not a number (1)`},
		{`{"path":"` + strings.Repeat("x", 100) + `","offset":"` + strings.Repeat("y", 100) + `"}`, `argument "offset" must be an integer, not a string`},
		{`{"path":"a","b":1,"c":2}`, `unknown arguments "b", "c"; this tool takes "path", "offset", "limit", "all"`},
		{`[]`, `arguments must be a JSON object with "path", "offset", "limit", "all"`},
		{`{"path":`, `arguments are not a valid JSON object`},
	}
	for _, tt := range tests {
		a := parseArguments(json.RawMessage(tt.args), "path", "offset", "limit", "all")
		path := a.string("path", true)
		offset := a.integer("offset", 1, 1)
		limit := a.integer("limit", DefaultReadLines, 1)
		all := a.boolean("all")
		got := ""
		if a.err != nil {
			got = a.err.Error()
		} else {
			got = strings.Join([]string{path, itoa(offset), itoa(limit), map[bool]string{true: "true", false: "false"}[all]}, " ")
		}
		if !strings.HasPrefix(got, tt.want) {
			t.Errorf("arguments %s:\n got %s\nwant %s", tt.args, got, tt.want)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
