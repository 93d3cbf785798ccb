package hub

import (
	"errors"
	"fmt"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

// This file is what a client's messages mean to the hub: its requests
// (answered by the hub, or forwarded to the server under ids of the
// upstream's), its notifications, and the answers the hub sends it. How
// they are read and written, and how many may be under way, is in
// clientconn.go.

// A forward is one client request on its way to the server.
type forward struct {
	clientID mcp.ID
	// Guarded by the client's mu.
	call      *mcp.AsyncCall // once sent
	token     string         // the hub's progress token, if the client asked for progress
	cancelled bool
	tools     bool        // a tools/list, whose result the tool filter applies to
	bound     *time.Timer // ends it at the server's tool_timeout, once sent (see limit)
}

// start handles a request that has a slot (see request): the hub answers
// ping and initialize itself, and forwards everything else.
func (c *client) start(msg *mcp.Message) {
	switch msg.Method {
	case "initialize":
		held := c.hold(msg)
		if !c.spawn(func() { defer c.unhold(held); c.initialize(held) }) { // it may wait for the server
			c.unhold(held)
		}
		return
	case "ping":
		c.answer(msg.ID, emptyResult, nil)
		return
	case "tools/call":
		if name, hidden := c.hub.hiddenTool(msg.Params); hidden {
			c.answer(msg.ID, nil, mcp.NewError(mcp.CodeInvalidParams, "unknown tool: %q", name))
			return
		}
	}
	if result, ok := c.hub.fromCatalog(msg.Method); ok {
		c.answer(msg.ID, result, nil) // an idle server stays so
		return
	}
	f := &forward{clientID: msg.ID, tools: msg.Method == "tools/list"}
	c.mu.Lock()
	if _, dup := c.inflight[msg.ID]; dup {
		c.mu.Unlock()
		c.answer(msg.ID, nil, mcp.NewError(mcp.CodeInvalidRequest, "request id %s is already in flight", msg.ID))
		return
	}
	c.inflight[msg.ID] = f
	c.mu.Unlock()

	if up := c.hub.current(); up != nil {
		c.forward(up, f, msg)
		return
	}
	c.forwardLater(f, msg)
}

// forwardLater forwards a request once the server is ready, on a goroutine
// of the client's that holds it meanwhile.
func (c *client) forwardLater(f *forward, msg *mcp.Message) {
	held := c.hold(msg)
	if !c.spawn(func() { defer c.unhold(held); c.forwardWhenReady(f, held) }) {
		c.unhold(held) // the client is going: abandon cancels f
	}
}

var emptyResult = json.RawMessage(`{}`)

// forwardWhenReady waits for the server (starting, or restarting) without
// holding up the client's other messages, then forwards the request.
func (c *client) forwardWhenReady(f *forward, msg *mcp.Message) {
	up, _, err := c.hub.ready(c.ctx)
	if err != nil {
		c.finish(f, nil, asWireError(err))
		return
	}
	c.forward(up, f, msg)
}

func (c *client) initialize(msg *mcp.Message) {
	var p struct {
		ProtocolVersion string             `json:"protocolVersion"`
		ClientInfo      mcp.Implementation `json:"clientInfo"`
		Capabilities    map[string]any     `json:"capabilities"`
	}
	if err := json.Unmarshal(msg.Params, &p); err != nil {
		c.answer(msg.ID, nil, mcp.NewError(mcp.CodeInvalidParams, "initialize: %v", err))
		return
	}
	init, err := c.hub.initResult(c.ctx)
	if err != nil {
		c.answer(msg.ID, nil, asWireError(err))
		return
	}
	result, err := initializeResult(init, p.ProtocolVersion)
	if err != nil {
		c.answer(msg.ID, nil, mcp.NewError(mcp.CodeInternalError, "initialize: %v", err))
		return
	}
	c.mu.Lock()
	c.info = p.ClientInfo
	_, c.sampling = p.Capabilities["sampling"]
	_, c.elicitation = p.Capabilities["elicitation"]
	c.mu.Unlock()
	c.answer(msg.ID, result, nil)
}

// forward sends a request to the server under an id of the upstream's, its
// progress token replaced by one of the hub's. A request that the upstream
// refuses as not sent (its process is ending) goes to the next process.
func (c *client) forward(up *Upstream, f *forward, msg *mcp.Message) {
	params, token := c.hub.remapProgress(c, msg.Params)
	c.mu.Lock()
	f.token = token
	cancelled := f.cancelled
	c.mu.Unlock()
	if cancelled {
		c.hub.dropToken(token)
		return
	}
	call, err := up.send(c.ctx, msg.Method, params, func(result json.RawMessage, err *mcp.Error) {
		c.finish(f, result, err)
	})
	if errors.Is(err, mcp.ErrNotSent) {
		c.hub.dropToken(token)
		c.forwardLater(f, msg)
		return
	}
	if err != nil {
		c.finish(f, nil, asWireError(err))
		return
	}
	c.mu.Lock()
	f.call = call
	cancelled = f.cancelled
	c.mu.Unlock()
	if cancelled { // the cancel came while we were sending
		call.Cancel(errCancelled)
		return
	}
	c.limit(f, call, msg.Method)
}

// limit ends a request forwarded to the server when the server has not
// answered it within its tool_timeout: the client gets an answer that
// says so, and the server a cancellation. It is the one place where the
// launcher enforces tool_timeout, for a hub's clients and the gateway's
// sessions (its members) alike: whatever the server does (it never
// answers, it streams progress without end, its answer could not be read
// and had no id to fail its call with), the request ends. Progress does
// not extend the bound.
func (c *client) limit(f *forward, call *mcp.AsyncCall, method string) {
	d := c.hub.callTimeout()
	t := time.AfterFunc(d, func() { c.timedOut(f, call, method, d) })
	c.mu.Lock()
	if c.inflight[f.clientID] == f && !f.cancelled {
		f.bound = t
		t = nil
	}
	c.mu.Unlock()
	if t != nil {
		t.Stop() // answered or cancelled already
	}
}

// timedOut ends a request at its tool_timeout: a tool call with an error
// result, which the model reads (a tool that takes too long is the tool's
// failure, as the spec has tool errors reported, and the model may call
// it again with less to do); any other request with a JSON-RPC error,
// CodeTimeout. The client is answered first, then the server told: the
// cancellation may wait for a server that does not read its input.
func (c *client) timedOut(f *forward, call *mcp.AsyncCall, method string, d time.Duration) {
	why := fmt.Sprintf("server %q did not answer %s within its tool_timeout (%s): the request was cancelled; try again with less to do, or raise tool_timeout in the server's table of mcpgen.toml", c.hub.name, method, d)
	if method == "tools/call" {
		res, _ := mcp.ErrorResult("%s", why).MarshalJSON()
		c.finish(f, res, nil)
	} else {
		c.finish(f, nil, mcp.NewError(CodeTimeout, "%s", why))
	}
	call.Cancel(fmt.Errorf("the request took longer than the server's tool_timeout (%s)", d))
}

var (
	errCancelled  = errors.New("cancelled by the client")
	errClientGone = errors.New("client disconnected")
)

// finish gives the client the server's answer to a forwarded request,
// under its own id, unless the client cancelled it.
func (c *client) finish(f *forward, result json.RawMessage, err *mcp.Error) {
	c.mu.Lock()
	current := c.inflight[f.clientID] == f && !f.cancelled
	if current {
		delete(c.inflight, f.clientID)
	}
	token, bound := f.token, f.bound
	f.bound = nil
	c.mu.Unlock()
	if bound != nil {
		bound.Stop()
	}
	c.hub.dropToken(token)
	if current {
		if f.tools && result != nil {
			result = c.hub.filterTools(result)
		}
		c.answer(f.clientID, result, err)
	}
}

// notification handles a notification from the client.
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
			c.cancel(p.RequestID, errCancelled)
		}
	case "notifications/roots/list_changed":
		// The hub answers roots/list itself.
	default:
		if up := c.hub.current(); up != nil {
			_ = up.sendRaw(msg)
		}
	}
}

// cancel stops a request of the client's: one that waits for a slot is
// dropped; one forwarded is cancelled under the upstream's id (the server
// is told, and a late response is dropped). Either way the client gets no
// response, as the spec says.
func (c *client) cancel(id mcp.ID, why error) {
	c.mu.Lock()
	f := c.inflight[id]
	if f == nil {
		dropped := c.unwaitLocked(id)
		c.mu.Unlock()
		if dropped {
			c.roomMade()
		}
		return
	}
	delete(c.inflight, id)
	f.cancelled = true
	call, token, bound := f.call, f.token, f.bound
	f.bound = nil
	c.mu.Unlock()
	if bound != nil {
		bound.Stop()
	}
	c.release(1) // no answer will take its slot
	c.hub.dropToken(token)
	if call != nil {
		call.Cancel(why)
	}
}

// abandon cancels what a departed client left: its answers have nowhere
// to go, and the server may stop working on them.
func (c *client) abandon() {
	c.mu.Lock()
	ids := make([]mcp.ID, 0, len(c.inflight))
	for id := range c.inflight {
		ids = append(ids, id)
	}
	for _, m := range c.waiting {
		c.heldBytes -= len(m.Params)
	}
	c.waiting = nil
	c.mu.Unlock()
	for _, id := range ids {
		c.cancel(id, errClientGone)
	}
	c.noteUse()
}

// answer sends the answer to one of the client's requests, which frees
// the request's slot once written.
func (c *client) answer(id mcp.ID, result json.RawMessage, err *mcp.Error) {
	m := mcp.Message{ID: id, Result: result}
	if err != nil {
		m = mcp.Message{ID: id, Error: err}
	}
	c.put(outLine{b: encodeLine(&m), answer: true})
}

// send gives the client a message of the server's or the hub's own: a
// notification, or a request that the server asks it.
func (c *client) send(msg *mcp.Message) { c.put(outLine{b: encodeLine(msg)}) }

// encodeLine encodes a message as one line. Its raw parts come from lines
// that were read, so they hold no newline; one would be replaced, as
// mcp.Writer does.
func encodeLine(msg *mcp.Message) []byte {
	b := msg.AppendJSON(make([]byte, 0, 64+len(msg.Params)+len(msg.Result)))
	for i, ch := range b {
		if ch == '\n' {
			b[i] = ' '
		}
	}
	return append(b, '\n')
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
