package mcp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
)

// DefaultTimeout bounds each request of a Client whose options set none.
const DefaultTimeout = 60 * time.Second

// ClientOptions configures a Client. The zero value is usable.
type ClientOptions struct {
	// Info introduces the client in initialize (default "mcpgen").
	Info Implementation
	// Capabilities are the client's capabilities in initialize (default
	// {}: a client that declares roots or sampling must answer them).
	Capabilities json.RawMessage
	// Handler answers the server's requests other than ping, which the
	// Client answers itself. Without one, they get -32601, so that no
	// server waits forever for an answer.
	Handler Handler
	// OnNotification receives the server's notifications; see ConnOptions.
	OnNotification func(ctx context.Context, msg *Message)
	// Timeout bounds each request: when it passes, the request is
	// cancelled (notifications/cancelled) and fails. Zero means
	// DefaultTimeout; a negative value means no timeout.
	Timeout time.Duration
	// Logger receives what goes wrong on the wire.
	Logger *slog.Logger
}

// A Client is the client end of a connection to an MCP server, typically a
// child process's stdout (r) and stdin (w): mcpgen tools, the launcher's
// handshake with its servers (over a Conn of its own, see ClientOn), and
// the tests.
//
// A Client from NewClient reads in a goroutine of its own. It ends
// when the server closes its output (the process exited), when reading
// fails, when ctx is done, or after Close; Done is closed then, and Err says
// why.
type Client struct {
	conn    *Conn
	info    Implementation
	caps    json.RawMessage
	timeout time.Duration
	handler Handler

	// The era and revision that Open (or Initialize) settled on, and in
	// the modern era the _meta members that every request carries; set
	// once, before the requests that need them.
	mu      sync.Mutex
	era     Era
	version string
	meta    []ObjectMember
}

// NewClient starts a client that reads the server's messages from r and
// writes to w. ctx bounds the life of the whole client, not of one call:
// when it is done the client stops, as with Close.
func NewClient(ctx context.Context, r io.Reader, w io.Writer, opts ClientOptions) *Client {
	c := newClient(opts)
	c.handler = opts.Handler
	c.conn = NewConn(r, w, ConnOptions{
		Handler:        HandlerFunc(c.handle),
		Inline:         func(method string) bool { return method == "ping" },
		OnNotification: opts.OnNotification,
		Logger:         opts.Logger,
	})
	// The read loop belongs to the Client and ends as Done says; Err
	// reports its outcome.
	go func() { _ = c.conn.Run(ctx) }()
	return c
}

// ClientOn returns a Client that makes its requests on conn, a Conn that
// the caller configured and runs: the handshake and the typed calls of a
// Client for a connection that carries more, such as a proxy's connection
// to a server, on which it also forwards other peers' requests (Conn.Go).
// Of opts, only Info, Capabilities and Timeout apply: conn's own options
// answer the server's requests (ping included) and take its notifications.
// Close closes conn.
func ClientOn(conn *Conn, opts ClientOptions) *Client {
	c := newClient(opts)
	c.conn = conn
	return c
}

func newClient(opts ClientOptions) *Client {
	c := &Client{
		info:    opts.Info,
		caps:    opts.Capabilities,
		timeout: opts.Timeout,
	}
	if c.info.Name == "" {
		c.info = Implementation{Name: "mcpgen", Version: "devel"}
	}
	if len(c.caps) == 0 {
		c.caps = emptyObject
	}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	return c
}

func (c *Client) handle(ctx context.Context, req *Request) (any, error) {
	if req.Method == "ping" {
		return emptyObject, nil
	}
	if c.handler != nil {
		return c.handler.Handle(ctx, req)
	}
	return nil, NewError(CodeMethodNotFound, "method not found: %s (this client answers no server requests)", req.Method)
}

// Done is closed when the client has stopped reading: the server closed its
// output, reading failed, ctx was done, or Close was called.
func (c *Client) Done() <-chan struct{} { return c.conn.Done() }

// Err returns why requests can no longer be answered, or nil while they can.
// The error wraps ErrClosed; when the server exited right after writing
// something that is not JSON-RPC to its stdout, it quotes that line.
func (c *Client) Err() error { return c.conn.Err() }

// Close closes the connection: pending requests fail with ErrClosed, and r
// and w are closed when they can be (closing a child's stdin asks it to
// exit). It does not wait for the server; the caller owns the process.
func (c *Client) Close() error { return c.conn.Close() }

// Call sends a request and decodes its result into result (see Conn.Call),
// within the client's timeout; when the timeout passes, the request is
// cancelled and Call returns an error wrapping context.DeadlineExceeded.
// In the modern era (see Open) the request carries the _meta that the
// revision requires: its version, the client's capabilities and identity.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, c.timeout,
			fmt.Errorf("no response within %s: %w", c.timeout, context.DeadlineExceeded))
		defer cancel()
	}
	if meta := c.modernMeta(); meta != nil {
		raw, err := marshalParams(params)
		if err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		if params, err = SetMeta(raw, meta...); err != nil {
			return fmt.Errorf("%s: params: %w", method, err)
		}
	}
	return c.conn.Call(ctx, method, params, result)
}

// Era returns the era of the server, as Open or Initialize found it;
// EraUnknown before.
func (c *Client) Era() Era {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.era
}

// Version returns the revision the client speaks to the server: the one
// its initialize negotiated, or in the modern era the one its requests
// name; "" before Open or Initialize.
func (c *Client) Version() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// modernMeta returns the _meta members of the client's requests in the
// modern era, nil in the legacy era.
func (c *Client) modernMeta() []ObjectMember {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.meta
}

// settle records the era and revision the client speaks to the server.
func (c *Client) settle(era Era, version string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.era, c.version, c.meta = era, version, nil
	if era == EraModern {
		c.meta = c.metaAt(version)
	}
}

// metaAt returns the _meta members of a modern request at version.
func (c *Client) metaAt(version string) []ObjectMember {
	info, _ := jsonwire.Marshal(c.info)
	return []ObjectMember{
		{Key: MetaProtocolVersion, Value: jsonwire.AppendString(nil, version)},
		{Key: MetaClientCapabilities, Value: c.caps},
		{Key: MetaClientInfo, Value: info},
	}
}

// Notify sends a notification.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	return c.conn.Notify(ctx, method, params)
}

// Initialize performs the legacy handshake: initialize with LatestVersion,
// then notifications/initialized. It fails when the server answers a
// revision that this package does not speak. Open chooses the era first.
func (c *Client) Initialize(ctx context.Context) (*InitializeResult, error) {
	var raw json.RawMessage
	if err := c.Call(ctx, "initialize", c.initializeParams(LatestVersion), &raw); err != nil {
		return nil, err
	}
	return c.initialized(ctx, raw)
}

func (c *Client) initializeParams(version string) any {
	return struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ClientInfo      Implementation  `json:"clientInfo"`
	}{version, c.caps, c.info}
}

// initialized completes the legacy handshake with the server's answer to
// initialize.
func (c *Client) initialized(ctx context.Context, raw json.RawMessage) (*InitializeResult, error) {
	res := &InitializeResult{}
	if err := json.Unmarshal(raw, res); err != nil {
		return nil, fmt.Errorf("initialize: decode result: %w", err)
	}
	res.Raw, res.Era = raw, EraLegacy
	if !slices.Contains(SupportedVersions, res.ProtocolVersion) {
		return nil, fmt.Errorf("initialize: server answered protocol version %q; mcpgen speaks %s",
			res.ProtocolVersion, strings.Join(SupportedVersions, ", "))
	}
	if err := c.conn.Notify(ctx, "notifications/initialized", nil); err != nil {
		return nil, err
	}
	c.settle(EraLegacy, res.ProtocolVersion)
	return res, nil
}

// maxToolPages bounds ListTools against a server that pages forever.
const maxToolPages = 1000

// ListTools lists every tool, following nextCursor from page to page. Each
// tool keeps its JSON in Raw.
func (c *Client) ListTools(ctx context.Context) ([]*Tool, error) {
	var tools []*Tool
	seen := make(map[string]bool)
	var params any
	for page := 1; ; page++ {
		var res struct {
			Tools      []*Tool `json:"tools"`
			NextCursor string  `json:"nextCursor"`
		}
		if err := c.Call(ctx, "tools/list", params, &res); err != nil {
			return nil, err
		}
		for _, t := range res.Tools {
			if t != nil {
				tools = append(tools, t)
			}
		}
		switch {
		case res.NextCursor == "":
			return tools, nil
		case seen[res.NextCursor]:
			return nil, fmt.Errorf("tools/list: server returned cursor %q twice; stopping after %d pages", res.NextCursor, page)
		case page == maxToolPages:
			return nil, fmt.Errorf("tools/list: more than %d pages; stopping", maxToolPages)
		}
		seen[res.NextCursor] = true
		params = struct {
			Cursor string `json:"cursor"`
		}{res.NextCursor}
	}
}

// CallTool calls a tool. A failure the tool reports (IsError) is a result,
// not an error; errors are JSON-RPC errors (*Error) and transport failures.
func (c *Client) CallTool(ctx context.Context, name string, args any) (*CallToolResult, error) {
	if args == nil {
		args = emptyObject
	}
	params := struct {
		Name      string `json:"name"`
		Arguments any    `json:"arguments"`
	}{name, args}
	res := &CallToolResult{}
	if err := c.Call(ctx, "tools/call", params, res); err != nil {
		return nil, err
	}
	return res, nil
}

// Ping checks that the server answers: with ping, or in the modern era,
// which has none, with server/discover.
func (c *Client) Ping(ctx context.Context) error {
	if c.Era() == EraModern {
		return c.Call(ctx, "server/discover", nil, nil)
	}
	return c.Call(ctx, "ping", nil, nil)
}
