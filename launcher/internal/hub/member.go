package hub

import (
	"fmt"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/internal/agent"
	"github.com/mcpgen/mcpgen/mcp"
)

// A Member is an agent connection that reaches the hub through another
// face, a session of the workspace gateway, which is a member of every
// server's hub: the gateway's routing hands the hub the requests that are
// its server's (Request), and the hub answers them on the agent's Conn,
// as it answers a connection's own. It is remapped as every client is:
// its progress tokens are the agent's own, its cancellations reach the
// server under the server's ids, and the server's requests go to the
// agent under ids of its Conn's, which route its answers back. Its
// requests are bounded by its Conn, with the agent's others.
type Member struct {
	c *client
}

// MemberOptions configure a Member.
type MemberOptions struct {
	// Tag follows the agent's name among the server's clients (status),
	// and in what a modern server is told of it: "gateway".
	Tag string
	// Notify rewrites the server's notifications for the agent: it
	// returns the message to send (msg itself, or a new one), or nil to
	// send none (the gateway sends list changes of its own). nil: every
	// one as it is. It runs on the hub's goroutines, the server's read
	// loop among them: it must not block, nor call the hub or the Member.
	// It is not called once Leave has begun, nor after Closed.
	Notify func(msg *mcp.Message) *mcp.Message
	// Closed, if set, is called once when the hub drops the member: its
	// server left the workspace. The member should Leave then. The same
	// rules as Notify's apply.
	Closed func()
}

// Join makes conn, an agent's connection to another face, a member of the
// hub. It fails when the hub is closed (its server left the workspace).
func (h *Hub) Join(conn *agent.Conn, o MemberOptions) (*Member, error) {
	c := h.newClient(&o)
	c.attach(conn)
	if !h.add(c) {
		c.cancelCtx()
		return nil, fmt.Errorf("server %q was removed from the workspace", h.name)
	}
	return &Member{c: c}, nil
}

// Request handles a request of the agent's that is the server's, as a
// connection's own: the server gets it under an id of its own, and the
// agent its answer through call. It does not wait for the server (see
// client.forward): call it from the agent's read loop.
func (m *Member) Request(call *agent.Call) { m.c.Request(call) }

// Forward sends the server a request of the member's whose answer nobody
// needs (logging/setLevel, which the gateway answers itself), if the
// server takes it now without waiting; else it is dropped.
func (m *Member) Forward(method string, params json.RawMessage) {
	if method == "logging/setLevel" && m.c.keepLogLevel(params) {
		return
	}
	up := m.c.hub.current()
	if up == nil {
		return
	}
	_, _ = up.forward(m.c, false, method, params, func(json.RawMessage, *mcp.Error) {}, false)
}

// Leave ends the membership: its requests under way are stopped (the
// server is told, and the agent gets no answer from the hub), the
// server's requests it was asked get an error, and nothing more is sent
// to it. It returns once the goroutines that waited for the server on its
// behalf have ended.
func (m *Member) Leave() {
	c := m.c
	c.mu.Lock()
	c.gone = true
	c.mu.Unlock()
	c.end()
	c.leftBusy()
	c.hub.drop(c)
}
