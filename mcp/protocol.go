package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	stdjson "encoding/json"
	"fmt"
	"slices"
	"strconv"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
)

// LatestVersion is the newest protocol revision with the initialize
// handshake, the one that Client asks for.
const LatestVersion = "2025-11-25"

// SupportedVersions lists the handshake revisions that Server speaks, newest
// first. Do not modify it.
var SupportedVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// statelessVersion is the first revision without a handshake: each request
// names its version in params._meta (see Server).
const statelessVersion = "2026-07-28"

// NegotiateVersion returns the revision a server answers to an initialize
// request for requested: the same revision when supported, else the latest.
// It is never an error: the client decides whether it can live with the
// answer.
func NegotiateVersion(requested string) string {
	if slices.Contains(SupportedVersions, requested) {
		return requested
	}
	return LatestVersion
}

// Implementation names a client or a server (clientInfo, serverInfo).
type Implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Title   string `json:"title,omitempty"`
}

// A Tool is a tool that a server offers.
type Tool struct {
	Name        string
	Title       string
	Description string
	// InputSchema is the JSON Schema (an object) of the arguments. When
	// empty, the tool takes no arguments: the server advertises
	// {"type":"object","additionalProperties":false}.
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	Annotations  *ToolAnnotations
	// Handler runs the tool (servers only).
	Handler ToolHandler
	// Raw is the tool's JSON as a server listed it (clients only), with
	// any fields this type does not model.
	Raw json.RawMessage
}

// ToolAnnotations are hints about a tool's behaviour. Clients must not
// trust them for security decisions.
type ToolAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// wireTool is a tool as tools/list lists it, which UnmarshalJSON reads.
type wireTool struct {
	Name         string           `json:"name"`
	Title        string           `json:"title,omitempty"`
	Description  string           `json:"description,omitempty"`
	InputSchema  json.RawMessage  `json:"inputSchema"`
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	Annotations  *ToolAnnotations `json:"annotations,omitempty"`
}

var noArgumentsSchema = json.RawMessage(`{"type":"object","additionalProperties":false}`)

// MarshalJSON encodes the tool as tools/list lists it: by hand, as
// goccy's encoder would (TestToolMarshal), since a server encodes its
// tools as it starts, and goccy's first use of a type in a process
// compiles an encoder for it, which cost every mcpgen serve more than the
// rest of its tools' setup. The schemas are written compacted.
func (t *Tool) MarshalJSON() ([]byte, error) {
	b := append([]byte(nil), `{"name":`...)
	b = jsonwire.AppendString(b, t.Name)
	if t.Title != "" {
		b = append(b, `,"title":`...)
		b = jsonwire.AppendString(b, t.Title)
	}
	if t.Description != "" {
		b = append(b, `,"description":`...)
		b = jsonwire.AppendString(b, t.Description)
	}
	in := t.InputSchema
	if len(in) == 0 {
		in = noArgumentsSchema
	}
	var err error
	b = append(b, `,"inputSchema":`...)
	if b, err = appendCompact(b, in); err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	if len(t.OutputSchema) > 0 {
		b = append(b, `,"outputSchema":`...)
		if b, err = appendCompact(b, t.OutputSchema); err != nil {
			return nil, fmt.Errorf("output schema: %w", err)
		}
	}
	if a := t.Annotations; a != nil {
		b = append(b, `,"annotations":{`...)
		n := len(b)
		if a.Title != "" {
			b = append(b, `"title":`...)
			b = jsonwire.AppendString(b, a.Title)
		}
		for _, h := range []struct {
			name string
			v    *bool
		}{{"readOnlyHint", a.ReadOnlyHint}, {"destructiveHint", a.DestructiveHint}, {"idempotentHint", a.IdempotentHint}, {"openWorldHint", a.OpenWorldHint}} {
			if h.v == nil {
				continue
			}
			if len(b) > n {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = append(b, h.name...)
			b = append(b, `":`...)
			b = strconv.AppendBool(b, *h.v)
		}
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// appendCompact appends raw, which must be JSON, without the white space
// between its tokens.
func appendCompact(b, raw []byte) ([]byte, error) {
	buf := bytes.NewBuffer(b)
	if err := stdjson.Compact(buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// UnmarshalJSON decodes a listed tool and keeps its JSON in Raw.
func (t *Tool) UnmarshalJSON(data []byte) error {
	var w wireTool
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*t = Tool{
		Name:         w.Name,
		Title:        w.Title,
		Description:  w.Description,
		InputSchema:  w.InputSchema,
		OutputSchema: w.OutputSchema,
		Annotations:  w.Annotations,
		Raw:          slices.Clone(json.RawMessage(data)),
	}
	return nil
}

// A ToolHandler runs a tool.
//
// Failures that the model should see and can correct (bad arguments, a
// command that failed) belong in the result: return ErrorResult(...), or
// any error, which becomes a result with isError set and the error's text.
// Only an *Error returned as is (not wrapped) becomes a JSON-RPC error.
type ToolHandler func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error)

// A CallToolRequest is one tools/call, as a ToolHandler sees it.
type CallToolRequest struct {
	Name string
	// Arguments is the arguments object; {} when the client sent none.
	Arguments json.RawMessage

	req *Request
}

// Progress reports progress to the client when it asked for it; see
// Request.Progress.
func (r *CallToolRequest) Progress(ctx context.Context, progress, total float64, message string) error {
	if r.req == nil {
		return nil
	}
	return r.req.Progress(ctx, progress, total, message)
}

// A CallToolResult is the result of tools/call.
type CallToolResult struct {
	Content []Content
	// StructuredContent, when set, is a JSON value matching the tool's
	// OutputSchema. A decoded result holds it as a json.RawMessage.
	StructuredContent any
	// IsError tells the model that the call failed.
	IsError bool
}

// MarshalJSON encodes the result; content is [] rather than absent when
// empty, since the field is required.
func (r *CallToolResult) MarshalJSON() ([]byte, error) { return r.appendJSON(nil) }

// appendJSON encodes the result by hand: it is on the path of every
// tools/call, and goccy's encoder needs a deep stack, which a handler's
// fresh goroutine would have to grow on each call.
func (r *CallToolResult) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"content":[`...)
	for i, c := range r.Content {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = c.appendJSON(b); err != nil {
			return nil, err
		}
	}
	b = append(b, ']')
	if r.StructuredContent != nil {
		sc, err := jsonwire.Marshal(r.StructuredContent)
		if err != nil {
			return nil, fmt.Errorf("structured content: %w", err)
		}
		b = append(b, `,"structuredContent":`...)
		b = append(b, sc...)
	}
	if r.IsError {
		b = append(b, `,"isError":true`...)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON decodes a result, keeping structuredContent raw.
func (r *CallToolResult) UnmarshalJSON(data []byte) error {
	var w struct {
		Content           []Content       `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*r = CallToolResult{Content: w.Content, IsError: w.IsError}
	if len(w.StructuredContent) > 0 && string(w.StructuredContent) != "null" {
		r.StructuredContent = w.StructuredContent
	}
	return nil
}

// ErrorResult returns a result that tells the model what went wrong, with
// isError set.
func ErrorResult(format string, args ...any) *CallToolResult {
	return &CallToolResult{Content: []Content{TextContent(fmt.Sprintf(format, args...))}, IsError: true}
}

// A Content is one block of a tool result. This package models text, image
// and audio blocks; a decoded block of another type (resource_link,
// resource, ...) keeps its JSON in Raw, which is written back as is.
type Content struct {
	Type     string // "text", "image", "audio", ...
	Text     string // for "text"
	Data     []byte // for "image" and "audio"; base64 on the wire
	MimeType string // for "image" and "audio"
	Raw      json.RawMessage
}

// TextContent returns a text block.
func TextContent(s string) Content { return Content{Type: "text", Text: s} }

// ImageContent returns an image block.
func ImageContent(data []byte, mimeType string) Content {
	return Content{Type: "image", Data: data, MimeType: mimeType}
}

// MarshalJSON encodes the block with the fields its type requires.
func (c Content) MarshalJSON() ([]byte, error) { return c.appendJSON(nil) }

func (c Content) appendJSON(b []byte) ([]byte, error) {
	if len(c.Raw) > 0 {
		if jsonwire.Valid(c.Raw) != nil {
			return nil, fmt.Errorf("content: Raw is not JSON: %s", snippet(c.Raw))
		}
		return append(b, c.Raw...), nil
	}
	b = append(b, `{"type":`...)
	b = jsonwire.AppendString(b, c.Type)
	switch c.Type {
	case "text":
		b = append(b, `,"text":`...)
		b = jsonwire.AppendString(b, c.Text)
	case "image", "audio":
		b = append(b, `,"data":"`...)
		b = base64.StdEncoding.AppendEncode(b, c.Data)
		b = append(b, `","mimeType":`...)
		b = jsonwire.AppendString(b, c.MimeType)
	default:
		return nil, fmt.Errorf("content of type %q needs Raw", c.Type)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON decodes a block and keeps its JSON in Raw.
func (c *Content) UnmarshalJSON(data []byte) error {
	var w struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Data     string `json:"data"`
		MimeType string `json:"mimeType"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*c = Content{Type: w.Type, Text: w.Text, MimeType: w.MimeType, Raw: slices.Clone(json.RawMessage(data))}
	// Bad base64 loses the bytes (Raw still has them), not the whole result.
	c.Data, _ = base64.StdEncoding.DecodeString(w.Data)
	return nil
}

// InitializeResult is a server's answer to initialize. A modern server has
// no initialize: for one, it is what its answer to server/discover
// (Discover) tells a legacy client (see DiscoverResult.InitializeResult),
// so that what serves legacy clients serves them from either era.
type InitializeResult struct {
	ProtocolVersion string          `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"`
	ServerInfo      Implementation  `json:"serverInfo"`
	Instructions    string          `json:"instructions,omitempty"`
	// Raw is the result as the server sent it (for a modern server, as
	// converted), so that a proxy can hand it to other clients unchanged.
	Raw json.RawMessage `json:"-"`
	// Era is the server's era, as its client found it: EraLegacy for an
	// answer to initialize, EraModern for a converted discover result, and
	// EraUnknown when nobody asked (an answer to initialize that an earlier
	// mcpgen kept: the server may speak the modern revision too).
	Era Era `json:"-"`
	// Discover is a modern server's answer to server/discover, as it sent
	// it; nil for a legacy server.
	Discover *DiscoverResult `json:"-"`
}

// appendJSON encodes the result by hand, as goccy would (TestInitializeMarshal):
// it is every session's first answer, and goccy's first use of a type in
// a process compiles an encoder for it.
func (r *InitializeResult) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"protocolVersion":`...)
	b = jsonwire.AppendString(b, r.ProtocolVersion)
	b = append(b, `,"capabilities":`...)
	if len(r.Capabilities) == 0 {
		b = append(b, "null"...)
	} else {
		var err error
		if b, err = appendCompact(b, r.Capabilities); err != nil {
			return nil, fmt.Errorf("capabilities: %w", err)
		}
	}
	b = append(b, `,"serverInfo":{"name":`...)
	b = jsonwire.AppendString(b, r.ServerInfo.Name)
	b = append(b, `,"version":`...)
	b = jsonwire.AppendString(b, r.ServerInfo.Version)
	if r.ServerInfo.Title != "" {
		b = append(b, `,"title":`...)
		b = jsonwire.AppendString(b, r.ServerInfo.Title)
	}
	b = append(b, '}')
	if r.Instructions != "" {
		b = append(b, `,"instructions":`...)
		b = jsonwire.AppendString(b, r.Instructions)
	}
	return append(b, '}'), nil
}
