package hub

import (
	"bytes"
	"context"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

// This file is the hub's side of lazy start and idle stop. A server is
// idle when it has no process and starts only when a request needs it:
// a lazy server before its first use, and any server stopped for
// idleness. While it is idle, the hub answers initialize and tools/list
// from the server's catalog (its last process's, or the one the launcher
// kept: Preload), and any other request starts it (the channel that Idle
// returns is closed) and waits until it is ready, as a request does while
// a server restarts. The supervisor owns the process; the hub only says
// when it is needed.

// idleState is the hub's part in lazy start and idle stop; guarded by the
// hub's mu.
type idleState struct {
	on       bool          // the server is idle: no process, none starting
	demand   chan struct{} // closed when a request needs the server; set while on
	waiters  int           // requests waiting in ready for the server
	startErr error         // why the last start failed, for those who waited for it
	starts   uint64        // failed starts so far: a waiter sees the ones after it came

	lastLeft time.Time     // when the last client left; zero if none ever did
	changed  chan struct{} // closed (and replaced) when a client comes or goes
}

// Preload gives the hub a catalog of its server that the launcher kept
// from an earlier run (nil init: none), to answer from while the server is
// idle. It replaces the catalog the hub has: after a change of the
// server's configuration, the old one must not answer. Clients that were
// shown another list of tools are told (tools/list_changed).
func (h *Hub) Preload(init *mcp.InitializeResult, tools []*mcp.Tool) {
	var catalog []byte
	if init != nil {
		catalog = toolsCatalog(tools)
	}
	h.mu.Lock()
	changed := h.toolsJSON != nil && !bytes.Equal(catalog, h.toolsJSON)
	h.init, h.tools, h.toolsJSON = init, tools, catalog
	clients := h.clientList()
	h.mu.Unlock()
	if changed {
		h.broadcast(clients, listChanged)
	}
}

// Idle says that the server has no process and starts only when needed:
// from now on initialize and tools/list are answered from its catalog (if
// the hub has one), and the first request that needs the server closes
// the channel returned, which the supervisor waits on to start it. It is
// closed at once when requests wait for the server already.
func (h *Hub) Idle() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.idleLocked()
}

func (h *Hub) idleLocked() <-chan struct{} {
	d := make(chan struct{})
	h.idle.on, h.idle.demand = true, d
	h.failure = nil // it may start again
	if h.idle.waiters > 0 {
		h.wantLocked()
	}
	return d
}

// wantLocked starts an idle server: a request needs it.
func (h *Hub) wantLocked() {
	if h.idle.on {
		h.idle.on = false
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
	if h.up != up || len(h.clients) > 0 || h.idle.lastLeft.After(since) {
		h.mu.Unlock()
		return nil, false
	}
	// No client, so no request of one in flight and no server request
	// routed to one: up has nothing to hand over.
	h.up = nil
	demand = h.idleLocked()
	h.mu.Unlock()
	up.refuse(errStopping)
	return demand, true
}

// Quiet reports whether no client is connected, since when (the last
// one's departure; zero if none ever came), and a channel closed when a
// client next comes or goes.
func (h *Hub) Quiet() (quiet bool, since time.Time, changed <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.idle.changed == nil {
		h.idle.changed = make(chan struct{})
	}
	return len(h.clients) == 0, h.idle.lastLeft, h.idle.changed
}

// clientsChangedLocked notes that a client came or went (left: went).
func (h *Hub) clientsChangedLocked(left bool) {
	if left {
		h.idle.lastLeft = time.Now()
	}
	if h.idle.changed != nil {
		close(h.idle.changed)
		h.idle.changed = nil
	}
}

// EnsureStarted makes the server take requests: it starts it if it is
// idle, and waits until it is ready, as a client's request would: until
// its start fails (the supervisor bounds a start by the server's
// startup_timeout) or 30 s have passed. The error, a *mcp.Error, says why
// it is not ready: its start failed, it failed for good, or ctx ended. A request that the hub forwards does the same by itself:
// this is for who needs the server without sending it anything yet (the
// workspace gateway, say).
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
// server is idle, so that listing tools starts nothing. ok is false when
// the catalog cannot answer it: the request then starts the server.
func (h *Hub) fromCatalog(method string) (result json.RawMessage, ok bool) {
	if method != "tools/list" {
		return nil, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.idle.on || h.init == nil {
		return nil, false
	}
	// Every tool in one page: the catalog is whole, and bounded by what
	// the launcher keeps.
	b := make([]byte, 0, len(h.toolsJSON)+16)
	b = append(b, `{"tools":`...)
	b = append(b, h.toolsJSON...)
	b = append(b, '}')
	return b, true
}

// IsIdle reports whether the server is idle: it has no process, and starts
// only when a request needs it.
func (h *Hub) IsIdle() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.idle.on
}
