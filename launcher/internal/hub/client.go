package hub

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

// clientQueue is how many messages may wait to be written to a client. A
// client that falls this far behind is disconnected, rather than slow down
// the server's other clients.
const clientQueue = 512

// clientReadBuffer is the read buffer of a client connection: small, since
// a launcher may hold many idle ones; longer lines are still read whole.
const clientReadBuffer = 4 << 10

// A client is one client connection of a hub, typically `mcpgen
// connect` run by an agent. It has two goroutines, both ended by close: the
// read loop (run, on the caller's goroutine) and the write loop.
type client struct {
	hub  *Hub
	conn io.ReadWriteCloser
	r    *mcp.Reader
	out  chan []byte
	done chan struct{}
	once sync.Once

	mu          sync.Mutex
	info        mcp.Implementation
	sampling    bool
	elicitation bool
	initialized bool
	inflight    map[mcp.ID]*forward // by the client's id
}

// A forward is one client request on its way to the server.
type forward struct {
	clientID  mcp.ID
	up        *Upstream
	upID      mcp.ID // valid once sent
	token     string // the hub's progress token, if the client asked for progress
	cancelled bool
}

func newClient(h *Hub, conn io.ReadWriteCloser) *client {
	return &client{
		hub:      h,
		conn:     conn,
		r:        mcp.NewReaderSize(conn, clientReadBuffer),
		out:      make(chan []byte, clientQueue),
		done:     make(chan struct{}),
		inflight: make(map[mcp.ID]*forward),
	}
}

// run reads the client's messages until it disconnects or is closed, then
// cancels what it left in flight.
func (c *client) run(ctx context.Context) {
	writer := make(chan struct{})
	go func() { defer close(writer); c.writeLoop() }()
	for {
		msg, err := c.r.Read()
		if err != nil {
			var de *mcp.DecodeError
			if errors.As(err, &de) {
				if resp := de.Response(); resp != nil {
					c.send(resp)
				}
				continue
			}
			break
		}
		switch {
		case msg.IsRequest():
			c.request(ctx, msg)
		case msg.IsNotification():
			c.notification(msg)
		case msg.IsResponse():
			c.hub.clientResponse(c, msg)
		}
	}
	c.close()
	<-writer
	c.abandon()
}

// close ends the client: the write loop flushes what is queued (the errors
// of its last requests, say), then closes the connection, which ends the
// read loop.
func (c *client) close() {
	c.once.Do(func() { close(c.done) })
}

// flushTimeout bounds the last writes to a closing client.
const flushTimeout = time.Second

func (c *client) writeLoop() {
	defer c.conn.Close()
	for {
		select {
		case line := <-c.out:
			if _, err := c.conn.Write(line); err != nil {
				c.close()
				return
			}
		case <-c.done:
			if d, ok := c.conn.(interface{ SetWriteDeadline(time.Time) error }); ok {
				_ = d.SetWriteDeadline(time.Now().Add(flushTimeout))
			}
			for {
				select {
				case line := <-c.out:
					if _, err := c.conn.Write(line); err != nil {
						return
					}
				default:
					return
				}
			}
		}
	}
}

// send queues a message for the client; a client too far behind is
// disconnected.
func (c *client) send(msg *mcp.Message) {
	line := append(msg.AppendJSON(nil), '\n')
	select {
	case c.out <- line:
	case <-c.done:
	default:
		c.hub.log.Warn("client too slow, disconnected", "server", c.hub.name, "client", c.displayName())
		c.close()
	}
}

func (c *client) reply(id mcp.ID, result json.RawMessage, err *mcp.Error) {
	c.send(&mcp.Message{ID: id, Result: result, Error: err})
}

func (c *client) request(ctx context.Context, msg *mcp.Message) {
	switch msg.Method {
	case "initialize":
		go c.initialize(ctx, msg) // it may wait for the server
		return
	case "ping":
		c.reply(msg.ID, json.RawMessage(`{}`), nil)
		return
	}
	if result, ok := c.hub.fromCatalog(msg.Method); ok {
		c.reply(msg.ID, result, nil) // an idle server stays so
		return
	}
	f := &forward{clientID: msg.ID}
	c.mu.Lock()
	if _, dup := c.inflight[msg.ID]; dup {
		c.mu.Unlock()
		c.reply(msg.ID, nil, mcp.NewError(mcp.CodeInvalidRequest, "request id %s is already in flight", msg.ID))
		return
	}
	c.inflight[msg.ID] = f
	c.mu.Unlock()

	c.hub.mu.Lock()
	up := c.hub.up
	c.hub.mu.Unlock()
	if up != nil {
		c.forward(ctx, up, f, msg)
		return
	}
	go c.forwardWhenReady(ctx, f, msg)
}

// forwardWhenReady waits for the server (starting, or restarting) without
// blocking the read loop, then forwards the request.
func (c *client) forwardWhenReady(ctx context.Context, f *forward, msg *mcp.Message) {
	up, _, err := c.hub.ready(ctx)
	if err != nil {
		c.finish(f, &mcp.Message{Error: asWireError(err)})
		return
	}
	c.forward(ctx, up, f, msg)
}

func (c *client) initialize(ctx context.Context, msg *mcp.Message) {
	var p struct {
		ProtocolVersion string             `json:"protocolVersion"`
		ClientInfo      mcp.Implementation `json:"clientInfo"`
		Capabilities    map[string]any     `json:"capabilities"`
	}
	if err := json.Unmarshal(msg.Params, &p); err != nil {
		c.reply(msg.ID, nil, mcp.NewError(mcp.CodeInvalidParams, "initialize: %v", err))
		return
	}
	init, err := c.hub.initResult(ctx)
	if err != nil {
		c.reply(msg.ID, nil, asWireError(err))
		return
	}
	result, err := initializeResult(init, p.ProtocolVersion)
	if err != nil {
		c.reply(msg.ID, nil, mcp.NewError(mcp.CodeInternalError, "initialize: %v", err))
		return
	}
	c.mu.Lock()
	c.info = p.ClientInfo
	_, c.sampling = p.Capabilities["sampling"]
	_, c.elicitation = p.Capabilities["elicitation"]
	c.mu.Unlock()
	c.reply(msg.ID, result, nil)
}

// forward sends a request to the server under an id of the upstream's, its
// progress token replaced by one of the hub's.
func (c *client) forward(ctx context.Context, up *Upstream, f *forward, msg *mcp.Message) {
	params, ours, token := c.hub.remapProgress(msg.Params)
	if ours != "" {
		c.hub.mu.Lock()
		c.hub.progress[ours] = &progressRoute{client: c, token: token}
		c.hub.mu.Unlock()
	}
	c.mu.Lock()
	f.token = ours
	if f.cancelled {
		c.mu.Unlock()
		c.dropToken(f)
		return
	}
	f.up = up
	c.mu.Unlock()

	out := *msg
	out.Params = params
	id, err := up.send(&out, func(resp *mcp.Message) { c.finish(f, resp) })
	if errors.Is(err, errNotSent) {
		// The process ended as the request came: it goes to the next one.
		c.dropToken(f)
		go c.forwardWhenReady(ctx, f, msg)
		return
	}
	if err != nil {
		c.finish(f, &mcp.Message{Error: asWireError(err)})
		return
	}
	c.mu.Lock()
	f.upID = id
	cancelled := f.cancelled
	c.mu.Unlock()
	if cancelled { // the cancel came while we were sending
		cancelUpstream(up, id, "cancelled by the client")
	}
}

// finish delivers the server's response to the client, under its own id.
func (c *client) finish(f *forward, resp *mcp.Message) {
	c.mu.Lock()
	current := c.inflight[f.clientID] == f && !f.cancelled
	if current {
		delete(c.inflight, f.clientID)
	}
	c.mu.Unlock()
	c.dropToken(f)
	if !current {
		return // cancelled: no response, as the spec says
	}
	out := *resp
	out.ID = f.clientID
	c.send(&out)
}

func (c *client) dropToken(f *forward) {
	if f.token == "" {
		return
	}
	c.hub.mu.Lock()
	delete(c.hub.progress, f.token)
	c.hub.mu.Unlock()
}

func (c *client) notification(msg *mcp.Message) {
	switch msg.Method {
	case "notifications/initialized":
		c.mu.Lock()
		c.initialized = true
		c.mu.Unlock()
	case "notifications/cancelled":
		var p struct {
			RequestID mcp.ID `json:"requestId"`
		}
		if json.Unmarshal(msg.Params, &p) == nil {
			c.cancel(p.RequestID, "cancelled by the client")
		}
	case "notifications/roots/list_changed":
		// The hub answers roots/list itself.
	default:
		c.hub.mu.Lock()
		up := c.hub.up
		c.hub.mu.Unlock()
		if up != nil {
			_ = up.write(msg)
		}
	}
}

// cancel stops a request in flight: the server is told under its id, and
// the client gets no response.
func (c *client) cancel(id mcp.ID, reason string) {
	c.mu.Lock()
	f := c.inflight[id]
	if f == nil {
		c.mu.Unlock()
		return
	}
	delete(c.inflight, id)
	f.cancelled = true
	up, upID := f.up, f.upID
	c.mu.Unlock()
	c.dropToken(f)
	if up != nil && upID.IsValid() {
		cancelUpstream(up, upID, reason)
	}
}

func cancelUpstream(up *Upstream, id mcp.ID, reason string) {
	if up.forget(id) {
		_ = up.notify("notifications/cancelled", map[string]any{"requestId": id, "reason": reason})
	}
}

// abandon cancels what a departed client left in flight: its answers have
// nowhere to go, and the server may stop working on them.
func (c *client) abandon() {
	c.mu.Lock()
	ids := make([]mcp.ID, 0, len(c.inflight))
	for id := range c.inflight {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	for _, id := range ids {
		c.cancel(id, errClientGone.Error())
	}
}

func (c *client) isInitialized() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.initialized
}

func (c *client) busy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.inflight) > 0
}

// can reports whether the client declared the capability that a server
// request needs.
func (c *client) can(method string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case strings.HasPrefix(method, "sampling/"):
		return c.sampling
	case strings.HasPrefix(method, "elicitation/"):
		return c.elicitation
	}
	return false
}

func (c *client) displayName() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.info.Name == "" {
		return "(initializing)"
	}
	if c.info.Version == "" {
		return c.info.Name
	}
	return c.info.Name + " " + c.info.Version
}

// asWireError turns an error into the JSON-RPC error a client receives.
func asWireError(err error) *mcp.Error {
	var we *mcp.Error
	if errors.As(err, &we) {
		return we
	}
	return mcp.NewError(CodeUnavailable, "%v", err)
}
