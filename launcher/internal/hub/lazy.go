package hub

import (
	"bytes"
	"context"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
	"github.com/mcpgen/mcpgen/mcp"
)

// This file is the hub's side of lazy start and idle stop. A server is
// idle when it has no process and starts only when a request needs it:
// a lazy server before its first use, and any server stopped for
// idleness. While it is idle, the hub answers initialize and the lists
// (tools, and prompts, resources and templates when it knows them) from
// the server's catalog (its last process's, or the one the launcher kept:
// Preload), and any other request starts it (the channel that Idle
// returns is closed) and waits until it is ready, as a request does while
// a server restarts. The supervisor owns the process; the hub only says
// when it is needed.
//
// Who keeps a running server from its idle stop (Quiet, IdleIf): a client
// connection (connect NAME) for as long as it is connected, since an
// agent that connected to one server means to use it; a Member (a
// session of the workspace gateway, which joins every server's hub) only
// while it has requests under way, and the idle timeout counts from its
// last answer: a gateway agent that uses one server of twenty keeps that
// one running, not the twenty.

// idleState is the hub's part in lazy start and idle stop; guarded by the
// hub's mu.
type idleState struct {
	on       bool          // the server is idle: no process, none starting
	demand   chan struct{} // closed when a request needs the server; set while on
	woken    bool          // a request started it, and it is not ready yet
	waiters  int           // requests waiting in ready for the server
	startErr error         // why the last start failed, for those who waited for it
	starts   uint64        // failed starts so far: a waiter sees the ones after it came

	conns    int           // client connections (members are not counted)
	busy     int           // members with requests under way
	lastLeft time.Time     // when the last client left, or a member's last answer went; zero if never
	changed  chan struct{} // closed (and replaced) when a client comes or goes, or a member's use starts or ends
}

// Preload gives the hub a catalog of its server that the launcher kept
// from an earlier run (nil init: none), to answer from while the server is
// idle: its answer to initialize, its tools, and the lists it had besides
// (nil: not known; a request for one then starts the server). It replaces
// the catalog the hub has: after a change of the server's configuration,
// the old one must not answer. Clients that were shown another list of
// tools are told (tools/list_changed).
func (h *Hub) Preload(init *mcp.InitializeResult, tools []*mcp.Tool, lists Lists) {
	var catalog []byte
	if init == nil {
		tools, lists = nil, Lists{}
	} else {
		catalog = toolsCatalog(tools)
	}
	h.mu.Lock()
	changed := h.toolsJSON != nil && !bytes.Equal(catalog, h.toolsJSON)
	h.init, h.tools, h.toolsJSON, h.lists = init, tools, catalog, lists
	clients := h.clientList()
	h.mu.Unlock()
	if changed {
		h.broadcast(clients, listChanged)
	}
	h.changed()
}

// Idle says that the server has no process and starts only when needed:
// from now on initialize and the lists are answered from its catalog (if
// the hub has one), and the first request that needs the server closes
// the channel returned, which the supervisor waits on to start it. It is
// closed at once when requests wait for the server already.
func (h *Hub) Idle() <-chan struct{} {
	h.mu.Lock()
	d := h.idleLocked()
	h.mu.Unlock()
	h.changed() // a failed server may be idle now: its tools are back
	return d
}

func (h *Hub) idleLocked() <-chan struct{} {
	d := make(chan struct{})
	h.idle.on, h.idle.demand, h.idle.woken = true, d, false
	h.failure = nil // it may start again
	if h.idle.waiters > 0 {
		h.wantLocked()
	}
	return d
}

// wantLocked starts an idle server: a request needs it.
func (h *Hub) wantLocked() {
	if h.idle.on {
		h.idle.on, h.idle.woken = false, true
		close(h.idle.demand)
		h.idle.demand = nil
	}
}

// Wake starts an idle server, as a request that needs it would, without
// waiting for it: the channel Idle returned is closed. It does nothing to a
// server that is not idle.
func (h *Hub) Wake() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.wantLocked()
}

// IdleIf makes the server idle, as Idle does, for a stop for idleness:
// if up is the hub's server and no client has been connected since since
// (it is quiet: see Quiet), it is detached at once, so that a request that
// comes now waits for the next process, which it starts; the caller then
// stops up. Otherwise nothing changes, and ok is false: the stop is off,
// since a client came.
func (h *Hub) IdleIf(up *Upstream, since time.Time) (demand <-chan struct{}, ok bool) {
	h.mu.Lock()
	if h.up != up || !h.quietLocked() || h.idle.lastLeft.After(since) {
		h.mu.Unlock()
		return nil, false
	}
	// No connection, and no member with a request under way, so no
	// request in flight: up has nothing to hand over. (A server request
	// routed to a member is given up by Detach, as at any stop.)
	h.up = nil
	demand = h.idleLocked()
	h.mu.Unlock()
	up.refuse(errStopping)
	h.changed()
	return demand, true
}

// Quiet reports whether nothing keeps the server running (no client
// connection, no member's request under way), since when (the last
// client's departure or member's answer; zero if none ever came), and a
// channel closed when that next changes.
func (h *Hub) Quiet() (quiet bool, since time.Time, changed <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.idle.changed == nil {
		h.idle.changed = make(chan struct{})
	}
	return h.quietLocked(), h.idle.lastLeft, h.idle.changed
}

func (h *Hub) quietLocked() bool { return h.idle.conns == 0 && h.idle.busy == 0 }

// clientsChangedLocked notes that a client connection came or went (left:
// went).
func (h *Hub) clientsChangedLocked(left bool) {
	if left {
		h.idle.conns--
	} else {
		h.idle.conns++
	}
	h.usedLocked(left)
}

// usedLocked notes a change of what keeps the server running; ended: a
// use ended (a client left, a member's last answer went), from when the
// idle timeout counts.
func (h *Hub) usedLocked(ended bool) {
	if ended {
		h.idle.lastLeft = time.Now()
	}
	if h.idle.changed != nil {
		close(h.idle.changed)
		h.idle.changed = nil
	}
}

// memberBusy notes that a member's requests began (busy) or ended being
// under way: see the file's comment.
func (h *Hub) memberBusy(busy bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if busy {
		h.idle.busy++
	} else {
		h.idle.busy--
	}
	h.usedLocked(!busy)
}

// noteUse tells the hub when a member's requests begin or end being under
// way (see the file's comment); a connection's use is its being
// connected.
func (c *client) noteUse() {
	if !c.member {
		return
	}
	c.useMu.Lock()
	defer c.useMu.Unlock()
	inUse := c.busy()
	if c.departed || inUse == c.inUse {
		return
	}
	c.inUse = inUse
	c.hub.memberBusy(inUse)
}

// leftBusy ends a member's use: it left.
func (c *client) leftBusy() {
	c.useMu.Lock()
	defer c.useMu.Unlock()
	if c.inUse {
		c.inUse = false
		c.hub.memberBusy(false)
	}
	c.departed = true
}

// EnsureStarted makes the server take requests: it starts it if it is
// idle, and waits until it is ready, as a client's request would: until
// its start fails (the supervisor bounds a start by the server's
// startup_timeout) or the wait's bound has passed (30 s, or its
// startup_timeout and a margin when longer: see SetTimeouts). The error,
// a *mcp.Error, says why it is not ready: its start failed, it failed for
// good, or ctx ended. A request that the hub forwards does the same by
// itself: this is for who needs the server without sending it anything
// yet (the workspace gateway, say).
func (h *Hub) EnsureStarted(ctx context.Context) error {
	_, _, err := h.ready(ctx)
	return err
}

// StartFailed tells the requests that wait for the server now that the
// start they wait for failed, and why: they get the error, instead of
// waiting for a next start. Requests that come later start it again (it is
// idle), or wait for the next start.
func (h *Hub) StartFailed(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.idle.startErr = err
	h.idle.starts++
	h.idle.woken = false
	// They are done waiting, though they have not said so yet: a server
	// made idle now must not start again for them.
	h.idle.waiters = 0
	h.wakeLocked()
}

// A waiter is a request that waits for the server in ready.
type waiter struct {
	h      *Hub
	starts uint64 // failed starts when it came
}

// await counts a request among those that wait for the server, and starts
// an idle server: the request needs it. Call done when it is done
// waiting.
func (h *Hub) await() waiter {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.idle.waiters++
	h.wantLocked()
	return waiter{h: h, starts: h.idle.starts}
}

func (w waiter) done() {
	w.h.mu.Lock()
	if w.h.idle.starts == w.starts { // else StartFailed counted it out
		w.h.idle.waiters--
	}
	w.h.mu.Unlock()
}

// failed returns why a start that the request waited for failed, or nil;
// the caller holds the hub's mu.
func (w waiter) failedLocked() error {
	if w.h.idle.starts != w.starts {
		return w.h.idle.startErr
	}
	return nil
}

// initResult is the server's answer to initialize: from its catalog when
// it is idle (nothing starts), else from its process, which a client
// waits for while it starts.
func (h *Hub) initResult(ctx context.Context) (*mcp.InitializeResult, error) {
	h.mu.Lock()
	init, idle := h.init, h.idle.on
	h.mu.Unlock()
	if idle && init != nil {
		return init, nil
	}
	_, init, err := h.ready(ctx)
	return init, err
}

// fromCatalog answers a request of a client from the catalog while the
// server is idle, so that an agent's lists at its start start nothing:
// tools/list (through the tool filter), and prompts/list, resources/list
// and resources/templates/list when the catalog has them. ok is false when
// the catalog cannot answer it: the request then starts the server.
func (h *Hub) fromCatalog(method string) (result json.RawMessage, ok bool) {
	h.mu.Lock()
	if !h.idle.on || h.init == nil {
		h.mu.Unlock()
		return nil, false
	}
	// Every item in one page: the catalog is whole, and bounded by what
	// the launcher keeps.
	if method == "tools/list" {
		b := make([]byte, 0, len(h.toolsJSON)+16)
		b = append(b, `{"tools":`...)
		b = append(b, h.toolsJSON...)
		b = append(b, '}')
		h.mu.Unlock()
		return h.filterTools(b), true
	}
	l, kept := listOf(method)
	if !kept {
		h.mu.Unlock()
		return nil, false
	}
	items := *l.of(&h.lists)
	h.mu.Unlock()
	if items == nil {
		return nil, false
	}
	b := make([]byte, 0, 64)
	b = append(b, '{')
	b = jsonwire.AppendString(b, l.key)
	b = append(b, ":["...)
	for i, item := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, item...)
	}
	b = append(b, "]}"...)
	return b, true
}

// IsIdle reports whether the server is idle: it has no process, and starts
// only when a request needs it.
func (h *Hub) IsIdle() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.idle.on
}
