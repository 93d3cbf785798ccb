package hub

import (
	"github.com/mcpgen/mcpgen/launcher/internal/agent"
)

// This file is what the hub counts of the server's notifications that its
// clients lost because they read them more slowly than the server sent
// them, rather than be disconnected: log messages dropped, and progress
// coalesced (a newer notification of the same token replaces one that
// still waits). Each client's agent.Conn decides what is lost; the hub is
// the agent.Source that counts it, for status, and says it in the log.

// Shed counts what the clients of a server lost of its notifications
// because they read too slowly.
type Shed struct {
	Dropped   int64 `json:"dropped"`   // log messages dropped
	Coalesced int64 `json:"coalesced"` // progress replaced by a newer one of the same request
}

// Shed returns what the server's clients lost of its notifications so far,
// the workspace gateway's agents included.
func (h *Hub) Shed() Shed {
	return Shed{Dropped: h.dropped.Load(), Coalesced: h.coalesced.Load()}
}

// Lost counts a notification of the server's that a client lost (see
// agent.Source).
func (h *Hub) Lost(loss agent.Loss) {
	switch loss {
	case agent.Dropped:
		h.dropped.Add(1)
	case agent.Coalesced:
		h.coalesced.Add(1)
	}
}

// LogLosses says in the log what a client lost of the server's
// notifications (see agent.Source).
func (h *Hub) LogLosses(client string, dropped, coalesced int64) {
	h.log.Warn("client reads the server's notifications too slowly: its log messages are dropped and its progress coalesced",
		"server", h.name, "client", client, "dropped", dropped, "coalesced", coalesced)
}
