package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
)

// ServerOptions configures a Server. A nil *ServerOptions is the defaults.
type ServerOptions struct {
	// Instructions tell the model how to use the server (initialize's
	// "instructions").
	Instructions string
	// PageSize is the number of tools per tools/list page (default 100).
	PageSize int
	// MaxInFlight bounds the tool calls that run at once on one
	// connection (default DefaultMaxInFlight); see ConnOptions.
	MaxInFlight int
	// Logger receives the server's own logs. Nothing is logged when it is
	// nil; stdout is never used, since it carries the protocol.
	Logger *slog.Logger
}

// A Server is the runtime of an MCP server with tools. One Server may serve
// several connections at once (Serve is called once per connection).
//
// It speaks the handshake revisions in SupportedVersions and, for clients
// of the stateless 2026-07-28 revision, answers server/discover and requests
// that carry params._meta["io.modelcontextprotocol/protocolVersion"]. It
// answers ping at any time, and serves tools/list and tools/call before
// initialize too: a client that skips the handshake gets what it asks for
// rather than an error it may not understand.
//
// Tool calls run concurrently, at most MaxInFlight at once per connection,
// and can be cancelled; everything else is answered at once, in order, on
// the connection's read loop. A client that sends without reading the
// answers is held back by its own blocked writes: the server stops reading
// rather than buffer (see ConnOptions.MaxInFlight).
type Server struct {
	info         Implementation
	instructions string
	pageSize     int
	maxInFlight  int
	log          *slog.Logger
	admitWaits   func() // tests: see Conn.admitWaits

	mu       sync.Mutex
	tools    map[string]*listedTool
	names    []string // sorted, so that pages are stable and cursors are names
	sessions map[*session]struct{}
}

type listedTool struct {
	tool *Tool
	json []byte // as tools/list lists it, encoded once
}

// NewServer returns a server that introduces itself as info.
func NewServer(info Implementation, opts *ServerOptions) *Server {
	s := &Server{
		info:     info,
		pageSize: 100,
		log:      slog.New(slog.DiscardHandler),
		tools:    make(map[string]*listedTool),
		sessions: make(map[*session]struct{}),
	}
	if opts != nil {
		s.instructions = opts.Instructions
		if opts.PageSize > 0 {
			s.pageSize = opts.PageSize
		}
		s.maxInFlight = opts.MaxInFlight
		if opts.Logger != nil {
			s.log = opts.Logger
		}
	}
	return s
}

// AddTool adds t, or replaces the tool of the same name, and tells the
// connected clients that the list changed. t must not be modified afterwards.
//
// It rejects a tool without a handler, a name outside the spec's 1 to 128
// characters of [A-Za-z0-9_.-], and schemas that are not JSON objects.
func (s *Server) AddTool(t *Tool) error {
	if err := checkToolName(t.Name); err != nil {
		return fmt.Errorf("tool %q: %w", t.Name, err)
	}
	if t.Handler == nil {
		return fmt.Errorf("tool %q: no handler", t.Name)
	}
	for _, schema := range []struct {
		name string
		raw  json.RawMessage
	}{{"input schema", t.InputSchema}, {"output schema", t.OutputSchema}} {
		if len(schema.raw) > 0 && !jsonwire.IsObject(schema.raw) {
			return fmt.Errorf("tool %q: %s must be a JSON object", t.Name, schema.name)
		}
	}
	b, err := t.MarshalJSON()
	if err != nil {
		return fmt.Errorf("tool %q: %w", t.Name, err)
	}

	s.mu.Lock()
	if _, ok := s.tools[t.Name]; !ok {
		i, _ := slices.BinarySearch(s.names, t.Name)
		s.names = slices.Insert(s.names, i, t.Name)
	}
	s.tools[t.Name] = &listedTool{tool: t, json: b}
	sessions := s.sessionList()
	s.mu.Unlock()

	notifyListChanged(sessions)
	return nil
}

// RemoveTool removes the named tool, if there is one, and tells the
// connected clients that the list changed.
func (s *Server) RemoveTool(name string) {
	s.mu.Lock()
	_, ok := s.tools[name]
	if ok {
		delete(s.tools, name)
		i, _ := slices.BinarySearch(s.names, name)
		s.names = slices.Delete(s.names, i, i+1)
	}
	sessions := s.sessionList()
	s.mu.Unlock()

	if ok {
		notifyListChanged(sessions)
	}
}

func (s *Server) sessionList() []*session {
	list := make([]*session, 0, len(s.sessions))
	for ss := range s.sessions {
		list = append(list, ss)
	}
	return list
}

// notifyListChanged tells each initialized client that the tools changed.
// It writes from the caller's goroutine: a client that stops reading stalls
// AddTool, which is better than queueing without end.
func notifyListChanged(sessions []*session) {
	for _, ss := range sessions {
		ss.mu.Lock()
		ready := ss.initialized
		ss.mu.Unlock()
		if ready {
			_ = ss.conn.write(&Message{Method: "notifications/tools/list_changed"})
		}
	}
}

func checkToolName(name string) error {
	if name == "" || len(name) > 128 {
		return errors.New("name must have 1 to 128 characters")
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fmt.Errorf("name must use only A-Z, a-z, 0-9, '_', '-' and '.', not %q", c)
		}
	}
	return nil
}

// Serve speaks MCP over r and w until r ends or ctx is done; see Conn.Run
// for how each ends. At the end of r it answers every request already read,
// then returns nil; when ctx is done it returns ctx's error (and closes r if
// it can, since a blocked read cannot be interrupted otherwise).
func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	ss := &session{server: s}
	ss.conn = NewConn(r, w, ConnOptions{
		Handler:        ss,
		Inline:         answeredInline,
		MaxInFlight:    s.maxInFlight,
		ServerRole:     true,
		OnNotification: ss.notification,
		Logger:         s.log,
	})
	ss.conn.admitWaits = s.admitWaits
	s.mu.Lock()
	s.sessions[ss] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.sessions, ss)
		s.mu.Unlock()
	}()
	return ss.conn.Run(ctx)
}

// answeredInline says which requests a Server answers on the read loop:
// those that need nothing but the server's own state, which is at hand.
// A tools/list page is copied from the catalog that AddTool encoded.
// Tool calls run a tool, so they get goroutines and can be cancelled.
func answeredInline(method string) bool {
	switch method {
	case "ping", "initialize", "tools/list", "server/discover":
		return true
	}
	return false
}

// A session is one connection being served.
type session struct {
	server *Server
	conn   *Conn

	mu          sync.Mutex
	initialized bool // the client sent notifications/initialized
}

func (ss *session) notification(_ context.Context, msg *Message) {
	switch msg.Method {
	case "notifications/initialized":
		ss.mu.Lock()
		ss.initialized = true
		ss.mu.Unlock()
	default:
		ss.server.log.Debug("mcp: ignoring a notification", "method", msg.Method)
	}
}

// Handle answers one request.
func (ss *session) Handle(ctx context.Context, req *Request) (any, error) {
	s := ss.server
	stateless, err := statelessRequest(req.Params)
	if err != nil {
		return nil, err
	}
	var result any
	switch req.Method {
	case "initialize":
		result, err = s.initialize(req.Params)
	case "ping":
		result = emptyObject
	case "server/discover":
		stateless = true
		result = s.discover()
	case "tools/list":
		result, err = s.listTools(req.Params, stateless)
	case "tools/call":
		result, err = s.callTool(ctx, req)
	default:
		err = NewError(CodeMethodNotFound, "method not found: %s", req.Method)
	}
	if err != nil || !stateless {
		return result, err
	}
	return s.completeResult(result)
}

// Keys of params._meta and result._meta in the stateless revision.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
)

// codeUnsupportedVersion is UnsupportedProtocolVersionError (2026-07-28).
const codeUnsupportedVersion = -32022

// statelessRequest reports whether a request follows the stateless
// revision: its params._meta names the protocol version. A handshake
// revision named there is served as a handshake-era request; an unknown
// one gets UnsupportedProtocolVersionError, which lists what we support.
func statelessRequest(params json.RawMessage) (bool, error) {
	// Most requests come from handshake-era clients: skip the decoding.
	if !bytes.Contains(params, []byte(metaProtocolVersion)) {
		return false, nil
	}
	m, err := ParseRequestMeta(params)
	if err != nil {
		return false, err
	}
	switch VersionEra(m.ProtocolVersion) {
	case EraLegacy:
		return false, nil
	case EraUnknown:
		if !m.Modern() {
			return false, nil // the version's name was elsewhere in params
		}
		return false, UnsupportedVersionError(m.ProtocolVersion, allVersions())
	}
	if m.ClientCapabilities == nil {
		return false, NewError(CodeInvalidParams, "invalid params: _meta[%q] must be an object", metaClientCapabilities)
	}
	return true, nil
}

// allVersions lists every revision the server speaks, newest first.
func allVersions() []string {
	return append([]string{statelessVersion}, SupportedVersions...)
}

// completeResult adds what the stateless revision requires of every result:
// "resultType":"complete", and the server's identity in _meta.
func (s *Server) completeResult(result any) (json.RawMessage, error) {
	b, err := marshalResult(result)
	if err != nil {
		return nil, err
	}
	out := []byte(`{"resultType":"complete","_meta":{"` + metaServerInfo + `":`)
	info, err := jsonwire.Marshal(s.info)
	if err != nil {
		return nil, err
	}
	out = append(out, info...)
	out = append(out, '}')
	if rest := bytes.TrimSpace(b[1:]); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, b[1:]...), nil
}

var (
	handshakeCapabilities = json.RawMessage(`{"tools":{"listChanged":true}}`)
	// Stateless clients learn of changes through subscriptions/listen,
	// which this server does not offer.
	statelessCapabilities = json.RawMessage(`{"tools":{}}`)
)

func (s *Server) initialize(params json.RawMessage) (any, error) {
	var p struct {
		ProtocolVersion string         `json:"protocolVersion"`
		ClientInfo      Implementation `json:"clientInfo"`
	}
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	version := NegotiateVersion(p.ProtocolVersion)
	s.log.Debug("mcp: initialize", "client", p.ClientInfo.Name, "clientVersion", p.ClientInfo.Version,
		"requested", p.ProtocolVersion, "answered", version)
	return &InitializeResult{
		ProtocolVersion: version,
		Capabilities:    handshakeCapabilities,
		ServerInfo:      s.info,
		Instructions:    s.instructions,
	}, nil
}

// Cacheable results of the stateless revision must say for how long they
// may be cached; the tools can change at any time, so not at all.
const cacheFields = `"ttlMs":0,"cacheScope":"private"`

func (s *Server) discover() any {
	return &struct {
		SupportedVersions []string        `json:"supportedVersions"`
		Capabilities      json.RawMessage `json:"capabilities"`
		Instructions      string          `json:"instructions,omitempty"`
		TTLMs             int             `json:"ttlMs"`
		CacheScope        string          `json:"cacheScope"`
	}{allVersions(), statelessCapabilities, s.instructions, 0, "private"}
}

// A cursor is the name of the last tool of the previous page, so that paging
// survives tools being added or removed in between. It is opaque to clients.
const cursorPrefix = "after:"

func encodeCursor(name string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + name))
}

func decodeCursor(cursor string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return "", false
	}
	return strings.CutPrefix(string(b), cursorPrefix)
}

func (s *Server) listTools(params json.RawMessage, stateless bool) (any, error) {
	var p struct {
		Cursor string `json:"cursor"`
	}
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	var after string
	if p.Cursor != "" {
		var ok bool
		if after, ok = decodeCursor(p.Cursor); !ok {
			return nil, NewError(CodeInvalidParams, "invalid params: bad cursor %q", p.Cursor)
		}
	}

	out := []byte(`{"tools":[`)
	s.mu.Lock()
	start := 0
	if p.Cursor != "" {
		start, _ = slices.BinarySearch(s.names, after)
		if start < len(s.names) && s.names[start] == after {
			start++
		}
	}
	end := min(start+s.pageSize, len(s.names))
	for i, name := range s.names[start:end] {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, s.tools[name].json...)
	}
	out = append(out, ']')
	if end < len(s.names) {
		out = append(out, `,"nextCursor":`...)
		out = jsonwire.AppendString(out, encodeCursor(s.names[end-1]))
	}
	s.mu.Unlock()
	if stateless {
		out = append(out, ","+cacheFields...)
	}
	return json.RawMessage(append(out, '}')), nil
}

// decodeParams decodes a request's params into v, with errors that name the
// member at fault in JSON terms rather than Go's.
func decodeParams(params json.RawMessage, v any) *Error {
	if len(params) == 0 {
		return nil
	}
	if params[0] != '{' {
		return NewError(CodeInvalidParams, "invalid params: params must be an object")
	}
	if err := json.Unmarshal(params, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return NewError(CodeInvalidParams, "invalid params: %q must be %s, not %s", te.Field, jsonKind(te.Type), te.Value)
		}
		return NewError(CodeInvalidParams, "invalid params: %v", err)
	}
	return nil
}

func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}

func (s *Server) callTool(ctx context.Context, req *Request) (any, error) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if len(req.Params) == 0 {
		return nil, NewError(CodeInvalidParams, "invalid params: missing params")
	}
	if err := decodeParams(req.Params, &p); err != nil {
		return nil, err
	}
	if p.Name == "" {
		return nil, NewError(CodeInvalidParams, `invalid params: missing tool "name"`)
	}
	args := p.Arguments
	switch {
	case len(args) == 0 || string(args) == "null":
		args = emptyObject
	case args[0] != '{':
		return nil, NewError(CodeInvalidParams, `invalid params: "arguments" must be an object`)
	}

	s.mu.Lock()
	lt := s.tools[p.Name]
	s.mu.Unlock()
	if lt == nil {
		return nil, NewError(CodeInvalidParams, "unknown tool %q", p.Name)
	}

	res, err := lt.tool.Handler(ctx, &CallToolRequest{Name: p.Name, Arguments: args, req: req})
	if err != nil {
		if werr, ok := err.(*Error); ok {
			return nil, werr
		}
		return &CallToolResult{Content: []Content{TextContent(err.Error())}, IsError: true}, nil
	}
	if res == nil {
		res = &CallToolResult{}
	}
	return res, nil
}
