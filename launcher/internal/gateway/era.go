package gateway

import (
	"context"
	"slices"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/internal/agent"
	"github.com/mcpgen/mcpgen/mcp"
)

// This file is what the gateway tells the agent.Conn of the workspace,
// for the modern agents: what server/discover answers (the merged
// catalog's capabilities and instructions, the gateway's identity), and
// the identity that the results of modern requests name: the gateway's,
// whichever server answered.

// A described is the session's agent.Description, kept for the catalog
// it was made from.
type described struct {
	cat *Catalog
	d   *agent.Description
}

// serverInfoJSON is serverInfo, encoded (by hand: nothing is built at
// init; TestServerInfoJSON checks it).
var serverInfoJSON = json.RawMessage(`{"name":"mcpgen","title":"mcpgen workspace gateway","version":"gateway"}`)

// Describe says what the gateway is to the agent now (see
// agent.Handler): what its initialize answers, in the form of
// server/discover.
func (s *session) Describe() *agent.Description {
	cat := s.cat.Load()
	if cat == nil {
		return nil
	}
	if d := s.desc.Load(); d != nil && d.cat == cat {
		return d.d
	}
	caps := cat.Capabilities()
	if cat.Tasks() {
		if c, err := mcp.SetMembers(caps, mcp.ObjectMember{Key: "extensions", Value: json.RawMessage(`{"` + agent.TasksExtension + `":{}}`)}); err == nil {
			caps = c
		}
	}
	d := &agent.Description{
		Capabilities: caps,
		ServerInfo:   serverInfoJSON,
		Instructions: s.instructions(cat),
		Own:          true,
	}
	s.desc.Store(&described{cat: cat, d: d})
	return d
}

// Ready is at once: the gateway answers from the catalog it has, as its
// initialize does.
func (s *session) Ready(context.Context) error { return nil }

// byTask routes tasks/get, tasks/update and tasks/cancel to the server that
// issued the task to this agent (see agent.Conn.TaskOwner); a task it was
// not issued through the gateway is an error that says so.
func (s *session) byTask(call *agent.Call) {
	id, err := agent.TaskID(call.Params())
	if err != nil {
		call.Answer(nil, err)
		return
	}
	owner, _ := s.conn.TaskOwner(id)
	m, ok := owner.(*member)
	if !ok {
		call.Answer(nil, mcp.NewError(mcp.CodeInvalidParams, "invalid params: unknown task %q: no server of the workspace issued it to this client", id))
		return
	}
	s.route(m.name, false, call, false)
}

// Eras returns what status shows of the era of each agent connected to the
// gateway, by name.
func (g *Gateway) Eras() []agent.EraStatus {
	g.mu.Lock()
	out := make([]agent.EraStatus, 0, len(g.sessions))
	for s := range g.sessions {
		out = append(out, s.conn.EraStatus())
	}
	g.mu.Unlock()
	slices.SortFunc(out, func(a, b agent.EraStatus) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Requests returns how many requests of each era the gateway's agents sent
// since it began, those that left included.
func (g *Gateway) Requests() (modern, legacy int64) {
	return g.eras.Modern.Load(), g.eras.Legacy.Load()
}

// SubscribeResources has the servers of uris tell of their changes, each
// through its hub (see agent.ResourceSubscriber): a URI goes to the
// server that serves it, as resources/read does.
func (s *session) SubscribeResources(uris []string) []string {
	var honoured []string
	for m, us := range s.byServer(uris) {
		honoured = append(honoured, m.m.SubscribeResources(us)...)
	}
	slices.Sort(honoured)
	return honoured
}

// UnsubscribeResources undoes SubscribeResources.
func (s *session) UnsubscribeResources(uris []string) {
	for m, us := range s.byServer(uris) {
		m.m.UnsubscribeResources(us)
	}
}

// byServer groups uris by the membership of the server that serves each;
// a URI that no server of the session serves is left out.
func (s *session) byServer(uris []string) map[*member][]string {
	cat := s.cat.Load()
	out := map[*member][]string{}
	if cat == nil {
		return out
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, uri := range uris {
		r, ok := cat.Resource(uri)
		if !ok {
			continue
		}
		if m := s.members[r.Server]; m != nil {
			out[m] = append(out[m], uri)
		}
	}
	return out
}
