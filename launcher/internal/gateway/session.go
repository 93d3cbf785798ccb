package gateway

import (
	"context"
	"io"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
	"github.com/mcpgen/mcpgen/launcher/internal/agent"
	"github.com/mcpgen/mcpgen/launcher/internal/hub"
	"github.com/mcpgen/mcpgen/mcp"
)

// This file is a session: one agent's connection to the gateway, its
// memberships of the servers' hubs, and what it answers from the catalog.
// Which server a request goes to is routing.go's; how it gets there,
// forwarding.go's.

// firstListWait bounds how long an agent's first list request waits for
// servers that are starting for the first time, so that an agent that
// lists once (at its own start) sees their tools.
const firstListWait = time.Minute

// maxQueued is how many bytes may wait to be written to an agent; a
// variable for the tests, read as a session begins. An agent that asks
// for more than it reads is disconnected at this bound (see
// agent.Limits.SoftQueued), rather than read more slowly.
var maxQueued int64 = 64 << 20

// CodeUnavailable is the JSON-RPC error code of a request that no server
// can take: the hub's, the TypeScript SDK's for a closed connection.
const CodeUnavailable = hub.CodeUnavailable

// A session is one agent's connection to the gateway: an agent.Conn whose
// Handler it is, and a member of every server's hub. The agent's requests
// go to the hub of the server that owns the tool, prompt or resource, from
// the Conn's read loop (a hub never waits there for its server: see
// hub.Member.Request), and each hub answers them on the Conn.
//
// Its goroutines: the Conn's (run waits for them), and one per membership
// it leaves, which ends once the member has (see member.leave).
type session struct {
	g       *Gateway
	servers []string // the servers it serves; none: all
	conn    *agent.Conn

	cat        atomic.Pointer[Catalog]
	desc       atomic.Pointer[described] // what Describe made of cat (era.go)
	refreshing sync.Mutex                // one refresh at a time
	waited     atomic.Bool

	// tools is how the agent asked to see the tools (Join.Tools): "" for
	// the workspace's way.
	tools string

	mu      sync.Mutex
	members map[string]*member
	ended   bool
	found   []string // the tools it found, when the workspace reveals them (search.go)

	listMu sync.Mutex
	listed json.RawMessage // what tools/list answered last, or would have
}

func newSession(ctx context.Context, g *Gateway, rwc io.ReadWriteCloser, servers []string) *session {
	s := &session{g: g, servers: servers, members: map[string]*member{}}
	s.conn = agent.New(ctx, rwc, s, agent.Options{
		Log:         g.log,
		Limits:      agent.Limits{MaxQueued: int(maxQueued), SoftQueued: -1},
		AnswerBound: s.drainBound,
		Eras:        &g.eras,
	})
	return s
}

// run serves the agent until it disconnects or the session is closed,
// then leaves every hub.
func (s *session) run() {
	s.conn.Serve()
	s.mu.Lock()
	s.ended = true
	members := slices.Collect(maps.Values(s.members))
	clear(s.members)
	s.mu.Unlock()
	for _, m := range members {
		m.leave()
	}
}

// close ends the session: what is queued for the agent is flushed, then
// its connection closed, which ends run.
func (s *session) close() { s.conn.Close() }

// Notification takes the agent's notifications (see agent.Handler): none
// is for a server. roots/list_changed: the hubs answer roots/list
// themselves; progress of the agent's own: no server asked for it.
func (s *session) Notification(*mcp.Message) {}

// drainBound is the longest an answer the agent waits for may take: the
// longest of its servers' (each bounds its requests: see
// hub.Hub.AnswerBound), or of a first list's wait.
func (s *session) drainBound() time.Duration {
	bound := firstListWait
	for _, b := range s.g.backendsFor(s.servers) {
		bound = max(bound, b.Hub.AnswerBound())
	}
	return bound
}

// refresh follows the workspace: it joins the hubs of new servers, leaves
// those of servers that left, takes the current catalog, and tells the
// agent which of its lists changed.
func (s *session) refresh() {
	s.refreshing.Lock()
	defer s.refreshing.Unlock()
	backends := s.g.backendsFor(s.servers)
	want := map[string]Backend{}
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	var join []Backend
	for _, b := range backends {
		want[b.Name] = b
		if m := s.members[b.Name]; m == nil || m.b.Hub != b.Hub || m.closed.Load() {
			join = append(join, b)
		}
	}
	left := map[*member]bool{}
	for name, m := range s.members {
		if b, ok := want[name]; ok && b.Hub == m.b.Hub && !m.closed.Load() {
			continue
		}
		left[m] = true
		delete(s.members, name)
	}
	s.mu.Unlock()
	for m := range left {
		m.leave()
	}
	for _, b := range join {
		m, err := s.join(b)
		if err != nil {
			continue // it is leaving: the next refresh drops it
		}
		s.mu.Lock()
		if s.ended {
			s.mu.Unlock()
			m.leave()
			continue
		}
		s.members[b.Name] = m
		s.mu.Unlock()
	}

	// The catalog first: an agent told that its call failed because its
	// server left lists the tools of the workspace without that server.
	cat := s.g.catalog(s.servers)
	old := s.cat.Swap(cat)
	if len(left) > 0 {
		for _, call := range s.conn.Calls() {
			if m, ok := call.Owner().(*member); ok && left[m] {
				call.Answer(nil, mcp.NewError(CodeUnavailable, "the server left the workspace; the request was not completed"))
			}
		}
	}
	if old == cat {
		return
	}
	// The agent's legacy session, and its subscriptions that asked (see
	// agent.Conn.ListChanged).
	s.refreshList()
	if old == nil {
		return
	}
	if string(old.PromptsList()) != string(cat.PromptsList()) {
		s.conn.ListChanged("prompts")
	}
	if string(old.ResourcesList()) != string(cat.ResourcesList()) || string(old.TemplatesList()) != string(cat.TemplatesList()) {
		s.conn.ListChanged("resources")
	}
}

// refreshList tells the agent that its tools changed when what its
// tools/list answers now differs from what it answered before: the
// catalog's tools changed, or in search mode the summary of the servers,
// the pinned tools, or the tools it found.
func (s *session) refreshList() {
	s.listMu.Lock() // one at a time: a refresh and a search's reveal may race
	now := s.toolsList(s.cat.Load())
	changed := s.listed != nil && string(s.listed) != string(now)
	s.listed = now
	s.listMu.Unlock()
	if changed {
		s.conn.ListChanged("tools")
	}
}

// join makes the session a member of a server's hub.
func (s *session) join(b Backend) (*member, error) {
	m := &member{name: b.Name, b: b}
	hm, err := b.Hub.Join(s.conn, hub.MemberOptions{
		Tag:    "gateway",
		Notify: func(msg *mcp.Message) *mcp.Message { return fromServer(b.Name, msg) },
		Closed: func() {
			m.closed.Store(true)
			s.g.changed()
		},
	})
	if err != nil {
		return nil, err
	}
	m.m = hm
	return m, nil
}

// fromServer is what the agent gets of a server's notification: the
// server's list changes are not passed on (the gateway's own come after
// its catalog changed: see refresh), and its log messages name it.
func fromServer(server string, msg *mcp.Message) *mcp.Message {
	switch msg.Method {
	case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
		return nil
	case "notifications/message":
		return &mcp.Message{Method: msg.Method, Params: withLogger(msg.Params, server)}
	}
	return msg
}

// withLogger names the server in a log notification: its logger becomes
// SERVER, or SERVER/LOGGER.
func withLogger(params json.RawMessage, server string) json.RawMessage {
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil || p == nil {
		return params
	}
	logger := server
	var own string
	if json.Unmarshal(p["logger"], &own) == nil && own != "" {
		logger += "/" + own
	}
	p["logger"] = jsonwire.AppendString(nil, logger)
	out, err := jsonwire.Marshal(p)
	if err != nil {
		return params
	}
	return out
}

func (s *session) displayName() string { return s.conn.DisplayName() }

// serverInfo is how the gateway introduces itself.
var serverInfo = mcp.Implementation{Name: "mcpgen", Title: "mcpgen workspace gateway", Version: "gateway"}

// initialize answers at once, from the catalog the hubs have: the union
// of the servers' capabilities, and their instructions.
func (s *session) initialize(call *agent.Call) {
	cat := s.cat.Load()
	result := map[string]any{
		"protocolVersion": mcp.NegotiateVersion(s.conn.Identity().ProtocolVersion),
		"capabilities":    cat.Capabilities(),
		"serverInfo":      serverInfo,
	}
	if text := s.instructions(cat); text != "" {
		result["instructions"] = text
	}
	raw, err := jsonwire.Marshal(result)
	if err != nil {
		call.Answer(nil, mcp.NewError(mcp.CodeInternalError, "initialize: %v", err))
		return
	}
	call.Answer(raw, nil)
}

// list answers a list request from the catalog, in one page. The first
// one waits (off the read loop) for servers whose tools are not known
// yet: those starting for the first time, and idle ones that have no
// catalog kept, which it starts (an idle server with a catalog answers
// from it, and stays idle).
func (s *session) list(call *agent.Call, result func(*Catalog) json.RawMessage) {
	if s.waited.Load() || !s.startingFirstTime() && len(s.unknownIdle()) == 0 {
		s.waited.Store(true)
		call.Answer(result(s.cat.Load()), nil)
		return
	}
	call.Release() // its params are needed no more: it waits without them
	// The goroutine ends within firstListWait, or with the Conn.
	s.conn.Go(func() {
		ctx, cancel := context.WithTimeout(s.conn.Context(), firstListWait)
		defer cancel()
		// Each start ends when its server is ready or its start failed,
		// bounded by the hub; or with ctx.
		var starts sync.WaitGroup
		for _, b := range s.unknownIdle() {
			starts.Go(func() { _ = b.Hub.EnsureStarted(ctx) })
		}
		started := make(chan struct{})
		go func() { starts.Wait(); close(started) }()  // ends with the starts
		poll := time.NewTicker(100 * time.Millisecond) // a server that fails to start wakes no hub
		defer poll.Stop()
		starting := started // nil once closed
		for starting != nil || s.startingFirstTime() {
			select {
			case <-starting:
				starting = nil
			case <-s.g.awaitWake():
			case <-poll.C:
			case <-ctx.Done():
				<-started // at once: ctx ends them
				if s.conn.Context().Err() == nil {
					s.waited.Store(true)
					call.Answer(result(s.cat.Load()), nil)
				}
				return
			}
		}
		s.g.invalidate()
		s.refresh() // the catalog of now, whatever run has applied yet
		s.waited.Store(true)
		call.Answer(result(s.cat.Load()), nil)
	})
}

// startingFirstTime reports whether a server of the session is starting
// and was never ready: its tools are not known yet.
func (s *session) startingFirstTime() bool {
	for _, b := range s.g.backendsFor(s.servers) {
		if b.Hub.Catalog().Init == nil && b.State != nil && b.State().State == "starting" {
			return true
		}
	}
	return false
}

// unknownIdle returns the session's servers that are idle and have no
// catalog: only a start tells their tools.
func (s *session) unknownIdle() []Backend {
	var out []Backend
	for _, b := range s.g.backendsFor(s.servers) {
		if c := b.Hub.Catalog(); c.Idle && c.Init == nil && c.Failed == nil {
			out = append(out, b)
		}
	}
	return out
}
