package hub

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/mcpgen/mcpgen/mcp"
)

// This file is a client's connection: reading its messages, admitting its
// requests within bounds, and its end. What the messages mean is in
// client.go; how lines reach the client, in outbox.go.

// maxInFlight bounds a client's requests under way: forwarded to the
// server or answered by the hub, until their answer is written to the
// client. It keeps one client from taking the whole server (another's
// requests get their turn) and bounds the answers that wait for a client
// that asks without reading.
const maxInFlight = 64

// As many more requests may wait for a slot, read but not started: the
// client's read loop goes on reading meanwhile, so that its cancellations,
// and its answers to the server's requests, still arrive. Beyond, it stops
// reading the client until a slot frees: the client's writes then wait in
// its own socket.
const maxWaiting = maxInFlight

// maxHeldBytes bounds the params of the client's requests that the hub
// holds beyond the read loop's turn: those that wait for a slot, and those
// that wait for the server (starting, or restarting). Each is held as a
// copy of its params (see hold), so that the line it was read from, up to
// mcp.MaxLineSize whatever the params' size, is not kept too. While more
// is held, no request starts.
const maxHeldBytes = mcp.MaxLineSize

// clientReadBuffer is the read buffer of a client connection: small, since
// a launcher may hold many idle ones; longer lines are still read whole.
const clientReadBuffer = 4 << 10

// A client is one client connection of a hub, typically `mcpgen connect`
// run by an agent, or the agent's own stdio handed over by it. It has two
// goroutines: its read loop (run, on the caller's goroutine) and its
// outbox's writer; and, at times, goroutines of its own (see spawn), which
// run waits for.
type client struct {
	hub  *Hub
	conn io.ReadWriteCloser // nil for a Member
	r    *mcp.Reader        // nil for a Member
	out  outlet
	box  *outbox // the connection's outlet; nil for a Member

	// ctx is done when the client has gone (or was dropped): what waits
	// for the server on its behalf stops.
	ctx        context.Context
	cancelCtx  context.CancelFunc
	goroutines sync.WaitGroup
	dropOnce   sync.Once

	// room wakes a read loop that waits for a slot (see request, take).
	room chan struct{}

	mu          sync.Mutex
	info        mcp.Implementation
	agent       *agent // what its initialize said, for a modern server (modern.go)
	sampling    bool
	elicitation bool
	initialized bool
	inflight    map[mcp.ID]*forward // forwarded requests, by the client's id
	slots       int                 // requests under way (see maxInFlight)
	waiting     []*mcp.Message      // requests waiting for a slot, oldest first; held
	heldBytes   int                 // the params of the requests held (see hold)
	starting    bool                // a goroutine starts waiting requests
	ended       bool                // run is ending: no more goroutines

	// A member's use of the server, as the hub counts it (see lazy.go):
	// inUse while it has requests under way. useMu orders the changes,
	// so that the hub hears them in the order they happened.
	useMu    sync.Mutex
	inUse    bool
	departed bool // it left: it uses nothing any more

	// drain wakes a client that closed its input and waits for its
	// answers (see readLoop).
	drain *Drain

	// losses counts the notifications it lost because it read them too
	// slowly (see outbox.put).
	losses LossLog
}

func newClient(ctx context.Context, h *Hub, conn io.ReadWriteCloser) *client {
	c := &client{
		hub:      h,
		conn:     conn,
		r:        mcp.NewReaderSize(conn, clientReadBuffer),
		room:     make(chan struct{}, 1),
		inflight: make(map[mcp.ID]*forward),
		drain:    NewDrain(),
	}
	c.ctx, c.cancelCtx = context.WithCancel(ctx)
	c.box = newOutbox(conn, c.release)
	c.out = c.box
	return c
}

// An outlet takes what the hub has for one client: a connection's outbox
// (outbox.go), or a Member's function (member.go).
type outlet interface {
	// put hands over a line for the client: see outbox.put.
	put(l outLine) (Loss, error)
	// size is how many bytes wait for the client.
	size() int
	// close ends the outlet: nothing more is taken (an outbox flushes
	// what it holds first).
	close()
	// finished is closed once the outlet has ended.
	finished() <-chan struct{}
}

// run serves the client until it disconnects, is dropped or is closed:
// then it cancels upstream what the client left in flight, and returns
// once the connection is closed and every goroutine of the client's has
// ended.
func (c *client) run() {
	// The writer ends when the outbox is closed and flushed, or when a
	// write fails; either way it closes the connection, which ends the
	// read loop if it has not ended yet, and the client is gone: what
	// waits on its behalf (a drain too) stops.
	go func() {
		c.box.run(c.conn.Close)
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
	c.abandon() // what those goroutines forwarded as the client went
	<-c.out.finished()
	c.losses.Flush(c.displayName)
}

// readLoop reads the client's messages until its connection ends. A
// client that closed its input (EOF) first gets the answers to what it
// asked (see owes): MCP asks a server to answer what it read before it
// exits, and `printf '...' | mcpgen connect` is such a client.
func (c *client) readLoop() {
	for {
		msg, err := c.r.Read()
		if err != nil {
			var de *mcp.DecodeError
			if !errors.As(err, &de) {
				if errors.Is(err, io.EOF) {
					c.drain.Wait(c.ctx.Done(), c.hub.AnswerBound(), c.owes)
				}
				return
			}
			// The hub is the client's server: JSON-RPC 2.0 asks a server
			// to answer every line it cannot parse, plain text with id
			// null too.
			if resp := de.ServerResponse(); resp != nil && c.take() {
				c.answer(resp.ID, nil, resp.Error)
			}
			continue
		}
		switch {
		case msg.IsRequest():
			c.request(msg)
		case msg.IsNotification():
			c.notification(msg)
		case msg.IsResponse():
			c.hub.clientResponse(c, msg)
		}
	}
}

// request admits a request: it starts at once when a slot is free, waits
// for one when the queue has room, and otherwise the read loop waits,
// which stops reading the client (the backpressure that bounds a flood).
func (c *client) request(msg *mcp.Message) {
	for {
		c.mu.Lock()
		if len(c.waiting) == 0 && c.roomLocked() {
			c.slots++
			c.mu.Unlock()
			c.noteUse() // before the request reaches the server: see IdleIf
			c.start(msg)
			return
		}
		if len(c.waiting) == 0 || len(c.waiting) < maxWaiting && c.heldBytes+len(msg.Params) <= maxHeldBytes {
			c.waiting = append(c.waiting, c.holdLocked(msg))
			c.startWaitingLocked()
			c.mu.Unlock()
			c.noteUse()
			return
		}
		c.mu.Unlock()
		if !c.waitRoom() {
			return
		}
	}
}

// take takes a slot for an answer of the hub's own (to a line it could not
// read), after the requests that wait. It reports false when the client
// went meanwhile.
func (c *client) take() bool {
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
// client reads what it is sent.
func (c *client) roomLocked() bool {
	return c.slots < maxInFlight && c.heldBytes < maxHeldBytes && c.out.size() < softQueued
}

// hold keeps a request beyond the read loop's turn: a copy of it whose
// params are its own, counted against maxHeldBytes until unhold.
func (c *client) hold(msg *mcp.Message) *mcp.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.holdLocked(msg)
}

func (c *client) holdLocked(msg *mcp.Message) *mcp.Message {
	held := *msg
	held.Params = bytes.Clone(msg.Params)
	c.heldBytes += len(held.Params)
	return &held
}

// unhold ends what hold began: there may be room again.
func (c *client) unhold(held *mcp.Message) {
	c.mu.Lock()
	c.heldBytes -= len(held.Params)
	c.mu.Unlock()
	c.roomMade()
}

// waitRoom waits until there may be room, and reports false when the
// client has gone instead.
func (c *client) waitRoom() bool {
	if c.hub.roomWaits != nil {
		c.hub.roomWaits()
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
func (c *client) release(n int) {
	c.mu.Lock()
	c.slots -= n
	c.mu.Unlock()
	c.roomMade()
}

func (c *client) roomMade() {
	select {
	case c.room <- struct{}{}:
	default: // a wake-up is pending already
	}
	c.mu.Lock()
	c.startWaitingLocked()
	c.mu.Unlock()
	if c.drain != nil {
		c.drain.Kick()
	}
	c.noteUse()
}

// owes reports whether the client has requests whose answers are not
// written yet: under way (forwarded, waiting for the server, answered by
// the hub), or waiting for a slot.
func (c *client) owes() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slots > 0 || len(c.waiting) > 0
}

// noteUse tells the hub when a member's requests begin or end being under
// way (see lazy.go); a connection's use is its being connected.
func (c *client) noteUse() {
	if c.conn != nil {
		return
	}
	c.useMu.Lock()
	defer c.useMu.Unlock()
	inUse := c.owes()
	if c.departed || inUse == c.inUse {
		return
	}
	c.inUse = inUse
	c.hub.memberBusy(inUse)
}

// leftBusy ends a member's use: it left.
func (c *client) leftBusy() {
	c.useMu.Lock()
	defer c.useMu.Unlock()
	if c.inUse {
		c.inUse = false
		c.hub.memberBusy(false)
	}
	c.departed = true
}

// startWaitingLocked starts a goroutine that starts the requests that
// wait, when there is room for them. The read loop may be blocked reading
// the client, and whoever made room (the upstream's read loop, say) must
// not forward requests: a write to a busy server may block.
func (c *client) startWaitingLocked() {
	if c.starting || c.ended || len(c.waiting) == 0 || !c.roomLocked() {
		return
	}
	c.starting = true
	c.goroutines.Go(c.startWaiting)
}

// startWaiting starts waiting requests, oldest first, while there is room.
// It ends when none is left, when there is no room, or when the client has
// gone.
func (c *client) startWaiting() {
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
		c.start(held)
		c.unhold(held) // and wakes the read loop, which may wait for room in the queue
	}
}

// unwaitLocked drops a request that waits for a slot; it reports whether
// there was one with that id.
func (c *client) unwaitLocked(id mcp.ID) bool {
	for i, m := range c.waiting {
		if m.ID == id {
			c.heldBytes -= len(m.Params)
			c.waiting = append(c.waiting[:i], c.waiting[i+1:]...)
			return true
		}
	}
	return false
}

// spawn runs f on a goroutine of the client's, which run waits for. Once
// run is ending it starts nothing, and reports false.
func (c *client) spawn(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return false
	}
	c.goroutines.Go(f)
	return true
}

// put hands a line to the outlet: a notification that a client behind
// loses is counted, and a client too far behind is dropped.
func (c *client) put(l outLine) {
	loss, err := c.out.put(l)
	if loss != Kept {
		c.losses.Add(c.hub, loss, c.displayName)
	}
	if errors.Is(err, errTooSlow) || errors.Is(err, errNoReading) {
		c.drop(err)
	}
}

// drop disconnects a client that cannot keep up, without waiting for it:
// whatever goroutine finds out (the upstream's read loop, delivering a
// notification) must not block. The client's read loop stops at once, and
// its run cancels upstream what it left in flight; what is queued for it
// is flushed within flushTimeout.
func (c *client) drop(why error) {
	c.dropOnce.Do(func() {
		c.hub.log.Warn("client dropped", "server", c.hub.name, "client", c.displayName(), "reason", why)
		c.cancelCtx()
		c.out.close()
		if d, ok := c.conn.(interface{ SetReadDeadline(time.Time) error }); ok {
			_ = d.SetReadDeadline(time.Now())
		}
	})
}

// close disconnects the client: the server left the workspace, or the
// session is ending. What is queued for it is flushed first.
func (c *client) close() { c.out.close() }
