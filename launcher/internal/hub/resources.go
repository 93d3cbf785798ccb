package hub

import (
	"context"
	"slices"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
	"github.com/mcpgen/mcpgen/launcher/internal/agent"
	"github.com/mcpgen/mcpgen/mcp"
)

// This file is the modern agents' resource subscriptions (the
// resourceSubscriptions of their subscriptions/listen) on a server that
// has resources.subscribe. The hub counts the agents that want each
// resource, and asks the server about each once: a legacy server with
// resources/subscribe (again on each new process, resources/unsubscribe
// when nobody wants it any more), a modern one through the hub's own
// subscription, whose resourceSubscriptions are the resources wanted (the
// listen sent again when they change: modern.go). The server's
// notifications/resources/updated go to the subscriptions that asked
// (agent.Conn.ResourceUpdated).

// canSubscribe reports whether the server tells of changes of resources
// it was asked about (resources.subscribe in its answer to initialize, or
// in a modern server's discover result).
func canSubscribe(init *mcp.InitializeResult) bool {
	if init == nil {
		return false
	}
	raw := init.Capabilities
	if init.Era == mcp.EraModern {
		// The legacy form of a modern server's capabilities leaves
		// resources.subscribe out (legacy agents subscribe otherwise):
		// what the server said is in its discover result.
		if init.Discover == nil {
			return false
		}
		raw = init.Discover.Capabilities
	}
	var caps struct {
		Resources struct {
			Subscribe bool `json:"subscribe"`
		} `json:"resources"`
	}
	_ = json.Unmarshal(raw, &caps)
	return caps.Resources.Subscribe
}

// maxResourceSubs bounds the resources the hub subscribes to for its
// agents: each is a request to the server, and a count kept.
const maxResourceSubs = 1024

// subscribeResources counts the agents' wish to hear of uris, and asks the
// server about each that nobody asked for before; it returns those it will
// tell of (none when the server cannot).
func (h *Hub) subscribeResources(uris []string) []string {
	h.mu.Lock()
	if !canSubscribe(h.init) {
		h.mu.Unlock()
		return nil
	}
	if h.resourceSubs == nil {
		h.resourceSubs = map[string]int{}
	}
	var honoured, ask []string
	for _, uri := range uris {
		if h.resourceSubs[uri] == 0 && len(h.resourceSubs) >= maxResourceSubs {
			continue
		}
		h.resourceSubs[uri]++
		honoured = append(honoured, uri)
		if h.resourceSubs[uri] == 1 {
			ask = append(ask, uri)
		}
	}
	up, modern := h.up, h.init.Era == mcp.EraModern
	h.mu.Unlock()
	if modern {
		if up != nil && len(ask) > 0 {
			up.relisten(true)
		}
		return honoured
	}
	h.askResources(up, "resources/subscribe", ask)
	return honoured
}

// unsubscribeResources undoes subscribeResources: a resource nobody wants
// any more is unsubscribed at the server.
func (h *Hub) unsubscribeResources(uris []string) {
	h.mu.Lock()
	var ask []string
	for _, uri := range uris {
		if n, ok := h.resourceSubs[uri]; ok {
			if n <= 1 {
				delete(h.resourceSubs, uri)
				ask = append(ask, uri)
			} else {
				h.resourceSubs[uri] = n - 1
			}
		}
	}
	up, modern := h.up, h.init != nil && h.init.Era == mcp.EraModern
	h.mu.Unlock()
	if modern {
		if up != nil && len(ask) > 0 {
			up.relisten(true)
		}
		return
	}
	h.askResources(up, "resources/unsubscribe", ask)
}

// resourceURIs returns the resources that agents want to hear of, in
// order: what a modern server's subscription asks for.
func (h *Hub) resourceURIs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	uris := make([]string, 0, len(h.resourceSubs))
	for uri := range h.resourceSubs {
		uris = append(uris, uri)
	}
	slices.Sort(uris)
	return uris
}

// resubscribe asks a new process of the server about every resource that
// agents want to hear of: the last one's subscriptions ended with it.
func (h *Hub) resubscribe(up *Upstream, init *mcp.InitializeResult) {
	if !canSubscribe(init) || init.Era == mcp.EraModern {
		return // a modern server's listen asked already (Upstream.listen)
	}
	h.mu.Lock()
	uris := make([]string, 0, len(h.resourceSubs))
	for uri := range h.resourceSubs {
		uris = append(uris, uri)
	}
	h.mu.Unlock()
	h.askResources(up, "resources/subscribe", uris)
}

// askResources sends method for each of uris to up, on a goroutine that
// ends once the server answered each, or readyWait passed, or the process
// ended. Nothing is sent while the server has no process: its next one is
// asked (resubscribe).
func (h *Hub) askResources(up *Upstream, method string, uris []string) {
	if up == nil || len(uris) == 0 {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), readyWait)
		defer cancel()
		for _, uri := range uris {
			params := append(jsonwire.AppendString([]byte(`{"uri":`), uri), '}')
			if err := up.client.Call(ctx, method, json.RawMessage(params), nil); err != nil {
				h.log.Warn("asking the server about a resource for an agent's subscription", "server", h.name, "method", method, "uri", uri, "error", err)
			}
		}
	}()
}

// routeResourceUpdated gives the server's notifications/resources/updated
// to the agents' subscriptions that asked for its resource.
func (h *Hub) routeResourceUpdated(clients []*client, msg *mcp.Message) {
	var p struct {
		URI string `json:"uri"`
	}
	if json.Unmarshal(msg.Params, &p) != nil || p.URI == "" {
		return
	}
	for _, c := range clients {
		c.conn.ResourceUpdated(p.URI, msg)
	}
}

// SubscribeResources is the client's part of agent.ResourceSubscriber.
func (c *client) SubscribeResources(uris []string) []string { return c.hub.subscribeResources(uris) }

// UnsubscribeResources is the client's part of agent.ResourceSubscriber.
func (c *client) UnsubscribeResources(uris []string) { c.hub.unsubscribeResources(uris) }

// SubscribeResources has the server tell of changes of uris, for a
// subscription of the member's agent (see agent.ResourceSubscriber).
func (m *Member) SubscribeResources(uris []string) []string { return m.c.hub.subscribeResources(uris) }

// UnsubscribeResources undoes SubscribeResources.
func (m *Member) UnsubscribeResources(uris []string) { m.c.hub.unsubscribeResources(uris) }

// legacySubscribe answers a legacy session's resources/subscribe or
// resources/unsubscribe for a modern server, which has neither: the hub
// subscribes for it through its own subscriptions/listen, as for a modern
// agent's, and the server's notifications/resources/updated reach the
// session as they reach every legacy session (Hub.notification). What the
// session subscribed to is undone when it ends (client.end).
func (c *client) legacySubscribe(call *agent.Call) {
	var p struct {
		URI string `json:"uri"`
	}
	if json.Unmarshal(call.Params(), &p) != nil || p.URI == "" {
		call.Answer(nil, mcp.NewError(mcp.CodeInvalidParams, "invalid params: %s needs a uri", call.Method()))
		return
	}
	c.mu.Lock()
	had := c.subs[p.URI]
	c.mu.Unlock()
	if call.Method() == "resources/unsubscribe" {
		if had {
			c.mu.Lock()
			delete(c.subs, p.URI)
			c.mu.Unlock()
			c.hub.unsubscribeResources([]string{p.URI})
		}
		call.Answer(emptyResult, nil)
		return
	}
	if !had {
		if len(c.hub.subscribeResources([]string{p.URI})) == 0 {
			call.Answer(nil, mcp.NewError(mcp.CodeMethodNotFound, "server %q does not tell of changes of resources (no resources.subscribe)", c.hub.name))
			return
		}
		c.mu.Lock()
		if c.subs == nil {
			c.subs = map[string]bool{}
		}
		c.subs[p.URI] = true
		c.mu.Unlock()
	}
	call.Answer(emptyResult, nil)
}
