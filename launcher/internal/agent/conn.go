// Package agent is one agent's connection to the launcher, whichever face
// the agent reaches: a server's hub (mcpgen connect NAME) or the workspace
// gateway (mcpgen connect --workspace W). A Conn reads the agent's
// messages, answers the lines it cannot read, admits its requests within
// bounds (and stops reading an agent that asks faster than it reads),
// knows who the agent is (what its initialize said), answers ping, writes
// what the agent is sent within bounds (shedding log messages and
// coalescing progress for an agent that is behind, dropping one too far
// behind), sends the agent the servers' requests and routes its answers
// back, and, once the agent closed its input, waits for the answers it is
// owed. What a request means is the face's: the Conn hands each to a
// Handler (the hub's single server, the gateway's routing), which answers
// it through its Call.
//
// A Conn of lines on a connection (New, Serve) is what the sockets and
// pipes of mcpgen connect need. The Conn itself deals in messages
// (Receive) and writes through an outlet: a face whose messages come
// otherwise (an HTTP request each) hands them to Receive, and takes what
// the Conn writes through an outlet of its own.
package agent

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

// MaxInFlight bounds an agent's requests under way: handed to its Handler
// or answered by the Conn, until their answer is written to the agent. It
// keeps one agent from taking a whole server (another's requests get their
// turn) and bounds the answers that wait for an agent that asks without
// reading.
const MaxInFlight = 64

// MaxWaiting more requests may wait for a slot, read but not started: the
// read loop goes on reading meanwhile, so that the agent's cancellations,
// and its answers to the servers' requests, still arrive. Beyond, the Conn
// stops reading the agent until a slot frees: the agent's writes then wait
// in its own socket.
const MaxWaiting = MaxInFlight

// MaxHeldBytes bounds the params of the agent's requests that are held
// beyond the read loop's turn: those that wait for a slot, and those that
// a Handler holds (Call.Hold: waiting for a server that starts, say). Each
// is held as a copy of its params, so that the line it was read from, up to
// mcp.MaxLineSize whatever the params' size, is not kept too. While more is
// held, no request starts.
const MaxHeldBytes = mcp.MaxLineSize

// CodeUnavailable is the JSON-RPC error code of a request that cannot be
// completed because a peer went: the TypeScript SDK's for a closed
// connection.
const CodeUnavailable = -32000

// A Handler is a face's part of a Conn: what the agent's requests mean.
type Handler interface {
	// Request handles one of the agent's requests that the Conn admitted
	// and does not answer itself (ping), initialize included (the Conn
	// has read who the agent is by then): it answers it through the Call,
	// now or later, once. It runs on the Conn's read loop, or on the
	// goroutine that starts the requests that waited for a slot: what
	// waits goes on a goroutine (Conn.Go), the call held (Call.Hold).
	Request(call *Call)
	// Notification takes a notification of the agent's that the Conn
	// does not handle itself (it handles notifications/initialized and
	// notifications/cancelled), on the read loop.
	Notification(msg *mcp.Message)
	// Describe says what the face stands for, for server/discover and the
	// results of modern requests (see era.go); nil while it does not know
	// yet (its server never started). It runs on the Conn's goroutines
	// and the servers' read loops: it must not block.
	Describe() *Description
	// Ready waits, within ctx, until Describe knows: a server/discover
	// that came first waits for it, as a request would for its server.
	Ready(ctx context.Context) error
}

// Limits bound what a Conn holds for its agent beyond the constants; the
// zero value is the defaults.
type Limits struct {
	// MaxQueued is how many bytes may wait to be written to the agent,
	// answers included, before it is dropped; 0: MaxQueued.
	MaxQueued int
	// SoftQueued is how many bytes may wait before the agent's requests
	// stop being started (it is read no faster than it reads); 0:
	// SoftQueued; negative: no such bound, so that an agent that asks
	// for more than it reads is dropped at MaxQueued instead.
	SoftQueued int
}

// Options configure a Conn.
type Options struct {
	// Log hears of the connection: an agent dropped for being too slow.
	Log *slog.Logger
	// Limits bound what waits for the agent.
	Limits Limits
	// AnswerBound is the longest an answer owed to the agent may take: an
	// agent that closed its input waits no longer than that for the
	// answers to what it asked before. nil: it waits for none.
	AnswerBound func() time.Duration
	// Eras, if set, counts the agent's requests of each era, with those of
	// the face's other agents.
	Eras *EraTotals
	// Stalled, in tests, hears each time the read loop starts waiting for
	// room: how a test knows that the Conn stopped reading the agent.
	Stalled func()
}

// An Identity is what an agent said of itself in its initialize.
type Identity struct {
	Info            mcp.Implementation
	ProtocolVersion string // the version it asked for
	// Capabilities and ClientInfo as the agent sent them: objects, or nil.
	Capabilities, ClientInfo json.RawMessage
	// Sampling and Elicitation: the capabilities that the servers'
	// requests need.
	Sampling, Elicitation bool
}

// A Conn is one agent's connection. Its goroutines: the read loop (Serve,
// on the caller's goroutine), its outlet's writer, and, at times,
// goroutines of its own (Go), which Serve waits for before it returns.
type Conn struct {
	h      Handler
	log    *slog.Logger
	opts   Options
	soft   int // Limits.SoftQueued, as it applies: < 0 none
	rwc    io.ReadWriteCloser
	r      *mcp.Reader
	out    outlet
	box    *outbox // the outlet of a connection of lines
	losses lossLog
	drain  *drain

	// ctx is done when the agent has gone (or was dropped): what waits on
	// its behalf stops.
	ctx        context.Context
	cancelCtx  context.CancelFunc
	goroutines sync.WaitGroup
	dropOnce   sync.Once

	// room wakes a read loop that waits for a slot (see request, take).
	room chan struct{}

	mu          sync.Mutex
	id          Identity
	session     bool // the agent sent initialize: it has a legacy session
	initialized bool
	eras        EraCounts
	calls       map[mcp.ID]*Call         // requests under way, by the agent's id
	slots       int                      // requests under way, and answers not yet written (see MaxInFlight)
	waiting     []*mcp.Message           // requests waiting for a slot, oldest first; held
	heldBytes   int                      // the params held (see MaxHeldBytes)
	starting    bool                     // a goroutine starts waiting requests
	ended       bool                     // the Conn is ending: no more goroutines
	logCalls    int                      // calls under way that asked for log messages (WantsLog)
	tasks       []task                   // tasks issued to the agent, oldest first (tasks.go)
	subs        map[mcp.ID]*subscription // the agent's subscriptions/listen, by id (subscribe.go)
	asks        map[mcp.ID]*Ask          // requests sent to the agent, by their id
	nextAsk     int64
	asksEnded   bool // the agent can answer nothing more
}

// An outlet takes what a Conn writes to its agent: the outbox of a
// connection of lines.
type outlet interface {
	// put hands over a line for the agent: see outbox.put.
	put(l outLine) (Loss, error)
	// shed loses a notification that may be lost, when the agent is
	// behind (without its line, which need not be made), as put would;
	// ok is false when the agent is not behind, and nothing was done.
	shed(l outLine) (loss Loss, err error, ok bool)
	// size is how many bytes wait for the agent.
	size() int
	// close ends the outlet: nothing more is taken (an outbox flushes
	// what it holds first).
	close()
	// finished is closed once the outlet has ended.
	finished() <-chan struct{}
}

// clientReadBuffer is the read buffer of an agent's connection: small,
// since a launcher may hold many idle ones; longer lines are still read
// whole.
const clientReadBuffer = 4 << 10

// New returns a Conn of lines on rwc, one JSON-RPC message per line each
// way, whose requests h handles. ctx ends it, as the agent's leaving does.
// Call Serve.
func New(ctx context.Context, rwc io.ReadWriteCloser, h Handler, opts Options) *Conn {
	c := &Conn{
		h:     h,
		log:   opts.Log,
		opts:  opts,
		soft:  opts.Limits.SoftQueued,
		rwc:   rwc,
		r:     mcp.NewReaderSize(rwc, clientReadBuffer),
		drain: newDrain(),
		room:  make(chan struct{}, 1),
		calls: make(map[mcp.ID]*Call),
		asks:  make(map[mcp.ID]*Ask),
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.soft == 0 {
		c.soft = SoftQueued
	}
	maxQueued := opts.Limits.MaxQueued
	if maxQueued <= 0 {
		maxQueued = MaxQueued
	}
	c.ctx, c.cancelCtx = context.WithCancel(ctx)
	c.box = newOutbox(rwc, maxQueued, c.release)
	c.out = c.box
	return c
}

// Context is done once the agent has gone, or was dropped.
func (c *Conn) Context() context.Context { return c.ctx }

// Serve serves the agent until it disconnects, is dropped or is closed:
// then what it left under way is cancelled (each call's OnCancel), and
// Serve returns once the connection is closed and every goroutine of the
// Conn's has ended.
func (c *Conn) Serve() {
	// The writer ends when the outbox is closed and flushed, or when a
	// write fails; either way it closes the connection, which ends the
	// read loop if it has not ended yet, and the agent is gone: what
	// waits on its behalf (a drain too) stops.
	go func() {
		c.box.run(c.rwc.Close)
		c.cancelCtx()
	}()
	c.readLoop()
	c.cancelCtx()
	c.out.close()
	c.abandon()
	c.mu.Lock()
	c.ended = true
	c.mu.Unlock()
	c.goroutines.Wait()
	c.abandon() // what those goroutines handed on as the agent went
	<-c.out.finished()
	c.endAsks()
	c.losses.flush(c.DisplayName)
}

// readLoop reads the agent's messages until its connection ends. An agent
// that closed its input (EOF) first gets the answers to what it asked
// (see owes): MCP asks a server to answer what it read before it exits,
// and `printf '...' | mcpgen connect` is such an agent.
func (c *Conn) readLoop() {
	for {
		msg, err := c.r.Read()
		if err != nil {
			var de *mcp.DecodeError
			if !errors.As(err, &de) {
				if errors.Is(err, io.EOF) {
					c.endSubscriptions() // owed no more: it can hear nothing
				}
				if errors.Is(err, io.EOF) && c.opts.AnswerBound != nil {
					c.drain.wait(c.ctx.Done(), c.opts.AnswerBound(), c.owes)
				}
				return
			}
			// The launcher is the agent's server: JSON-RPC 2.0 asks a
			// server to answer every line it cannot parse, plain text
			// with id null too.
			if resp := de.ServerResponse(); resp != nil && c.take() {
				c.reply(resp.ID, nil, resp.Error)
			}
			continue
		}
		c.Receive(msg)
	}
}

// Receive takes one message of the agent's, as the read loop does: a
// request is admitted (Receive waits while the agent has as many under
// way as it may), a notification handled, a response routed to the
// request of the servers' that it answers. Call it from one goroutine,
// one message after the other.
func (c *Conn) Receive(msg *mcp.Message) {
	switch {
	case msg.IsRequest():
		c.request(msg)
	case msg.IsNotification():
		c.notification(msg)
	case msg.IsResponse():
		c.response(msg)
	}
}

// request admits a request: it starts at once when a slot is free, waits
// for one when the queue has room, and otherwise the read loop waits,
// which stops reading the agent (the backpressure that bounds a flood).
func (c *Conn) request(msg *mcp.Message) {
	for {
		c.mu.Lock()
		if len(c.waiting) == 0 && c.roomLocked() {
			c.slots++
			c.mu.Unlock()
			c.start(msg, false)
			return
		}
		if len(c.waiting) == 0 || len(c.waiting) < MaxWaiting && c.heldBytes+len(msg.Params) <= MaxHeldBytes {
			held := *msg
			held.Params = bytes.Clone(msg.Params)
			c.heldBytes += len(held.Params)
			c.waiting = append(c.waiting, &held)
			c.startWaitingLocked()
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		if !c.waitRoom() {
			return
		}
	}
}

// take takes a slot for an answer of the Conn's own (to a line it could
// not read), after the requests that wait. It reports false when the agent
// went meanwhile.
func (c *Conn) take() bool {
	for {
		c.mu.Lock()
		if len(c.waiting) == 0 && c.roomLocked() {
			c.slots++
			c.mu.Unlock()
			return true
		}
		c.mu.Unlock()
		if !c.waitRoom() {
			return false
		}
	}
}

// roomLocked reports whether a request may start: a slot is free, and the
// agent reads what it is sent.
func (c *Conn) roomLocked() bool {
	return c.slots < MaxInFlight && c.heldBytes < MaxHeldBytes && (c.soft < 0 || c.out.size() < c.soft)
}

// waitRoom waits until there may be room, and reports false when the
// agent has gone instead.
func (c *Conn) waitRoom() bool {
	if c.opts.Stalled != nil {
		c.opts.Stalled()
	}
	select {
	case <-c.room:
		return true
	case <-c.ctx.Done():
	case <-c.out.finished():
	}
	return false
}

// release frees the slots of n requests whose answers were written (or
// that will have none), and lets what waits for room go on. The outbox
// calls it after every write, n 0 included: its queue shrank.
func (c *Conn) release(n int) {
	c.mu.Lock()
	c.slots -= n
	c.mu.Unlock()
	c.roomMade()
}

func (c *Conn) roomMade() {
	select {
	case c.room <- struct{}{}:
	default: // a wake-up is pending already
	}
	c.mu.Lock()
	c.startWaitingLocked()
	c.mu.Unlock()
	c.drain.kick()
}

// owes reports whether the agent has requests whose answers are not
// written yet: under way, or waiting for a slot.
func (c *Conn) owes() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slots > 0 || len(c.waiting) > 0
}

// startWaitingLocked starts a goroutine that starts the requests that
// wait, when there is room for them. The read loop may be blocked reading
// the agent, and whoever made room (a server's read loop, say) must not
// start requests: a write to a busy server may block.
func (c *Conn) startWaitingLocked() {
	if c.starting || c.ended || len(c.waiting) == 0 || !c.roomLocked() {
		return
	}
	c.starting = true
	c.goroutines.Go(c.startWaiting)
}

// startWaiting starts waiting requests, oldest first, while there is room.
// It ends when none is left, when there is no room, or when the agent has
// gone.
func (c *Conn) startWaiting() {
	for {
		c.mu.Lock()
		if len(c.waiting) == 0 || !c.roomLocked() || c.ctx.Err() != nil {
			c.starting = false
			c.mu.Unlock()
			return
		}
		held := c.waiting[0]
		c.waiting[0] = nil
		c.waiting = c.waiting[1:]
		c.slots++
		c.mu.Unlock()
		c.start(held, true)
		c.roomMade() // wakes the read loop, which may wait for room in the queue
	}
}

// unwaitLocked drops a request that waits for a slot; it reports whether
// there was one with that id.
func (c *Conn) unwaitLocked(id mcp.ID) bool {
	for i, m := range c.waiting {
		if m.ID == id {
			c.heldBytes -= len(m.Params)
			c.waiting = append(c.waiting[:i], c.waiting[i+1:]...)
			return true
		}
	}
	return false
}

var emptyResult = json.RawMessage(`{}`)

// start starts a request that has a slot: the Conn answers ping, and hands
// the rest to the Handler as a Call; held says that msg's params are a
// copy counted in heldBytes, which the Call takes over.
func (c *Conn) start(msg *mcp.Message, held bool) {
	call := &Call{c: c, id: msg.ID, method: msg.Method, params: msg.Params}
	if held {
		call.held = len(msg.Params)
	}
	if msg.Method != "initialize" { // which opens a legacy session, whatever its _meta
		meta, modern, err := readEra(msg.Params)
		if err != nil {
			call.Release()
			c.reply(msg.ID, nil, err)
			return
		}
		if modern {
			call.modern, call.meta = true, meta
			c.noteModern(&meta)
		} else {
			if bytes.Contains(msg.Params, []byte(`"`+mcp.MetaTraceparent+`"`)) {
				// A legacy agent's trace context: kept for the log lines of
				// the call (Trace), as a modern one's.
				if m, err := mcp.ParseRequestMeta(msg.Params); err == nil {
					call.meta.Traceparent, call.meta.Tracestate = m.Traceparent, m.Tracestate
				}
			}
			c.noteLegacy()
		}
	} else {
		c.noteLegacy()
	}
	if msg.Method == "ping" {
		call.Release()
		result := emptyResult
		if call.modern {
			result = c.complete(call, result)
		}
		c.reply(msg.ID, result, nil)
		return
	}
	c.mu.Lock()
	if _, dup := c.calls[msg.ID]; dup {
		c.mu.Unlock()
		call.Release()
		c.reply(msg.ID, nil, mcp.NewError(mcp.CodeInvalidRequest, "request id %s is already in flight", msg.ID))
		return
	}
	c.calls[msg.ID] = call
	if call.meta.LogLevel != "" {
		c.logCalls++
	}
	c.mu.Unlock()
	switch msg.Method {
	case "initialize":
		if err := c.initialize(msg.Params); err != nil {
			call.Answer(nil, err)
			return
		}
	case "server/discover":
		c.discover(call) // never the face's: see era.go
		return
	case "subscriptions/listen":
		c.listen(call) // never the face's: see subscribe.go
		return
	}
	c.h.Request(call)
}

// initialize reads who the agent is from the params of its initialize.
func (c *Conn) initialize(params json.RawMessage) *mcp.Error {
	var p struct {
		ProtocolVersion string                     `json:"protocolVersion"`
		ClientInfo      json.RawMessage            `json:"clientInfo"`
		Capabilities    map[string]json.RawMessage `json:"capabilities"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return mcp.NewError(mcp.CodeInvalidParams, "initialize: %v", err)
	}
	var raw struct {
		Capabilities json.RawMessage `json:"capabilities"`
	}
	_ = json.Unmarshal(params, &raw)
	id := Identity{ProtocolVersion: p.ProtocolVersion}
	if len(p.ClientInfo) > 0 && string(p.ClientInfo) != "null" {
		if err := json.Unmarshal(p.ClientInfo, &id.Info); err != nil {
			return mcp.NewError(mcp.CodeInvalidParams, "initialize: %v", err)
		}
	}
	if isObject(raw.Capabilities) {
		id.Capabilities = bytes.Clone(raw.Capabilities)
	}
	if isObject(p.ClientInfo) {
		id.ClientInfo = bytes.Clone(p.ClientInfo)
	}
	_, id.Sampling = p.Capabilities["sampling"]
	_, id.Elicitation = p.Capabilities["elicitation"]
	c.mu.Lock()
	c.id = id
	c.session = true
	c.mu.Unlock()
	return nil
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// notification handles a notification of the agent's.
func (c *Conn) notification(msg *mcp.Message) {
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
	default:
		c.h.Notification(msg)
	}
}

var (
	errCancelled  = errors.New("cancelled by the client")
	errClientGone = errors.New("client disconnected")
)

// cancel stops a request of the agent's: one that waits for a slot is
// dropped; one under way ends (its OnCancel is called). Either way the
// agent gets no answer, as the spec says.
func (c *Conn) cancel(id mcp.ID, why error) {
	c.mu.Lock()
	call := c.calls[id]
	if call == nil {
		dropped := c.unwaitLocked(id)
		c.mu.Unlock()
		if dropped {
			c.roomMade()
		}
		return
	}
	delete(c.calls, id)
	stop := call.endLocked()
	c.mu.Unlock()
	c.release(1) // no answer will take its slot
	if stop != nil {
		stop(why)
	}
}

// abandon ends what a departed agent left: its answers have nowhere to go,
// and the servers may stop working on them.
func (c *Conn) abandon() {
	c.mu.Lock()
	var stops []func(error)
	for id, call := range c.calls {
		delete(c.calls, id)
		if stop := call.endLocked(); stop != nil {
			stops = append(stops, stop)
		}
	}
	for _, m := range c.waiting {
		c.heldBytes -= len(m.Params)
	}
	c.waiting = nil
	c.mu.Unlock()
	for _, stop := range stops {
		stop(errClientGone)
	}
}

// Go runs f on a goroutine of the Conn's, which Serve waits for. Once the
// Conn is ending it starts nothing, and reports false.
func (c *Conn) Go(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return false
	}
	c.goroutines.Go(f)
	return true
}

// reply writes the answer to one of the agent's requests, which frees the
// request's slot once written.
func (c *Conn) reply(id mcp.ID, result json.RawMessage, err *mcp.Error) {
	m := mcp.Message{ID: id, Result: result}
	if err != nil {
		m = mcp.Message{ID: id, Error: err}
	}
	c.put(outLine{b: EncodeLine(&m), answer: true}, nil)
}

// put hands a line to the outlet: a notification that an agent behind
// loses is counted on src, and an agent too far behind is dropped.
func (c *Conn) put(l outLine, src Source) {
	loss, err := c.out.put(l)
	c.lost(loss, err, src)
}

func (c *Conn) lost(loss Loss, err error, src Source) {
	if loss != Kept {
		c.losses.add(src, loss, c.DisplayName)
	}
	if errors.Is(err, errTooSlow) || errors.Is(err, errNoReading) {
		c.drop(err)
	}
}

// Send writes a message of the face's own to the agent (a notification
// that its lists changed, say), which it may not lose.
func (c *Conn) Send(msg *mcp.Message) { c.put(outLine{b: EncodeLine(msg)}, nil) }

// Notify writes a server's notification to the agent, as line (one line,
// "\n" included, which the Conn does not modify: other agents may be
// writing it too). One that may be lost (lossy: a log message, or
// progress, whose token's key is key, unique among the agent's) is shed
// when the agent is behind, and what it lost is counted on src.
func (c *Conn) Notify(line []byte, lossy bool, key string, src Source) {
	c.put(outLine{b: line, lossy: lossy, token: key}, src)
}

// Shed loses a log message of src's (a notification that may be lost, with
// no token) if the agent is behind, as Notify would, and reports whether
// it did: the caller need not make its line.
func (c *Conn) Shed(src Source) bool {
	loss, err, ok := c.out.shed(outLine{lossy: true})
	if ok {
		c.lost(loss, err, src)
	}
	return ok
}

// drop disconnects an agent that cannot keep up, without waiting for it:
// whatever goroutine finds out (a server's read loop, delivering a
// notification) must not block. The read loop stops at once, and Serve
// cancels what the agent left under way; what is queued for it is flushed
// within flushTimeout.
func (c *Conn) drop(why error) {
	c.dropOnce.Do(func() {
		c.log.Warn("client dropped", "client", c.DisplayName(), "reason", why)
		c.cancelCtx()
		c.out.close()
		if d, ok := c.rwc.(interface{ SetReadDeadline(time.Time) error }); ok {
			_ = d.SetReadDeadline(time.Now())
		}
	})
}

// Close disconnects the agent: its server left the workspace, or the
// session is ending. What is queued for it is flushed first.
func (c *Conn) Close() { c.out.close() }

// EncodeLine encodes a message as one line, "\n" included. Its raw parts
// come from lines that were read, so they hold no newline; one would be
// replaced, as mcp.Writer does.
func EncodeLine(msg *mcp.Message) []byte {
	b := msg.AppendJSON(make([]byte, 0, 64+len(msg.Params)+len(msg.Result)))
	for i, ch := range b {
		if ch == '\n' {
			b[i] = ' '
		}
	}
	return append(b, '\n')
}

// Identity returns what the agent said of itself in its initialize; the
// zero Identity before it did.
func (c *Conn) Identity() Identity {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.id
}

// Initialized reports whether the agent sent notifications/initialized.
func (c *Conn) Initialized() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.initialized
}

// Can reports whether the agent declared the capability that a server's
// request needs.
func (c *Conn) Can(method string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case strings.HasPrefix(method, "sampling/"):
		return c.id.Sampling
	case strings.HasPrefix(method, "elicitation/"):
		return c.id.Elicitation
	}
	return false
}

// DisplayName names the agent as it named itself: "NAME VERSION".
func (c *Conn) DisplayName() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.id.Info.Name == "" {
		return "(initializing)"
	}
	if c.id.Info.Version == "" {
		return c.id.Info.Name
	}
	return c.id.Info.Name + " " + c.id.Info.Version
}

// Stats are what a Conn holds for its agent now.
type Stats struct {
	Calls   int // requests under way
	Slots   int // requests under way, and answers not yet written
	Waiting int // requests waiting for a slot
	Held    int // bytes of params held
	Queued  int // bytes waiting to be written
}

// Stats returns what the Conn holds now.
func (c *Conn) Stats() Stats {
	c.mu.Lock()
	s := Stats{Calls: len(c.calls), Slots: c.slots, Waiting: len(c.waiting), Held: c.heldBytes}
	c.mu.Unlock()
	s.Queued = c.out.size()
	return s
}

// Calls returns the agent's requests under way.
func (c *Conn) Calls() []*Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*Call, 0, len(c.calls))
	for _, call := range c.calls {
		out = append(out, call)
	}
	return out
}
