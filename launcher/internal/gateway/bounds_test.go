package gateway

import "github.com/mcpgen/mcpgen/launcher/internal/agent"

// The bounds of an agent's connection (agent.Conn) that the gateway's
// tests reckon with: how many notifications may wait for an agent, and
// how many it may lose in a row while it reads nothing.
const (
	sessionQueue = agent.MaxNotes
	maxUnread    = agent.MaxUnread
)
