package agent

import (
	"bytes"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
	"github.com/mcpgen/mcpgen/mcp"
)

// A Call is one of the agent's requests, under way from the moment the
// Conn admits it until it is answered (Answer) or ends without an answer:
// the agent cancelled it, or went (OnCancel). Its id is unique among the
// agent's requests under way.
type Call struct {
	c      *Conn
	id     mcp.ID
	method string
	// modern: the request named a modern version in its _meta (see
	// era.go), which meta holds; set before the Handler has it.
	modern bool
	meta   mcp.RequestMeta

	// Guarded by c.mu.
	params json.RawMessage
	held   int         // bytes of params counted in the Conn's heldBytes
	over   bool        // answered, or ended without an answer
	stop   func(error) // OnCancel's
	owner  any
}

// ID is the request's id, as the agent sent it.
func (call *Call) ID() mcp.ID { return call.id }

// Method is the request's method.
func (call *Call) Method() string { return call.method }

// Modern reports whether the request is of the modern era: stateless, its
// _meta naming the version, the client's capabilities and identity (see
// Meta); else it is a legacy session's.
func (call *Call) Modern() bool { return call.modern }

// Meta is what a modern request said of itself in _meta, as the Conn read
// and checked it; empty for a legacy request.
func (call *Call) Meta() *mcp.RequestMeta { return &call.meta }

// Conn is the connection of the agent that sent it.
func (call *Call) Conn() *Conn { return call.c }

// Params are the request's params, as the agent sent them (or as SetParams
// changed them); nil once Released.
func (call *Call) Params() json.RawMessage {
	call.c.mu.Lock()
	defer call.c.mu.Unlock()
	return call.params
}

// Hold keeps the params beyond the read loop's turn, as a copy counted
// against MaxHeldBytes until the call ends or Release: a Handler holds a
// call that waits (for a server that starts, say) before it hands it to
// another goroutine. Holding again does nothing.
func (call *Call) Hold() {
	c := call.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if call.held > 0 || call.over || len(call.params) == 0 {
		return
	}
	call.params = bytes.Clone(call.params)
	call.held = len(call.params)
	c.heldBytes += call.held
}

// SetParams replaces the params that the call carries (the gateway renames
// a tool); a held call counts the new ones instead.
func (call *Call) SetParams(params json.RawMessage) {
	c := call.c
	c.mu.Lock()
	call.params = params
	if call.held > 0 {
		c.heldBytes += len(params) - call.held
		call.held = len(params)
	}
	c.mu.Unlock()
}

// Release says that the params are needed no more (the request went to
// its server): they are let go, and no longer counted as held.
func (call *Call) Release() {
	c := call.c
	c.mu.Lock()
	n := call.releaseLocked()
	c.mu.Unlock()
	if n > 0 {
		c.roomMade()
	}
}

func (call *Call) releaseLocked() int {
	n := call.held
	call.c.heldBytes -= n
	call.held, call.params = 0, nil
	return n
}

// endLocked ends the call without an answer, and returns its OnCancel
// function; the caller holds c.mu, and has taken it out of c.calls.
func (call *Call) endLocked() func(error) {
	if !call.over && call.meta.LogLevel != "" {
		call.c.logCalls--
	}
	call.over = true
	call.c.heldBytes -= call.held
	call.held, call.params = 0, nil
	stop := call.stop
	call.stop = nil
	return stop
}

// OnCancel sets what stops the call when it ends without an answer: the
// agent cancelled it, or went. f gets why, and must not block. It reports
// false, and keeps nothing, when the call is over already (answered, or
// cancelled): then there is nothing to do for it.
func (call *Call) OnCancel(f func(why error)) bool {
	call.c.mu.Lock()
	defer call.c.mu.Unlock()
	if call.over {
		return false
	}
	call.stop = f
	return true
}

// Over reports whether the call has been answered, or ended without an
// answer.
func (call *Call) Over() bool {
	call.c.mu.Lock()
	defer call.c.mu.Unlock()
	return call.over
}

// SetOwner notes who has the call (a server of the gateway): see Owner.
func (call *Call) SetOwner(owner any) {
	call.c.mu.Lock()
	call.owner = owner
	call.c.mu.Unlock()
}

// Owner returns what SetOwner noted, nil if nothing.
func (call *Call) Owner() any {
	call.c.mu.Lock()
	defer call.c.mu.Unlock()
	return call.owner
}

// Answer answers the call with its result, or with err, unless it is over
// already (the first answer wins); it reports whether this one did. The
// answer frees the request's slot once it is written.
func (call *Call) Answer(result json.RawMessage, err *mcp.Error) bool {
	c := call.c
	c.mu.Lock()
	if call.over {
		c.mu.Unlock()
		return false
	}
	if c.calls[call.id] == call {
		delete(c.calls, call.id)
	}
	call.endLocked()
	c.mu.Unlock()
	if err == nil {
		if call.modern {
			result = c.complete(call, result)
		} else {
			result = legacyResult(call, result)
		}
	}
	c.reply(call.id, result, err)
	return true
}

// An Ask is a request sent to the agent for a server (sampling,
// elicitation), under an id of the Conn's, which the agent's answer
// carries back.
type Ask struct {
	c      *Conn
	id     mcp.ID
	answer func(result json.RawMessage, err *mcp.Error)
}

// Ask sends the agent a request, under an id of the Conn's; answer gets
// the agent's result or error, once, unless the Ask is given up first
// (Cancel, Forget). An agent that goes without answering gets answer
// called with a CodeUnavailable error, at once if it has gone already.
// answer runs on the read loop (or the goroutine that ends the Conn, or
// Ask's caller): it must not block.
func (c *Conn) Ask(method string, params json.RawMessage, answer func(result json.RawMessage, err *mcp.Error)) *Ask {
	a := &Ask{c: c, answer: answer}
	c.mu.Lock()
	if c.asksEnded {
		c.mu.Unlock()
		answer(nil, errAskedGone)
		return a
	}
	c.nextAsk++
	a.id = mcp.Int64ID(c.nextAsk)
	c.asks[a.id] = a
	c.mu.Unlock()
	c.put(outLine{b: EncodeLine(&mcp.Message{ID: a.id, Method: method, Params: params})}, nil)
	return a
}

var errAskedGone = mcp.NewError(CodeUnavailable, "the client that was asked disconnected")

// take takes the Ask out of the Conn's, and reports whether it was there.
func (a *Ask) take() bool {
	c := a.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if !a.id.IsValid() || c.asks[a.id] != a {
		return false
	}
	delete(c.asks, a.id)
	return true
}

// Cancel gives the request up, and tells the agent why
// (notifications/cancelled): its answer, if it comes, goes nowhere.
func (a *Ask) Cancel(reason string) {
	if !a.take() {
		return
	}
	params := append([]byte(`{"requestId":`), a.id.String()...)
	params = append(params, `,"reason":`...)
	params = jsonwire.AppendString(params, reason)
	params = append(params, '}')
	a.c.Send(&mcp.Message{Method: "notifications/cancelled", Params: params})
}

// Forget gives the request up without telling the agent: its answer, if
// it comes, goes nowhere.
func (a *Ask) Forget() { a.take() }

// response delivers the agent's answer to the Ask of its id.
func (c *Conn) response(msg *mcp.Message) {
	c.mu.Lock()
	a := c.asks[msg.ID]
	delete(c.asks, msg.ID)
	c.mu.Unlock()
	if a == nil {
		return
	}
	if msg.Error != nil {
		a.answer(nil, msg.Error)
		return
	}
	a.answer(msg.Result, nil)
}

// endAsks answers what the agent was asked and did not answer: it went.
func (c *Conn) endAsks() {
	c.mu.Lock()
	c.asksEnded = true
	asks := c.asks
	c.asks = map[mcp.ID]*Ask{}
	c.mu.Unlock()
	for _, a := range asks {
		a.answer(nil, errAskedGone)
	}
}
