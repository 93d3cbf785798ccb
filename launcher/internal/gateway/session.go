package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
	"github.com/mcpgen/mcpgen/launcher/internal/hub"
	"github.com/mcpgen/mcpgen/mcp"
)

const (
	// sessionQueue is how many messages may wait to be written to an
	// agent, and maxQueued (below) how many bytes. One that falls this
	// far behind is disconnected, rather than hold the servers' answers
	// for the others or have the launcher buffer without end (the hub's
	// bound for its own clients: a few answers of the longest line).
	sessionQueue = 1024
	// memberQueue is how many messages may wait to be handed to one
	// server's hub. A server that does not read its input fills it, and
	// then its requests fail at once: the others' go on.
	memberQueue = 256
	// readBuffer is the read buffer of an agent's connection.
	readBuffer = 4 << 10
	// firstListWait bounds how long an agent's first list request waits
	// for servers that are starting for the first time, so that an agent
	// that lists once (at its own start) sees their tools.
	firstListWait = time.Minute
	// flushTimeout bounds the last writes to a closing agent.
	flushTimeout = time.Second
	// maxStarting bounds an agent's requests that wait, each on a
	// goroutine, for servers that their call starts (lazy, or stopped
	// for idleness).
	maxStarting = memberQueue

	// shedMessages and shedQueued mark an agent that falls behind: beyond
	// either, the servers' notifications that may be lost (log messages,
	// progress: see hub.MayLose) are shed rather than queued, so that an
	// agent that reads, if more slowly than a server floods it, is not
	// disconnected for it. Answers never are.
	shedMessages = sessionQueue / 2
	shedQueued   = 512 << 10
	// maxUnread is how many notifications an agent may lose in a row
	// while nothing at all is written to it: one that loses more reads
	// nothing, and is disconnected.
	maxUnread = 8192
)

// maxQueued is how many bytes may wait to be written to an agent (see
// sessionQueue); a variable for the tests, read as a session begins.
var maxQueued int64 = 64 << 20

// CodeUnavailable is the JSON-RPC error code of a request that no server
// can take: the hub's, the TypeScript SDK's for a closed connection.
const CodeUnavailable = hub.CodeUnavailable

// A session is one agent's connection to the gateway. It is a member of
// every server's hub: the agent's requests go to the hub of the server
// that owns the tool, prompt or resource, under the agent's own ids (each
// member is remapped by its hub), and what the hubs send comes back here.
//
// Its goroutines: the read loop (run, on Serve's goroutine), the write
// loop, and one per member that hands the member its messages in order;
// all end with the session (the members' once their queue is drained).
type session struct {
	g       *Gateway
	servers []string // the servers it serves; none: all
	conn    io.ReadWriteCloser
	r       *mcp.Reader
	out     chan outItem
	queued  atomic.Int64 // bytes in out, and being written
	limit   int64        // on queued: maxQueued
	done    chan struct{}
	once    sync.Once
	ctx     context.Context // ends with the session
	cancel  context.CancelFunc

	// What the agent loses of the servers' notifications when it is
	// behind (see behind, lose and sendProgress).
	slotsMu sync.Mutex
	slots   map[string]*progressSlot // progress that waits in out, by token
	unread  atomic.Int64             // notifications lost since a line was last written
	losses  hub.LossLog

	cat        atomic.Pointer[Catalog]
	refreshing sync.Mutex // one refresh at a time
	waited     atomic.Bool

	mu          sync.Mutex
	members     map[string]*member
	inflight    map[mcp.ID]string        // the agent's requests, by id: the server that has it
	routed      map[mcp.ID]routedRequest // servers' requests, by the id the agent sees
	nextID      int64                    // ids of the servers' requests, as the agent sees them
	info        mcp.Implementation
	sampling    bool
	elicitation bool
	initialized bool
	ended       bool
	lists       int                      // list requests waiting for servers that start
	starting    map[mcp.ID]*startingCall // requests waiting for their server to start, by id
	drain       *hub.Drain               // kicked when an answer owed may have gone out
}

// An outItem is what waits in a session's queue: a line, or the slot of a
// progress notification, whose line a newer one of its token replaces
// while it waits (see sendProgress).
type outItem struct {
	line []byte
	slot *progressSlot
}

type progressSlot struct {
	key  string
	line []byte // guarded by the session's slotsMu
}

// A startingCall is a request of the agent that waits for its server to
// start (see forwardStarted); it is in inflight too.
type startingCall struct{ server string }

// A routedRequest is a server's request that the agent answers.
type routedRequest struct {
	server string
	id     mcp.ID // the id the hub gave it
}

// A member is the session's membership of one server's hub.
type member struct {
	name   string
	b      Backend
	m      *hub.Member
	closed atomic.Bool // the hub dropped it (its server left)

	mu   sync.Mutex
	in   chan *mcp.Message // to m.Handle, in order; closed by leave
	left bool
}

func newSession(ctx context.Context, g *Gateway, conn io.ReadWriteCloser, servers []string) *session {
	ctx, cancel := context.WithCancel(ctx)
	return &session{
		g:        g,
		servers:  servers,
		conn:     conn,
		r:        mcp.NewReaderSize(conn, readBuffer),
		out:      make(chan outItem, sessionQueue),
		limit:    maxQueued,
		done:     make(chan struct{}),
		ctx:      ctx,
		cancel:   cancel,
		members:  map[string]*member{},
		inflight: map[mcp.ID]string{},
		routed:   map[mcp.ID]routedRequest{},
		starting: map[mcp.ID]*startingCall{},
		drain:    hub.NewDrain(),
		slots:    map[string]*progressSlot{},
	}
}

// run reads the agent's messages until it disconnects or the session is
// closed, then leaves every hub.
func (s *session) run() {
	writer := make(chan struct{})
	go func() { defer close(writer); s.writeLoop() }()
	for {
		msg, err := s.r.Read()
		if err != nil {
			var de *mcp.DecodeError
			if errors.As(err, &de) {
				if resp := de.ServerResponse(); resp != nil {
					s.send(resp)
				}
				continue
			}
			if errors.Is(err, io.EOF) {
				// The agent closed its input, and may still read: the
				// answers to what it asked go out first (see hub.Drain).
				s.drain.Wait(s.done, s.drainBound(), s.owes)
			}
			break
		}
		switch {
		case msg.IsRequest():
			s.request(msg)
		case msg.IsNotification():
			s.notification(msg)
		case msg.IsResponse():
			s.response(msg)
		}
	}
	s.close()
	<-writer
	s.mu.Lock()
	s.ended = true
	members := slices.Collect(maps.Values(s.members))
	clear(s.members)
	s.mu.Unlock()
	for _, m := range members {
		m.leave() // the hub cancels what the agent left in flight
	}
	s.cancel()
	s.losses.Flush(s.displayName)
}

// owes reports whether the agent has requests that wait for an answer:
// in flight to a server (or waiting for it to start), or a first list.
func (s *session) owes() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.inflight) > 0 || s.lists > 0
}

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

// checkDrainedLocked says that an answer owed may have gone out: a
// session that drains looks again (see owes). s.mu is held.
func (s *session) checkDrainedLocked() { s.drain.Kick() }

// close ends the session: the write loop flushes what is queued, then
// closes the connection, which ends the read loop.
func (s *session) close() {
	s.once.Do(func() {
		close(s.done)
		// A write under way to an agent that does not read would hold the
		// write loop, and so the session, for good: the flush has
		// flushTimeout, on any connection.
		time.AfterFunc(flushTimeout, func() { s.conn.Close() })
	})
}

func (s *session) writeLoop() {
	defer s.conn.Close()
	for {
		select {
		case item := <-s.out:
			line := s.take(item)
			_, err := s.conn.Write(line)
			s.queued.Add(-int64(len(line)))
			s.unread.Store(0)
			if err != nil {
				s.close()
				return
			}
		case <-s.done:
			if d, ok := s.conn.(interface{ SetWriteDeadline(time.Time) error }); ok {
				_ = d.SetWriteDeadline(time.Now().Add(flushTimeout))
			}
			for {
				select {
				case item := <-s.out:
					if _, err := s.conn.Write(s.take(item)); err != nil {
						return
					}
				default:
					return
				}
			}
		}
	}
}

// take returns the line of an item of the queue: a progress slot's is the
// newest of its token, which nothing replaces any more.
func (s *session) take(item outItem) []byte {
	if item.slot == nil {
		return item.line
	}
	s.slotsMu.Lock()
	defer s.slotsMu.Unlock()
	if s.slots[item.slot.key] == item.slot {
		delete(s.slots, item.slot.key)
	}
	return item.slot.line
}

// send queues a message for the agent; an agent too far behind is
// disconnected.
func (s *session) send(msg *mcp.Message) {
	s.sendLine(append(msg.AppendJSON(nil), '\n'))
}

// sendLine queues a line, "\n" included, for the agent.
func (s *session) sendLine(line []byte) {
	select {
	case <-s.done:
		return // closing: what it was sent is written, or it was dropped
	default:
	}
	if s.queued.Add(int64(len(line))) <= s.limit {
		select {
		case s.out <- outItem{line: line}:
			return
		case <-s.done:
			s.queued.Add(-int64(len(line)))
			return
		default:
		}
	}
	s.queued.Add(-int64(len(line)))
	s.tooSlow("its queue is full")
}

// tooSlow disconnects an agent that is too far behind.
func (s *session) tooSlow(why string) {
	s.g.log.Warn("gateway client too slow, disconnected", "client", s.displayName(), "reason", why,
		"queued_messages", len(s.out), "queued_bytes", s.queued.Load())
	// Nothing more goes out to it: closing the connection ends the write
	// under way, and the read loop.
	s.close()
	s.conn.Close()
}

// behind reports whether the agent is behind what it is sent: the
// servers' notifications that may be lost are shed (see hub.MayLose).
func (s *session) behind() bool {
	return len(s.out) >= shedMessages || s.queued.Load() >= shedQueued
}

// lose counts a notification of h's server that the agent lost (see
// hub.LossLog), and disconnects an agent that loses maxUnread of them in
// a row while it reads nothing.
func (s *session) lose(h *hub.Hub, loss hub.Loss) {
	select {
	case <-s.done:
		return // it is going: it loses nothing more
	default:
	}
	s.losses.Add(h, loss, s.displayName)
	if s.unread.Add(1) == maxUnread+1 {
		s.tooSlow(fmt.Sprintf("it lost %d notifications in a row, and nothing was written to it meanwhile", maxUnread+1))
	}
}

// sendProgress queues a progress notification of h's server, whose token
// (as hub.MayLose keys it) is key, in a slot: the newest line of its
// token that waits, which a newer one replaces when the agent is behind.
// An agent behind whose queue is full loses it, and so does one behind
// when the token does not read (key "").
func (s *session) sendProgress(h *hub.Hub, line []byte, key string) {
	behind := s.behind()
	if key == "" {
		if behind {
			s.lose(h, hub.Dropped)
			return
		}
		s.sendLine(line)
		return
	}
	select {
	case <-s.done:
		return
	default:
	}
	s.slotsMu.Lock()
	if slot := s.slots[key]; slot != nil && behind {
		s.queued.Add(int64(len(line) - len(slot.line)))
		slot.line = line
		s.slotsMu.Unlock()
		s.lose(h, hub.Coalesced)
		return
	}
	slot := &progressSlot{key: key, line: line}
	if s.queued.Add(int64(len(line))) <= s.limit {
		select {
		case s.out <- outItem{slot: slot}:
			s.slots[key] = slot // the newest of its token
			s.slotsMu.Unlock()
			return
		default:
		}
	}
	s.queued.Add(-int64(len(line)))
	s.slotsMu.Unlock()
	if behind {
		s.lose(h, hub.Dropped)
		return
	}
	s.tooSlow("its queue is full")
}

func (s *session) reply(id mcp.ID, result json.RawMessage, err *mcp.Error) {
	s.send(&mcp.Message{ID: id, Result: result, Error: err})
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
	var leave []*member
	var orphans []mcp.ID
	for name, m := range s.members {
		if b, ok := want[name]; ok && b.Hub == m.b.Hub && !m.closed.Load() {
			continue
		}
		leave = append(leave, m)
		delete(s.members, name)
		for id, server := range s.inflight {
			if server == name {
				orphans = append(orphans, id)
				delete(s.inflight, id)
				delete(s.starting, id)
			}
		}
	}
	info, sampling, elicitation := s.info, s.sampling, s.elicitation
	s.mu.Unlock()
	for _, m := range leave {
		m.leave()
	}
	for _, b := range join {
		m, err := s.join(b, info, sampling, elicitation)
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
	for _, id := range orphans {
		s.reply(id, nil, mcp.NewError(CodeUnavailable, "the server left the workspace; the request was not completed"))
	}
	if len(orphans) > 0 {
		s.mu.Lock()
		s.checkDrainedLocked()
		s.mu.Unlock()
	}
	if old == nil || old == cat || !s.isInitialized() {
		return
	}
	if string(old.ToolsList()) != string(cat.ToolsList()) {
		s.send(&mcp.Message{Method: "notifications/tools/list_changed"})
	}
	if string(old.PromptsList()) != string(cat.PromptsList()) {
		s.send(&mcp.Message{Method: "notifications/prompts/list_changed"})
	}
	if string(old.ResourcesList()) != string(cat.ResourcesList()) || string(old.TemplatesList()) != string(cat.TemplatesList()) {
		s.send(&mcp.Message{Method: "notifications/resources/list_changed"})
	}
}

// join makes the session a member of a server's hub, with a goroutine
// that hands it the session's messages in order (it ends once leave has
// closed its queue and it is drained).
func (s *session) join(b Backend, info mcp.Implementation, sampling, elicitation bool) (*member, error) {
	m := &member{name: b.Name, b: b, in: make(chan *mcp.Message, memberQueue)}
	hm, err := b.Hub.Join(hub.MemberOptions{
		Info:        memberInfo(info),
		Sampling:    sampling,
		Elicitation: elicitation,
		Send:        func(msg *mcp.Message, line []byte) { s.fromServer(b.Name, b.Hub, msg, line) },
		Closed: func() {
			m.closed.Store(true)
			s.g.changed()
		},
	})
	if err != nil {
		return nil, err
	}
	m.m = hm
	go func() {
		for msg := range m.in {
			hm.Handle(msg)
		}
		hm.Leave()
	}()
	return m, nil
}

// push hands a message to the member's hub, unless its queue is full (the
// server does not read) or it left.
func (m *member) push(msg *mcp.Message) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.left {
		return false
	}
	select {
	case m.in <- msg:
		return true
	default:
		return false
	}
}

func (m *member) leave() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.left {
		m.left = true
		close(m.in)
	}
}

// memberInfo is how a session shows among a server's clients.
func memberInfo(info mcp.Implementation) mcp.Implementation {
	switch {
	case info.Name == "":
		info.Name = "(initializing) (gateway)"
	case info.Version == "":
		info.Name += " (gateway)"
	default:
		info.Version += " (gateway)"
	}
	return info
}

func (s *session) isInitialized() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.initialized
}

func (s *session) displayName() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.info.Name == "" {
		return "(initializing)"
	}
	if s.info.Version == "" {
		return s.info.Name
	}
	return s.info.Name + " " + s.info.Version
}

// request answers or routes one of the agent's requests.
func (s *session) request(msg *mcp.Message) {
	switch msg.Method {
	case "initialize":
		s.initialize(msg)
	case "ping":
		s.reply(msg.ID, json.RawMessage(`{}`), nil)
	case "tools/list":
		s.list(msg, (*Catalog).ToolsList)
	case "prompts/list":
		s.list(msg, (*Catalog).PromptsList)
	case "resources/list":
		s.list(msg, (*Catalog).ResourcesList)
	case "resources/templates/list":
		s.list(msg, (*Catalog).TemplatesList)
	case "tools/call":
		s.callTool(msg)
	case "prompts/get":
		s.named(msg, "prompt", (*Catalog).Prompt)
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		s.byURI(msg)
	case "completion/complete":
		s.complete(msg)
	case "logging/setLevel":
		s.setLevel(msg)
	default:
		s.reply(msg.ID, nil, mcp.NewError(mcp.CodeMethodNotFound, "method not found: %s", msg.Method))
	}
}

// serverInfo is how the gateway introduces itself.
var serverInfo = mcp.Implementation{Name: "mcpgen", Title: "mcpgen workspace gateway", Version: "gateway"}

// initialize answers at once, from the catalog the hubs have: the union
// of the servers' capabilities, and their instructions.
func (s *session) initialize(msg *mcp.Message) {
	var p struct {
		ProtocolVersion string                     `json:"protocolVersion"`
		ClientInfo      mcp.Implementation         `json:"clientInfo"`
		Capabilities    map[string]json.RawMessage `json:"capabilities"`
	}
	if err := json.Unmarshal(msg.Params, &p); err != nil {
		s.reply(msg.ID, nil, mcp.NewError(mcp.CodeInvalidParams, "initialize: %v", err))
		return
	}
	_, sampling := p.Capabilities["sampling"]
	_, elicitation := p.Capabilities["elicitation"]
	s.mu.Lock()
	s.info, s.sampling, s.elicitation = p.ClientInfo, sampling, elicitation
	members := slices.Collect(maps.Values(s.members))
	s.mu.Unlock()
	for _, m := range members {
		m.m.SetClient(memberInfo(p.ClientInfo), sampling, elicitation)
	}
	cat := s.cat.Load()
	result := map[string]any{
		"protocolVersion": mcp.NegotiateVersion(p.ProtocolVersion),
		"capabilities":    cat.Capabilities(),
		"serverInfo":      serverInfo,
	}
	if text := cat.Instructions(); text != "" {
		result["instructions"] = text
	}
	raw, err := jsonwire.Marshal(result)
	if err != nil {
		s.reply(msg.ID, nil, mcp.NewError(mcp.CodeInternalError, "initialize: %v", err))
		return
	}
	s.reply(msg.ID, raw, nil)
}

// list answers a list request from the catalog, in one page. The first
// one waits (off the read loop) for servers whose tools are not known
// yet: those starting for the first time, and idle ones that have no
// catalog kept, which it starts (an idle server with a catalog answers
// from it, and stays idle).
func (s *session) list(msg *mcp.Message, result func(*Catalog) json.RawMessage) {
	if s.waited.Load() || !s.startingFirstTime() && len(s.unknownIdle()) == 0 {
		s.waited.Store(true)
		s.reply(msg.ID, result(s.cat.Load()), nil)
		return
	}
	s.mu.Lock()
	s.lists++
	s.mu.Unlock()
	go func() { // ends within firstListWait, or with the session
		defer func() {
			s.mu.Lock()
			s.lists--
			s.checkDrainedLocked()
			s.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(s.ctx, firstListWait)
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
			case <-s.done:
				return
			case <-ctx.Done():
				<-started // at once: ctx ends them
				if s.ctx.Err() == nil {
					s.waited.Store(true)
					s.reply(msg.ID, result(s.cat.Load()), nil)
				}
				return
			}
		}
		s.g.invalidate()
		s.refresh() // the catalog of now, whatever run has applied yet
		s.waited.Store(true)
		s.reply(msg.ID, result(s.cat.Load()), nil)
	}()
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

// callTool routes a tools/call to the server that owns the tool, under
// the server's own name for it. A server that cannot take it now gets the
// agent an error result that says why and when to call again.
func (s *session) callTool(msg *mcp.Message) {
	cat := s.cat.Load()
	name, params, ok := renamed(msg.Params, "name", func(name string) (string, bool) {
		r, ok := cat.Tool(name)
		return r.Name, ok
	})
	if !ok {
		s.reply(msg.ID, nil, mcp.NewError(mcp.CodeInvalidParams, "unknown tool: %q (tools/list lists them)", name))
		return
	}
	r, _ := cat.Tool(name)
	out := *msg
	out.Params = params
	s.route(r.Server, r.Failed, &out, true)
}

// route hands a request to its server as the server is now: at once when
// it takes requests; through a start when it is idle, or starting for a
// request (forwardStarted); else the agent is told why not, and when to
// try again: a tool call in an error result (asResult), which the model
// reads, anything else in an error.
func (s *session) route(server string, failed bool, msg *mcp.Message, asResult bool) {
	how, why := s.reach(server, failed)
	switch how {
	case reachNow:
		s.forward(server, msg)
	case reachStart:
		s.forwardStarted(server, msg, asResult)
	default:
		s.refuse(msg.ID, why, asResult)
	}
}

// refuse answers a request that its server cannot take.
func (s *session) refuse(id mcp.ID, why string, asResult bool) {
	if asResult {
		res, _ := mcp.ErrorResult("%s", why).MarshalJSON()
		s.reply(id, res, nil)
		return
	}
	s.reply(id, nil, mcp.NewError(CodeUnavailable, "%s", why))
}

// named routes a request that names a prompt by the gateway's name.
func (s *session) named(msg *mcp.Message, what string, lookup func(*Catalog, string) (Route, bool)) {
	cat := s.cat.Load()
	name, params, ok := renamed(msg.Params, "name", func(name string) (string, bool) {
		r, ok := lookup(cat, name)
		return r.Name, ok
	})
	if !ok {
		s.reply(msg.ID, nil, mcp.NewError(mcp.CodeInvalidParams, "unknown %s: %q", what, name))
		return
	}
	r, _ := lookup(cat, name)
	out := *msg
	out.Params = params
	s.route(r.Server, r.Failed, &out, false)
}

// byURI routes resources/read, subscribe and unsubscribe to the server of
// the URI: the one that listed it, else the one whose template it fits.
func (s *session) byURI(msg *mcp.Message) {
	var p struct {
		URI string `json:"uri"`
	}
	if err := json.Unmarshal(msg.Params, &p); err != nil || p.URI == "" {
		s.reply(msg.ID, nil, mcp.NewError(mcp.CodeInvalidParams, "%s: no uri", msg.Method))
		return
	}
	r, ok := s.cat.Load().Resource(p.URI)
	if !ok {
		// -32002 is the spec's "resource not found".
		s.reply(msg.ID, nil, mcp.NewError(-32002, "resource not found: no server of the workspace offers %q", p.URI))
		return
	}
	s.route(r.Server, r.Failed, msg, false)
}

// complete routes completion/complete by what it completes: a prompt (by
// the gateway's name, renamed) or a resource template.
func (s *session) complete(msg *mcp.Message) {
	var p map[string]json.RawMessage
	var ref struct {
		Type string `json:"type"`
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	if json.Unmarshal(msg.Params, &p) != nil || json.Unmarshal(p["ref"], &ref) != nil {
		s.reply(msg.ID, nil, mcp.NewError(mcp.CodeInvalidParams, "completion/complete: no ref"))
		return
	}
	cat := s.cat.Load()
	var r Route
	var ok bool
	switch ref.Type {
	case "ref/prompt":
		var refParams json.RawMessage
		_, refParams, ok = renamed(p["ref"], "name", func(name string) (string, bool) {
			r, ok := cat.Prompt(name)
			return r.Name, ok
		})
		if ok {
			r, _ = cat.Prompt(ref.Name)
			p["ref"] = refParams
		}
	case "ref/resource":
		r, ok = cat.Template(ref.URI)
	}
	if !ok {
		s.reply(msg.ID, nil, mcp.NewError(mcp.CodeInvalidParams, "completion/complete: no server of the workspace has %s %q", ref.Type, ref.Name+ref.URI))
		return
	}
	params, err := jsonwire.Marshal(p)
	if err != nil {
		s.reply(msg.ID, nil, mcp.NewError(mcp.CodeInvalidParams, "completion/complete: %v", err))
		return
	}
	out := *msg
	out.Params = params
	s.route(r.Server, r.Failed, &out, false)
}

// setLevel passes logging/setLevel to every server that logs, and answers
// at once: the level is a wish, and a server that is down gets it when an
// agent asks again. An idle server is left idle: the wish would start it.
func (s *session) setLevel(msg *mcp.Message) {
	cat := s.cat.Load()
	s.mu.Lock()
	var targets []*member
	for _, name := range cat.Logging() {
		if m := s.members[name]; m != nil {
			targets = append(targets, m)
		}
	}
	s.mu.Unlock()
	targets = slices.DeleteFunc(targets, func(m *member) bool { return m.b.Hub.Catalog().Idle })
	for _, m := range targets {
		// An id of the gateway's own: the answer is dropped.
		out := *msg
		out.ID = mcp.StringID("mcpgen-setlevel")
		m.push(&out)
	}
	s.reply(msg.ID, json.RawMessage(`{}`), nil)
}

// A reach is how a request can reach its server now.
type reach int

const (
	reachNow   reach = iota // it takes requests
	reachStart              // it is idle, or starting for a request: the request starts it and waits
	reachNot                // it cannot take requests now
)

// reach says how a request reaches a server now, and why not when it
// cannot.
func (s *session) reach(server string, failed bool) (reach, string) {
	s.mu.Lock()
	m := s.members[server]
	s.mu.Unlock()
	if m == nil {
		return reachNot, fmt.Sprintf("server %q is not running in the workspace now", server)
	}
	c := m.b.Hub.Catalog()
	if !failed && c.Failed == nil {
		switch {
		case c.Ready:
			return reachNow, ""
		case c.Idle || c.Waking:
			return reachStart, ""
		}
	}
	var st State
	if m.b.State != nil {
		st = m.b.State()
	}
	if c.Failed != nil || failed || st.State == "failed" {
		why := st.LastError
		if why == "" && c.Failed != nil {
			why = c.Failed.Error()
		}
		return reachNot, fmt.Sprintf("server %q failed and is not running: %s. It is tried again at the next reload (mcpgen reload --workspace ID); the other servers' tools work meanwhile.", server, oneLine(why))
	}
	switch {
	case st.State == "backoff" && !st.RetryAt.IsZero():
		wait := max(time.Until(st.RetryAt), 0).Round(time.Second)
		return reachNot, fmt.Sprintf("server %q is restarting after it stopped (%s); mcpgen starts it again at %s (in %s). Call the tool again then; the other servers' tools work meanwhile.",
			server, oneLine(st.LastError), st.RetryAt.Format("15:04:05"), wait)
	case st.State == "starting" || st.State == "backoff" || st.State == "ready":
		return reachNot, fmt.Sprintf("server %q is starting; call the tool again in a few seconds. The other servers' tools work meanwhile.", server)
	}
	return reachNot, fmt.Sprintf("server %q is not running (%s)", server, st.State)
}

func oneLine(s string) string {
	if s == "" {
		return "no reason given"
	}
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// forwardStarted hands a request to a server that is idle, or starting
// for a request: off the read loop, it starts the server (the hub bounds
// the wait by the server's startup_timeout) and then forwards the
// request. A start that fails answers it with why (see refuse), as the
// hub says it. A cancellation meanwhile drops it unsent.
func (s *session) forwardStarted(server string, msg *mcp.Message, asResult bool) {
	s.mu.Lock()
	if _, dup := s.inflight[msg.ID]; dup {
		s.mu.Unlock()
		s.reply(msg.ID, nil, mcp.NewError(mcp.CodeInvalidRequest, "request id %s is already in flight", msg.ID))
		return
	}
	m := s.members[server]
	busy := len(s.starting) >= maxStarting
	if m == nil || busy {
		s.mu.Unlock()
		why := fmt.Sprintf("server %q is not running in the workspace now", server)
		if busy {
			why = fmt.Sprintf("server %q is starting, and %d requests of this agent wait for servers to start already; retry once it has", server, maxStarting)
		}
		s.refuse(msg.ID, why, asResult)
		return
	}
	call := &startingCall{server: server}
	s.inflight[msg.ID] = server
	s.starting[msg.ID] = call
	s.mu.Unlock()
	go func() { // ends when the start does (bounded by the hub), or with the session (s.ctx)
		err := m.b.Hub.EnsureStarted(s.ctx)
		s.mu.Lock()
		current := s.starting[msg.ID] == call
		if current {
			delete(s.starting, msg.ID)
		}
		if !current || s.members[server] != m {
			// Cancelled, or its server left (refresh answered it).
			s.checkDrainedLocked()
			s.mu.Unlock()
			return
		}
		if err != nil {
			delete(s.inflight, msg.ID)
			s.mu.Unlock()
			why := err.Error()
			var we *mcp.Error
			if errors.As(err, &we) {
				why = we.Message
			}
			s.refuse(msg.ID, fmt.Sprintf("%s. The other servers' tools work meanwhile; a later call tries again (mcpgen status and mcpgen logs %s say more).", oneLine(why), server), asResult)
			s.mu.Lock()
			s.checkDrainedLocked()
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		s.pushTo(m, server, msg)
	}()
}

// forward hands a request to a server's hub under the agent's id.
func (s *session) forward(server string, msg *mcp.Message) {
	s.mu.Lock()
	if _, dup := s.inflight[msg.ID]; dup {
		s.mu.Unlock()
		s.reply(msg.ID, nil, mcp.NewError(mcp.CodeInvalidRequest, "request id %s is already in flight", msg.ID))
		return
	}
	m := s.members[server]
	if m != nil {
		s.inflight[msg.ID] = server
	}
	s.mu.Unlock()
	if m == nil {
		s.reply(msg.ID, nil, mcp.NewError(CodeUnavailable, "server %q is not running in the workspace now", server))
		return
	}
	s.pushTo(m, server, msg)
}

// pushTo hands a request, in inflight already, to its server's member.
func (s *session) pushTo(m *member, server string, msg *mcp.Message) {
	if !m.push(msg) {
		s.mu.Lock()
		delete(s.inflight, msg.ID)
		s.checkDrainedLocked()
		s.mu.Unlock()
		s.reply(msg.ID, nil, mcp.NewError(CodeUnavailable, "server %q is not taking requests now (it does not read them); retry later", server))
	}
}

func (s *session) notification(msg *mcp.Message) {
	switch msg.Method {
	case "notifications/initialized":
		s.mu.Lock()
		s.initialized = true
		s.mu.Unlock()
	case "notifications/cancelled":
		var p struct {
			RequestID mcp.ID `json:"requestId"`
		}
		if json.Unmarshal(msg.Params, &p) != nil {
			return
		}
		s.mu.Lock()
		server, ok := s.inflight[p.RequestID]
		delete(s.inflight, p.RequestID)
		_, unsent := s.starting[p.RequestID] // it waits for its server to start
		delete(s.starting, p.RequestID)
		s.checkDrainedLocked()
		m := s.members[server]
		s.mu.Unlock()
		if ok && m != nil && !unsent {
			m.push(msg) // the hub tells the server, under its id
		}
	}
	// roots/list_changed: the hubs answer roots/list themselves; progress
	// of the agent's own: no server asked for it.
}

// response delivers the agent's answer to a server's request.
func (s *session) response(msg *mcp.Message) {
	s.mu.Lock()
	r, ok := s.routed[msg.ID]
	delete(s.routed, msg.ID)
	m := s.members[r.server]
	s.mu.Unlock()
	if !ok || m == nil {
		return
	}
	out := *msg
	out.ID = r.id
	m.push(&out)
}

// fromServer takes what a server's hub sends the session. It runs on the
// hub's goroutines: it must not block.
func (s *session) fromServer(server string, h *hub.Hub, msg *mcp.Message, line []byte) {
	switch {
	case msg.IsResponse():
		s.mu.Lock()
		owner, ok := s.inflight[msg.ID]
		if ok && owner == server {
			delete(s.inflight, msg.ID)
		}
		s.mu.Unlock()
		if ok && owner == server {
			s.sendLine(line) // the agent's id already: as the hub wrote it
			s.mu.Lock()
			s.checkDrainedLocked() // after the answer is queued: it goes out before the close
			s.mu.Unlock()
		}
	case msg.IsRequest():
		s.mu.Lock()
		s.nextID++
		id := mcp.Int64ID(s.nextID)
		s.routed[id] = routedRequest{server: server, id: msg.ID}
		s.mu.Unlock()
		out := *msg
		out.ID = id
		s.send(&out)
	default:
		s.serverNotification(server, h, msg, line)
	}
}

func (s *session) serverNotification(server string, h *hub.Hub, msg *mcp.Message, line []byte) {
	switch msg.Method {
	case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
		// The gateway's own come after its catalog changed (refresh).
	case "notifications/message":
		if s.behind() {
			s.lose(h, hub.Dropped) // before the work of naming its logger
			return
		}
		s.send(&mcp.Message{Method: msg.Method, Params: withLogger(msg.Params, server)})
	case "notifications/progress":
		_, key := hub.MayLose(msg)
		s.sendProgress(h, line, key) // under the agent's own token
	case "notifications/cancelled":
		// The server gave up a request it had sent the agent.
		var p map[string]json.RawMessage
		var hubID mcp.ID
		if json.Unmarshal(msg.Params, &p) != nil || hubID.UnmarshalJSON(p["requestId"]) != nil {
			return
		}
		s.mu.Lock()
		var id mcp.ID
		for k, r := range s.routed {
			if r.server == server && r.id == hubID {
				id = k
				delete(s.routed, k)
				break
			}
		}
		s.mu.Unlock()
		if !id.IsValid() {
			return
		}
		p["requestId"] = json.RawMessage(id.String())
		params, err := jsonwire.Marshal(p)
		if err == nil {
			s.send(&mcp.Message{Method: msg.Method, Params: params})
		}
	default:
		// resources/updated.
		s.sendLine(line)
	}
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

// renamed returns params with the string member key replaced by what
// rename makes of it, every other byte as the agent sent it; the name as
// sent; and whether rename knew it.
func renamed(params json.RawMessage, key string, rename func(string) (string, bool)) (string, json.RawMessage, bool) {
	members, err := jsonwire.Members(params, 0)
	if err != nil {
		return "", nil, false
	}
	for _, m := range members {
		if m.Key != key {
			continue
		}
		var name string
		if json.Unmarshal(m.Value, &name) != nil {
			return "", nil, false
		}
		original, ok := rename(name)
		if !ok {
			return name, nil, false
		}
		out := make([]byte, 0, len(params)+len(original)-len(m.Value)+2)
		out = append(out, params[:m.ValueAt]...)
		out = jsonwire.AppendString(out, original)
		out = append(out, params[m.ValueAt+len(m.Value):]...)
		return name, out, true
	}
	return "", nil, false
}
