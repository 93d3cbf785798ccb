package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

func TestTypedValue(t *testing.T) {
	tests := []struct {
		typ, value string
		want       string // the JSON, or "error: part of the message"
	}{
		{"string", "hi", `"hi"`},
		{"string", "42", `"42"`},
		{"string", `a "quote"`, `"a \"quote\""`},
		{"string", "", `""`},
		{"integer", "42", `42`},
		{"integer", "-7", `-7`},
		{"integer", "4.5", `error: "4.5" is not an integer`},
		{"integer", "0x10", `error: is not an integer`},
		{"integer", "99999999999999999999", `error: is not an integer`},
		{"number", "95.5", `95.5`},
		{"number", "1e3", `1e3`},
		{"number", "5", `5`},
		{"number", "+5", `5`},
		{"number", ".5", `0.5`},
		{"number", "NaN", `error: is not a number`},
		{"number", "Inf", `error: is not a number`},
		{"number", "five", `error: is not a number`},
		{"boolean", "true", `true`},
		{"boolean", "false", `false`},
		{"boolean", "1", `true`},
		{"boolean", "yes", `error: is not true or false`},
		{"array", `["a",1]`, `["a",1]`},
		{"array", "a,b", `error: is not a JSON array`},
		{"array", `{"a":1}`, `error: is not a JSON array`},
		{"object", `{"a":1}`, `{"a":1}`},
		{"object", `{"a":`, `error: is not a JSON object`},
		{"null", "null", `null`},
		{"", "hi", `"hi"`},
		{"", "42", `"42"`},
		{"", `{"a":1}`, `{"a":1}`},
		{"", `[1,2]`, `[1,2]`},
		{"", `[not json`, `"[not json"`},
	}
	for _, tt := range tests {
		got, err := typedValue(tt.typ, tt.value)
		if want, ok := strings.CutPrefix(tt.want, "error: "); ok {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("typedValue(%q, %q): got %s, %v; want an error with %q", tt.typ, tt.value, got, err, want)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("typedValue(%q, %q): got %s, %v; want %s", tt.typ, tt.value, got, err, tt.want)
		}
	}
}

func TestToolArguments(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{
		"count":{"type":"integer"},"ratio":{"type":["null","number"]},"on":{"type":"boolean"},
		"tags":{"type":"array","items":{"type":"string"}},"name":{"type":"string"},"any":{}}}`)
	tests := []struct {
		name  string
		base  string
		pairs []string
		want  string // the arguments, or "error: ..."
	}{
		{name: "typed by the schema", pairs: []string{"count=3", "ratio=0.5", "on=true", "tags=[\"a\"]", "name=7", "any=x"},
			want: `{"any":"x","count":3,"name":"7","on":true,"ratio":0.5,"tags":["a"]}`},
		{name: "a value with =", pairs: []string{"name=a=b"}, want: `{"name":"a=b"}`},
		{name: "pairs go on top of --args", base: `{"count":1,"other":{"x":1}}`, pairs: []string{"count=2"}, want: `{"count":2,"other":{"x":1}}`},
		{name: "a key the schema does not know", pairs: []string{"extra=5"}, want: `{"extra":"5"}`},
		{name: "no =", pairs: []string{"count"}, want: "error: want KEY=VALUE"},
		{name: "no key", pairs: []string{"=3"}, want: "error: want KEY=VALUE"},
		{name: "a bad value names its key", pairs: []string{"count=many"}, want: `error: argument count: "many" is not an integer`},
		{name: "nothing", want: `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, err := parseArgsJSON(tt.base)
			if err != nil {
				t.Fatal(err)
			}
			args, err := toolArguments(schema, base, tt.pairs)
			if want, ok := strings.CutPrefix(tt.want, "error: "); ok {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("got %v, %v; want an error with %q", args, err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(args) // keys sorted
			if string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestParseArgsJSON(t *testing.T) {
	for _, in := range []string{`[1]`, `"x"`, `{"a":`, `nope`} {
		if _, err := parseArgsJSON(in); err == nil || !strings.Contains(err.Error(), "--args") {
			t.Errorf("parseArgsJSON(%q): got %v, want an error about --args", in, err)
		}
	}
}

func TestParseHeader(t *testing.T) {
	tests := []struct{ in, name, value, err string }{
		{in: "X-Tenant=acme", name: "X-Tenant", value: "acme"},
		{in: "X-Tenant: acme", name: "X-Tenant", value: "acme"},
		{in: "X-Key=a=b:c", name: "X-Key", value: "a=b:c"},
		{in: "X-Key: a=b", name: "X-Key", value: "a=b"},
		{in: "X-Empty=", name: "X-Empty", value: ""},
		{in: "nothing", err: "want NAME=VALUE"},
		{in: "=v", err: "no header name"},
	}
	for _, tt := range tests {
		name, value, err := parseHeader(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("parseHeader(%q): got %q %q %v, want an error with %q", tt.in, name, value, err, tt.err)
			}
			continue
		}
		if err != nil || name != tt.name || value != tt.value {
			t.Errorf("parseHeader(%q): got %q %q %v, want %q %q", tt.in, name, value, err, tt.name, tt.value)
		}
	}
}

func TestElicitDefaults(t *testing.T) {
	tests := []struct {
		name, params, want, note string
	}{
		{name: "every kind of default (what conformance's sep1034 checks)",
			params: `{"message":"please","requestedSchema":{"type":"object","properties":{
				"name":{"type":"string","default":"John Doe"},"age":{"type":"integer","default":30},
				"score":{"type":"number","default":95.5},"status":{"type":"string","enum":["active","inactive"],"default":"active"},
				"verified":{"type":"boolean","default":true}},"required":[]}}`,
			want: `{"action":"accept","content":{"age":30,"name":"John Doe","score":95.5,"status":"active","verified":true}}`,
			note: `"please": accepted the defaults`},
		{name: "optional fields without defaults are left out",
			params: `{"message":"m","requestedSchema":{"properties":{"a":{"type":"string"},"b":{"type":"string","default":"x"}}}}`,
			want:   `{"action":"accept","content":{"b":"x"}}`},
		{name: "a required field without a default cancels",
			params: `{"message":"name?","requestedSchema":{"properties":{"name":{"type":"string"}},"required":["name"]}}`,
			want:   `{"action":"cancel"}`, note: `the required field "name" has no default`},
		{name: "url mode is declined",
			params: `{"mode":"url","message":"log in","url":"https://x","elicitationId":"1"}`,
			want:   `{"action":"decline"}`, note: "url mode"},
		{name: "unreadable params", params: `{"message":7}`, want: `{"action":"cancel"}`, note: "cannot read"},
		{name: "control characters in the message are not printed",
			params: `{"message":"a\u001b[31mred","requestedSchema":{"properties":{}}}`,
			want:   `{"action":"accept","content":{}}`, note: `"a\x1b[31mred"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, note := elicitDefaults(json.RawMessage(tt.params))
			got, _ := json.Marshal(res)
			if string(got) != tt.want {
				t.Errorf("result: got %s, want %s", got, tt.want)
			}
			if !strings.Contains(note, tt.note) {
				t.Errorf("note: got %q, want %q in it", note, tt.note)
			}
		})
	}
}

func TestWriteResult(t *testing.T) {
	png := base64.StdEncoding.EncodeToString([]byte("12345678"))
	tests := []struct{ name, result, want string }{
		{"text", `{"content":[{"type":"text","text":"hello"},{"type":"text","text":"two\n"}]}`, "hello\ntwo\n"},
		{"image", `{"content":[{"type":"image","data":"` + png + `","mimeType":"image/png"}]}`, "[image: image/png, 8 bytes]\n"},
		{"audio", `{"content":[{"type":"audio","data":"` + png + `","mimeType":"audio/wav"}]}`, "[audio: audio/wav, 8 bytes]\n"},
		{"resource link", `{"content":[{"type":"resource_link","uri":"file:///a","name":"a","mimeType":"text/plain"}]}`, "[resource link: file:///a (a), text/plain]\n"},
		{"text resource", `{"content":[{"type":"resource","resource":{"uri":"mem://x","mimeType":"text/plain","text":"héllo"}}]}`, "[resource: mem://x, text/plain, 5 characters of text]\n"},
		{"blob resource", `{"content":[{"type":"resource","resource":{"uri":"mem://y","blob":"` + png + `"}}]}`, "[resource: mem://y, 8 bytes]\n"},
		{"unknown kind", `{"content":[{"type":"hologram","x":1}]}`, "[hologram content, 25 bytes of JSON]\n"},
		{"only structured content", `{"content":[],"structuredContent":{"t":36}}`, "{\n  \"t\": 36\n}\n"},
		{"nothing", `{"content":[]}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var res mcp.CallToolResult
			if err := json.Unmarshal([]byte(tt.result), &res); err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := writeResult(&b, &res); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("got %q, want %q", b.String(), tt.want)
			}
		})
	}
}

func TestWriteToolsTable(t *testing.T) {
	var tools []*mcp.Tool
	if err := json.Unmarshal([]byte(`[
		{"name":"echo","title":"Echo","description":"Echoes.\nMore lines.","inputSchema":{}},
		{"name":"evil\u001b]0;pwned\u0007","description":"`+strings.Repeat("d", 100)+`","annotations":{"title":"From annotations"},"inputSchema":{}}]`), &tools); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := writeToolsTable(&b, tools, false); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{"NAME", "echo  ", "Echo  ", "Echoes.\n", `evil\x1b]0;pwned\a`, "From annotations", strings.Repeat("d", 80) + "...\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if strings.ContainsAny(got, "\x1b\x07") || strings.Contains(got, "More lines") {
		t.Errorf("table shows control characters or later description lines:\n%q", got)
	}
}

func TestFindTool(t *testing.T) {
	tools := []*mcp.Tool{{Name: "b"}, {Name: "a"}}
	if tool, err := findTool(tools, "a"); err != nil || tool.Name != "a" {
		t.Errorf("findTool(a): got %v, %v", tool, err)
	}
	if _, err := findTool(tools, "c"); err == nil || !strings.Contains(err.Error(), `no tool "c" (its tools: a, b)`) {
		t.Errorf("findTool(c): got %v, want the tools listed", err)
	}
}

// toolsFake is a remote MCP server for the command's tests: initialize,
// tools/list with one tool, and tools/call that answers with the
// arguments as text, an error result when asked, and an elicitation first
// when the tool is "ask".
func toolsFake(t *testing.T) string {
	t.Helper()
	elicited := make(chan json.RawMessage, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		msg, err := mcp.DecodeMessage(bytes.TrimSpace(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		answer := func(result string) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, result)
		}
		var call struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		_ = json.Unmarshal(msg.Params, &call)
		switch {
		case msg.IsResponse():
			elicited <- msg.Result
			w.WriteHeader(http.StatusAccepted)
		case !msg.IsRequest():
			w.WriteHeader(http.StatusAccepted)
		case msg.Method == "initialize":
			w.Header().Set("Mcp-Session-Id", "s1")
			answer(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}`)
		case msg.Method == "tools/list":
			answer(`{"tools":[{"name":"add","inputSchema":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"integer"}}}},
				{"name":"evil\u001b]0;TITLE\u0007","title":"t\u009b2J","description":"says \u001b[2J\u001b[31mFAKE OK\rboom","inputSchema":{}}]}`)
		case call.Name == "fail":
			answer(`{"content":[{"type":"text","text":"it broke"}],"isError":true}`)
		case call.Name == "fail-evil":
			answer(`{"content":[{"type":"text","text":"it broke\u001b]0;TITLE\u0007\u001b[2J\rboom\nline\ttwo"}],"isError":true}`)
		case call.Name == "evil-text":
			answer(`{"content":[{"type":"text","text":"\u001b[2J\u202eok"}]}`)
		case call.Name == "rpc-error":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"no \u001b]0;TITLE\u0007\u001b[2J\rboom"}}`, msg.ID)
		case call.Name == "ask":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, `data: {"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"size?","requestedSchema":{"type":"object","properties":{"size":{"type":"integer","default":3}}}}}`+"\n\n")
			w.(http.Flusher).Flush()
			got := <-elicited
			fmt.Fprintf(w, `data: {"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}]}}`+"\n\n", msg.ID, got)
		default:
			answer(fmt.Sprintf(`{"content":[{"type":"text","text":%q}]}`, call.Arguments))
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

func TestToolsCommand(t *testing.T) {
	url := toolsFake(t)
	t.Setenv("TOOLS_TEST_TOKEN", "")
	// No session runs here: without --url, tools finds none.
	t.Setenv("MCPGEN_RUNTIME_DIR", t.TempDir())
	t.Setenv("MCPGEN_WORKSPACE", "")
	tests := []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string // parts of each
	}{
		{"ls", []string{"tools", "ls", "--url", url}, 0, "TITLE      DESCRIPTION\nadd ", ""},
		{"ls json", []string{"tools", "ls", "--url", url, "--json"}, 0, `"name": "add"`, ""},
		{"call typed", []string{"tools", "call", "--url", url, "add", "a=1.5", "b=2"}, 0, `{"a":1.5,"b":2}`, ""},
		{"call json", []string{"tools", "call", "--url", url, "add", "--json", "a=1"}, 0, `"content": [`, ""},
		{"call --args", []string{"tools", "call", "--url", url, "other", "--args", `{"x":[1]}`}, 0, `{"x":[1]}`, ""},
		{"error result", []string{"tools", "call", "--url", url, "fail"}, 1, "", "it broke"},
		{"elicitation answered with defaults", []string{"tools", "call", "--url", url, "ask"}, 0, `{"action":"accept","content":{"size":3}}`, `"size?": accepted the defaults {"size":3}`},
		{"unknown tool with pairs", []string{"tools", "call", "--url", url, "nope", "a=1"}, 1, "", `no tool "nope" (its tools: add, evil\x1b]0;TITLE\a)`},
		{"ls of hostile names", []string{"tools", "ls", "--url", url}, 0, `evil\x1b]0;TITLE\a  t\u009b2J  says \x1b[2J\x1b[31mFAKE OK\rboom` + "\n", ""},
		{"ls json of hostile names", []string{"tools", "ls", "--url", url, "--json"}, 0, `"name": "evil\u001b]0;TITLE\u0007"`, ""},
		{"hostile error result", []string{"tools", "call", "--url", url, "fail-evil"}, 1, "", "it broke\\x1b]0;TITLE\\a\\x1b[2J\\rboom\nline\ttwo\n"},
		{"hostile text", []string{"tools", "call", "--url", url, "evil-text"}, 0, `\x1b[2J\u202eok` + "\n", ""},
		{"hostile error result json", []string{"tools", "call", "--url", url, "fail-evil", "--json"}, 1, "", `"text": "it broke\u001b]0;TITLE\u0007\u001b[2J\rboom\nline\ttwo"`},
		{"hostile JSON-RPC error", []string{"tools", "call", "--url", url, "rpc-error"}, 1, "", `tools/call: no \x1b]0;TITLE\a\x1b[2J\rboom (jsonrpc error -32000)` + "\n"},
		{"bad value", []string{"tools", "call", "--url", url, "add", "b=x"}, 2, "", `argument b: "x" is not an integer`},
		{"no session", []string{"tools", "ls"}, 1, "", "no workspace session is running: pass --workspace ID (or set MCPGEN_WORKSPACE), or --url URL for a remote server"},
		{"workspace not running", []string{"tools", "ls", "--workspace", "nows"}, 1, "", `no launcher is running for workspace "nows"`},
		{"url and workspace", []string{"tools", "ls", "--url", url, "--workspace", "w"}, 2, "", "drop --workspace and --servers"},
		{"header without url", []string{"tools", "ls", "--workspace", "w", "--header", "a=b"}, 2, "", "go with --url"},
		{"no tool", []string{"tools", "call", "--url", url}, 2, "", "name the tool to call"},
		{"bad url", []string{"tools", "ls", "--url", "ftp://x"}, 2, "", "want an absolute http or https URL"},
		{"token variable unset", []string{"tools", "ls", "--url", url, "--bearer-token-env", "TOOLS_TEST_TOKEN"}, 2, "", "TOOLS_TEST_TOKEN: the variable is not set"},
		{"bad header", []string{"tools", "ls", "--url", url, "--header", "nope"}, 2, "", `--header "nope": want NAME=VALUE`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, strings.NewReader(""), &stdout, &stderr)
			if code != tt.code || !strings.Contains(stdout.String(), tt.stdout) || !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("mcpgen %s: got exit %d\nstdout: %s\nstderr: %s\nwant exit %d, stdout with %q, stderr with %q",
					strings.Join(tt.args, " "), code, stdout.String(), stderr.String(), tt.code, tt.stdout, tt.stderr)
			}
			// What the server chose reaches the terminal escaped, --json
			// output (JSON escapes it) too.
			for _, out := range []string{stdout.String(), stderr.String()} {
				if i := strings.IndexFunc(out, func(r rune) bool {
					return r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r < 0xa0 || r == '\u202e'
				}); i >= 0 {
					t.Errorf("mcpgen %s: a control character reaches the terminal at %d: %q", strings.Join(tt.args, " "), i, out)
				}
			}
		})
	}
}

func TestFileURI(t *testing.T) {
	wd, _ := os.Getwd()
	if got := fileURI(wd); !strings.HasPrefix(got, "file:///") {
		t.Errorf("fileURI(%q) = %q, want file:///...", wd, got)
	}
	if got := fileURI("/a b/c"); got != "file:///a%20b/c" {
		t.Errorf("fileURI(/a b/c) = %q, want file:///a%%20b/c", got)
	}
}

// modernFake is a modern-only remote server (2026-07-28) for the command's
// tests: server/discover, and every request checked for the revision's
// _meta and headers (400 otherwise, as the spec says); initialize refused
// with the versions it speaks. Its tools ask for input the modern way
// (input_required), and answer with what the retry carried, which must
// come under a new id.
func modernFake(t *testing.T) string {
	t.Helper()
	var asked sync.Map // each tool's last call's id
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		msg, err := mcp.DecodeMessage(bytes.TrimSpace(body))
		if err != nil || !msg.IsRequest() {
			http.Error(w, "want a request", http.StatusBadRequest)
			return
		}
		reply := func(status int, v string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,%s}`, msg.ID, v)
		}
		answer := func(result string) { reply(http.StatusOK, `"result":`+result) }
		meta, err := mcp.ParseRequestMeta(msg.Params)
		switch {
		case err != nil || meta.ProtocolVersion != "2026-07-28" || r.Header.Get("Mcp-Protocol-Version") != "2026-07-28":
			reply(http.StatusBadRequest, `"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"]}}`)
			return
		case r.Header.Get("Mcp-Method") != msg.Method || meta.ClientCapabilities == nil || r.Header.Get("Mcp-Session-Id") != "":
			reply(http.StatusBadRequest, `"error":{"code":-32020,"message":"Header mismatch"}`)
			return
		}
		var call struct {
			Name           string          `json:"name"`
			Arguments      json.RawMessage `json:"arguments"`
			InputResponses json.RawMessage `json:"inputResponses"`
			RequestState   *string         `json:"requestState"`
		}
		_ = json.Unmarshal(msg.Params, &call)
		if msg.Method == "tools/call" {
			// A retry comes under a new id.
			if last, ok := asked.Swap(call.Name, msg.ID.String()); ok && last == msg.ID.String() {
				reply(http.StatusOK, `"error":{"code":-32600,"message":"a retry under the id of the call it retries"}`)
				return
			}
		}
		elicit := `{"method":"elicitation/create","params":{"message":"size?","requestedSchema":{"type":"object","properties":{"size":{"type":"integer","default":3}}}}}`
		switch {
		case msg.Method == "server/discover":
			answer(`{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"modern","version":"1"}}}`)
		case msg.Method == "tools/list":
			answer(`{"resultType":"complete","ttlMs":0,"cacheScope":"private","tools":[
				{"name":"add","inputSchema":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"integer"}}}},
				{"name":"where","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}},
				{"name":"bad","inputSchema":{"type":"object","properties":{"n":{"type":"number","x-mcp-header":"N"}}}}]}`)
		case call.Name == "where":
			answer(fmt.Sprintf(`{"resultType":"complete","content":[{"type":"text","text":"Mcp-Param-Region: %s"}]}`, r.Header.Get("Mcp-Param-Region")))
		case call.Name == "ask" && call.InputResponses == nil:
			answer(`{"resultType":"input_required","inputRequests":{"size":` + elicit + `},"requestState":"st-1"}`)
		case call.Name == "ask-nostate" && call.InputResponses == nil:
			answer(`{"resultType":"input_required","inputRequests":{"size":` + elicit + `}}`)
		case call.Name == "ask" || call.Name == "ask-nostate":
			state := "none"
			if call.RequestState != nil {
				state = *call.RequestState
			}
			answer(fmt.Sprintf(`{"resultType":"complete","content":[{"type":"text","text":%q}]}`, fmt.Sprintf("state %s, answers %s", state, call.InputResponses)))
		case call.Name == "sample":
			answer(`{"resultType":"input_required","inputRequests":{"llm":{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}}}`)
		case call.Name == "forever":
			answer(`{"resultType":"input_required","requestState":"again"}`)
		default:
			answer(fmt.Sprintf(`{"content":[{"type":"text","text":%q}]}`, call.Arguments))
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// TestToolsCommandModern: tools ls and tools call against a modern server,
// and against a legacy one, found by auto or pinned by --protocol; a
// modern server's input_required results answered as a legacy server's
// requests are, and the call made again with the answers and the state.
func TestToolsCommandModern(t *testing.T) {
	modern, legacy := modernFake(t), toolsFake(t)
	t.Setenv("MCPGEN_RUNTIME_DIR", t.TempDir())
	t.Setenv("MCPGEN_WORKSPACE", "")
	tests := []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string // parts of each
		notStdout      string
	}{
		{"ls", []string{"tools", "ls", "--url", modern}, 0, "add", "", "bad"},
		{"ls pinned", []string{"tools", "ls", "--url", modern, "--protocol", "2026-07-28"}, 0, "where", "", "bad"},
		{"call typed", []string{"tools", "call", "--url", modern, "add", "a=1.5", "b=2"}, 0, `{"a":1.5,"b":2}`, "", ""},
		{"call mirrors x-mcp-header", []string{"tools", "call", "--url", modern, "where", "region=eu-west"}, 0, "Mcp-Param-Region: eu-west", "", ""},
		{"call of a tool left out", []string{"tools", "call", "--url", modern, "bad", "--args", `{"n":1}`}, 1, "", `tool "bad" is left out`, ""},
		{"input required, with state", []string{"tools", "call", "--url", modern, "ask"}, 0, `state st-1, answers {"size":{"action":"accept","content":{"size":3}}}`, `"size?": accepted the defaults {"size":3}`, ""},
		{"input required, without state", []string{"tools", "call", "--url", modern, "ask-nostate"}, 0, `state none, answers {"size":`, "", ""},
		{"input that cannot be given", []string{"tools", "call", "--url", modern, "sample"}, 1, "", `input "llm": the server asks for sampling/createMessage, which mcpgen tools cannot answer`, ""},
		{"input asked for ever", []string{"tools", "call", "--url", modern, "forever"}, 1, "", "still asks for input after 10 rounds", ""},
		{"modern server pinned legacy", []string{"tools", "ls", "--url", modern, "--protocol", "2025-11-25"}, 1, "", "Unsupported protocol version (jsonrpc error -32022); the server speaks 2026-07-28: pin one of them with --protocol, or drop --protocol", ""},
		{"legacy server found", []string{"tools", "ls", "--url", legacy}, 0, "add", "", ""},
		{"legacy server pinned", []string{"tools", "call", "--url", legacy, "add", "--protocol", "2025-06-18", "a=1"}, 0, `{"a":1}`, "", ""},
		{"bad protocol", []string{"tools", "ls", "--url", modern, "--protocol", "2099-01-01"}, 2, "", `--protocol "2099-01-01": want auto or one of 2026-07-28, 2025-11-25`, ""},
		{"protocol without url", []string{"tools", "ls", "--workspace", "w", "--protocol", "2026-07-28"}, 2, "", "go with --url", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, strings.NewReader(""), &stdout, &stderr)
			if code != tt.code || !strings.Contains(stdout.String(), tt.stdout) || !strings.Contains(stderr.String(), tt.stderr) ||
				(tt.notStdout != "" && strings.Contains(stdout.String(), tt.notStdout)) {
				t.Errorf("mcpgen %s: got exit %d\nstdout: %s\nstderr: %s\nwant exit %d, stdout with %q (and not %q), stderr with %q",
					strings.Join(tt.args, " "), code, stdout.String(), stderr.String(), tt.code, tt.stdout, tt.notStdout, tt.stderr)
			}
		})
	}
}
