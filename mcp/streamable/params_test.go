package streamable

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

// TestSchemaParams checks what x-mcp-header annotations a schema has, and
// the rules that make a tool invalid (SEP-2243): the conformance suite's
// invalid tools, and annotations that no chain of properties reaches.
func TestSchemaParams(t *testing.T) {
	prop := func(schema string) string { return `{"type":"object","properties":{"p":` + schema + `}}` }
	tests := []struct {
		name   string
		schema string
		want   []paramHeader
		// wantErr, a part of the reason the tool is invalid.
		wantErr string
	}{
		{name: "none", schema: `{"type":"object","properties":{"a":{"type":"string"}}}`},
		{name: "no schema", schema: ``},
		{name: "a string", schema: prop(`{"type":"string","x-mcp-header":"Region"}`), want: []paramHeader{{"Region", []string{"p"}}}},
		{name: "integer and boolean", schema: `{"type":"object","properties":{"n":{"type":"integer","x-mcp-header":"N"},"b":{"type":"boolean","x-mcp-header":"B"}}}`,
			want: []paramHeader{{"B", []string{"b"}}, {"N", []string{"n"}}}},
		{name: "nested properties", schema: `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string","x-mcp-header":"Deep"}}}}}`,
			want: []paramHeader{{"Deep", []string{"a", "b"}}}},
		{name: "nullable", schema: prop(`{"type":["string","null"],"x-mcp-header":"Opt"}`), want: []paramHeader{{"Opt", []string{"p"}}}},
		{name: "tchar", schema: prop(`{"type":"string","x-mcp-header":"A1!#$%&'*+-.^_|~"}`), want: []paramHeader{{"A1!#$%&'*+-.^_|~", []string{"p"}}}},
		{name: "a parameter named x-mcp-header", schema: `{"type":"object","properties":{"x-mcp-header":{"type":"string"}}}`},
		{name: "in data, not a schema", schema: prop(`{"type":"object","default":{"x-mcp-header":"No"},"examples":[{"x-mcp-header":"No"}],"const":{"x-mcp-header":"No"}}`)},
		{name: "escaped key", schema: prop(`{"type":"number","x\u002dmcp-header":"Score"}`), wantErr: `type "number"`},

		{name: "empty", schema: prop(`{"type":"string","x-mcp-header":""}`), wantErr: "empty"},
		{name: "object", schema: prop(`{"type":"object","x-mcp-header":"Data"}`), wantErr: `type "object"`},
		{name: "array", schema: prop(`{"type":"array","items":{"type":"string"},"x-mcp-header":"Items"}`), wantErr: `type "array"`},
		{name: "null", schema: prop(`{"type":"null","x-mcp-header":"Nil"}`), wantErr: `type "null"`},
		{name: "number", schema: prop(`{"type":"number","x-mcp-header":"Score"}`), wantErr: `type "number"`},
		{name: "number among others", schema: prop(`{"type":["string","number"],"x-mcp-header":"Score"}`), wantErr: "type"},
		{name: "no type", schema: prop(`{"enum":["a","b"],"x-mcp-header":"E"}`), wantErr: "(none given)"},
		{name: "duplicate", schema: `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Region"},"b":{"type":"string","x-mcp-header":"Region"}}}`, wantErr: "also that of"},
		{name: "duplicate in another case", schema: `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"MyField"},"b":{"type":"string","x-mcp-header":"myfield"}}}`, wantErr: "ignore case"},
		{name: "space", schema: prop(`{"type":"string","x-mcp-header":"My Region"}`), wantErr: "not a header name"},
		{name: "colon", schema: prop(`{"type":"string","x-mcp-header":"Region:Primary"}`), wantErr: "not a header name"},
		{name: "non-ASCII", schema: prop(`{"type":"string","x-mcp-header":"Région"}`), wantErr: "not a header name"},
		{name: "control character", schema: prop(`{"type":"string","x-mcp-header":"Region\t1"}`), wantErr: "not a header name"},
		{name: "not a string", schema: prop(`{"type":"string","x-mcp-header":5}`), wantErr: "not a string"},
		{name: "the root", schema: `{"type":"object","x-mcp-header":"Root"}`, wantErr: "the schema's root"},
		{name: "under items", schema: prop(`{"type":"array","items":{"type":"string","x-mcp-header":"I"}}`), wantErr: "no chain of properties"},
		{name: "under anyOf", schema: prop(`{"anyOf":[{"type":"string","x-mcp-header":"A"}]}`), wantErr: "no chain of properties"},
		{name: "under oneOf at the root", schema: `{"type":"object","oneOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}`, wantErr: "no chain of properties"},
		{name: "under not", schema: prop(`{"not":{"type":"string","x-mcp-header":"A"}}`), wantErr: "no chain of properties"},
		{name: "under then", schema: `{"type":"object","if":{},"then":{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}}`, wantErr: "no chain of properties"},
		{name: "in $defs", schema: `{"type":"object","$defs":{"r":{"type":"string","x-mcp-header":"R"}},"properties":{"a":{"$ref":"#/$defs/r"}}}`, wantErr: "no chain of properties"},
		{name: "under additionalProperties", schema: `{"type":"object","additionalProperties":{"type":"string","x-mcp-header":"A"}}`, wantErr: "no chain of properties"},
		{name: "under patternProperties", schema: `{"type":"object","patternProperties":{"^a":{"type":"string","x-mcp-header":"A"}}}`, wantErr: "no chain of properties"},
		{name: "too deep", schema: strings.Repeat(`{"type":"object","properties":{"a":`, 70) + `{"type":"string","x-mcp-header":"D"}` + strings.Repeat(`}}`, 70), wantErr: "deeper than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp := schemaParams(json.RawMessage(tt.schema))
			if tt.wantErr != "" {
				if !strings.Contains(tp.invalid, tt.wantErr) {
					t.Fatalf("invalid: got %q, want a reason with %q", tp.invalid, tt.wantErr)
				}
				return
			}
			if tp.invalid != "" {
				t.Fatalf("invalid: %s", tp.invalid)
			}
			if fmt.Sprint(tp.params) != fmt.Sprint(tt.want) {
				t.Errorf("params: got %v, want %v", tp.params, tt.want)
			}
		})
	}
}

// customTools is the tools/list result of the conformance suite's
// http-custom-headers scenario, and one nested parameter.
const customTools = `{"resultType":"complete","ttlMs":300000,"cacheScope":"private","tools":[{"name":"custom","inputSchema":{"type":"object","properties":{
	"region":{"type":"string","x-mcp-header":"Region"},
	"priority":{"type":"integer","x-mcp-header":"Priority"},
	"verbose":{"type":"boolean","x-mcp-header":"Verbose"},
	"debug":{"type":"boolean","x-mcp-header":"Debug"},
	"empty_val":{"type":"string","x-mcp-header":"EmptyVal"},
	"method_val":{"type":"string","x-mcp-header":"Method"},
	"float_val":{"type":"number"},
	"non_ascii_val":{"type":"string","x-mcp-header":"NonAscii"},
	"whitespace_val":{"type":"string","x-mcp-header":"Whitespace"},
	"crlf_val":{"type":"string","x-mcp-header":"CrLf"},
	"tab_val":{"type":"string","x-mcp-header":"Tab"},
	"internal_space_val":{"type":"string","x-mcp-header":"InternalSpace"},
	"where":{"type":"object","properties":{"zone":{"type":"string","x-mcp-header":"Zone"}}},
	"absent":{"type":"string","x-mcp-header":"Absent"},
	"query":{"type":"string"}}}}]}`

// customArgs are the arguments of a call of the custom tool.
const customArgs = `{"region":"us-west1","priority":42,"verbose":false,"debug":true,"empty_val":"","method_val":"test-method","float_val":3.14159,
	"non_ascii_val":"Hello, 世界","whitespace_val":" padded ","crlf_val":"line1\r\nline2","tab_val":"\tindented","internal_space_val":"us west 1",
	"where":{"zone":"b"},"absent":null,"query":"SELECT * FROM users"}`

// wantParams are the Mcp-Param headers of a call with customArgs.
var wantParams = map[string]string{
	"Mcp-Param-Region": "us-west1", "Mcp-Param-Priority": "42", "Mcp-Param-Verbose": "false", "Mcp-Param-Debug": "true",
	"Mcp-Param-Emptyval": "", "Mcp-Param-Method": "test-method", "Mcp-Param-Nonascii": "=?base64?SGVsbG8sIOS4lueVjA==?=",
	"Mcp-Param-Whitespace": "=?base64?IHBhZGRlZCA=?=", "Mcp-Param-Crlf": "=?base64?bGluZTENCmxpbmUy?=", "Mcp-Param-Tab": "=?base64?CWluZGVudGVk?=",
	"Mcp-Param-Internalspace": "us west 1", "Mcp-Param-Zone": "b",
}

// paramHeadersOf returns the Mcp-Param headers of h.
func paramHeadersOf(h http.Header) map[string]string {
	out := make(map[string]string)
	for k, v := range h {
		if strings.HasPrefix(k, "Mcp-Param-") {
			out[k] = strings.Join(v, ",")
		}
	}
	return out
}

// TestParamHeaders: a tool that the client listed is called with the
// Mcp-Param headers its annotations ask, encoded as the spec says; no
// header for a null or absent value, nor for a parameter not annotated.
func TestParamHeaders(t *testing.T) {
	s := newServer(t, modernOnly(customTools))
	tr, _ := newTransport(t, s.url(), Options{})
	l := newLines(t, tr)
	l.write(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`)
	if m := l.read(); m.Error != nil || !slices.Equal(decodeTools(t, m.Result), []string{"custom"}) {
		t.Fatalf("tools/list: %+v", m)
	}
	l.write(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"custom","arguments":` + strings.ReplaceAll(customArgs, "\n", "") + `,` + meta + `}}`)
	if m := l.read(); m.Error != nil {
		t.Fatalf("tools/call: %v", m.Error)
	}
	got := paramHeadersOf(s.last("tools/call").header)
	if fmt.Sprint(got) != fmt.Sprint(wantParams) {
		t.Errorf("Mcp-Param headers:\n got %v\nwant %v", got, wantParams)
	}
	if got := s.methods(); !slices.Equal(got, []string{"tools/list", "tools/call"}) {
		t.Errorf("the server got %v; want the list and the call, nothing else", got)
	}
}

// invalidTools is a tools/list result with a valid tool among invalid
// ones, on a page that has a next.
const invalidTools = `{"resultType":"complete","ttlMs":0,"cacheScope":"private","nextCursor":"2","tools":[
	{"name":"bad_number","inputSchema":{"type":"object","properties":{"score":{"type":"number","x-mcp-header":"Score"}}}},
	{"name":"valid_tool","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}},
	{"name":"bad_space","inputSchema":{"type":"object","properties":{"v":{"type":"string","x-mcp-header":"My Region"}}}},
	{"name":"plain","inputSchema":{"type":"object"}}]}`

// TestInvalidToolsLeftOut: tools whose annotations are invalid are left out
// of the tools/list result the client reads (the rest of it as the server
// wrote it), with a warning that names them; a call of one is refused
// without reaching the server.
func TestInvalidToolsLeftOut(t *testing.T) {
	s := newServer(t, modernOnly(strings.ReplaceAll(invalidTools, "\n", "")))
	tr, logs := newTransport(t, s.url(), Options{})
	l := newLines(t, tr)
	l.write(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`)
	m := l.read()
	if m.Error != nil {
		t.Fatal(m.Error)
	}
	if got := decodeTools(t, m.Result); !slices.Equal(got, []string{"valid_tool", "plain"}) {
		t.Errorf("tools: got %v, want valid_tool and plain", got)
	}
	var rest struct {
		NextCursor string `json:"nextCursor"`
		TTL        *int   `json:"ttlMs"`
		ResultType string `json:"resultType"`
	}
	if json.Unmarshal(m.Result, &rest) != nil || rest.NextCursor != "2" || rest.TTL == nil || rest.ResultType != "complete" {
		t.Errorf("the result lost what it had besides tools: %s", m.Result)
	}
	for _, name := range []string{"bad_number", "bad_space"} {
		if !strings.Contains(logs.String(), name) {
			t.Errorf("no warning names %s:\n%s", name, logs)
		}
	}
	l.write(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bad_space","arguments":{"v":"x"},` + meta + `}}`)
	if m := l.read(); m.Error == nil || m.Error.Code != mcp.CodeInvalidParams || !strings.Contains(m.Error.Message, "left out") {
		t.Fatalf("calling a tool left out: got %+v, want it refused", m)
	}
	if slices.Contains(s.methods(), "tools/call") {
		t.Errorf("the server got %v: the call of a tool left out must not reach it", s.methods())
	}
}

// TestParamHeadersLearnFirst: a call of a tool that no tools/list result
// has shown makes the transport list the tools itself (every page, with
// the call's _meta), so that the call carries its headers; the client
// reads nothing of that listing.
func TestParamHeadersLearnFirst(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) {
		if msg.Method == "tools/list" && strings.Contains(string(msg.Params), `"cursor":"2"`) {
			result(w, msg, strings.ReplaceAll(customTools, "\n", ""))
			return
		}
		modernOnly(strings.ReplaceAll(invalidTools, "\n", ""))(w, r, msg)
	})
	tr, _ := newTransport(t, s.url(), Options{})
	l := newLines(t, tr)
	l.write(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"custom","arguments":` + strings.ReplaceAll(customArgs, "\n", "") + `,` + meta + `}}`)
	if m := l.read(); m.Error != nil || m.ID.String() != "1" {
		t.Fatalf("got %+v, want the call's result", m)
	}
	if got := s.methods(); !slices.Equal(got, []string{"tools/list", "tools/list", "tools/call"}) {
		t.Fatalf("the server got %v; want both pages of the list, then the call", got)
	}
	first := s.requests()[0]
	if m, err := mcp.ParseRequestMeta(first.msg.Params); err != nil || m.ProtocolVersion != "2026-07-28" || string(m.ClientInfo) != `{"name":"t","version":"1"}` || first.header.Get("Mcp-Method") != "tools/list" {
		t.Errorf("the transport's tools/list: params %s, headers %v; want the call's _meta and the binding's headers", first.msg.Params, first.header)
	}
	if got := paramHeadersOf(s.last("tools/call").header); fmt.Sprint(got) != fmt.Sprint(wantParams) {
		t.Errorf("Mcp-Param headers:\n got %v\nwant %v", got, wantParams)
	}
	// Known now: the next call lists nothing.
	l.write(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"valid_tool","arguments":{"region":"eu"},` + meta + `}}`)
	if m := l.read(); m.Error != nil {
		t.Fatal(m.Error)
	}
	if got := s.methods(); len(got) != 4 || s.last("tools/call").header.Get("Mcp-Param-Region") != "eu" {
		t.Errorf("the server got %v; want one more call, with its header", got)
	}
}

// TestHeaderMismatchRetry: a call that the server refuses with
// HeaderMismatch (the tool gained an annotation since the client listed
// it) is sent once more after the transport lists the tools again; a
// server that refuses every time gets one retry, and the client its
// error.
func TestHeaderMismatchRetry(t *testing.T) {
	for _, always := range []bool{false, true} {
		t.Run(fmt.Sprintf("always=%v", always), func(t *testing.T) {
			var mu sync.Mutex
			lists := 0
			s := newServer(t, func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) {
				switch msg.Method {
				case "tools/list":
					mu.Lock()
					lists++
					n := lists
					mu.Unlock()
					header := ""
					if n > 1 {
						header = `,"x-mcp-header":"Region"`
					}
					result(w, msg, `{"resultType":"complete","tools":[{"name":"t","inputSchema":{"type":"object","properties":{"region":{"type":"string"`+header+`}}}}]}`)
				case "tools/call":
					if always || r.Header.Get("Mcp-Param-Region") != "eu" {
						rpcError(w, http.StatusBadRequest, msg, mcp.CodeHeaderMismatch, "Header mismatch: Mcp-Param-Region is missing", "")
						return
					}
					result(w, msg, `{"resultType":"complete","content":[]}`)
				}
			})
			tr, _ := newTransport(t, s.url(), Options{})
			l := newLines(t, tr)
			l.write(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`)
			l.read()
			l.write(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":{"region":"eu"},` + meta + `}}`)
			m := l.read()
			if got := s.methods(); !slices.Equal(got, []string{"tools/list", "tools/call", "tools/list", "tools/call"}) {
				t.Errorf("the server got %v; want the call, a new list, the call once more", got)
			}
			if always {
				if m.Error == nil || m.Error.Code != mcp.CodeHeaderMismatch {
					t.Errorf("got %+v, want the server's HeaderMismatch after one retry", m)
				}
				return
			}
			if m.Error != nil {
				t.Errorf("got %v, want the call's result", m.Error)
			}
		})
	}
}

// TestLegacyIgnoresAnnotations: a legacy session's tools/list is passed as
// the server wrote it, annotations and all, and its calls carry no
// Mcp-Param headers: x-mcp-header belongs to the modern binding.
func TestLegacyIgnoresAnnotations(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) {
		if msg.Method == "tools/list" {
			result(w, msg, strings.ReplaceAll(invalidTools, "\n", ""))
			return
		}
		legacyOnly(w, r, msg)
	})
	tr, _ := newTransport(t, s.url(), Options{NoListen: true})
	l := newLines(t, tr)
	l.handshake()
	l.write(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if got := decodeTools(t, l.read().Result); len(got) != 4 {
		t.Errorf("a legacy tools/list: got %v, want all four tools", got)
	}
	l.write(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"valid_tool","arguments":{"region":"eu"}}}`)
	l.read()
	if h := s.last("tools/call").header; len(paramHeadersOf(h)) > 0 || h.Get("Mcp-Method") != "" {
		t.Errorf("a legacy call's headers: %v", h)
	}
}
