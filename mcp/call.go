package mcp

import (
	"context"
	"errors"
	"fmt"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
)

// This file holds our requests to the peer, and what else we send it.

// ErrNotSent is wrapped by the error of a Go or a Call whose request never
// reached the peer: the Conn had ended, had stopped sending (StopSending), or
// the request's write failed. Such a request may go to another peer (a proxy
// sends it to the server's next process).
var ErrNotSent = errors.New("request not sent")

// An AsyncCall is a request sent by Conn.Go. Its outcome, the raw result or
// an error, comes exactly once: to Await, and to the function given to Go.
type AsyncCall struct {
	conn *Conn
	id   ID
	then func(result json.RawMessage, err error)
	done chan struct{}

	// Set before done is closed.
	result json.RawMessage
	err    error
}

// Go sends a request under a fresh id and returns at once; the response
// comes to Await and, if then is not nil, to then.
//
// params is marshalled, except a json.RawMessage, which is sent as it is
// and must hold valid JSON; nil (or null) sends no params. The result comes
// as the exact bytes the peer sent. A JSON-RPC error from the peer comes as
// an *Error; when the Conn ends first, as an error wrapping ErrClosed.
//
// then runs on the read loop (or on the goroutine that ends the Conn, or
// that cancels the call), so it must return promptly and must not wait on
// the Conn. It may run before Go returns.
//
// Go fails, and nothing is delivered, when params cannot be marshalled,
// when ctx is done, when the Conn has ended (that error wraps ErrNotSent and
// ErrClosed), after StopSending, and when the request's own write fails: it
// never reached the peer, so its error wraps ErrNotSent too, and the caller
// may send it elsewhere (the Conn ends then, unless sending had stopped, and
// the other pending calls get that error).
func (c *Conn) Go(ctx context.Context, method string, params any, then func(result json.RawMessage, err error)) (*AsyncCall, error) {
	return c.goCall(ctx, method, params, then, false)
}

// ErrWouldBlock is wrapped by the error of a TryGo that sent nothing,
// since the request could not be written without waiting.
var ErrWouldBlock = errors.New("the request would wait to be written")

// TryGo is Go, except that it sends the request only if it can without
// waiting (see Writer.TryWrite): no other write is under way, and the
// peer's input takes it now. When it cannot, it fails with an error that
// wraps ErrWouldBlock (and ErrNotSent), having sent and delivered nothing:
// the caller may wait for the peer elsewhere (Go, on a goroutine of its
// own). A writer that cannot be written without blocking never takes it.
func (c *Conn) TryGo(ctx context.Context, method string, params any, then func(result json.RawMessage, err error)) (*AsyncCall, error) {
	return c.goCall(ctx, method, params, then, true)
}

func (c *Conn) goCall(ctx context.Context, method string, params any, then func(result json.RawMessage, err error), try bool) (*AsyncCall, error) {
	raw, err := marshalParams(params)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%s: %w", method, context.Cause(ctx))
	}
	a := &AsyncCall{conn: c, then: then, done: make(chan struct{})}
	c.mu.Lock()
	if c.err != nil || c.unsent != nil {
		err := c.err
		if err == nil {
			err = c.unsent
		} else {
			err = fmt.Errorf("%w: %w", ErrNotSent, err)
		}
		c.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	c.nextID++
	a.id = Int64ID(c.nextID)
	c.calls[a.id] = a
	c.mu.Unlock()

	msg := &Message{ID: a.id, Method: method, Params: raw}
	var werr error
	if try {
		var wrote bool
		if wrote, werr = c.w.TryWrite(msg); !wrote {
			werr = fmt.Errorf("%w: %w", ErrNotSent, ErrWouldBlock)
		}
	} else {
		werr = c.w.Write(msg)
	}
	if werr != nil {
		// Take the call back before the Conn ends and fails the pending
		// ones, unless the end got to it first: then it has its outcome.
		c.mu.Lock()
		mine := c.calls[a.id] == a
		if mine {
			delete(c.calls, a.id)
		}
		c.mu.Unlock()
		if errors.Is(werr, ErrWouldBlock) {
			if !mine {
				return a, nil
			}
			return nil, fmt.Errorf("%s: %w", method, werr)
		}
		err := c.writeFailed(werr)
		if !mine {
			return a, nil
		}
		if !errors.Is(err, ErrNotSent) {
			err = fmt.Errorf("%w: %w", ErrNotSent, err)
		}
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	return a, nil
}

// ID returns the id the request was sent under.
func (a *AsyncCall) ID() ID { return a.id }

// Done is closed when the call has its outcome.
func (a *AsyncCall) Done() <-chan struct{} { return a.done }

// Await waits for the call's outcome (see Go). When ctx ends first, it
// cancels the call (see Cancel) and returns ctx's cause, unless the
// response won the race.
func (a *AsyncCall) Await(ctx context.Context) (json.RawMessage, error) {
	select {
	case <-a.done:
	case <-ctx.Done():
		a.Cancel(context.Cause(ctx))
		<-a.done
	}
	return a.result, a.err
}

// Cancel gives up on the call. If it was still pending, the peer is told
// with notifications/cancelled (with cause's text as the reason), a response
// that comes anyway is dropped, and the call's outcome is cause (or
// context.Canceled when cause is nil). It reports whether the call was
// still pending.
func (a *AsyncCall) Cancel(cause error) bool { return a.cancel(cause, true) }

// CancelNoWait is Cancel, except that it does not wait for the peer to
// take the notification: it is written at once if it can be (see
// Writer.TryWrite), else by a goroutine of its own, which ends when its
// write does (the peer reads it, or its input closes).
func (a *AsyncCall) CancelNoWait(cause error) bool { return a.cancel(cause, false) }

func (a *AsyncCall) cancel(cause error, wait bool) bool {
	c := a.conn
	c.mu.Lock()
	pending := c.calls[a.id] == a
	if pending {
		delete(c.calls, a.id)
	}
	c.mu.Unlock()
	if !pending {
		return false
	}
	if cause == nil {
		cause = context.Canceled
	}
	params := append([]byte(`{"requestId":`), a.id.raw...)
	params = append(params, `,"reason":`...)
	params = jsonwire.AppendString(params, cause.Error())
	params = append(params, '}')
	msg := &Message{Method: "notifications/cancelled", Params: params}
	write := func() {
		if err := c.write(msg); err != nil {
			c.log.Debug("mcp: cannot send notifications/cancelled", "id", a.id, "error", err)
		}
	}
	switch {
	case wait:
		write()
	case c.sendStopped.Load():
		// Nothing is sent any more (see StopSending).
	default:
		if wrote, err := c.w.TryWrite(msg); !wrote {
			go write()
		} else if err != nil {
			_ = c.writeFailed(err)
		}
	}
	a.complete(nil, cause)
	return true
}

// complete delivers the outcome. Only the one who took the call out of
// Conn.calls calls it.
func (a *AsyncCall) complete(result json.RawMessage, err error) {
	a.result, a.err = result, err
	close(a.done)
	if a.then != nil {
		a.then(result, err)
	}
}

// response delivers a response to the call waiting for it.
func (c *Conn) response(msg *Message) {
	if !msg.ID.IsValid() {
		// An error about a line that the peer could not read (ours).
		c.log.Warn("mcp: peer reported an error", "error", msg.Error.Message, "code", msg.Error.Code)
		return
	}
	c.mu.Lock()
	a := c.calls[msg.ID]
	delete(c.calls, msg.ID)
	c.mu.Unlock()
	switch {
	case a == nil:
		c.log.Warn("mcp: dropping a response to an unknown request (cancelled, or never sent)", "id", msg.ID)
	case msg.Error != nil:
		a.complete(nil, msg.Error)
	default:
		a.complete(msg.Result, nil)
	}
}

// Call sends a request and waits for its response, which it decodes into
// result (unless result is nil; a *json.RawMessage gets the raw JSON).
// Many calls may be in flight at once.
//
// A JSON-RPC error from the peer is returned as an *Error (wrapped). When ctx
// ends first, Call tells the peer with notifications/cancelled and returns
// ctx's error. When the connection ends first, it returns an error wrapping
// ErrClosed. Every error names the method.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	a, err := c.Go(ctx, method, params, nil)
	if err != nil {
		return err
	}
	raw, err := a.Await(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if result != nil {
		if err := json.Unmarshal(raw, result); err != nil {
			return fmt.Errorf("%s: decode result: %w", method, err)
		}
	}
	return nil
}

// Notify sends a notification; params are as Go takes them.
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	raw, err := marshalParams(params)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if err := c.write(&Message{Method: method, Params: raw}); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return nil
}

// Send writes msg as it is: how a proxy passes on a notification, or a
// response to a request that it answers itself, without decoding them. Its
// raw fields must hold valid JSON. Use Go for requests: a request sent with
// Send is not tracked, and its response is dropped as unknown.
func (c *Conn) Send(msg *Message) error {
	return c.write(msg)
}

// marshalParams encodes params; nothing (nil, or null) means no params. A
// json.RawMessage goes as it is: a proxy passes params through untouched.
func marshalParams(v any) (json.RawMessage, error) {
	var b []byte
	switch v := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		b = v
	default:
		var err error
		if b, err = jsonwire.Marshal(v); err != nil {
			return nil, fmt.Errorf("encode params: %w", err)
		}
	}
	if len(b) == 0 || string(b) == "null" {
		return nil, nil
	}
	return b, nil
}
