package hub

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/internal/agent"
	"github.com/mcpgen/mcpgen/mcp"
)

// This file is what an agent's requests mean to the hub: answered by the
// hub, or forwarded to the server under ids of the upstream's. How they
// are read, admitted and answered on the agent's connection is the
// agent.Conn's.

// A client is one agent connection as the hub sees it: an agent's own
// (connect NAME), whose Handler it is, or a session of the workspace
// gateway, a Member, whose requests the gateway hands it. It holds what
// the hub forwarded for it.
type client struct {
	hub    *Hub
	conn   *agent.Conn
	serial uint64 // unique among the hub's clients: who holds a call (translate.go)

	// A Member's (see MemberOptions); member is false for a connection.
	member bool
	tag    string
	notify func(*mcp.Message) *mcp.Message
	closed func()

	// ctx is done when the client has gone (or was dropped, or left):
	// what waits for the server on its behalf stops.
	ctx        context.Context
	cancelCtx  context.CancelFunc
	goroutines sync.WaitGroup

	mu       sync.Mutex
	logLevel string                // the level its legacy session asked for (logging/setLevel), for a modern server (modern.go)
	subs     map[string]bool       // the resources its legacy session subscribed to on a modern server (resources.go)
	forwards map[*forward]struct{} // under way
	ended    bool                  // it is going: no more goroutines
	gone     bool                  // a Member that left, or was dropped: nothing more is delivered

	// A member's use of the server, as the hub counts it (see lazy.go):
	// inUse while it has requests under way. useMu orders the changes,
	// so that the hub hears them in the order they happened.
	useMu    sync.Mutex
	inUse    bool
	departed bool // it left: it uses nothing any more
}

// newClient returns a client, a member's if m is not nil; attach gives it
// its agent's Conn.
func (h *Hub) newClient(m *MemberOptions) *client {
	c := &client{hub: h, forwards: make(map[*forward]struct{}), serial: h.seq.Add(1)}
	if m != nil {
		c.member, c.tag, c.notify, c.closed = true, m.Tag, m.Notify, m.Closed
	}
	return c
}

func (c *client) attach(conn *agent.Conn) {
	c.conn = conn
	c.ctx, c.cancelCtx = context.WithCancel(conn.Context())
}

// A forward is one agent request on its way to the server.
type forward struct {
	call  *agent.Call // guarded by the client's mu: a retry replaces it (translate.go)
	tools bool        // a tools/list, whose result the tool filter applies to
	seq   uint64      // the hub's order of forwards: which is oldest (see Hub.attribute)
	// Guarded by the client's mu.
	up    *mcp.AsyncCall // once sent
	token string         // the hub's progress token, if the agent asked for progress
	bound *time.Timer    // ends it at the server's tool_timeout, once sent (see limit)
	done  bool           // answered, or stopped
	input input          // what translation between eras needs of it (translate.go)
	// What the hub's hooks hear of it (hooks.go): set before it is
	// shared, read by whoever marks it done; timeout is guarded by the
	// client's mu.
	meter   callMeter
	timeout bool
	trace   *callTrace // its span, when the hub traces (trace.go); set before it is sent
}

// Request handles one of the agent's requests (see agent.Handler): the hub
// answers initialize itself, and the lists of an idle server from its
// catalog, and forwards everything else.
func (c *client) Request(call *agent.Call) {
	if c.resume(call) {
		return // a modern agent's retry of a call held for its input
	}
	if call.Method() == "initialize" {
		call.Hold()
		c.spawn(func() { c.initialize(call) }) // it may wait for the server
		return
	}
	if call.Method() == "logging/setLevel" && c.keepLogLevel(call.Params()) {
		call.Answer(emptyResult, nil)
		return
	}
	if (call.Method() == "resources/subscribe" || call.Method() == "resources/unsubscribe") && !call.Modern() && c.hub.era() == mcp.EraModern {
		c.legacySubscribe(call)
		return
	}
	var tool string
	if call.Method() == "tools/call" {
		name, hidden := c.hub.hiddenTool(call.Params())
		if hidden {
			call.Answer(nil, mcp.NewError(mcp.CodeInvalidParams, "unknown tool: %q", name))
			return
		}
		tool = name
		if tool == "" && (c.hub.hooks.Load() != nil || c.hub.tracer.Load() != nil) {
			tool = toolOf(call.Params()) // once, for the hooks and the span both
		}
	}
	if result, ok := c.hub.fromCatalog(call.Method()); ok {
		call.Answer(result, nil) // an idle server stays so
		return
	}
	f := &forward{call: call, tools: call.Method() == "tools/list"}
	if !c.hub.beginMeter(f, tool) {
		call.Answer(nil, mcp.NewError(CodeUnavailable, "server %q: %v", c.hub.name, ErrDraining))
		return
	}
	if call.Method() == "tools/call" {
		c.traceCall(f, tool)
	}
	if !c.begin(f) {
		return
	}
	if up := c.hub.current(); up != nil {
		if c.hub.forwarding != nil {
			c.hub.forwarding(up)
		}
		c.forward(up, f, false)
		return
	}
	c.forwardLater(f)
}

// begin counts a forward under way, and stops it when its call ends
// without an answer; it reports false when the call has ended already.
func (c *client) begin(f *forward) bool {
	f.seq = c.hub.seq.Add(1)
	c.mu.Lock()
	c.forwards[f] = struct{}{}
	c.mu.Unlock()
	c.noteUse() // before the request reaches the server: see IdleIf
	if !f.call.OnCancel(func(why error) { c.stop(f, why) }) {
		c.stop(f, errCancelled)
		return false
	}
	return true
}

// forwardLater forwards a request once the server is ready, on a goroutine
// of the client's that holds it meanwhile.
func (c *client) forwardLater(f *forward) {
	f.call.Hold()
	c.spawn(func() { c.forwardWhenReady(f) }) // else the client is going: its end stops f
}

var emptyResult = json.RawMessage(`{}`)

// forwardWhenReady waits for the server (starting, or restarting) without
// holding up the agent's other messages, then forwards the request.
func (c *client) forwardWhenReady(f *forward) {
	up, _, err := c.hub.ready(c.ctx)
	if err != nil {
		c.finish(f, nil, asWireError(err))
		return
	}
	c.forward(up, f, true)
}

func (c *client) initialize(call *agent.Call) {
	init, err := c.hub.initResult(c.ctx)
	if err != nil {
		call.Answer(nil, asWireError(err))
		return
	}
	result, err := initializeResult(init, c.conn.Identity().ProtocolVersion)
	if err != nil {
		call.Answer(nil, mcp.NewError(mcp.CodeInternalError, "initialize: %v", err))
		return
	}
	call.Answer(result, nil)
}

// forward sends a request to the server under an id of the upstream's, its
// progress token replaced by one of the hub's. Unless wait, it does not
// wait for the server to take it: a request that cannot be written at once
// (another write to the server is under way, or its input is full) waits
// on a goroutine of the client's, so that the agent's other requests (to
// the gateway's other servers too) and its cancellations are not held up.
// What waits so is bounded by the agent's requests under way (see
// agent.MaxInFlight) and, each, by the server's tool_timeout, which counts
// from then. A request that the upstream refuses as not sent (its process
// is ending) goes to the next process.
func (c *client) forward(up *Upstream, f *forward, wait bool) {
	method := f.call.Method()
	params, token := c.hub.remapProgress(c, f.call.Params())
	params = f.trace.withTrace(params)
	c.mu.Lock()
	f.token = token
	done := f.done
	c.mu.Unlock()
	if done {
		c.hub.dropToken(token)
		return
	}
	call, err := up.forward(c, f.call.Modern(), method, params, c.answered(up, f, method, params), wait)
	switch {
	case errors.Is(err, mcp.ErrWouldBlock):
		c.mu.Lock()
		f.token = ""
		c.mu.Unlock()
		c.hub.dropToken(token)
		// The bound counts from now: a server that never takes the
		// request does not hold it for ever.
		c.limit(f, method)
		f.call.Hold()
		// The goroutine ends when its write does: the server reads, or its
		// process ends (its stdin closes). The client's end does not wait
		// for it: it stops f, which the goroutine then cancels.
		go c.forward(up, f, true)
		return
	case errors.Is(err, mcp.ErrNotSent):
		c.mu.Lock()
		f.token = ""
		c.mu.Unlock()
		c.hub.dropToken(token)
		c.forwardLater(f)
		return
	case err != nil:
		c.finish(f, nil, asWireError(err))
		return
	}
	f.call.Release() // it is sent: its params are needed no more
	c.mu.Lock()
	f.up = call
	done = f.done
	c.mu.Unlock()
	if done { // it was stopped while we were sending
		call.CancelNoWait(errCancelled)
		return
	}
	c.limit(f, method)
}

// limit ends a request forwarded to the server when the server has not
// answered it within its tool_timeout: the agent gets an answer that
// says so, and the server a cancellation. It is the one place where the
// launcher enforces tool_timeout, for a hub's clients and the gateway's
// sessions (its members) alike: whatever the server does (it never
// answers, it streams progress without end, its answer could not be read
// and had no id to fail its call with, it never reads the request), the
// request ends. Progress does not extend the bound; a request bound
// already keeps its bound.
func (c *client) limit(f *forward, method string) {
	d := c.hub.callTimeout()
	t := time.AfterFunc(d, func() { c.timedOut(f, method, d) })
	c.mu.Lock()
	if !f.done && f.bound == nil {
		f.bound = t
		t = nil
	}
	c.mu.Unlock()
	if t != nil {
		t.Stop() // answered, stopped or bound already
	}
}

// timedOut ends a request at its tool_timeout: a tool call with an error
// result, which the model reads (a tool that takes too long is the tool's
// failure, as the spec has tool errors reported, and the model may call
// it again with less to do); any other request with a JSON-RPC error,
// CodeTimeout. The agent is answered first, then the server told: the
// cancellation may wait for a server that does not read its input (this
// runs on the timer's goroutine).
func (c *client) timedOut(f *forward, method string, d time.Duration) {
	why := fmt.Sprintf("server %q did not answer %s within its tool_timeout (%s): the request was cancelled; try again with less to do, or raise tool_timeout in the server's table of mcpgen.toml", c.hub.name, method, d)
	c.mu.Lock()
	up := f.up
	c.mu.Unlock()
	// The agent's trace context, if its request had one: this line joins
	// its trace.
	c.hub.log.Warn("a request took longer than the server's tool_timeout", append([]any{"server", c.hub.name, "client", c.displayName(), "method", method, "tool_timeout", d}, f.call.Trace()...)...)
	c.mu.Lock()
	f.timeout = true
	c.mu.Unlock()
	if method == "tools/call" {
		res, _ := mcp.ErrorResult("%s", why).MarshalJSON()
		c.finish(f, res, nil)
	} else {
		c.finish(f, nil, mcp.NewError(CodeTimeout, "%s", why))
	}
	if up != nil {
		up.Cancel(fmt.Errorf("the request took longer than the server's tool_timeout (%s)", d))
	}
}

var (
	errCancelled  = errors.New("cancelled by the client")
	errClientGone = errors.New("client disconnected")
)

// finish gives the agent the server's answer to a forwarded request, under
// its own id, unless the forward was stopped.
func (c *client) finish(f *forward, result json.RawMessage, err *mcp.Error) {
	c.mu.Lock()
	if f.done {
		c.mu.Unlock()
		return
	}
	if held := f.input.held; held != nil {
		held.Settle(result, err) // the agent's retry gets it (see resume)
		c.mu.Unlock()
		return
	}
	f.done = true
	delete(c.forwards, f)
	token, bound := f.token, f.bound
	f.bound = nil
	held := f.input.endLocked()
	call, timeout := f.call, f.timeout
	c.mu.Unlock()
	dropHeld(held, errCallEnded)
	if bound != nil {
		bound.Stop()
	}
	c.hub.dropToken(token)
	if f.tools && result != nil {
		result = c.hub.filterTools(result)
	}
	f.trace.end(result, err, nil)
	outcome := OutcomeTimeout
	if !timeout && !f.meter.start.IsZero() {
		outcome = outcomeOf(result, err) // only ToolCall hears of it
	}
	call.Answer(result, err)
	c.hub.endMeter(f, outcome)
	c.noteUse()
}

// stop ends a forward without an answer: the agent cancelled its request,
// or went, or the member left. The server is told (under its id), and its
// late answer is dropped.
func (c *client) stop(f *forward, why error) {
	c.mu.Lock()
	if f.done {
		c.mu.Unlock()
		return
	}
	f.done = true
	delete(c.forwards, f)
	up, token, bound := f.up, f.token, f.bound
	f.bound = nil
	held := f.input.endLocked()
	c.mu.Unlock()
	if up != nil {
		up.CancelNoWait(why) // it may run on the agent's read loop
	}
	// After the cancellation: refused first, a server's request that
	// held the call could let the server answer it before the
	// cancellation was sent, and it would never be.
	dropHeld(held, why)
	if bound != nil {
		bound.Stop()
	}
	c.hub.dropToken(token)
	f.trace.end(nil, nil, why)
	c.hub.endMeter(f, OutcomeCancelled)
	c.noteUse()
}

// Notification takes a notification of the agent's (see agent.Handler):
// the server gets it as it is. (The hub answers roots/list itself.)
func (c *client) Notification(msg *mcp.Message) {
	if msg.Method == "notifications/roots/list_changed" {
		return
	}
	if up := c.hub.current(); up != nil {
		_ = up.sendRaw(msg)
	}
}

// abandon stops what the client left under way: its answers have nowhere
// to go, and the server may stop working on them.
func (c *client) abandon() {
	c.mu.Lock()
	fs := make([]*forward, 0, len(c.forwards))
	for f := range c.forwards {
		fs = append(fs, f)
	}
	c.mu.Unlock()
	for _, f := range fs {
		c.stop(f, errClientGone)
	}
}

// spawn runs f on a goroutine of the client's, which its end waits for.
// Once it is ending it starts nothing, and reports false.
func (c *client) spawn(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return false
	}
	c.goroutines.Go(f)
	return true
}

// end ends what the client does on its own: its goroutines (which ctx
// ends) and what they forwarded as it went.
func (c *client) end() {
	c.cancelCtx()
	c.abandon()
	c.mu.Lock()
	c.ended = true
	subs := c.subs
	c.subs = nil
	c.mu.Unlock()
	if len(subs) > 0 {
		c.hub.unsubscribeResources(slices.Collect(maps.Keys(subs)))
	}
	c.goroutines.Wait()
	c.abandon() // what those goroutines forwarded as the client went
}

// deliver gives the agent a server's notification, as line (encoded, "\n"
// included): a notification that may be lost (lossy: a log message, or
// progress under the key of its token) is shed for an agent that is
// behind. A member's are first rewritten as its MemberOptions say.
func (c *client) deliver(msg *mcp.Message, line []byte, lossy bool, key string) {
	if c.member {
		c.mu.Lock()
		gone := c.gone
		c.mu.Unlock()
		if gone {
			return
		}
		if c.notify != nil {
			if lossy && key == "" && c.conn.Shed(c.hub) {
				return // before the work of rewriting it
			}
			out := c.notify(msg)
			if out == nil {
				return
			}
			if out != msg {
				line = agent.EncodeLine(out)
			}
		}
	}
	c.conn.Notify(line, lossy, key, c.hub)
}

// close disconnects the client: the server left the workspace, or the
// session is ending. A connection is flushed first; a member is told
// (MemberOptions.Closed), and gets nothing more.
func (c *client) close() {
	if !c.member {
		c.conn.Close()
		return
	}
	c.mu.Lock()
	was := c.gone
	c.gone = true
	c.mu.Unlock()
	if !was && c.closed != nil {
		c.closed()
	}
}

func (c *client) busy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.forwards) > 0
}

// info is who the client is, as the server's clients show it: the agent's
// identity, a member's tagged (MemberOptions.Tag).
func (c *client) info() mcp.Implementation {
	info := c.conn.Identity().Info
	if c.tag == "" {
		return info
	}
	switch {
	case info.Name == "":
		info.Name = "(initializing) (" + c.tag + ")"
	case info.Version == "":
		info.Name += " (" + c.tag + ")"
	default:
		info.Version += " (" + c.tag + ")"
	}
	return info
}

func (c *client) displayName() string {
	info := c.info()
	if info.Name == "" {
		return "(initializing)"
	}
	if info.Version == "" {
		return info.Name
	}
	return info.Name + " " + info.Version
}

// asWireError turns an error into the JSON-RPC error a client receives.
func asWireError(err error) *mcp.Error {
	var we *mcp.Error
	if errors.As(err, &we) {
		return we
	}
	return mcp.NewError(CodeUnavailable, "%v", err)
}
