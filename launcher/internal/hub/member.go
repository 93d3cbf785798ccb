package hub

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"github.com/mcpgen/mcpgen/mcp"
)

// A Member is a client of the hub that lives in the launcher, such as a
// session of the workspace gateway: it hands the hub its messages itself
// (Handle) and receives the hub's through a function, with no connection
// in between. It is remapped, and bounded, as every client is: its request
// ids and progress tokens are its own, its cancellations reach the server
// under the server's ids, the server's requests come to it under ids of
// the hub's, which its responses carry back, and at most maxInFlight of
// its requests are under way (Handle waits beyond, as a connection's read
// loop does).
type Member struct {
	c   *client
	out *memberOutlet
}

// MemberOptions configure a Member.
type MemberOptions struct {
	// Info names the member in status (the clients of a server).
	Info mcp.Implementation
	// Sampling and Elicitation say which of the server's requests the
	// member can answer; the hub answers ping and roots/list itself.
	Sampling, Elicitation bool
	// Send receives the hub's messages for the member: responses under
	// the member's ids, notifications (progress under the member's
	// tokens), the server's requests; and each as the line the hub
	// encoded, "\n" included, which the member may pass on as it is (it
	// must not modify it: other clients may be writing it too). It runs
	// on the hub's goroutines, the server's read loop among them: it must
	// not block, nor call the hub or the Member. It is not called once
	// Leave has begun, nor after Closed.
	Send func(msg *mcp.Message, line []byte)
	// Closed, if set, is called once when the hub drops the member: its
	// server left the workspace. The member should Leave then. The same
	// rules as Send's apply.
	Closed func()
}

// A memberOutlet is a Member's outlet: each line goes to a function.
type memberOutlet struct {
	send    func(*mcp.Message, []byte)
	closed  func()
	written func(answers int) // the client's release: an answer frees its slot

	mu   sync.Mutex // held while send runs: leave waits for it
	gone bool
	done chan struct{}
}

// put passes the line on at once: the member bounds what waits for its
// agent itself, and sheds what may be lost (the gateway's session does).
func (o *memberOutlet) put(l outLine) (Loss, error) {
	o.mu.Lock()
	if o.gone {
		o.mu.Unlock()
		return Kept, errOutClosed
	}
	// The line was encoded by the hub, from a message it could read: it
	// decodes.
	if msg, err := mcp.DecodeMessage(bytes.TrimSuffix(l.b, []byte("\n"))); err == nil {
		o.send(msg, l.b)
	}
	o.mu.Unlock()
	if l.answer {
		o.written(1)
	}
	return Kept, nil
}

func (o *memberOutlet) size() int { return 0 }

func (o *memberOutlet) finished() <-chan struct{} { return o.done }

// close is the hub dropping the member.
func (o *memberOutlet) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.gone {
		return
	}
	o.gone = true
	close(o.done)
	if o.closed != nil {
		o.closed()
	}
}

// leave is the member leaving: nothing more is delivered.
func (o *memberOutlet) leave() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.gone {
		o.gone = true
		close(o.done)
	}
}

// Join makes a member of the hub. It fails when the hub is closed (its
// server left the workspace).
func (h *Hub) Join(o MemberOptions) (*Member, error) {
	out := &memberOutlet{send: o.Send, closed: o.Closed, done: make(chan struct{})}
	c := &client{hub: h, out: out, room: make(chan struct{}, 1), inflight: make(map[mcp.ID]*forward)}
	c.ctx, c.cancelCtx = context.WithCancel(context.Background())
	out.written = c.release
	c.info, c.sampling, c.elicitation = o.Info, o.Sampling, o.Elicitation
	c.initialized = true // it was never sent initialize; it gets notifications from now
	if !h.add(c) {
		c.cancelCtx()
		return nil, fmt.Errorf("server %q was removed from the workspace", h.name)
	}
	return &Member{c: c, out: out}, nil
}

// Handle takes one message from the member: a request (answered through
// Send under its id), a notification (notifications/cancelled for one of
// its requests), or a response to one of the server's requests. It waits
// while the member has as many requests under way as a client may: call
// it from a goroutine of the member's own, one message after the other.
func (m *Member) Handle(msg *mcp.Message) {
	c := m.c
	switch {
	case msg.IsRequest():
		c.request(msg)
	case msg.IsNotification():
		c.notification(msg)
	case msg.IsResponse():
		c.hub.clientResponse(c, msg)
	}
}

// SetClient changes who the member says it is, and what it can answer:
// what an agent said in initialize, once it has.
func (m *Member) SetClient(info mcp.Implementation, sampling, elicitation bool) {
	m.c.mu.Lock()
	m.c.info, m.c.sampling, m.c.elicitation = info, sampling, elicitation
	m.c.mu.Unlock()
}

// Leave ends the membership, as a client's connection ends: its requests
// in flight are cancelled (the server is told), the server's requests it
// was asked get an error, and nothing more is sent to it. It returns once
// the goroutines that waited for the server on its behalf have ended.
func (m *Member) Leave() {
	c := m.c
	m.out.leave()
	c.cancelCtx()
	c.abandon()
	c.mu.Lock()
	c.ended = true
	c.mu.Unlock()
	c.goroutines.Wait()
	c.abandon() // what those goroutines forwarded as it left
	c.hub.drop(c)
}
