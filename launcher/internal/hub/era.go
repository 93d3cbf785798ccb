package hub

import (
	"context"
	"slices"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
	"github.com/mcpgen/mcpgen/launcher/internal/agent"
	"github.com/mcpgen/mcpgen/mcp"
)

// This file is what the hub tells the agent.Conn of its server, for the
// modern agents: what server/discover answers (from the catalog, never
// the server), and the identity that the results of modern requests name.

// A description is the hub's agent.Description, kept for the server's
// answer to initialize it was made from.
type description struct {
	init *mcp.InitializeResult
	d    *agent.Description
}

// describe returns what the hub says of its server: its capabilities as
// a legacy agent's initialize gets them (tools.listChanged, since the hub
// tells of changes; see initializeResult), its identity and instructions.
// nil until the server was first ready, or preloaded.
func (h *Hub) describe() *agent.Description {
	h.mu.Lock()
	defer h.mu.Unlock()
	init := h.init
	if init == nil {
		return nil
	}
	if h.desc.init == init {
		return h.desc.d
	}
	d := &agent.Description{Capabilities: describedCapabilities(init), Instructions: init.Instructions}
	d.ServerInfo, _ = jsonwire.Marshal(init.ServerInfo)
	h.desc = description{init: init, d: d}
	return d
}

// describedCapabilities are the capabilities the hub describes its server
// with: those of its answer to initialize (a modern server's converted),
// tools.listChanged set.
func describedCapabilities(init *mcp.InitializeResult) json.RawMessage {
	raw, err := initializeResult(init, "")
	if err != nil {
		return json.RawMessage(`{"tools":{"listChanged":true}}`)
	}
	var r struct {
		Capabilities json.RawMessage `json:"capabilities"`
	}
	if json.Unmarshal(raw, &r) != nil || !jsonwire.IsObject(r.Capabilities) {
		return json.RawMessage(`{"tools":{"listChanged":true}}`)
	}
	return r.Capabilities
}

// Describe is the client's part of agent.Handler: see describe.
func (c *client) Describe() *agent.Description { return c.hub.describe() }

// Ready waits until the hub knows its server (see agent.Handler).
func (c *client) Ready(ctx context.Context) error {
	_, err := c.hub.initResult(ctx)
	return err
}

// Eras returns what status shows of the era of each agent connected to the
// hub itself (the gateway's show in its status), by name.
func (h *Hub) Eras() []agent.EraStatus {
	h.mu.Lock()
	clients := h.clientList()
	h.mu.Unlock()
	var out []agent.EraStatus
	for _, c := range clients {
		if !c.member {
			out = append(out, c.conn.EraStatus())
		}
	}
	slices.SortFunc(out, func(a, b agent.EraStatus) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Requests returns how many requests of each era the hub's own clients
// sent since it began, those that left included.
func (h *Hub) Requests() (modern, legacy int64) {
	return h.eras.Modern.Load(), h.eras.Legacy.Load()
}
