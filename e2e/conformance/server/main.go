// Command server is the fixture that the conformance suite's server
// scenarios test through mcpgen's gateway: a stdio MCP server with the
// tools, resources and prompts the scenarios of both revisions call
// (test_simple_text, test://static-text, test_simple_prompt,
// test_input_required_result_*, ...), each answering as the suite's
// scenario descriptions ask. It is a legacy server (initialize) as it
// starts, and a server of the modern revision only (2026-07-28: no
// handshake, per-request _meta, input_required results) with -modern
// (modern.go). run.sh runs it behind `mcpgen launch --listen`, and the
// suite against the launcher's /mcp.
//
// It is written from the suite's descriptions of the scenarios, on
// mcpgen's own mcp.Conn, so that what the suite sees of a scenario is the
// gateway's doing: the fixture only gives each scenario what it asks for.
package main

import (
	"context"
	"crypto/rand"
	"flag"
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
	modern := flag.Bool("modern", false, "serve the modern revision (2026-07-28) only, as a server that never heard of the legacy one")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	f := &fixture{subscribed: map[string]bool{}, modern: *modern, listens: map[*listen]struct{}{}, key: make([]byte, 32), ended: make(chan struct{})}
	_, _ = rand.Read(f.key)
	handle := f.handle
	if f.modern {
		handle = f.handleModern
	}
	f.conn = mcp.NewConn(os.Stdin, os.Stdout, mcp.ConnOptions{
		Handler:    mcp.HandlerFunc(handle),
		ServerRole: true,
		OnEnd:      func(error) { close(f.ended) },
	})
	if err := f.conn.Run(ctx); err != nil && !strings.Contains(err.Error(), "EOF") {
		fmt.Fprintln(os.Stderr, "conformance fixture:", err)
	}
}

type fixture struct {
	conn   *mcp.Conn
	modern bool
	key    []byte // seals the requestState it gives (seal)
	// ended is closed when the Conn ends (its input ended): the open
	// subscriptions end then, which Run waits for.
	ended chan struct{}

	mu         sync.Mutex
	level      string // legacy: logging/setLevel's
	subscribed map[string]bool
	// The triggers' doing: the dynamic tool and prompt are listed.
	dynamicTool, dynamicPrompt bool
	listens                    map[*listen]struct{} // modern: the open subscriptions
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
	tool("test_missing_capability", "Needs sampling, which the client must have declared", nil),
	tool("test_streaming_elicitation", "Asks the user for input while it runs", nil),
	tool("test_logging_tool", "Logs a message at each level while it runs", nil),
	tool("test_trigger_tool_change", "Adds or removes test_dynamic_tool, which changes the tool list", nil),
	tool("test_trigger_prompt_change", "Adds or removes test_dynamic_prompt, which changes the prompt list", nil),
	tool("test_input_required_result_elicitation", "Asks the user's name", nil),
	tool("test_input_required_result_sampling", "Asks the model a question", nil),
	tool("test_input_required_result_list_roots", "Asks the client's roots", nil),
	tool("test_input_required_result_request_state", "Asks a confirmation, with a state to give back", nil),
	tool("test_input_required_result_multiple_inputs", "Asks a name, a greeting and the roots at once", nil),
	tool("test_input_required_result_multi_round", "Asks a name, then a color", nil),
	tool("test_input_required_result_tampered_state", "Asks a confirmation, with a state it checks", nil),
	tool("test_input_required_result_capabilities", "Asks only what the client declared it can answer", nil),
}

// listTools returns the tools, with the dynamic one when the trigger added it.
func (f *fixture) listTools() []obj {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.dynamicTool {
		return tools
	}
	return append(slices.Clip(tools), tool("test_dynamic_tool", "Listed while test_trigger_tool_change says so", nil))
}

// listPrompts returns the prompts, likewise.
func (f *fixture) listPrompts() []obj {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.dynamicPrompt {
		return prompts
	}
	return append(slices.Clip(prompts), obj{"name": "test_dynamic_prompt", "description": "Listed while test_trigger_prompt_change says so"})
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
	{"name": "test_input_required_result_prompt", "description": "A prompt that asks the user for its context"},
}

var resources = []obj{
	{"uri": "test://static-text", "name": "static-text", "description": "A static text resource", "mimeType": "text/plain"},
	{"uri": "test://static-binary", "name": "static-binary", "description": "A static binary resource", "mimeType": "image/png"},
	{"uri": "test://watched-resource", "name": "watched-resource", "description": "A resource to subscribe to", "mimeType": "text/plain"},
}

var templates = []obj{{"uriTemplate": "test://template/{id}/data", "name": "template", "description": "Data for an id", "mimeType": "application/json"}}

// complete answers completion/complete: the values of
// test_prompt_with_arguments's arguments, none for anything else.
func complete(ref map[string]string) obj {
	values := []string{}
	if ref["name"] == "test_prompt_with_arguments" {
		values = []string{"test1", "test2", "test3"}
	}
	return obj{"completion": obj{"values": values, "total": len(values), "hasMore": false}}
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
		return obj{"tools": f.listTools()}, nil
	case "tools/call":
		if t := inputTools[p.Name]; t != nil {
			return f.drive(ctx, t, p.Arguments)
		}
		return f.call(ctx, req, p.Name, p.Arguments)
	case "prompts/list":
		return obj{"prompts": f.listPrompts()}, nil
	case "prompts/get":
		if t := inputPrompts[p.Name]; t != nil {
			return f.drive(ctx, t, p.Arguments)
		}
		return prompt(p.Name, p.Arguments)
	case "resources/list":
		return obj{"resources": resources}, nil
	case "resources/templates/list":
		return obj{"resourceTemplates": templates}, nil
	case "resources/read":
		return read(p.URI)
	case "resources/subscribe", "resources/unsubscribe":
		f.mu.Lock()
		f.subscribed[p.URI] = req.Method == "resources/subscribe"
		f.mu.Unlock()
		return obj{}, nil
	case "completion/complete":
		return complete(p.Ref), nil
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
			if err := f.logAt(ctx, req, "info", msg); err != nil {
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
	case "test_logging_tool":
		for _, level := range logLevels {
			if err := f.logAt(ctx, req, level, "A message at level "+level); err != nil {
				return nil, err
			}
		}
		return content(text("Logged a message at each level")), nil
	case "test_trigger_tool_change", "test_trigger_prompt_change":
		return f.trigger(ctx, name == "test_trigger_tool_change")
	case "test_dynamic_tool":
		return content(text("The dynamic tool ran")), nil
	}
	return obj{"isError": true, "content": []obj{text("unknown tool: " + name)}}, nil
}

// logLevels are the levels of log messages, the least severe first.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// logAt sends a log message during req, if the client asked for its
// level: in the legacy mode with logging/setLevel (every level until
// then), in the modern mode with the request's _meta (no message when it
// asks none).
func (f *fixture) logAt(ctx context.Context, req *mcp.Request, level, message string) error {
	f.mu.Lock()
	least := f.level
	f.mu.Unlock()
	if f.modern {
		meta, _ := mcp.ParseRequestMeta(req.Params)
		if meta.LogLevel == "" || !slices.Contains(logLevels, meta.LogLevel) {
			return nil
		}
		least = meta.LogLevel
	}
	if slices.Index(logLevels, level) < slices.Index(logLevels, least) {
		return nil
	}
	return f.conn.Notify(ctx, "notifications/message", obj{"level": level, "logger": "conformance", "data": message})
}

// trigger adds the dynamic tool (or prompt), or removes it if it is
// listed, and tells the client that the list changed.
func (f *fixture) trigger(ctx context.Context, isTool bool) (any, error) {
	f.mu.Lock()
	list := "prompts"
	if isTool {
		f.dynamicTool = !f.dynamicTool
		list = "tools"
	} else {
		f.dynamicPrompt = !f.dynamicPrompt
	}
	f.mu.Unlock()
	if f.modern {
		f.notifyListens(list)
	} else if err := f.conn.Notify(ctx, "notifications/"+list+"/list_changed", nil); err != nil {
		return nil, err
	}
	return content(text("The " + list + " list changed")), nil
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
