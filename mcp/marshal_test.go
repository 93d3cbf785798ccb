package mcp

import (
	"reflect"
	"strings"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
)

// TestToolMarshal holds the hand-written Tool.MarshalJSON to what goccy
// wrote of the same tool before: the same bytes, except where strings hold
// what the two write differently and JSON reads the same, which compare as
// JSON: goccy writes \b and \f, jsonwire (as in every tool result) \u0008
// and \u000c; goccy escapes U+2028 and U+2029, which JSON does not need.
func TestToolMarshal(t *testing.T) {
	yes, no := true, false
	odd := "quote \" backslash \\ slash / newline \n tab \t cr \r nul \x00 us \x1f del \x7f <&> é 日本 \xff bad"
	for _, tool := range []*Tool{
		{Name: "plain"},
		{Name: "read_file", Title: "Read a file", Description: "Reads it.", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)},
		{Name: odd, Title: odd, Description: odd},
		{Name: "escapes", Description: "bs \b ff \f"},
		{Name: "seps", Description: "line\u2028para\u2029end"},
		{Name: "pretty", InputSchema: json.RawMessage("{\n  \"type\" : \"object\",\n\t\"properties\": { \"a b\": {\"type\": \"string\", \"default\": \" x \"} }\n}")},
		{Name: "out", OutputSchema: json.RawMessage(`{ "type": "object" }`)},
		{Name: "none", Annotations: &ToolAnnotations{}},
		{Name: "some", Annotations: &ToolAnnotations{ReadOnlyHint: &yes, OpenWorldHint: &no}},
		{Name: "all", Annotations: &ToolAnnotations{Title: odd, ReadOnlyHint: &yes, DestructiveHint: &no, IdempotentHint: &yes, OpenWorldHint: &no}},
		{Name: "title only", Annotations: &ToolAnnotations{Title: "T"}},
	} {
		got, err := tool.MarshalJSON()
		if err != nil {
			t.Fatalf("%q: %v", tool.Name, err)
		}
		if err := jsonwire.Valid(got); err != nil {
			t.Errorf("%q: %s is not JSON: %v", tool.Name, got, err)
		}
		w := wireTool{Name: tool.Name, Title: tool.Title, Description: tool.Description, InputSchema: tool.InputSchema, OutputSchema: tool.OutputSchema, Annotations: tool.Annotations}
		if len(w.InputSchema) == 0 {
			w.InputSchema = noArgumentsSchema
		}
		want, err := jsonwire.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(tool.Name+tool.Title+tool.Description, "\b\f\u2028\u2029") {
			var g, w any
			if json.Unmarshal(got, &g) != nil || json.Unmarshal(want, &w) != nil || !reflect.DeepEqual(g, w) {
				t.Errorf("%q:\n got %s\nwant %s (as JSON)", tool.Name, got, want)
			}
			continue
		}
		if string(got) != string(want) {
			t.Errorf("%q:\n got %s\nwant %s", tool.Name, got, want)
		}
	}
}

// TestInitializeMarshal holds the hand-written encoding of the answer to
// initialize to goccy's, as TestToolMarshal does for tools.
func TestInitializeMarshal(t *testing.T) {
	odd := "quote \" backslash \\ newline \n nul \x00 <&> é \xff"
	for _, r := range []*InitializeResult{
		{ProtocolVersion: "2025-06-18", Capabilities: handshakeCapabilities, ServerInfo: Implementation{Name: "files", Version: "v1.2.3", Title: "Workspace files"}, Instructions: "Use them."},
		{ProtocolVersion: "2025-11-25", Capabilities: json.RawMessage("{ \"tools\" : { } }"), ServerInfo: Implementation{Name: "git"}},
		{ProtocolVersion: odd, ServerInfo: Implementation{Name: odd, Version: odd, Title: odd}, Instructions: odd},
		{},
	} {
		got, err := marshalResult(r)
		if err != nil {
			t.Fatal(err)
		}
		want, err := jsonwire.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("\n got %s\nwant %s", got, want)
		}
	}
}
