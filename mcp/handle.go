package mcp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
)

// This file holds the peer's requests: admission, the goroutines that run
// them, inline answers and the peer's cancellations.

// A Handler answers the requests that the peer sends.
//
// An *Error returned by Handle (possibly wrapped) goes to the peer as that
// JSON-RPC error; any other error becomes -32603 with the error's text. The
// result is sent as is when it is a json.RawMessage, marshalled otherwise; a
// nil result is sent as {}.
type Handler interface {
	Handle(ctx context.Context, req *Request) (result any, err error)
}

// HandlerFunc adapts a function to the Handler interface.
type HandlerFunc func(ctx context.Context, req *Request) (result any, err error)

// Handle calls f(ctx, req).
func (f HandlerFunc) Handle(ctx context.Context, req *Request) (any, error) { return f(ctx, req) }

// A Request is a request from the peer, as a Handler sees it.
type Request struct {
	ID     ID
	Method string
	Params json.RawMessage

	conn   *Conn
	ctx    context.Context    // set when it starts; nil for an inline request
	cancel context.CancelFunc // likewise

	// Guarded by conn.mu.
	started   bool // it has a goroutine; before that it waits for a slot
	cancelled bool // by the peer, which wants no response
	finished  bool

	tokenOnce sync.Once
	token     ID // params._meta.progressToken, when set
}

// Progress sends notifications/progress for the request when the peer asked
// for it (params._meta.progressToken); otherwise, or once the request is over
// or cancelled, it does nothing. total is left out when 0 and message when
// empty. Progress should increase from one call to the next.
func (r *Request) Progress(ctx context.Context, progress, total float64, message string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !isFinite(progress) || !isFinite(total) {
		return fmt.Errorf("progress %v of %v is not a number JSON can carry", progress, total)
	}
	r.tokenOnce.Do(func() {
		var p struct {
			Meta struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			} `json:"_meta"`
		}
		if json.Unmarshal(r.Params, &p) == nil && len(p.Meta.ProgressToken) > 0 {
			r.token, _ = parseID(p.Meta.ProgressToken) // a bad token is as good as none
		}
	})
	if !r.token.IsValid() {
		return nil
	}
	r.conn.mu.Lock()
	over := r.finished || r.cancelled
	r.conn.mu.Unlock()
	if over {
		return nil
	}
	params := append([]byte(`{"progressToken":`), r.token.raw...)
	params = append(params, `,"progress":`...)
	params = strconv.AppendFloat(params, progress, 'f', -1, 64)
	if total != 0 {
		params = append(params, `,"total":`...)
		params = strconv.AppendFloat(params, total, 'f', -1, 64)
	}
	if message != "" {
		params = append(params, `,"message":`...)
		params = jsonwire.AppendString(params, message)
	}
	params = append(params, '}')
	return r.conn.write(&Message{Method: "notifications/progress", Params: params})
}

func isFinite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// admit takes a request that runs in a goroutine: it starts it when a slot
// is free, queues it when the queue has room, and otherwise waits, which
// stops the read loop (the backpressure that bounds a flood). Once the Conn
// stops, it starts nothing: Run may be done waiting for the handlers.
func (c *Conn) admit(msg *Message) {
	for {
		c.mu.Lock()
		if c.stopping.Load() {
			c.mu.Unlock()
			c.refuseRequest(msg)
			return
		}
		if _, dup := c.requests[msg.ID]; dup {
			c.mu.Unlock()
			c.duplicate(msg.ID)
			return
		}
		if c.running < c.maxInFlight || c.roomToWaitLocked(len(msg.Params)) {
			req := &Request{ID: msg.ID, Method: msg.Method, Params: msg.Params, conn: c}
			c.requests[msg.ID] = req
			c.handlers.Add(1)
			if c.running == c.maxInFlight {
				c.waiting = append(c.waiting, req)
				c.waitingBytes += len(req.Params)
				c.mu.Unlock()
				return
			}
			c.running++
			c.startLocked(req)
			c.mu.Unlock()
			go c.work(req) // owned by Run, which waits for it (handlers)
			return
		}
		c.mu.Unlock()
		if c.admitWaits != nil {
			c.admitWaits()
		}
		select {
		case <-c.slotFree:
		case <-c.stopped:
		}
	}
}

// refuse answers a request read as the Conn stopped: its sender is waiting.
func (c *Conn) refuse(line []byte) {
	if msg, err := DecodeMessage(line); err == nil && msg.IsRequest() {
		c.refuseRequest(msg)
	}
}

func (c *Conn) refuseRequest(msg *Message) {
	_ = c.write(&Message{ID: msg.ID, Error: NewError(CodeInternalError,
		"%s not started: the connection is closing; retry it on a new one", msg.Method)})
}

// maxWaitingBytes bounds the params held by the requests that wait for a
// slot, beyond their number: lines may be as long as MaxLineSize, and
// waiting requests are only buffered input. One request may always wait.
const maxWaitingBytes = MaxLineSize

func (c *Conn) roomToWaitLocked(size int) bool {
	return len(c.waiting) == 0 ||
		len(c.waiting) < c.maxInFlight && c.waitingBytes+size <= maxWaitingBytes
}

// startLocked gives a request the context it runs with.
func (c *Conn) startLocked(req *Request) {
	req.ctx, req.cancel = context.WithCancel(c.hctx)
	req.started = true
}

// work runs req, then the requests that wait for a slot, until none is
// left: the goroutine holds its slot until then. It ends when the queue is
// empty; Run waits for it through handlers.
func (c *Conn) work(req *Request) {
	for req != nil {
		c.serve(req)
		c.mu.Lock()
		var next *Request
		if len(c.waiting) > 0 {
			next = c.waiting[0]
			c.waiting[0] = nil
			c.waiting = c.waiting[1:]
			c.waitingBytes -= len(next.Params)
			c.startLocked(next)
		} else {
			c.running--
		}
		c.mu.Unlock()
		c.handlers.Done()
		c.wakeReader()
		req = next
	}
}

// wakeReader tells a read loop waiting in admit that there may be room.
func (c *Conn) wakeReader() {
	select {
	case c.slotFree <- struct{}{}:
	default: // a wake-up is pending already
	}
}

func (c *Conn) serve(req *Request) {
	result, err := c.invoke(req.ctx, req)

	c.mu.Lock()
	delete(c.requests, req.ID)
	req.finished = true
	cancelled := req.cancelled
	c.mu.Unlock()
	req.cancel()
	if cancelled {
		// The peer asked for no response.
		return
	}
	c.respond(req, result, err)
}

// answerInline handles a request on the read loop (see ConnOptions.Inline).
func (c *Conn) answerInline(msg *Message) {
	c.mu.Lock()
	_, dup := c.requests[msg.ID]
	c.mu.Unlock()
	if dup {
		c.duplicate(msg.ID)
		return
	}
	req := &Request{ID: msg.ID, Method: msg.Method, Params: msg.Params, conn: c}
	result, err := c.invoke(c.hctx, req)
	c.mu.Lock()
	req.finished = true
	c.mu.Unlock()
	c.respond(req, result, err)
}

func (c *Conn) duplicate(id ID) {
	_ = c.write(&Message{ID: id, Error: NewError(CodeInvalidRequest, "invalid request: id %s is already in use", id)})
}

func (c *Conn) respond(req *Request, result any, err error) {
	resp := &Message{ID: req.ID}
	if err != nil {
		resp.Error = wireError(err)
	} else if resp.Result, err = marshalResult(result); err != nil {
		resp.Error = NewError(CodeInternalError, "encode result: %v", err)
	}
	if err := c.write(resp); err != nil {
		c.log.Debug("mcp: cannot write a response", "method", req.Method, "id", req.ID, "error", err)
	}
}

// invoke calls the handler. A panic becomes -32603 rather than the end of a
// server that other requests are using.
func (c *Conn) invoke(ctx context.Context, req *Request) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("mcp: handler panicked", "method", req.Method, "panic", p, "stack", string(debug.Stack()))
			result, err = nil, NewError(CodeInternalError, "internal error: %s handler panicked: %v", req.Method, p)
		}
	}()
	if c.handler == nil {
		return nil, NewError(CodeMethodNotFound, "method not found: %s", req.Method)
	}
	return c.handler.Handle(ctx, req)
}

func wireError(err error) *Error {
	var werr *Error
	if errors.As(err, &werr) {
		return werr
	}
	return &Error{Code: CodeInternalError, Message: err.Error()}
}

var emptyObject = json.RawMessage(`{}`)

// marshalResult encodes a handler's result. A result must be an object in
// MCP, so nothing (nil, or null) is sent as {}. The common results skip
// goccy's encoder (see CallToolResult.appendJSON).
func marshalResult(v any) (json.RawMessage, error) {
	switch v := v.(type) {
	case nil:
		return emptyObject, nil
	case json.RawMessage:
		if len(v) == 0 || string(v) == "null" {
			return emptyObject, nil
		}
		if jsonwire.Valid(v) != nil {
			return nil, fmt.Errorf("result is not JSON: %s", snippet(v))
		}
		return v, nil
	case *CallToolResult:
		if v == nil {
			return emptyObject, nil
		}
		return v.appendJSON(nil)
	case *InitializeResult:
		if v == nil {
			return emptyObject, nil
		}
		return v.appendJSON(nil)
	}
	b, err := jsonwire.Marshal(v)
	if err != nil {
		return nil, err
	}
	if string(b) == "null" {
		return emptyObject, nil
	}
	return b, nil
}

// peerCancelled stops the handler of a request that the peer cancelled, or
// drops it if it has not started. The request may be over already, or
// unknown: the spec expects such races. It works while every slot is taken,
// as long as the cancellation is read: see ConnOptions.MaxInFlight.
func (c *Conn) peerCancelled(msg *Message) {
	var p struct {
		RequestID ID     `json:"requestId"`
		Reason    string `json:"reason"`
	}
	if err := json.Unmarshal(msg.Params, &p); err != nil || !p.RequestID.IsValid() {
		c.log.Debug("mcp: ignoring a malformed notifications/cancelled", "params", snippet(msg.Params))
		return
	}
	c.mu.Lock()
	req, ok := c.requests[p.RequestID]
	dropped := false
	if ok {
		req.cancelled = true
		if !req.started {
			dropped = true
			delete(c.requests, req.ID)
			c.waiting = slices.DeleteFunc(c.waiting, func(w *Request) bool { return w == req })
			c.waitingBytes -= len(req.Params)
		}
	}
	c.mu.Unlock()
	switch {
	case dropped:
		c.log.Debug("mcp: peer cancelled a request before it started", "id", p.RequestID, "method", req.Method, "reason", p.Reason)
		c.handlers.Done()
		c.wakeReader()
	case ok:
		c.log.Debug("mcp: peer cancelled a request", "id", p.RequestID, "method", req.Method, "reason", p.Reason)
		req.cancel()
	}
}
