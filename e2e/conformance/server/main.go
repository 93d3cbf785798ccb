// Command server is the fixture that the conformance suite's server
// scenarios test through mcpgen's gateway: a legacy (initialize) stdio MCP
// server with the tools, resources and prompts the scenarios call
// (test_simple_text, test://static-text, test_simple_prompt, ...), each
// answering as the suite's scenario descriptions ask. run.sh runs it behind
// `mcpgen launch --listen`, and the suite against the launcher's /mcp.
//
// It is written from the suite's descriptions of the scenarios, on
// mcpgen's own mcp.Conn, so that what the suite sees of a scenario is the
// gateway's doing: the fixture only gives each scenario what it asks for.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	f := &fixture{subscribed: map[string]bool{}}
	f.conn = mcp.NewConn(os.Stdin, os.Stdout, mcp.ConnOptions{
		Handler:    mcp.HandlerFunc(f.handle),
		ServerRole: true,
	})
	if err := f.conn.Run(ctx); err != nil && !strings.Contains(err.Error(), "EOF") {
		fmt.Fprintln(os.Stderr, "conformance fixture:", err)
	}
}

type fixture struct {
	conn *mcp.Conn

	mu         sync.Mutex
	level      string
	subscribed map[string]bool
}

// A 1x1 PNG, and a short WAV: the smallest of their kinds.
const (
	pngBase64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
	wavBase64 = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="
)

type obj = map[string]any

func text(s string) obj { return obj{"type": "text", "text": s} }

func content(items ...obj) obj { return obj{"content": items} }

var tools = []obj{
	tool("test_simple_text", "Returns simple text", nil),
	tool("test_image_content", "Returns an image", nil),
	tool("test_audio_content", "Returns audio", nil),
	tool("test_embedded_resource", "Returns an embedded resource", nil),
	tool("test_multiple_content_types", "Returns text, an image and a resource", nil),
	tool("test_tool_with_logging", "Logs three messages while it runs", nil),
	tool("test_tool_with_progress", "Reports progress while it runs", nil),
	tool("test_error_handling", "Always fails", nil),
	tool("test_sampling", "Asks the client to sample", obj{"prompt": obj{"type": "string"}}),
	tool("test_elicitation", "Asks the user for input", obj{"message": obj{"type": "string"}}),
	tool("test_elicitation_sep1034_defaults", "Asks for input with defaults", nil),
	tool("test_elicitation_sep1330_enums", "Asks for input with enums", nil),
	{"name": "json_schema_2020_12_tool", "description": "Tool with JSON Schema 2020-12 features", "inputSchema": json.RawMessage(schema2020)},
}

// schema2020 uses the JSON Schema 2020-12 keywords that a listing must
// keep as they are ($schema, $defs, $anchor, allOf/anyOf, if/then/else,
// additionalProperties).
const schema2020 = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
"$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},
"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},
"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],
"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},"then":{"required":["phone"]},"else":{"required":["email"]},
"additionalProperties":false}`

func tool(name, description string, props obj) obj {
	schema := obj{"type": "object"}
	if props != nil {
		schema["properties"] = props
		var required []string
		for k := range props {
			required = append(required, k)
		}
		slices.Sort(required)
		schema["required"] = required
	}
	return obj{"name": name, "description": description, "inputSchema": schema}
}

var prompts = []obj{
	{"name": "test_simple_prompt", "description": "A prompt without arguments"},
	{"name": "test_prompt_with_arguments", "description": "A prompt with arguments", "arguments": []obj{
		{"name": "arg1", "description": "First test argument", "required": true},
		{"name": "arg2", "description": "Second test argument", "required": true},
	}},
	{"name": "test_prompt_with_embedded_resource", "description": "A prompt that embeds a resource", "arguments": []obj{
		{"name": "resourceUri", "description": "URI of the resource to embed", "required": true},
	}},
	{"name": "test_prompt_with_image", "description": "A prompt with an image"},
}

var resources = []obj{
	{"uri": "test://static-text", "name": "static-text", "description": "A static text resource", "mimeType": "text/plain"},
	{"uri": "test://static-binary", "name": "static-binary", "description": "A static binary resource", "mimeType": "image/png"},
	{"uri": "test://watched-resource", "name": "watched-resource", "description": "A resource to subscribe to", "mimeType": "text/plain"},
}

func (f *fixture) handle(ctx context.Context, req *mcp.Request) (any, error) {
	var p struct {
		Name            string            `json:"name"`
		URI             string            `json:"uri"`
		Level           string            `json:"level"`
		ProtocolVersion string            `json:"protocolVersion"`
		Arguments       map[string]any    `json:"arguments"`
		Ref             map[string]string `json:"ref"`
	}
	if len(req.Params) > 0 {
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, mcp.NewError(mcp.CodeInvalidParams, "%v", err)
		}
	}
	switch req.Method {
	case "initialize":
		version := p.ProtocolVersion
		if !slices.Contains(mcp.SupportedVersions, version) {
			version = mcp.SupportedVersions[0]
		}
		return obj{
			"protocolVersion": version,
			"capabilities": obj{
				"tools":       obj{"listChanged": true},
				"resources":   obj{"subscribe": true, "listChanged": true},
				"prompts":     obj{"listChanged": true},
				"logging":     obj{},
				"completions": obj{},
			},
			"serverInfo": obj{"name": "mcpgen-conformance-fixture", "version": "1.0.0"},
		}, nil
	case "ping":
		return obj{}, nil
	case "logging/setLevel":
		f.mu.Lock()
		f.level = p.Level
		f.mu.Unlock()
		return obj{}, nil
	case "tools/list":
		return obj{"tools": tools}, nil
	case "tools/call":
		return f.call(ctx, req, p.Name, p.Arguments)
	case "prompts/list":
		return obj{"prompts": prompts}, nil
	case "prompts/get":
		return prompt(p.Name, p.Arguments)
	case "resources/list":
		return obj{"resources": resources}, nil
	case "resources/templates/list":
		return obj{"resourceTemplates": []obj{{"uriTemplate": "test://template/{id}/data", "name": "template", "description": "Data for an id", "mimeType": "application/json"}}}, nil
	case "resources/read":
		return read(p.URI)
	case "resources/subscribe", "resources/unsubscribe":
		f.mu.Lock()
		f.subscribed[p.URI] = req.Method == "resources/subscribe"
		f.mu.Unlock()
		return obj{}, nil
	case "completion/complete":
		values := []string{}
		if p.Ref["name"] == "test_prompt_with_arguments" {
			values = []string{"test1", "test2", "test3"}
		}
		return obj{"completion": obj{"values": values, "total": len(values), "hasMore": false}}, nil
	}
	return nil, mcp.ErrMethodNotFound
}

func (f *fixture) call(ctx context.Context, req *mcp.Request, name string, args map[string]any) (any, error) {
	switch name {
	case "test_simple_text":
		return content(text("This is a simple text response for testing.")), nil
	case "test_image_content":
		return content(obj{"type": "image", "data": pngBase64, "mimeType": "image/png"}), nil
	case "test_audio_content":
		return content(obj{"type": "audio", "data": wavBase64, "mimeType": "audio/wav"}), nil
	case "test_embedded_resource":
		return content(obj{"type": "resource", "resource": obj{"uri": "test://embedded-resource", "mimeType": "text/plain", "text": "This is an embedded resource content."}}), nil
	case "test_multiple_content_types":
		return content(
			text("Multiple content types test:"),
			obj{"type": "image", "data": pngBase64, "mimeType": "image/png"},
			obj{"type": "resource", "resource": obj{"uri": "test://mixed-content-resource", "mimeType": "application/json", "text": `{"test":"data","value":123}`}},
		), nil
	case "test_tool_with_logging":
		for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
			if i > 0 && !sleep(ctx, 50*time.Millisecond) {
				return nil, ctx.Err()
			}
			if err := f.conn.Notify(ctx, "notifications/message", obj{"level": "info", "logger": "conformance", "data": msg}); err != nil {
				return nil, err
			}
		}
		return content(text("Tool with logging executed successfully")), nil
	case "test_tool_with_progress":
		for i, progress := range []float64{0, 50, 100} {
			if i > 0 && !sleep(ctx, 50*time.Millisecond) {
				return nil, ctx.Err()
			}
			if err := req.Progress(ctx, progress, 100, ""); err != nil {
				return nil, err
			}
		}
		return content(text("Tool with progress executed successfully")), nil
	case "test_error_handling":
		return obj{"isError": true, "content": []obj{text("This tool intentionally returns an error for testing")}}, nil
	case "test_sampling":
		prompt, _ := args["prompt"].(string)
		var result struct {
			Content struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		err := f.conn.Call(ctx, "sampling/createMessage", obj{
			"messages":  []obj{{"role": "user", "content": text(prompt)}},
			"maxTokens": 100,
		}, &result)
		if err != nil {
			return nil, err
		}
		return content(text("LLM response: " + result.Content.Text)), nil
	case "test_elicitation":
		message, _ := args["message"].(string)
		return f.elicit(ctx, "User response", message, obj{
			"username": obj{"type": "string", "description": "User's response"},
			"email":    obj{"type": "string", "description": "User's email address"},
		}, []string{"username", "email"})
	case "test_elicitation_sep1034_defaults":
		return f.elicit(ctx, "Elicitation completed", "Please review the defaults", obj{
			"name":     obj{"type": "string", "default": "John Doe"},
			"age":      obj{"type": "integer", "default": 30},
			"score":    obj{"type": "number", "default": 95.5},
			"status":   obj{"type": "string", "enum": []string{"active", "inactive", "pending"}, "default": "active"},
			"verified": obj{"type": "boolean", "default": true},
		}, nil)
	case "test_elicitation_sep1330_enums":
		return f.elicit(ctx, "Elicitation completed", "Please choose", obj{
			"untitledSingle": obj{"type": "string", "enum": []string{"option1", "option2", "option3"}},
			"titledSingle": obj{"type": "string", "oneOf": []obj{
				{"const": "value1", "title": "First Option"}, {"const": "value2", "title": "Second Option"}, {"const": "value3", "title": "Third Option"},
			}},
			"legacyEnum":    obj{"type": "string", "enum": []string{"opt1", "opt2", "opt3"}, "enumNames": []string{"Option One", "Option Two", "Option Three"}},
			"untitledMulti": obj{"type": "array", "items": obj{"type": "string", "enum": []string{"option1", "option2", "option3"}}},
			"titledMulti": obj{"type": "array", "items": obj{"anyOf": []obj{
				{"const": "value1", "title": "First Choice"}, {"const": "value2", "title": "Second Choice"}, {"const": "value3", "title": "Third Choice"},
			}}},
		}, nil)
	}
	return obj{"isError": true, "content": []obj{text("unknown tool: " + name)}}, nil
}

// elicit asks the client for input of schema properties, and answers
// with what it said, after prefix.
func (f *fixture) elicit(ctx context.Context, prefix, message string, properties obj, required []string) (any, error) {
	schema := obj{"type": "object", "properties": properties}
	if required != nil {
		schema["required"] = required
	}
	var result struct {
		Action  string          `json:"action"`
		Content json.RawMessage `json:"content"`
	}
	if err := f.conn.Call(ctx, "elicitation/create", obj{"message": message, "requestedSchema": schema}, &result); err != nil {
		return nil, err
	}
	return content(text(fmt.Sprintf("%s: action=%s, content=%s", prefix, result.Action, result.Content))), nil
}

func prompt(name string, args map[string]any) (any, error) {
	msg := func(c obj) obj { return obj{"role": "user", "content": c} }
	switch name {
	case "test_simple_prompt":
		return obj{"messages": []obj{msg(text("This is a simple prompt for testing."))}}, nil
	case "test_prompt_with_arguments":
		return obj{"messages": []obj{msg(text(fmt.Sprintf("Prompt with arguments: arg1='%v', arg2='%v'", args["arg1"], args["arg2"])))}}, nil
	case "test_prompt_with_embedded_resource":
		uri, _ := args["resourceUri"].(string)
		return obj{"messages": []obj{
			msg(obj{"type": "resource", "resource": obj{"uri": uri, "mimeType": "text/plain", "text": "Embedded resource content for testing."}}),
			msg(text("Please process the embedded resource above.")),
		}}, nil
	case "test_prompt_with_image":
		return obj{"messages": []obj{
			msg(obj{"type": "image", "data": pngBase64, "mimeType": "image/png"}),
			msg(text("Please analyze the image above.")),
		}}, nil
	}
	return nil, mcp.NewError(mcp.CodeInvalidParams, "unknown prompt %q", name)
}

func read(uri string) (any, error) {
	switch uri {
	case "test://static-text":
		return obj{"contents": []obj{{"uri": uri, "mimeType": "text/plain", "text": "This is the content of the static text resource."}}}, nil
	case "test://static-binary":
		return obj{"contents": []obj{{"uri": uri, "mimeType": "image/png", "blob": pngBase64}}}, nil
	case "test://watched-resource":
		return obj{"contents": []obj{{"uri": uri, "mimeType": "text/plain", "text": "Watched resource content."}}}, nil
	}
	if id, ok := strings.CutPrefix(uri, "test://template/"); ok {
		if id, ok = strings.CutSuffix(id, "/data"); ok && id != "" && !strings.Contains(id, "/") {
			data, _ := json.Marshal(obj{"id": id, "templateTest": true, "data": "Data for ID: " + id})
			return obj{"contents": []obj{{"uri": uri, "mimeType": "application/json", "text": string(data)}}}, nil
		}
	}
	return nil, &mcp.Error{Code: mcp.CodeInvalidParams, Message: "Resource not found", Data: json.RawMessage(`{"uri":` + quote(uri) + `}`)}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
