package streamable

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
	"github.com/mcpgen/mcpgen/mcp"
)

// This file is the modern binding's custom headers (SEP-2243): a tool's
// input schema may mark parameters with x-mcp-header, and each call of the
// tool then mirrors their values into Mcp-Param-NAME headers, so that
// intermediaries can route on them; a tool whose annotations break the
// rules is left out of tools/list (and a call of it is refused).
//
// The transport learns the annotations from the tools/list results it
// carries, rather than being handed them by its client: every client of
// the transport (mcpgen tools, the launcher's hub, and the gateway's agents
// behind it) then gets the headers and the filtering, with no API between
// client and transport to keep in step, and the filtering happens where
// the result passes. A call of a tool that no result has shown (mcpgen
// tools call lists nothing first) makes the transport list the tools
// itself, once, before the call; a call that the server refuses with
// HeaderMismatch (the tool may have changed) lists them again and goes
// once more, as the spec advises.

const (
	// maxSchemaDepth bounds how deep a tool's input schema is walked; a
	// deeper one is invalid.
	maxSchemaDepth = 64
	// maxKnownTools bounds the tools remembered: beyond it, what was
	// learnt is forgotten and learnt again.
	maxKnownTools = 4096
	// maxOwnPages bounds the pages of the transport's own tools/list.
	maxOwnPages = 100
)

// toolHeaders is what the tools/list results said of each tool's
// x-mcp-header annotations.
type toolHeaders struct {
	mu     sync.Mutex
	byName map[string]*toolParams
	gen    uint64 // counts the pages of tools/list results seen

	// listing holds one token: one own listing at a time, and a call
	// waits for it no longer than its context allows.
	listing chan struct{}
	ids     atomic.Uint64 // numbers the transport's own requests
}

// toolParams is what one tool's annotations ask: the parameters to mirror,
// or why the tool is left out.
type toolParams struct {
	params  []paramHeader
	invalid string // "" for a valid tool
}

// A paramHeader is one annotated parameter.
type paramHeader struct {
	name string   // the annotation's value: the header is Mcp-Param-NAME
	path []string // the properties keys that lead to the parameter
}

func (h *toolHeaders) record(name string, tp *toolParams) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byName == nil || (len(h.byName) >= maxKnownTools && h.byName[name] == nil) {
		h.byName = make(map[string]*toolParams)
	}
	h.byName[name] = tp
}

func (h *toolHeaders) listed() {
	h.mu.Lock()
	h.gen++
	h.mu.Unlock()
}

// lookup returns what is known of a tool (nil: nothing), and the count of
// pages seen so far.
func (h *toolHeaders) lookup(name string) (*toolParams, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.byName[name], h.gen
}

// filterTools reads a tools/list result: it keeps what each tool's
// annotations ask, and returns the result without the tools whose
// annotations are invalid (changed reports whether there were any; the
// rest of the result stays as written). A result it cannot read is left
// to the client.
func (t *Transport) filterTools(result json.RawMessage) (_ json.RawMessage, changed bool) {
	defer t.tools.listed()
	members, err := jsonwire.Members(result, 0)
	if err != nil {
		return result, false
	}
	var raw json.RawMessage
	for _, mb := range members {
		if mb.Key == "tools" {
			raw = mb.Value
		}
	}
	var tools []json.RawMessage
	if raw == nil || json.Unmarshal(raw, &tools) != nil {
		return result, false
	}
	kept := make([]json.RawMessage, 0, len(tools))
	for _, tool := range tools {
		var head struct {
			Name        *string         `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if json.Unmarshal(tool, &head) != nil || head.Name == nil {
			kept = append(kept, tool) // not a tool: the client will say
			continue
		}
		tp := schemaParams(head.InputSchema)
		t.tools.record(*head.Name, tp)
		if tp.invalid != "" {
			t.log.Warn("streamable: leaving out of tools/list a tool whose x-mcp-header annotations are invalid", "url", t.where, "tool", *head.Name, "reason", tp.invalid)
			changed = true
			continue
		}
		kept = append(kept, tool)
	}
	if !changed {
		return result, false
	}
	list := []byte{'['}
	for i, tool := range kept {
		if i > 0 {
			list = append(list, ',')
		}
		list = append(list, tool...)
	}
	list = append(list, ']')
	out, err := mcp.SetMembers(result, mcp.ObjectMember{Key: "tools", Value: list})
	if err != nil {
		return result, false
	}
	return out, true
}

// schemaParams reads the x-mcp-header annotations of an input schema.
func schemaParams(schema json.RawMessage) *toolParams {
	// Most schemas have none; an escaped key (\u) is read the long way.
	if !bytes.Contains(schema, []byte("x-mcp-header")) && !bytes.Contains(schema, []byte(`\u`)) {
		return &toolParams{}
	}
	w := schemaWalk{names: make(map[string]string)}
	if err := w.walk(schema, nil, true, 0); err != nil {
		return &toolParams{invalid: err.Error()}
	}
	return &toolParams{params: w.found}
}

// A schemaWalk finds the annotations of a schema and checks each against
// the spec's rules.
type schemaWalk struct {
	found []paramHeader
	names map[string]string // each header name, lower-cased: where it is
}

// walk reads one schema at path (the properties keys that lead to it from
// the root, while reachable: only such a chain may lead to an annotation).
// It knows which keywords hold subschemas; values of other keywords
// (default, const, enum, examples) are data and are not searched.
func (w *schemaWalk) walk(raw json.RawMessage, path []string, reachable bool, depth int) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil // true, false, or not a schema
	}
	if depth > maxSchemaDepth {
		return fmt.Errorf("the input schema nests deeper than %d levels", maxSchemaDepth)
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return nil
	}
	if v, ok := obj["x-mcp-header"]; ok {
		if err := w.annotation(obj, v, path, reachable); err != nil {
			return err
		}
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the first error found is the same each time
	for _, k := range keys {
		var err error
		switch v := obj[k]; k {
		case "properties":
			err = w.schemaMap(v, path, reachable, depth)
		case "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies":
			err = w.schemaMap(v, nil, false, depth)
		case "items", "additionalItems", "prefixItems", "contains", "unevaluatedItems",
			"additionalProperties", "unevaluatedProperties", "propertyNames",
			"allOf", "anyOf", "oneOf", "not", "if", "then", "else":
			err = w.subschemas(v, depth)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// schemaMap walks an object of named schemas; under properties of a
// reachable schema, each is reachable at path+name.
func (w *schemaWalk) schemaMap(raw json.RawMessage, path []string, reachable bool, depth int) error {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		var sub []string
		if reachable {
			sub = append(slices.Clip(path), name)
		}
		if err := w.walk(m[name], sub, reachable, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// subschemas walks a schema, or an array of them, that no chain of
// properties reaches.
func (w *schemaWalk) subschemas(raw json.RawMessage, depth int) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '[' {
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) != nil {
			return nil
		}
		for _, s := range list {
			if err := w.walk(s, nil, false, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return w.walk(raw, nil, false, depth+1)
}

// annotation checks one x-mcp-header annotation, of the schema obj.
func (w *schemaWalk) annotation(obj map[string]json.RawMessage, v json.RawMessage, path []string, reachable bool) error {
	var name string
	if json.Unmarshal(v, &name) != nil {
		return fmt.Errorf("an x-mcp-header annotation is %s, not a string", snippet(v))
	}
	if !reachable {
		return fmt.Errorf("x-mcp-header %q annotates a schema that no chain of properties leads to (under items, a composition, a condition, a $ref or $defs)", name)
	}
	where := "the schema's root"
	if len(path) > 0 {
		where = fmt.Sprintf("property %q", strings.Join(path, "."))
	}
	switch {
	case name == "":
		return fmt.Errorf("%s: x-mcp-header is empty", where)
	case !headerToken(name):
		return fmt.Errorf("%s: x-mcp-header %q is not a header name (letters, digits and !#$%%&'*+-.^_`|~ only)", where, name)
	}
	lower := strings.ToLower(name)
	if other, dup := w.names[lower]; dup {
		return fmt.Errorf("%s: x-mcp-header %q is also that of %s (header names ignore case)", where, name, other)
	}
	if typ, ok := primitiveType(obj["type"]); !ok {
		return fmt.Errorf("%s: x-mcp-header %q on a parameter of type %s; only string, integer and boolean parameters can be mirrored", where, name, typ)
	}
	w.names[lower] = where
	w.found = append(w.found, paramHeader{name: name, path: slices.Clone(path)})
	return nil
}

// primitiveType reports whether a schema's type is one that a header can
// carry: string, integer or boolean (or a list of those, null allowed:
// a null value is not mirrored). It also returns the type, for a message.
func primitiveType(raw json.RawMessage) (string, bool) {
	if raw == nil {
		return "(none given)", false
	}
	primitive := func(s string) bool { return s == "string" || s == "integer" || s == "boolean" }
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return fmt.Sprintf("%q", one), primitive(one)
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		n := 0
		for _, s := range many {
			switch {
			case primitive(s):
				n++
			case s != "null":
				return snippet(raw), false
			}
		}
		return snippet(raw), n > 0
	}
	return snippet(raw), false
}

// headerToken reports whether s is an HTTP token (RFC 9110's tchar).
func headerToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return s != ""
}

// A toolCall is a modern tools/call on its way: what its headers need.
type toolCall struct {
	t        *Transport
	name     string
	args     json.RawMessage
	version  string
	params   json.RawMessage // the call's, for its _meta
	relisted bool            // the transport listed the tools for it
}

// ownMeta is the _meta of the transport's own requests for the call: what
// the call says of the client.
func (c *toolCall) ownMeta() []mcp.ObjectMember {
	meta, _ := mcp.ParseRequestMeta(c.params)
	caps := meta.ClientCapabilities
	if caps == nil {
		caps = json.RawMessage(`{}`)
	}
	members := []mcp.ObjectMember{
		{Key: mcp.MetaProtocolVersion, Value: jsonwire.AppendString(nil, c.version)},
		{Key: mcp.MetaClientCapabilities, Value: caps},
	}
	if meta.ClientInfo != nil {
		members = append(members, mcp.ObjectMember{Key: mcp.MetaClientInfo, Value: meta.ClientInfo})
	}
	return members
}

// headers adds the call's Mcp-Param headers to h, once the tool's
// annotations are known: if no result has shown the tool, the transport
// lists the tools first (and lets Write return meanwhile). A tool left
// out for its annotations gets an error to answer the call with.
func (c *toolCall) headers(ctx context.Context, wrote func(), h http.Header) *mcp.Error {
	tp, gen := c.t.tools.lookup(c.name)
	if tp == nil && c.name != "" {
		wrote()
		c.relisted = c.t.relist(ctx, c, gen)
		tp, _ = c.t.tools.lookup(c.name)
	}
	return c.apply(tp, h)
}

// retry prepares the call to be sent again after the server found its
// headers wanting: the tools listed again (once per call), the headers
// made anew. It reports whether to send it again.
func (c *toolCall) retry(ctx context.Context, h http.Header) bool {
	if c.relisted || c.name == "" {
		return false
	}
	_, gen := c.t.tools.lookup(c.name)
	c.relisted = true
	if !c.t.relist(ctx, c, gen) {
		return false
	}
	tp, _ := c.t.tools.lookup(c.name)
	return tp != nil && c.apply(tp, h) == nil
}

// apply sets the Mcp-Param headers that tp asks of the call's arguments.
// A parameter without a value (absent, or null) has no header.
func (c *toolCall) apply(tp *toolParams, h http.Header) *mcp.Error {
	for k := range h {
		if strings.HasPrefix(k, "Mcp-Param-") {
			delete(h, k)
		}
	}
	switch {
	case tp == nil:
		return nil // the server has not listed it: it will say
	case tp.invalid != "":
		return &mcp.Error{Code: mcp.CodeInvalidParams, Message: fmt.Sprintf("tool %q is left out of the server's tools, its x-mcp-header annotations being invalid: %s", c.name, tp.invalid)}
	}
	var top map[string]json.RawMessage
	if len(tp.params) > 0 && json.Unmarshal(c.args, &top) != nil {
		return nil // not an object: the server will say
	}
	for _, p := range tp.params {
		if v, ok := paramValue(top, p.path); ok {
			h.Set("Mcp-Param-"+p.name, v)
		}
	}
	return nil
}

// paramValue reads the argument at path and returns it as a header value:
// a string as the modern binding encodes it, a number as written, true or
// false. Null, absent, objects and arrays have none.
func paramValue(args map[string]json.RawMessage, path []string) (string, bool) {
	if len(path) == 0 {
		return "", false
	}
	raw := args[path[0]]
	for _, key := range path[1:] {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return "", false
		}
		raw = m[key]
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return headerValue(s), true
	case c == '-' || (c >= '0' && c <= '9'):
		return string(raw), true
	case string(raw) == "true" || string(raw) == "false":
		return string(raw), true
	}
	return "", false
}

// relist lists the server's tools, for the transport to learn their
// annotations, unless a tools/list result has come since gen (a call that
// waited for another's listing uses it). It reports whether it listed.
func (t *Transport) relist(ctx context.Context, c *toolCall, gen uint64) bool {
	select {
	case t.tools.listing <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	defer func() { <-t.tools.listing }()
	if _, now := t.tools.lookup(""); now != gen {
		return false
	}
	var cursor string
	seen := make(map[string]bool)
	meta := c.ownMeta()
	for range maxOwnPages {
		params, _ := mcp.SetMeta(nil, meta...)
		if cursor != "" {
			params, _ = mcp.SetMembers(params, mcp.ObjectMember{Key: "cursor", Value: jsonwire.AppendString(nil, cursor)})
		}
		result, err := t.roundTrip(ctx, "tools/list", params, c.version)
		if err != nil {
			t.log.Debug("streamable: listing the tools to learn their x-mcp-header annotations failed", "url", t.where, "error", err)
			return true
		}
		t.filterTools(result)
		var next struct {
			NextCursor string `json:"nextCursor"`
		}
		_ = json.Unmarshal(result, &next)
		if next.NextCursor == "" || seen[next.NextCursor] {
			return true
		}
		seen[next.NextCursor] = true
		cursor = next.NextCursor
	}
	return true
}

// roundTrip sends a modern request of the transport's own and returns its
// result, which the reader never sees.
func (t *Transport) roundTrip(ctx context.Context, method string, params json.RawMessage, version string) (json.RawMessage, error) {
	id := mcp.StringID(fmt.Sprintf("mcpgen-streamable-%d", t.tools.ids.Add(1)))
	msg := &mcp.Message{ID: id, Method: method, Params: params}
	h, err := requestHeaders(msg, version)
	if err != nil {
		return nil, err
	}
	resp, _, err := t.do(ctx, http.MethodPost, msg.AppendJSON(nil), false, "", nil, h)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		werr, detail := readHTTPError(resp)
		if werr != nil {
			return nil, fmt.Errorf("%s: %s: %w", method, resp.Status, werr)
		}
		return nil, fmt.Errorf("%s: %s: %s", method, resp.Status, detail)
	}
	answer := func(data []byte) (json.RawMessage, bool, error) {
		m, err := mcp.DecodeMessage(bytes.ReplaceAll(bytes.TrimSpace(data), []byte{'\n'}, []byte{' '}))
		switch {
		case err != nil || !m.IsResponse() || m.ID != id:
			return nil, false, nil
		case m.Error != nil:
			return nil, true, fmt.Errorf("%s: %w", method, m.Error)
		}
		return m.Result, true, nil
	}
	switch mediaType(resp.Header.Get("Content-Type")) {
	case "application/json":
		defer discard(resp.Body)
		data, err := io.ReadAll(io.LimitReader(resp.Body, int64(t.maxMsg)+1))
		switch {
		case err != nil:
			return nil, err
		case len(data) > t.maxMsg:
			return nil, fmt.Errorf("%s: the answer is longer than %d bytes", method, t.maxMsg)
		}
		if result, ok, err := answer(data); ok {
			return result, err
		}
		return nil, fmt.Errorf("%s: the answer holds no response: %s", method, snippet(data))
	case "text/event-stream":
		defer resp.Body.Close()
		sse := newSSEReader(resp.Body, t.maxMsg)
		for {
			ev, err := sse.next()
			if err != nil {
				return nil, fmt.Errorf("%s: the answer's event stream ended before the response: %v", method, err)
			}
			if ev.Type != "message" {
				continue
			}
			if result, ok, err := answer(ev.Data); ok {
				return result, err
			}
		}
	}
	discard(resp.Body)
	return nil, fmt.Errorf("%s: the server answered with Content-Type %q", method, resp.Header.Get("Content-Type"))
}
