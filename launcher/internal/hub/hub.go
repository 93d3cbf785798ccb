// Package hub shares one MCP server process among every client of a
// workspace: it is the server's only peer, answers each client's
// initialize from the server's cached result, remaps request ids, progress
// tokens and cancellations both ways, routes the server's own requests, and
// outlives the server's processes (a crash, a reload, a rebuild).
package hub

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
	"github.com/mcpgen/mcpgen/launcher/internal/agent"
	"github.com/mcpgen/mcpgen/launcher/internal/tracing"
	"github.com/mcpgen/mcpgen/launcher/internal/translate"
	"github.com/mcpgen/mcpgen/mcp"
)

// A Hub shares one server process among every client of the workspace.
//
// The hub is the server's only peer: it makes the server ready itself and
// answers each client's initialize from the server's cached result. A
// client's requests are forwarded under ids of the upstream's own and their
// responses come back under the client's ids, so every client sees only
// answers to its own requests, with its ids exactly as it sent them.
// Progress tokens and cancellations are remapped the same way.
//
// The hub outlives the server's processes: when one crashes or is replaced
// (a reload, a rebuild), the requests in flight get an error, the clients
// stay connected, and they get notifications/tools/list_changed if the new
// process offers different tools.
type Hub struct {
	name string
	root string // the workspace dir, answered to roots/list
	log  *slog.Logger

	mu   sync.Mutex
	up   *Upstream             // the ready server, nil while there is none
	init *mcp.InitializeResult // the server's answer to initialize
	desc description           // what modern agents are told of init (era.go)
	// The resources that agents' subscriptions want to hear of, and how
	// many want each (resources.go).
	resourceSubs map[string]int
	tools        []*mcp.Tool
	toolsJSON    []byte        // the catalog as listed, to tell when it changes
	wake         chan struct{} // closed (and replaced) when up is set or the server fails
	failure      error         // why the server is not ready, when it will not be soon
	closed       bool
	clients      map[*client]struct{}
	routed       map[*routedRequest]struct{} // server requests handed to a client
	progress     map[string]*progressRoute   // by the token the server sees (see tokenKey)
	nextID       int64                       // the hub's progress tokens so far
	listing      bool                        // a re-list after list_changed is under way
	relistAgain  bool                        // and another list_changed came meanwhile
	idle         idleState                   // lazy start and idle stop (lazy.go)

	// The requests of each era of the hub's own clients (era.go).
	eras agent.EraTotals

	// What clients lost of the server's notifications (shed.go).
	dropped, coalesced atomic.Int64

	// roomWaits, in tests, hears each time a client's read loop starts
	// waiting for room (see agent.Options.Stalled): how a test knows that
	// the hub stopped reading a client. Set before clients connect.
	roomWaits func()
	// forwarding, in tests, hears of each request about to be forwarded
	// to up at once (the server was ready when the request came). Set
	// before clients connect.
	forwarding func(up *Upstream)

	// What the hub's owner hears of the requests it forwards (hooks.go);
	// nil: nothing.
	hooks atomic.Pointer[Hooks]

	// What the workspace gateway reads (catalog.go).
	exposes     func(tool string) bool // the tool filter; nil shows every tool
	lists       Lists                  // listed once the hub is watched, or preloaded
	listed      chan struct{}          // closed once listedUp's lists are listed (Listed)
	listedUp    *Upstream
	watchers    map[int]func()
	nextWatch   int
	listsWanted bool // the hub is watched: keep the lists besides tools

	// The server's startup_timeout and tool_timeout: how long a request
	// waits for the server to be ready (readyBoundLocked), how long the
	// server may take to answer it (client.limit), and so how long a
	// client that closed its input waits for its answers (AnswerBound).
	startTimeout, toolTimeout time.Duration

	// Translation between the eras (translate.go): the server's calls held
	// for a modern agent's input, and how long each may wait for it (the
	// server's input_timeout).
	held         *translate.Table
	inputTimeout time.Duration
	seq          atomic.Uint64 // numbers clients and forwards (client.serial, forward.seq)

	// The tracer of tool calls (trace.go); nil: none.
	tracer atomic.Pointer[tracing.Tracer]
}

// A routedRequest is a server's request that a client answers. Its
// handler (Hub.serverRequest) waits for answer, which whoever takes the
// request out of Hub.routed fills: the client's response, or an error.
type routedRequest struct {
	client *client
	up     *Upstream
	answer chan *mcp.Message // buffered: a send never waits
	ask    *agent.Ask        // guarded by the hub's mu; nil until asked
}

// A progressRoute leads a server's progress notifications back to the
// client that asked for them, under its own token.
type progressRoute struct {
	client *client
	token  []byte // the client's, as it wrote it
	key    string // the notifications' key on the client's Conn (see agent.Conn.Notify)
}

// New returns the hub of server name; root is the workspace dir.
func New(name, root string, log *slog.Logger) *Hub {
	return &Hub{
		name:     name,
		root:     root,
		log:      log,
		wake:     make(chan struct{}),
		clients:  make(map[*client]struct{}),
		routed:   make(map[*routedRequest]struct{}),
		progress: make(map[string]*progressRoute),
		watchers: make(map[int]func()),

		toolTimeout: defaultToolTimeout,
		held:        translate.NewTable(),
	}
}

// defaultToolTimeout is the manifest's default tool_timeout, for a hub
// that was told none.
const defaultToolTimeout = time.Minute

// readyWait is how long a client's request waits at least for a server
// that is starting or restarting before it fails; longer for a server
// whose startup_timeout is (see readyBoundLocked).
const readyWait = 30 * time.Second

// startMargin is added to a server's startup_timeout for the wait of a
// request: the time to spawn it, or to stop the process before.
const startMargin = 5 * time.Second

// readyBoundLocked is how long a request waits for the server to be
// ready: readyWait, or its startup_timeout and a margin when that is
// longer, so that a request that starts a slow lazy server waits as long
// as its start may take. The caller holds h.mu.
func (h *Hub) readyBoundLocked() time.Duration {
	return max(readyWait, h.startTimeout+startMargin)
}

// SetRoot changes the workspace dir that roots/list answers (a reload may
// change it).
func (h *Hub) SetRoot(root string) {
	h.mu.Lock()
	h.root = root
	h.mu.Unlock()
}

// Attach makes up the hub's server, ready with the given handshake. A
// watched hub then lists the server's prompts, resources and templates
// too (see Listed).
func (h *Hub) Attach(up *Upstream, init *mcp.InitializeResult, tools []*mcp.Tool) {
	catalog := toolsCatalog(tools)
	others := otherLists(init)
	h.mu.Lock()
	changed := h.toolsJSON != nil && !bytes.Equal(catalog, h.toolsJSON)
	h.up, h.init, h.tools, h.toolsJSON, h.failure = up, init, tools, catalog, nil
	h.idle.woken = false
	h.wakeLocked()
	clients := h.clientList()
	// The lists the server no longer has go; those it has are kept
	// until listed again (a list is extra: a failed listing keeps it).
	h.lists = h.lists.only(others)
	var done chan struct{}
	if !h.listsWanted {
		others = nil
	}
	if len(others) > 0 {
		done = make(chan struct{})
	}
	h.listed, h.listedUp = done, up
	h.mu.Unlock()
	if changed {
		h.broadcast(clients, listChanged)
	}
	h.listOthers(up, done, others...)
	h.resubscribe(up, init)
	h.changed()
}

// Listed returns a channel closed once the lists that up's Attach began
// (prompts, resources, templates: see Watch) are listed, or failed to be;
// closed at once when there were none, or up is not the hub's server.
func (h *Hub) Listed(up *Upstream) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.listedUp == up && h.listed != nil {
		return h.listed
	}
	return closedChan
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// SetTimeouts says how long the server may take to start (its
// startup_timeout: a request waits that long for it, 30 s at least) and
// to answer a request (its tool_timeout: the request ends then, see
// client.limit); zero: the manifest's defaults. A request sent before
// keeps the bound it had.
func (h *Hub) SetTimeouts(startup, tool time.Duration) {
	if tool <= 0 {
		tool = defaultToolTimeout
	}
	h.mu.Lock()
	h.startTimeout, h.toolTimeout = startup, tool
	h.mu.Unlock()
}

// callTimeout is how long a request forwarded to the server may take: its
// tool_timeout (see client.limit).
func (h *Hub) callTimeout() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.toolTimeout
}

// AnswerBound is the longest a request of a client may wait for its
// answer: the wait for the server to be ready (it may be idle, or
// restarting), then its tool_timeout. A client that closed its input
// waits no longer than that for the answers to what it asked before.
func (h *Hub) AnswerBound() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.readyBoundLocked() + h.toolTimeout
}

// Detach drops up when it is the hub's server: requests arriving now wait
// for the next one. Requests in flight are answered by up itself, with an
// error, when it ends. up sends nothing from now on (see Upstream.refuse):
// a client that got it from the hub just before goes to the next process
// too. Server requests that up routed to clients are given up: the
// clients' answers have nowhere to go. Call it before closing the server's
// stdin.
func (h *Hub) Detach(up *Upstream) {
	up.refuse(errStopping)
	h.mu.Lock()
	current := h.up == up
	if current {
		h.up = nil
	}
	var gone []*routedRequest
	var asks []*agent.Ask
	for r := range h.routed {
		if r.up == up {
			delete(h.routed, r)
			gone = append(gone, r)
			asks = append(asks, r.ask)
		}
	}
	h.mu.Unlock()
	for i, r := range gone {
		if asks[i] != nil {
			asks[i].Forget() // the client's answer has nowhere to go
		}
		r.answer <- &mcp.Message{Error: unavailable(h.name, errStopping)}
	}
	if current {
		h.changed()
	}
}

// Fail says that the server will not be ready soon: waiting requests and
// new ones get err instead of waiting for it.
func (h *Hub) Fail(err error) {
	h.mu.Lock()
	h.failure = err
	h.idle.woken = false
	h.wakeLocked()
	h.mu.Unlock()
	h.changed()
}

func (h *Hub) wakeLocked() {
	close(h.wake)
	h.wake = make(chan struct{})
}

// Close disconnects every client: the server left the manifest, or the
// session is ending. Their requests in flight have been answered by then
// (the upstream answers them when the process ends).
func (h *Hub) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	h.failure = fmt.Errorf("server %q was removed from the workspace", h.name)
	h.wakeLocked()
	clients := h.clientList()
	h.mu.Unlock()
	for _, c := range clients {
		c.close()
	}
	h.changed()
}

// Tools returns the names of the server's tools that its clients see.
func (h *Hub) Tools() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return exposedNames(h.tools, h.exposes)
}

// Members returns how many of the clients are Members (sessions of the
// workspace gateway).
func (h *Hub) Members() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for c := range h.clients {
		if c.member {
			n++
		}
	}
	return n
}

// Clients returns the names the connected clients gave in initialize.
func (h *Hub) Clients() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var names []string
	for c := range h.clients {
		names = append(names, c.displayName())
	}
	slices.Sort(names)
	return names
}

func (h *Hub) clientList() []*client {
	out := make([]*client, 0, len(h.clients))
	for c := range h.clients {
		out = append(out, c)
	}
	return out
}

// current returns the hub's server, or nil while there is none.
func (h *Hub) current() *Upstream {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.up
}

// ready returns the hub's server, waiting for it when it is starting.
func (h *Hub) ready(ctx context.Context) (*Upstream, *mcp.InitializeResult, error) {
	h.mu.Lock()
	bound := h.readyBoundLocked()
	h.mu.Unlock()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	w := h.await() // an idle server starts: this request needs it
	defer w.done()
	for {
		h.mu.Lock()
		up, init, failure, wake, closed := h.up, h.init, h.failure, h.wake, h.closed
		startErr := w.failedLocked()
		h.mu.Unlock()
		switch {
		case up != nil && !up.refuses():
			return up, init, nil
		case closed || failure != nil:
			return nil, nil, mcp.NewError(CodeUnavailable, "%v", failure)
		case startErr != nil:
			return nil, nil, mcp.NewError(CodeUnavailable, "server %q did not start: %v", h.name, startErr)
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, nil, mcp.NewError(CodeUnavailable, "server %q is not ready: %v", h.name, context.Cause(ctx))
		case <-timer.C:
			return nil, nil, mcp.NewError(CodeUnavailable, "server %q is not ready after %s (see mcpgen status)", h.name, bound)
		}
	}
}

// serverRequest answers, routes or rejects a request from the server: no
// server request goes unanswered, or it might wait forever. It runs on a
// goroutine of the upstream's Conn, and waits there for the client that
// answers; when the server cancels the request, ctx is done, and that
// client is told.
func (h *Hub) serverRequest(ctx context.Context, u *Upstream, req *mcp.Request) (any, error) {
	switch req.Method {
	case "ping":
		return emptyResult, nil
	case "roots/list":
		return h.roots(), nil
	}
	if u.refuses() {
		return nil, unavailable(h.name, errStopping) // nobody will read it: the server is going
	}
	// seam: translation. A modern agent's call is answered input_required,
	// and held for its retry; a legacy agent is asked (attribute).
	c, f, incapable := h.attribute(req.Method)
	if incapable {
		c.refuseIncapable(f, req.Method)
		return nil, mcp.NewError(mcp.CodeMethodNotFound, "the client whose call this is did not declare %s", req.Method)
	}
	if f != nil {
		return h.holdForInput(ctx, u, c, f, req)
	}
	if c == nil {
		return nil, mcp.NewError(mcp.CodeMethodNotFound, "no client of this workspace can answer %s", req.Method)
	}
	r := &routedRequest{client: c, up: u, answer: make(chan *mcp.Message, 1)}
	h.mu.Lock()
	h.routed[r] = struct{}{}
	h.mu.Unlock()
	// The agent's Conn gives the request an id of its own, which its
	// answer carries back.
	ask := c.conn.Ask(req.Method, req.Params, func(result json.RawMessage, err *mcp.Error) {
		if h.unroute(r) {
			r.answer <- &mcp.Message{Result: result, Error: err}
		}
	})
	h.mu.Lock()
	_, routed := h.routed[r]
	r.ask = ask
	h.mu.Unlock()
	if !routed {
		ask.Forget() // given up meanwhile (Detach, drop): its answer goes nowhere
	}
	select {
	case m := <-r.answer:
		if m.Error != nil {
			return nil, m.Error
		}
		return m.Result, nil
	case <-ctx.Done():
		if h.unroute(r) {
			ask.Cancel("cancelled by the server")
		}
		return nil, context.Cause(ctx)
	}
}

// unroute takes a routed request out, and reports whether it was there.
func (h *Hub) unroute(r *routedRequest) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.routed[r]; !ok {
		return false
	}
	delete(h.routed, r)
	return true
}

// roots is the answer to roots/list: the workspace.
func (h *Hub) roots() json.RawMessage {
	h.mu.Lock()
	u := url.URL{Scheme: "file", Path: h.root}
	h.mu.Unlock()
	b, _ := jsonwire.Marshal(map[string]any{"roots": []map[string]string{{"uri": u.String(), "name": "workspace"}}})
	return b
}

// answerer picks the client to answer a server request: one that declared
// the capability, preferring one with a request in flight (the server most
// likely asks on behalf of that request).
func (h *Hub) answerer(method string) *client {
	h.mu.Lock()
	clients := h.clientList()
	h.mu.Unlock()
	var capable, busy []*client
	for _, c := range clients {
		if !c.conn.Can(method) {
			continue
		}
		capable = append(capable, c)
		if c.busy() {
			busy = append(busy, c)
		}
	}
	switch {
	case len(busy) > 0:
		return busy[0]
	case len(capable) > 0:
		return capable[0]
	}
	return nil
}

// serverNotification passes a server's notification to whom it concerns.
// It runs on the upstream's read loop: nothing here waits for a client.
// (The Conn handles notifications/cancelled itself: see serverRequest.)
func (h *Hub) serverNotification(u *Upstream, msg *mcp.Message) {
	switch msg.Method {
	case "notifications/tools/list_changed":
		h.relist(u)
	case "notifications/progress":
		h.routeProgress(msg)
	case "notifications/tasks":
		h.routeTask(msg)
	case "notifications/prompts/list_changed", "notifications/resources/list_changed":
		h.mu.Lock()
		wanted := h.listsWanted && h.up == u
		clients := h.clientList()
		h.mu.Unlock()
		if wanted {
			lists := []list{promptsList}
			if msg.Method != "notifications/prompts/list_changed" {
				lists = []list{resourcesList, templatesList}
			}
			h.listOthers(u, nil, lists...)
		}
		h.broadcast(clients, msg)
	default:
		// Logging, resources and prompts changes: every client.
		h.mu.Lock()
		clients := h.clientList()
		h.mu.Unlock()
		if msg.Method == "notifications/resources/updated" {
			h.routeResourceUpdated(clients, msg)
		}
		h.broadcast(clients, msg)
	}
}

var listChanged = &mcp.Message{Method: "notifications/tools/list_changed"}

// relist lists the tools again after the server said they changed, and
// tells the clients when they did. It runs outside the read loop, which
// must keep reading for the answer to arrive. A list_changed that comes
// while a re-list is under way (of this process or of the last one) has
// it list once more when it ends, from the current process: the list under
// way may have been answered before the change.
func (h *Hub) relist(u *Upstream) {
	h.mu.Lock()
	if h.up != u {
		h.mu.Unlock()
		return
	}
	if h.listing {
		h.relistAgain = true
		h.mu.Unlock()
		return
	}
	h.listing = true
	h.mu.Unlock()
	// The goroutine ends when a listing ends with no list_changed come
	// meanwhile; each listing is bounded by readyWait.
	go func() {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), readyWait)
			tools, err := u.listTools(ctx)
			cancel()
			h.mu.Lock()
			if h.relistAgain && h.up != nil {
				h.relistAgain = false
				u = h.up
				h.mu.Unlock()
				continue
			}
			h.listing, h.relistAgain = false, false
			if err != nil || h.up != u {
				h.mu.Unlock()
				if err != nil {
					h.log.Warn("re-listing tools failed", "server", h.name, "error", err)
				}
				return
			}
			catalog := toolsCatalog(tools)
			changed := !bytes.Equal(catalog, h.toolsJSON)
			h.tools, h.toolsJSON = tools, catalog
			clients := h.clientList()
			h.mu.Unlock()
			if changed {
				h.log.Info("tools changed", "server", h.name, "tools", len(tools))
				h.broadcast(clients, listChanged)
				h.changed()
			}
			return
		}
	}()
}

// broadcast sends msg to every initialized client of clients, encoded once.
// A log message may be lost for a client that is behind (see
// agent.Conn.Notify).
func (h *Hub) broadcast(clients []*client, msg *mcp.Message) {
	var line []byte
	var level *string
	list, changed := changedList(msg.Method)
	for _, c := range clients {
		if changed && !c.member {
			// Its legacy session, and the subscriptions of a modern
			// agent that asked (see agent.Conn.ListChanged).
			c.conn.ListChanged(list)
			continue
		}
		if c.hears(msg, &level) {
			if line == nil {
				line = agent.EncodeLine(msg)
			}
			c.deliver(msg, line, msg.Method == "notifications/message", "")
		}
	}
}

// hears reports whether the client gets a server's notification that is
// for every client: an agent with a legacy session does (a member's, whose
// agent opened one with the gateway); a modern agent without one hears
// only the log messages that a request of its asked for (see
// agent.Conn.WantsLog). level is msg's log level, read once for every
// client (nil until then).
func (c *client) hears(msg *mcp.Message, level **string) bool {
	if c.member && c.conn.Session() || !c.member && c.conn.Initialized() {
		return true
	}
	if msg.Method != "notifications/message" {
		return false
	}
	if *level == nil {
		var p struct {
			Level string `json:"level"`
		}
		_ = json.Unmarshal(msg.Params, &p)
		*level = &p.Level
	}
	return c.conn.WantsLog(**level)
}

// routeTask gives a task's notification to the agent it was issued to
// (see agent.Conn.TaskChanged): its subscriptions that asked for it hear
// it; nobody else does.
func (h *Hub) routeTask(msg *mcp.Message) {
	id, err := agent.TaskID(msg.Params)
	if err != nil {
		return
	}
	h.mu.Lock()
	clients := h.clientList()
	h.mu.Unlock()
	for _, c := range clients {
		if c.conn.TaskChanged(id, msg) {
			return
		}
	}
}

// changedList returns the list a list_changed notification is of.
func changedList(method string) (string, bool) {
	switch method {
	case "notifications/tools/list_changed":
		return "tools", true
	case "notifications/prompts/list_changed":
		return "prompts", true
	case "notifications/resources/list_changed":
		return "resources", true
	}
	return "", false
}

func toolsCatalog(tools []*mcp.Tool) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, t := range tools {
		if i > 0 {
			b.WriteByte(',')
		}
		if len(t.Raw) > 0 {
			b.Write(t.Raw)
		} else {
			raw, _ := t.MarshalJSON()
			b.Write(raw)
		}
	}
	b.WriteByte(']')
	return b.Bytes()
}

// routeProgress gives a progress notification to the client that owns the
// token, under the client's own token; the rest of it passes as it is.
func (h *Hub) routeProgress(msg *mcp.Message) {
	spans, raw := memberSpans(msg.Params, "progressToken")
	key, ok := tokenKey(raw)
	if !ok {
		return
	}
	h.mu.Lock()
	route := h.progress[key]
	var token []byte
	if route != nil {
		token = route.token
	}
	h.mu.Unlock()
	if route == nil || token == nil {
		return // nobody's, or a held call's (see retoken)
	}
	// It may be coalesced with another of its token, for a client that is
	// behind (see agent.Conn.Notify): route.key is unique among the
	// client's tokens.
	out := &mcp.Message{Method: msg.Method, Params: splice(msg.Params, spans, token)}
	route.client.deliver(out, agent.EncodeLine(out), true, route.key)
}

// Serve runs one client's connection until it closes or the hub does.
func (h *Hub) Serve(ctx context.Context, rwc io.ReadWriteCloser) {
	c := h.newClient(nil)
	conn := agent.New(ctx, rwc, c, agent.Options{
		Log:         h.log.With("server", h.name),
		AnswerBound: h.AnswerBound,
		Stalled:     h.roomWaits,
		Eras:        &h.eras,
	})
	c.attach(conn)
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		c.cancelCtx()
		rwc.Close()
		return
	}
	h.clients[c] = struct{}{}
	h.clientsChangedLocked(false)
	h.mu.Unlock()
	conn.Serve()
	c.end()
	h.drop(c)
}

// add makes c a client of the hub, unless the hub is closed.
func (h *Hub) add(c *client) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.clients[c] = struct{}{}
	return true
}

// drop forgets a client that left: the server's requests that it was
// asked get an error, and its progress routes go.
func (h *Hub) drop(c *client) {
	h.mu.Lock()
	_, was := h.clients[c]
	delete(h.clients, c)
	if was && !c.member {
		h.clientsChangedLocked(true)
	}
	var orphans []*routedRequest
	var asks []*agent.Ask
	for r := range h.routed {
		if r.client == c {
			orphans = append(orphans, r)
			asks = append(asks, r.ask)
			delete(h.routed, r)
		}
	}
	for tok, r := range h.progress {
		if r.client == c {
			delete(h.progress, tok)
		}
	}
	h.mu.Unlock()
	for i, r := range orphans {
		if asks[i] != nil {
			asks[i].Forget()
		}
		r.answer <- &mcp.Message{Error: mcp.NewError(CodeUnavailable, "the client that was asked disconnected")}
	}
}

// initializeResult is the server's cached answer to initialize, as this
// client should see it: its protocol version negotiated for the client, and
// tools.listChanged advertised, since the hub sends it on restarts.
func initializeResult(init *mcp.InitializeResult, requested string) (json.RawMessage, error) {
	var r map[string]json.RawMessage
	if err := json.Unmarshal(init.Raw, &r); err != nil {
		return nil, err
	}
	version := init.ProtocolVersion
	if slices.Contains(mcp.SupportedVersions, requested) && requested <= version {
		version = requested // the client's, if the server speaks it too
	}
	r["protocolVersion"], _ = json.Marshal(version)

	var caps map[string]json.RawMessage
	_ = json.Unmarshal(r["capabilities"], &caps)
	if caps == nil {
		caps = map[string]json.RawMessage{}
	}
	var tools map[string]json.RawMessage
	_ = json.Unmarshal(caps["tools"], &tools)
	if tools == nil {
		tools = map[string]json.RawMessage{}
	}
	tools["listChanged"] = json.RawMessage("true")
	caps["tools"], _ = json.Marshal(tools)
	r["capabilities"], _ = json.Marshal(caps)
	return jsonwire.Marshal(r)
}

// remapProgress replaces a request's params._meta.progressToken by a token
// of the hub's, unique among every client's, and routes the server's
// progress under it to c. It returns the new params and the route's key
// (see dropToken), or params unchanged and "" when there is no token.
func (h *Hub) remapProgress(c *client, params json.RawMessage) (json.RawMessage, string) {
	spans, token := requestToken(params)
	if len(spans) == 0 {
		return params, ""
	}
	h.mu.Lock()
	h.nextID++
	n := strconv.FormatInt(h.nextID, 10)
	ours := `"mcpgen-` + n + `"`
	key, _ := tokenKey([]byte(ours))
	// On the client's Conn, the hub's name keeps it apart from another
	// hub's of the same number (a gateway session's Conn is every hub's).
	h.progress[key] = &progressRoute{client: c, token: token, key: h.name + "\x00" + n}
	h.mu.Unlock()
	return splice(params, spans, []byte(ours)), key
}

// dropToken ends a progress route: its request is over.
func (h *Hub) dropToken(key string) {
	if key == "" {
		return
	}
	h.mu.Lock()
	delete(h.progress, key)
	h.mu.Unlock()
}
