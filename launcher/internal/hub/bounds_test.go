package hub

import "github.com/mcpgen/mcpgen/launcher/internal/agent"

// The bounds of a client's connection (agent.Conn), under the names the
// hub's tests knew them by when the hub held them.
const (
	maxInFlight  = agent.MaxInFlight
	maxWaiting   = agent.MaxWaiting
	maxHeldBytes = agent.MaxHeldBytes
	maxNotes     = agent.MaxNotes
	softQueued   = agent.SoftQueued
	maxQueued    = agent.MaxQueued
)
