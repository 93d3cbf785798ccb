package hub

import (
	"context"
	"fmt"
	"sync"

	"github.com/mcpgen/mcpgen/mcp"
)

// A Member is a client of the hub that lives in the launcher, such as a
// session of the workspace gateway: it hands the hub its messages itself
// (Handle) and receives the hub's through a function, with no connection
// in between. It is remapped as every client is: its request ids and
// progress tokens are its own, its cancellations reach the server under
// the server's ids, and the server's requests come to it under ids of the
// hub's, which its responses must carry back.
type Member struct {
	c   *client
	out *memberSender
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
	// tokens), the server's requests. It runs on the hub's goroutines,
	// the server's read loop among them: it must not block, nor call the
	// hub or the Member. It is not called once Leave has returned, nor
	// after Closed.
	Send func(msg *mcp.Message)
	// Closed, if set, is called once when the hub drops the member: its
	// server left the workspace. The member should Leave then. The same
	// rules as Send's apply.
	Closed func()
}

// A memberSender is a Member's end of the hub: messages go to a function.
type memberSender struct {
	mu     sync.Mutex // held while fn runs: Leave waits for it
	fn     func(*mcp.Message)
	closed func()
	gone   bool
}

func (s *memberSender) send(msg *mcp.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.gone {
		s.fn(msg)
	}
}

// close is the hub dropping the member.
func (s *memberSender) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return
	}
	s.gone = true
	if s.closed != nil {
		s.closed()
	}
}

// leave is the member leaving: nothing more is delivered.
func (s *memberSender) leave() {
	s.mu.Lock()
	s.gone = true
	s.mu.Unlock()
}

// Join makes a member of the hub. It fails when the hub is closed (its
// server left the workspace).
func (h *Hub) Join(o MemberOptions) (*Member, error) {
	out := &memberSender{fn: o.Send, closed: o.Closed}
	c := newClient(h, out)
	c.info, c.sampling, c.elicitation = o.Info, o.Sampling, o.Elicitation
	c.initialized = true // it was never sent initialize; it gets notifications from now
	if !h.add(c) {
		return nil, fmt.Errorf("server %q was removed from the workspace", h.name)
	}
	return &Member{c: c, out: out}, nil
}

// Handle takes one message from the member: a request (answered through
// Send under its id), a notification (notifications/cancelled for one of
// its requests), or a response to one of the server's requests.
func (m *Member) Handle(ctx context.Context, msg *mcp.Message) {
	m.c.handle(ctx, msg)
}

// SetClient changes who the member says it is, and what it can answer:
// what an agent said in initialize, once it has.
func (m *Member) SetClient(info mcp.Implementation, sampling, elicitation bool) {
	m.c.mu.Lock()
	m.c.info, m.c.sampling, m.c.elicitation = info, sampling, elicitation
	m.c.mu.Unlock()
}

// Leave ends the membership: the member's requests in flight are
// cancelled (the server is told), the server's requests it was asked get
// an error, and nothing more is sent to it.
func (m *Member) Leave() {
	m.out.leave()
	m.c.abandon()
	m.c.hub.drop(m.c)
}
