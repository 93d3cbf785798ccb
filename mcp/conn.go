package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
)

// ErrClosed is wrapped by the errors of calls that can no longer be answered:
// the peer closed the connection (a server process exited), reading or
// writing failed, or Close was called.
var ErrClosed = errors.New("connection closed")

// DefaultMaxInFlight is how many of the peer's requests a Conn handles at
// once when its options set no MaxInFlight.
const DefaultMaxInFlight = 64

// ConnOptions configures a Conn. The zero value is usable.
type ConnOptions struct {
	// Handler answers requests from the peer. Without one, every request
	// is answered -32601 (method not found).
	Handler Handler
	// Inline reports whether Handler answers a method at once, without
	// waiting on anything but the writer: a ping, a list served from a
	// cache. Those requests are handled on the read loop, one at a time and
	// in order, without a goroutine or a context of their own, which keeps
	// their round trip as short as the transport allows. Their context ends
	// only when the Conn stops; the peer cannot cancel them, and they do not
	// count against MaxInFlight. Such a handler must not wait for anything
	// the read loop would have to read, such as a Call on the same Conn.
	// Every other request runs in a goroutine.
	Inline func(method string) bool
	// MaxInFlight bounds the peer's requests that run at once (default
	// DefaultMaxInFlight). As many more may wait for a slot, read but not
	// started, as long as their params hold no more than MaxLineSize bytes
	// in all; while they wait the Conn keeps reading, so that a
	// cancellation still reaches a running request. Beyond that the Conn
	// stops reading until a request finishes. Writes block while the peer
	// does not read, so a peer that floods requests without reading the
	// answers finds its own writes blocked, rather than the Conn's memory
	// growing.
	MaxInFlight int
	// ServerRole makes the Conn answer every line that is not JSON with
	// -32700 and a null id, as JSON-RPC 2.0 asks of a server. Without it
	// (the client role) a line of plain text is only logged: servers print
	// banners and stack traces on stdout, and nobody waits for an answer.
	ServerRole bool
	// OnNotification receives the peer's notifications, except
	// notifications/cancelled, which the Conn handles itself. It is called
	// from the read loop, one at a time and in order, so it must return
	// promptly and must not wait for a Call on the same Conn.
	OnNotification func(ctx context.Context, msg *Message)
	// OnEnd, if set, is called once when the Conn ends (the peer closed its
	// output, reading or writing failed, Run's ctx was done, or Close was
	// called), with why (an error wrapping ErrClosed), before the pending
	// calls fail and before Go starts refusing new ones. It runs on
	// whichever goroutine noticed the end, so it must return promptly.
	OnEnd func(err error)
	// Logger receives what goes wrong on the wire. Nothing is logged
	// when it is nil.
	Logger *slog.Logger
}

// A Conn is one end of a JSON-RPC connection over a reader and a writer.
// Both ends may send requests: MCP servers ask their clients too.
//
// Run reads and dispatches incoming messages. Requests that the options
// call Inline are answered on the read loop; every other incoming request
// runs in a goroutine owned by Run, which waits for all of them before it
// returns, and at most MaxInFlight of them at once (see ConnOptions). Go,
// Call, Notify and Send may be used from any goroutine.
type Conn struct {
	r              *Reader
	w              *Writer
	rclose, wclose io.Closer // the reader and the writer, when they can be closed
	handler        Handler
	inline         func(method string) bool
	maxInFlight    int
	serverRole     bool
	onNotification func(context.Context, *Message)
	onEnd          func(error)
	log            *slog.Logger

	started   atomic.Bool
	stopping  atomic.Bool   // set under mu: no new handlers after it
	stopped   chan struct{} // closed when stopping is set
	closing   chan struct{}
	closeOnce sync.Once
	done      chan struct{} // closed when Run returns

	// hctx is the parent of the handlers' contexts; Run sets it before the
	// read loop starts, and it does not change after.
	hctx context.Context

	mu             sync.Mutex
	nextID         int64
	calls          map[ID]*AsyncCall // our requests, waiting for a response; nil once ended
	requests       map[ID]*Request   // the peer's requests: running, or waiting for a slot
	running        int               // requests with a goroutine
	waiting        []*Request        // requests read but not started, oldest first
	waitingBytes   int               // their params' length
	cancelHandlers context.CancelFunc
	ending         bool  // OnEnd has been called, or is being called
	err            error // why no call can be answered any more; wraps ErrClosed
	unsent         error // why nothing is sent any more (StopSending); wraps ErrNotSent

	// sendStopped is set, under mu, when unsent is: writes check it
	// without the lock.
	sendStopped atomic.Bool

	// slotFree wakes a read loop that waits for room (see admit): a
	// request finished, or one that waited was cancelled.
	slotFree chan struct{}
	handlers sync.WaitGroup // requests running or waiting

	// admitWaits, in tests, hears each time the read loop starts waiting
	// for room (see admit): how a test knows that the Conn stopped reading.
	admitWaits func()

	// lastBad is the last line read when it was not a message, to explain a
	// peer that exits right after printing an error to its stdout. Only the
	// read loop writes it; Run reads it once the loop has ended.
	lastBad string
}

// NewConn returns a Conn that reads messages from r and writes them to w.
// Call Run to start it. Close closes r and w when they implement io.Closer.
func NewConn(r io.Reader, w io.Writer, opts ConnOptions) *Conn {
	c := &Conn{
		r:              NewReader(r),
		w:              NewWriter(w),
		handler:        opts.Handler,
		inline:         opts.Inline,
		maxInFlight:    opts.MaxInFlight,
		serverRole:     opts.ServerRole,
		onNotification: opts.OnNotification,
		onEnd:          opts.OnEnd,
		log:            opts.Logger,
		stopped:        make(chan struct{}),
		closing:        make(chan struct{}),
		done:           make(chan struct{}),
		calls:          make(map[ID]*AsyncCall),
		requests:       make(map[ID]*Request),
		slotFree:       make(chan struct{}, 1),
	}
	if c.maxInFlight <= 0 {
		c.maxInFlight = DefaultMaxInFlight
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
// the contexts of running handlers are cancelled, and their responses are
// still written if the writer works; so are those of the requests that wait
// for a slot (they start with a cancelled context), and a request that was
// read but could not wait any more is answered with an error. Then Run
// returns ctx's error; the reader is closed if it can be, since the
// goroutine reading it can only end when a read returns. After Close, Run
// returns nil once the handlers have returned.
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
	c.hctx = hctx
	c.cancelHandlers = cancel
	c.mu.Unlock()

	// The read loop is owned by Run. It ends at the end of the input, on a
	// read error, or, once Run has stopped, at its next message (or when a
	// write that it makes returns: it answers inline requests itself).
	readDone := make(chan error, 1)
	go c.readLoop(ctx, readDone)

	var runErr error
	select {
	case err := <-readDone:
		if c.stopping.Load() {
			// Close stopped the loop (Run's own ctx case is below).
			c.handlers.Wait()
			return nil
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

// stop makes the read loop start no more handlers, and wakes it if it
// waits for a slot.
func (c *Conn) stop() {
	c.mu.Lock()
	if !c.stopping.Load() {
		c.stopping.Store(true)
		close(c.stopped)
	}
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
// ones. The first reason wins; OnEnd hears it first.
func (c *Conn) fail(err error) {
	c.mu.Lock()
	if c.ending {
		c.mu.Unlock()
		return
	}
	c.ending = true
	c.mu.Unlock()
	if c.onEnd != nil {
		c.onEnd(err)
	}
	c.mu.Lock()
	c.err = err
	calls := c.calls
	c.calls = nil // Go refuses from now on, so nothing is added
	c.mu.Unlock()
	for _, a := range calls {
		a.complete(nil, err)
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

func (c *Conn) readLoop(ctx context.Context, done chan<- error) {
	for {
		line, err := c.r.ReadLine()
		if c.stopping.Load() {
			if err == nil {
				c.refuse(line)
			}
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
			if c.inline != nil && c.inline(msg.Method) {
				c.answerInline(msg)
			} else {
				c.admit(msg)
			}
		case msg.IsNotification():
			c.notification(ctx, msg)
		default:
			c.response(msg)
		}
	}
}

func (c *Conn) badLine(line []byte, err error) {
	c.lastBad = snippet(line)
	var derr *DecodeError
	if !errors.As(err, &derr) {
		c.log.Warn("mcp: ignoring a line that is not a JSON-RPC message", "error", err, "line", c.lastBad)
		return
	}
	// Its start may still say what it was: a valid line nested deeper
	// than the scanner goes (jsonwire.MaxDepth), say, has its id first.
	id, isRequest, isResponse := peekEnvelope(line)
	if isResponse && !isRequest {
		c.badResponse(id, derr)
		return
	}
	c.log.Warn("mcp: ignoring a line that is not a JSON-RPC message", "error", err, "line", c.lastBad)
	resp := derr.Response()
	if c.serverRole {
		resp = derr.ServerResponse()
	}
	if resp != nil {
		_ = c.write(resp)
	}
}

// badResponse takes a line that its start shows to be a response, but
// that is not a valid message. When its id can be read, the call waiting
// for it fails with why: its answer came, and cannot be read. When it
// cannot (the id comes after what failed), no call can be told: the line
// is dropped and logged, and the call it answered ends as its caller
// bounds it (a timeout; a cancellation). Failing some other call instead,
// or ending the connection and every call on it, would be a guess. A
// response gets no answer, whatever it holds.
func (c *Conn) badResponse(id ID, derr *DecodeError) {
	var a *AsyncCall
	if id.IsValid() {
		c.mu.Lock()
		a = c.calls[id]
		delete(c.calls, id)
		c.mu.Unlock()
	}
	if a == nil {
		c.log.Warn("mcp: dropping a response that is not a JSON-RPC message; the request it answers ends at its timeout", "id", id, "error", derr, "line", c.lastBad)
		return
	}
	c.log.Warn("mcp: failing the call whose response is not a JSON-RPC message", "id", id, "error", derr, "line", c.lastBad)
	a.complete(nil, fmt.Errorf("its response is not a valid JSON-RPC message: %v", derr))
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
		a := c.calls[id]
		delete(c.calls, id)
		c.mu.Unlock()
		if a != nil {
			a.complete(nil, fmt.Errorf("response longer than %d bytes", c.r.max))
		}
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

func (c *Conn) notification(ctx context.Context, msg *Message) {
	if msg.Method == "notifications/cancelled" {
		c.peerCancelled(msg)
		return
	}
	if c.onNotification != nil {
		c.onNotification(ctx, msg)
	}
}

// write sends m. A write error means the peer is gone: calls fail from then
// on. After StopSending it writes nothing (see there).
func (c *Conn) write(m *Message) error {
	if c.sendStopped.Load() {
		return c.Unsent()
	}
	if werr := c.w.Write(m); werr != nil {
		return c.writeFailed(werr)
	}
	return nil
}

// writeFailed ends the Conn after a failed write, unless sending had
// stopped: then the writer was closed on purpose, and the peer may still
// answer what it read.
func (c *Conn) writeFailed(werr error) error {
	if unsent := c.Unsent(); unsent != nil {
		return fmt.Errorf("%w (write: %w)", unsent, werr)
	}
	err := fmt.Errorf("%w: write: %w", ErrClosed, werr)
	c.fail(err)
	if first := c.Err(); first != nil {
		return first
	}
	return err // the end is being reported: OnEnd is running
}

// StopSending makes the Conn send nothing more while it goes on reading: Go
// and Call fail with an error that wraps ErrNotSent and cause; Notify, Send,
// the notification of Cancel and the answers to the peer's requests are
// dropped; the responses to calls already sent are still delivered. A proxy
// calls it before it closes a server's stdin to stop the server, which may
// still answer what it read: a write that races with that close fails
// without ending the Conn, and a request whose write it cuts short is
// refused as not sent, so that it can go to the server's next process. The
// first cause wins.
func (c *Conn) StopSending(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.unsent == nil {
		c.unsent = fmt.Errorf("%w: %w", ErrNotSent, cause)
		c.sendStopped.Store(true)
	}
}

// Unsent returns why the Conn sends nothing any more (an error wrapping
// ErrNotSent), or nil while it sends; see StopSending.
func (c *Conn) Unsent() error {
	if !c.sendStopped.Load() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unsent
}
