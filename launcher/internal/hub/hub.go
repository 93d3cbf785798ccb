// Package hub shares one MCP server process among every client of a
// workspace: it is the server's only peer, answers each client's
// initialize from the server's cached result, remaps request ids, progress
// tokens and cancellations both ways, routes the server's own requests, and
// outlives the server's processes (a crash, a reload, a rebuild).
package hub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	json "github.com/goccy/go-json"

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

	mu        sync.Mutex
	up        *Upstream             // the ready server, nil while there is none
	init      *mcp.InitializeResult // the server's answer to initialize
	tools     []*mcp.Tool
	toolsJSON []byte        // the catalog as listed, to tell when it changes
	wake      chan struct{} // closed (and replaced) when up is set or the server fails
	failure   error         // why the server is not ready, when it will not be soon
	closed    bool
	clients   map[*client]struct{}
	routed    map[mcp.ID]*routedRequest // server requests handed to a client, by the id the client sees
	progress  map[string]*progressRoute // by the token the server sees
	nextID    int64                     // ids the hub gives out: routed requests, progress tokens
	listing   bool                      // a re-list after list_changed is under way
	idle      idleState                 // lazy start and idle stop (lazy.go)
}

// A routedRequest is a server's request that a client answers.
type routedRequest struct {
	client   *client
	up       *Upstream
	serverID mcp.ID
}

// A progressRoute leads a server's progress notifications back to the
// client that asked for them, under its own token.
type progressRoute struct {
	client *client
	token  json.RawMessage
}

// New returns the hub of server name; root is the workspace dir.
func New(name, root string, log *slog.Logger) *Hub {
	return &Hub{
		name:     name,
		root:     root,
		log:      log,
		wake:     make(chan struct{}),
		clients:  make(map[*client]struct{}),
		routed:   make(map[mcp.ID]*routedRequest),
		progress: make(map[string]*progressRoute),
	}
}

// readyWait is how long a client's request waits for a server that is
// starting or restarting before it fails.
const readyWait = 30 * time.Second

// NewUpstream returns an Upstream for a new process of the hub's server,
// whose own requests and notifications the hub handles.
func (h *Hub) NewUpstream(r io.Reader, w io.Writer) *Upstream {
	u := newUpstream(h.name, r, w, h.log)
	u.onRequest = h.serverRequest
	u.onNotification = h.serverNotification
	// Detached as soon as it ends or cannot be written to, not when its
	// supervisor notices: a request that comes in between then waits for
	// the next process instead of failing as if it had been in flight.
	u.onDead = h.Detach
	return u
}

// SetRoot changes the workspace dir that roots/list answers (a reload may
// change it).
func (h *Hub) SetRoot(root string) {
	h.mu.Lock()
	h.root = root
	h.mu.Unlock()
}

// Attach makes up the hub's server, ready with the given handshake.
func (h *Hub) Attach(up *Upstream, init *mcp.InitializeResult, tools []*mcp.Tool) {
	catalog := toolsCatalog(tools)
	h.mu.Lock()
	changed := h.toolsJSON != nil && !bytes.Equal(catalog, h.toolsJSON)
	h.up, h.init, h.tools, h.toolsJSON, h.failure = up, init, tools, catalog, nil
	h.wakeLocked()
	clients := h.clientList()
	h.mu.Unlock()
	if changed {
		h.broadcast(clients, listChanged)
	}
}

// Detach drops up when it is the hub's server: requests arriving now wait
// for the next one. Requests in flight are answered by up itself, with an
// error, when it ends. up refuses new requests from now on: a client that
// got it from the hub just before goes to the next process too. Call it
// before closing the server's stdin.
func (h *Hub) Detach(up *Upstream) {
	up.refuse(errStopping)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.up != up {
		return
	}
	h.up = nil
	for id, r := range h.routed {
		if r.up == up {
			delete(h.routed, id) // the client's answer has nowhere to go
		}
	}
}

// Fail says that the server will not be ready soon: waiting requests and
// new ones get err instead of waiting for it.
func (h *Hub) Fail(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failure = err
	h.wakeLocked()
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
}

// Tools returns the names of the server's tools.
func (h *Hub) Tools() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	names := make([]string, len(h.tools))
	for i, t := range h.tools {
		names[i] = t.Name
	}
	return names
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

// ready returns the hub's server, waiting for it when it is starting.
func (h *Hub) ready(ctx context.Context) (*Upstream, *mcp.InitializeResult, error) {
	timer := time.NewTimer(readyWait)
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
			return nil, nil, mcp.NewError(CodeUnavailable, "server %q is not ready after %s (see mcpgen status)", h.name, readyWait)
		}
	}
}

func (h *Hub) newID() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nextID++
	return h.nextID
}

// serverRequest answers, routes or rejects a request from the server: no
// server request goes unanswered, or it might wait forever.
func (h *Hub) serverRequest(u *Upstream, msg *mcp.Message) {
	switch msg.Method {
	case "ping":
		_ = u.write(&mcp.Message{ID: msg.ID, Result: json.RawMessage(`{}`)})
		return
	case "roots/list":
		_ = u.write(&mcp.Message{ID: msg.ID, Result: h.roots()})
		return
	}
	c := h.answerer(msg.Method)
	if c == nil {
		_ = u.write(&mcp.Message{ID: msg.ID, Error: mcp.NewError(mcp.CodeMethodNotFound,
			"no client of this workspace can answer %s", msg.Method)})
		return
	}
	id := mcp.Int64ID(h.newID())
	h.mu.Lock()
	h.routed[id] = &routedRequest{client: c, up: u, serverID: msg.ID}
	h.mu.Unlock()
	out := *msg
	out.ID = id
	c.send(&out)
}

// roots is the answer to roots/list: the workspace.
func (h *Hub) roots() json.RawMessage {
	h.mu.Lock()
	u := url.URL{Scheme: "file", Path: h.root}
	h.mu.Unlock()
	b, _ := marshal(map[string]any{"roots": []map[string]string{{"uri": u.String(), "name": "workspace"}}})
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
		if !c.can(method) {
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
func (h *Hub) serverNotification(u *Upstream, msg *mcp.Message) {
	switch msg.Method {
	case "notifications/tools/list_changed":
		h.relist(u)
	case "notifications/progress":
		h.routeProgress(msg)
	case "notifications/cancelled":
		h.routeCancel(msg)
	default:
		// Logging, resources and prompts changes: every client.
		h.mu.Lock()
		clients := h.clientList()
		h.mu.Unlock()
		h.broadcast(clients, msg)
	}
}

var listChanged = &mcp.Message{Method: "notifications/tools/list_changed"}

// relist lists the tools again after the server said they changed, and
// tells the clients when they did. It runs outside the read loop, which
// must keep reading for the answer to arrive.
func (h *Hub) relist(u *Upstream) {
	h.mu.Lock()
	if h.listing || h.up != u {
		h.mu.Unlock()
		return
	}
	h.listing = true
	h.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), readyWait)
		defer cancel()
		tools, err := u.listTools(ctx)
		h.mu.Lock()
		h.listing = false
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
		}
	}()
}

func (h *Hub) broadcast(clients []*client, msg *mcp.Message) {
	for _, c := range clients {
		if c.isInitialized() {
			c.send(msg)
		}
	}
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
// token, under the client's own token.
func (h *Hub) routeProgress(msg *mcp.Message) {
	var p map[string]json.RawMessage
	if json.Unmarshal(msg.Params, &p) != nil {
		return
	}
	h.mu.Lock()
	route := h.progress[string(p["progressToken"])]
	h.mu.Unlock()
	if route == nil {
		return
	}
	p["progressToken"] = route.token
	params, err := marshal(p)
	if err != nil {
		return
	}
	route.client.send(&mcp.Message{Method: msg.Method, Params: params})
}

// routeCancel tells a client that the server cancelled a request it had
// routed to it.
func (h *Hub) routeCancel(msg *mcp.Message) {
	var p map[string]json.RawMessage
	if json.Unmarshal(msg.Params, &p) != nil {
		return
	}
	var serverID mcp.ID
	if serverID.UnmarshalJSON(p["requestId"]) != nil {
		return
	}
	h.mu.Lock()
	var id mcp.ID
	var route *routedRequest
	for hid, r := range h.routed {
		if r.serverID == serverID {
			id, route = hid, r
			break
		}
	}
	delete(h.routed, id)
	h.mu.Unlock()
	if route == nil {
		return
	}
	p["requestId"] = json.RawMessage(id.String())
	params, _ := marshal(p)
	route.client.send(&mcp.Message{Method: msg.Method, Params: params})
}

// Serve runs one client's connection until it closes or the hub does.
func (h *Hub) Serve(ctx context.Context, conn io.ReadWriteCloser) {
	c := newClient(h, conn)
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		conn.Close()
		return
	}
	h.clients[c] = struct{}{}
	h.clientsChangedLocked(false)
	h.mu.Unlock()
	c.run(ctx)
	h.mu.Lock()
	delete(h.clients, c)
	h.clientsChangedLocked(true)
	var orphans []*routedRequest
	for id, r := range h.routed {
		if r.client == c {
			orphans = append(orphans, r)
			delete(h.routed, id)
		}
	}
	for tok, r := range h.progress {
		if r.client == c {
			delete(h.progress, tok)
		}
	}
	h.mu.Unlock()
	for _, r := range orphans {
		_ = r.up.write(&mcp.Message{ID: r.serverID, Error: mcp.NewError(CodeUnavailable, "the client that was asked disconnected")})
	}
}

// clientResponse delivers a client's answer to a request the server made.
func (h *Hub) clientResponse(c *client, msg *mcp.Message) {
	h.mu.Lock()
	r := h.routed[msg.ID]
	if r != nil && r.client == c {
		delete(h.routed, msg.ID)
	}
	h.mu.Unlock()
	if r == nil || r.client != c {
		return
	}
	out := *msg
	out.ID = r.serverID
	_ = r.up.write(&out)
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
	return marshal(r)
}

// remapProgress replaces a request's params._meta.progressToken by a token
// of the hub's, unique among every client's; it returns the new params and
// the client's token, or params unchanged and nil when there is none.
func (h *Hub) remapProgress(params json.RawMessage) (json.RawMessage, string, json.RawMessage) {
	if !bytes.Contains(params, []byte(`"progressToken"`)) {
		return params, "", nil
	}
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil {
		return params, "", nil
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(p["_meta"], &meta) != nil || meta["progressToken"] == nil {
		return params, "", nil
	}
	token := meta["progressToken"]
	ours := strconv.Quote("mcpgen-" + strconv.FormatInt(h.newID(), 10))
	meta["progressToken"] = json.RawMessage(ours)
	p["_meta"], _ = marshal(meta)
	out, err := marshal(p)
	if err != nil {
		return params, "", nil
	}
	return out, ours, token
}

var errClientGone = errors.New("client disconnected")
