package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
)

// ErrClosed is wrapped by the errors of calls that can no longer be answered:
// the peer closed the connection (a server process exited), reading or
// writing failed, or Close was called.
var ErrClosed = errors.New("connection closed")

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
	cancel context.CancelFunc

	// Guarded by conn.mu.
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

// ConnOptions configures a Conn. The zero value is usable.
type ConnOptions struct {
	// Handler answers requests from the peer. Without one, every request
	// is answered -32601 (method not found).
	Handler Handler
	// OnNotification receives the peer's notifications, except
	// notifications/cancelled, which the Conn handles itself. It is called
	// from the read loop, one at a time and in order, so it must return
	// promptly and must not wait for a Call on the same Conn.
	OnNotification func(ctx context.Context, msg *Message)
	// Logger receives what goes wrong on the wire. Nothing is logged
	// when it is nil.
	Logger *slog.Logger
}

// A Conn is one end of a JSON-RPC connection over a reader and a writer.
// Both ends may send requests: MCP servers ask their clients too.
//
// Run reads and dispatches incoming messages; each incoming request runs in
// its own goroutine, owned by Run, which waits for all of them before it
// returns. Call and Notify may be used from any goroutine.
type Conn struct {
	r              *Reader
	w              *Writer
	rclose, wclose io.Closer // the reader and the writer, when they can be closed
	handler        Handler
	onNotification func(context.Context, *Message)
	log            *slog.Logger

	started   atomic.Bool
	stopping  atomic.Bool // set under mu: no new handlers after it
	closing   chan struct{}
	closeOnce sync.Once
	done      chan struct{} // closed when Run returns

	mu             sync.Mutex
	nextID         int64
	calls          map[ID]*call    // our requests, waiting for a response
	requests       map[ID]*Request // the peer's requests, being handled
	cancelHandlers context.CancelFunc
	err            error // why no call can be answered any more; wraps ErrClosed

	handlers sync.WaitGroup

	// lastBad is the last line read when it was not a message, to explain a
	// peer that exits right after printing an error to its stdout. Only the
	// read loop writes it; Run reads it once the loop has ended.
	lastBad string
}

type call struct {
	done chan callResult // buffered; the response is sent under Conn.mu
}

type callResult struct {
	msg *Message
	err error
}

// NewConn returns a Conn that reads messages from r and writes them to w.
// Call Run to start it. Close closes r and w when they implement io.Closer.
func NewConn(r io.Reader, w io.Writer, opts ConnOptions) *Conn {
	c := &Conn{
		r:              NewReader(r),
		w:              NewWriter(w),
		handler:        opts.Handler,
		onNotification: opts.OnNotification,
		log:            opts.Logger,
		closing:        make(chan struct{}),
		done:           make(chan struct{}),
		calls:          make(map[ID]*call),
		requests:       make(map[ID]*Request),
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.rclose, _ = r.(io.Closer)
	c.wclose, _ = w.(io.Closer)
	return c
}

// Run reads and dispatches messages until the input ends, ctx is done or
// Close is called. It may be called once.
//
// At the end of the input (io.EOF) pending calls fail at once, every request
// already read is still answered, and then Run returns nil. When ctx is done,
// the contexts of running handlers are cancelled, their responses are still
// written if the writer works, and Run returns ctx's error; the reader is
// closed if it can be, since the goroutine reading it can only end when a
// read returns. After Close, Run returns nil once the handlers have returned.
func (c *Conn) Run(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return errors.New("mcp: Conn.Run called twice")
	}
	defer close(c.done)

	// Handlers keep ctx's values but not its cancellation: at the end of
	// the input they must still finish and be answered. Run cancels them
	// itself when ctx is done.
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	c.mu.Lock()
	c.cancelHandlers = cancel
	c.mu.Unlock()

	// The read loop is owned by Run. It ends at the end of the input, on a
	// read error, or, once Run has stopped, at its next message.
	readDone := make(chan error, 1)
	go c.readLoop(ctx, hctx, readDone)

	var runErr error
	select {
	case err := <-readDone:
		select {
		case <-c.closing:
			c.handlers.Wait()
			return nil
		default:
		}
		if errors.Is(err, io.EOF) {
			c.fail(c.peerClosed())
		} else {
			c.fail(fmt.Errorf("%w: read: %w", ErrClosed, err))
			runErr = fmt.Errorf("mcp: read: %w", err)
		}
		// Drain: ctx or Close may still cut the handlers short.
		stop := context.AfterFunc(ctx, cancel)
		c.handlers.Wait()
		stop()
	case <-ctx.Done():
		c.stop()
		c.fail(fmt.Errorf("%w: %w", ErrClosed, context.Cause(ctx)))
		cancel()
		c.closeReader()
		c.handlers.Wait()
		runErr = ctx.Err()
	case <-c.closing:
		c.handlers.Wait()
	}
	return runErr
}

// stop makes the read loop start no more handlers.
func (c *Conn) stop() {
	c.mu.Lock()
	c.stopping.Store(true)
	c.mu.Unlock()
}

func (c *Conn) closeReader() {
	if c.rclose != nil {
		_ = c.rclose.Close()
	}
}

func (c *Conn) peerClosed() error {
	if c.lastBad != "" {
		return fmt.Errorf("%w by peer; its last output was not JSON-RPC: %s", ErrClosed, c.lastBad)
	}
	return fmt.Errorf("%w by peer", ErrClosed)
}

// fail records why calls can no longer be answered, and fails the pending
// ones. The first reason wins.
func (c *Conn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = err
	for id, cl := range c.calls {
		cl.done <- callResult{err: err}
		delete(c.calls, id)
	}
}

// Done is closed when Run has returned.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns why calls can no longer be answered (an error wrapping
// ErrClosed), or nil while they can.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close stops the connection: pending and later calls fail with ErrClosed,
// running handlers are cancelled, and the reader and writer are closed when
// they implement io.Closer (for a child process, closing its stdin is how
// MCP asks it to exit). Close does not wait for Run; wait on Done for that.
func (c *Conn) Close() error {
	var errs []error
	c.closeOnce.Do(func() {
		c.stop()
		c.fail(ErrClosed)
		c.mu.Lock()
		cancel := c.cancelHandlers
		c.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		close(c.closing)
		for _, cl := range []io.Closer{c.wclose, c.rclose} {
			if cl == nil {
				continue
			}
			if err := cl.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
				errs = append(errs, err)
			}
		}
	})
	return errors.Join(errs...)
}

func (c *Conn) readLoop(ctx, hctx context.Context, done chan<- error) {
	for {
		line, err := c.r.ReadLine()
		if c.stopping.Load() {
			done <- err
			return
		}
		if errors.Is(err, ErrLineTooLong) {
			c.lineTooLong(line)
			continue
		}
		if err != nil {
			done <- err
			return
		}
		msg, err := DecodeMessage(line)
		if err != nil {
			c.badLine(line, err)
			continue
		}
		c.lastBad = ""
		switch {
		case msg.IsRequest():
			c.startHandler(hctx, msg)
		case msg.IsNotification():
			c.notification(ctx, msg)
		default:
			c.response(msg)
		}
	}
}

func (c *Conn) badLine(line []byte, err error) {
	c.lastBad = snippet(line)
	c.log.Warn("mcp: ignoring a line that is not a JSON-RPC message", "error", err, "line", c.lastBad)
	var derr *DecodeError
	if errors.As(err, &derr) {
		if resp := derr.Response(); resp != nil {
			_ = c.write(resp)
		}
	}
}

// lineTooLong answers an overlong line as best it can from its start: a
// request gets an error response, a response fails the call waiting for it.
func (c *Conn) lineTooLong(prefix []byte) {
	id, isRequest, isResponse := peekEnvelope(prefix)
	c.log.Warn("mcp: discarding an overlong line", "limit", c.r.max, "id", id, "start", snippet(prefix))
	switch {
	case isRequest:
		_ = c.write(c.r.tooLong(id, true).Response())
	case isResponse && id.IsValid():
		c.mu.Lock()
		if cl, ok := c.calls[id]; ok {
			delete(c.calls, id)
			cl.done <- callResult{err: fmt.Errorf("response longer than %d bytes", c.r.max)}
		}
		c.mu.Unlock()
	}
}

// snippet quotes the start of a line for a log or an error message.
func snippet(line []byte) string {
	const limit = 200
	if len(line) > limit {
		return strconv.Quote(string(line[:limit])) + "..."
	}
	return strconv.Quote(string(line))
}

func (c *Conn) startHandler(hctx context.Context, msg *Message) {
	c.mu.Lock()
	if c.stopping.Load() {
		c.mu.Unlock()
		return
	}
	if _, dup := c.requests[msg.ID]; dup {
		c.mu.Unlock()
		_ = c.write(&Message{ID: msg.ID, Error: NewError(CodeInvalidRequest, "invalid request: id %s is already in use", msg.ID)})
		return
	}
	ctx, cancel := context.WithCancel(hctx)
	req := &Request{ID: msg.ID, Method: msg.Method, Params: msg.Params, conn: c, cancel: cancel}
	c.requests[msg.ID] = req
	c.handlers.Add(1)
	c.mu.Unlock()
	go c.serve(ctx, req) // owned by Run, which waits for it
}

func (c *Conn) serve(ctx context.Context, req *Request) {
	defer c.handlers.Done()
	result, err := c.invoke(ctx, req)

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

// marshalParams encodes params; nothing (nil, or null) means no params.
func marshalParams(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	b, err := jsonwire.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode params: %w", err)
	}
	if string(b) == "null" {
		return nil, nil
	}
	return b, nil
}

func (c *Conn) notification(ctx context.Context, msg *Message) {
	if msg.Method == "notifications/cancelled" {
		c.peerCancelled(msg)
		return
	}
	if c.onNotification != nil {
		c.onNotification(ctx, msg)
	}
}

// peerCancelled stops the handler of a request that the peer cancelled. The
// request may be over already, or unknown: the spec expects such races.
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
	if ok {
		req.cancelled = true
	}
	c.mu.Unlock()
	if ok {
		c.log.Debug("mcp: peer cancelled a request", "id", p.RequestID, "method", req.Method, "reason", p.Reason)
		req.cancel()
	}
}

func (c *Conn) response(msg *Message) {
	if !msg.ID.IsValid() {
		// An error about a line that the peer could not read (ours).
		c.log.Warn("mcp: peer reported an error", "error", msg.Error.Message, "code", msg.Error.Code)
		return
	}
	c.mu.Lock()
	cl, ok := c.calls[msg.ID]
	if ok {
		delete(c.calls, msg.ID)
		cl.done <- callResult{msg: msg}
	}
	c.mu.Unlock()
	if !ok {
		c.log.Warn("mcp: dropping a response to an unknown request (cancelled, or never sent)", "id", msg.ID)
	}
}

// write sends m. A write error means the peer is gone: calls fail from then on.
func (c *Conn) write(m *Message) error {
	if err := c.w.Write(m); err != nil {
		c.fail(fmt.Errorf("%w: write: %w", ErrClosed, err))
		return c.Err()
	}
	return nil
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
	if err := c.call(ctx, method, params, result); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return nil
}

func (c *Conn) call(ctx context.Context, method string, params, result any) error {
	raw, err := marshalParams(params)
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	cl := &call{done: make(chan callResult, 1)}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	c.nextID++
	id := Int64ID(c.nextID)
	c.calls[id] = cl
	c.mu.Unlock()

	if err := c.write(&Message{ID: id, Method: method, Params: raw}); err != nil {
		c.forget(id)
		return err
	}

	var res callResult
	select {
	case res = <-cl.done:
	case <-ctx.Done():
		if c.forget(id) {
			c.cancelCall(id, context.Cause(ctx))
			return context.Cause(ctx)
		}
		res = <-cl.done // the response won the race
	}
	if res.err != nil {
		return res.err
	}
	if res.msg.Error != nil {
		return res.msg.Error
	}
	if result != nil {
		if err := json.Unmarshal(res.msg.Result, result); err != nil {
			return fmt.Errorf("decode result: %w", err)
		}
	}
	return nil
}

// forget drops a pending call, reporting whether it was still pending (no
// response has been delivered to it).
func (c *Conn) forget(id ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.calls[id]
	delete(c.calls, id)
	return ok
}

func (c *Conn) cancelCall(id ID, reason error) {
	params := append([]byte(`{"requestId":`), id.raw...)
	params = append(params, `,"reason":`...)
	params = jsonwire.AppendString(params, reason.Error())
	params = append(params, '}')
	if err := c.write(&Message{Method: "notifications/cancelled", Params: params}); err != nil {
		c.log.Debug("mcp: cannot send notifications/cancelled", "id", id, "error", err)
	}
}

// Notify sends a notification.
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
