package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

// CodeUnavailable is the JSON-RPC error code of requests that the server
// cannot answer any more: it stopped, crashed or restarted while they were
// in flight. It is the code the TypeScript SDK uses for a closed connection.
const CodeUnavailable = -32000

// An Upstream is the launcher's end of one server process's stdio, and the
// server's only peer. The launcher's own requests (the handshake, pings,
// re-listing tools) and the requests that the hub forwards for its clients
// all go through it, each under an id of the upstream's own.
//
// Its read loop (Run) is its one goroutine: it ends when the server closes
// its stdout (it exited) or writes what cannot be read any more, and then
// answers every pending request with a CodeUnavailable error.
type Upstream struct {
	name string
	w    *mcp.Writer
	r    *mcp.Reader
	log  *slog.Logger

	// onRequest and onNotification receive what the server sends on its
	// own; they run on the read loop and must not block.
	onRequest      func(u *Upstream, msg *mcp.Message)
	onNotification func(u *Upstream, msg *mcp.Message)
	// onDead, if set, is called when the upstream can take no more
	// requests: it ended (called before it answers the pending ones), or a
	// write to the server failed. It may be called more than once.
	onDead func(u *Upstream)

	mu      sync.Mutex
	nextID  int64
	pending map[mcp.ID]func(*mcp.Message) // by upstream id: what to do with the response
	refusal error                         // why it refuses new requests; nil while it takes them
	closed  bool
	err     error // why the upstream ended; set before done is closed
	done    chan struct{}
}

func newUpstream(name string, r io.Reader, w io.Writer, log *slog.Logger) *Upstream {
	return &Upstream{
		name:    name,
		r:       mcp.NewReader(r),
		w:       mcp.NewWriter(w),
		log:     log,
		pending: make(map[mcp.ID]func(*mcp.Message)),
		done:    make(chan struct{}),
	}
}

// Run reads the server's messages until its output ends; call it once, on
// a goroutine of its own.
func (u *Upstream) Run() {
	for {
		msg, err := u.r.Read()
		if err != nil {
			var de *mcp.DecodeError
			if errors.As(err, &de) {
				// A server that logs to stdout by mistake, or a line too
				// long: say so in its log and go on.
				u.log.Warn("unreadable line from server", "server", u.name, "error", de.Error())
				if resp := de.Response(); resp != nil {
					_ = u.write(resp)
				}
				continue
			}
			if errors.Is(err, io.EOF) {
				err = errors.New("the server closed its output (it exited)")
			}
			u.shutdown(err)
			return
		}
		switch {
		case msg.IsResponse():
			u.mu.Lock()
			deliver, ok := u.pending[msg.ID]
			delete(u.pending, msg.ID)
			u.mu.Unlock()
			if ok {
				deliver(msg)
			} else {
				u.log.Debug("response to no pending request", "server", u.name, "id", msg.ID.String())
			}
		case msg.IsRequest():
			u.onRequest(u, msg)
		case msg.IsNotification():
			u.onNotification(u, msg)
		}
	}
}

// shutdown ends the upstream: no more requests are accepted and every
// pending one is answered with an error that says why.
func (u *Upstream) shutdown(cause error) {
	u.refuse(cause)
	if u.onDead != nil {
		u.onDead(u)
	}
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return
	}
	u.closed = true
	u.err = cause
	pending := u.pending
	u.pending = nil
	u.mu.Unlock()
	for id, deliver := range pending {
		deliver(&mcp.Message{ID: id, Error: unavailable(u.name, cause)})
	}
	close(u.done)
}

// Done is closed when the upstream has ended: the server closed its
// output, and every request pending then has been answered.
func (u *Upstream) Done() <-chan struct{} { return u.done }

// Err says why the upstream ended; valid once Done is closed.
func (u *Upstream) Err() error { return u.err }

// Ping pings the server, which must answer within ctx.
func (u *Upstream) Ping(ctx context.Context) error {
	return u.call(ctx, "ping", nil, nil)
}

func unavailable(server string, cause error) *mcp.Error {
	return mcp.NewError(CodeUnavailable, "server %q is unavailable: %v; the request was not completed, retry it", server, cause)
}

// errNotSent is matched (errors.Is) by the error of a send that the
// upstream refused (it refuses new requests, or it has ended) or could not
// write: the request never reached the server, so it can go to the
// server's next process.
var errNotSent = errors.New("not sent: the upstream takes no more requests")

// errStopping is why an upstream refuses requests once it is detached: its
// process is being stopped, and its stdin is about to close.
var errStopping = errors.New("the server is stopping")

// refuse makes the upstream refuse new requests from now on (send fails
// with errNotSent, so that they go to the server's next process), while
// the requests already sent are still answered. It is called before the
// server's stdin is closed (Hub.Detach does), so that no request is
// written into a pipe that is closing. It reports whether the upstream
// took requests until now.
func (u *Upstream) refuse(why error) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.refusal != nil {
		return false
	}
	u.refusal = why
	return true
}

// refuses reports whether the upstream refuses new requests.
func (u *Upstream) refuses() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.refusal != nil
}

// notSentError is an upstream's refusal: errNotSent, with the error that a
// client receives if the request is not sent elsewhere.
type notSentError struct{ err *mcp.Error }

func (e notSentError) Error() string   { return e.err.Error() }
func (e notSentError) Unwrap() []error { return []error{errNotSent, e.err} }

// send writes a request to the server under a new id and calls deliver with
// its response, or with an error response if the upstream ends first. An
// upstream that refuses requests (refuse; it has ended) refuses it, and a
// request whose write fails never reached the server: both errors match
// errNotSent.
func (u *Upstream) send(msg *mcp.Message, deliver func(*mcp.Message)) (mcp.ID, error) {
	u.mu.Lock()
	if u.refusal != nil {
		err := u.refusal
		u.mu.Unlock()
		return mcp.ID{}, notSentError{unavailable(u.name, err)}
	}
	u.nextID++
	id := mcp.Int64ID(u.nextID)
	u.pending[id] = deliver
	u.mu.Unlock()

	out := *msg
	out.ID = id
	if err := u.write(&out); err != nil {
		if !u.forget(id) {
			// The upstream ended meanwhile and answered it with an error:
			// that is its outcome.
			return id, nil
		}
		return mcp.ID{}, notSentError{unavailable(u.name, err)}
	}
	return id, nil
}

// forget drops a pending request: its response, if one comes, is ignored.
// It reports whether the request was still pending.
func (u *Upstream) forget(id mcp.ID) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	_, ok := u.pending[id]
	delete(u.pending, id)
	return ok
}

// write sends a message as is: a request, a notification, or a response
// to one of the server's requests. A write that fails (the server closed
// its stdin, or it is being stopped) leaves the writer broken for good: the
// upstream then refuses new requests, and onDead lets the hub stop handing
// it out.
func (u *Upstream) write(msg *mcp.Message) error {
	err := u.w.Write(msg)
	if err != nil && u.refuse(err) && u.onDead != nil {
		u.onDead(u)
	}
	return err
}

// notify sends a notification.
func (u *Upstream) notify(method string, params any) error {
	raw, err := marshal(params)
	if err != nil {
		return err
	}
	return u.write(&mcp.Message{Method: method, Params: raw})
}

// call is a request of the launcher's own. When ctx ends first, the server
// is told with notifications/cancelled.
func (u *Upstream) call(ctx context.Context, method string, params, result any) error {
	raw, err := marshal(params)
	if err != nil {
		return err
	}
	resp := make(chan *mcp.Message, 1)
	id, err := u.send(&mcp.Message{Method: method, Params: raw}, func(m *mcp.Message) { resp <- m })
	if err != nil {
		return err
	}
	select {
	case m := <-resp:
		if m.Error != nil {
			return fmt.Errorf("%s: %w", method, m.Error)
		}
		if result != nil {
			if err := json.Unmarshal(m.Result, result); err != nil {
				return fmt.Errorf("%s: the server's result is not what MCP says: %v", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		if u.forget(id) {
			_ = u.notify("notifications/cancelled", map[string]any{"requestId": id, "reason": context.Cause(ctx).Error()})
		}
		return fmt.Errorf("%s: %w", method, context.Cause(ctx))
	}
}

// marshal encodes v for the wire, leaving <, > and & as they are: what the
// hub passes on should read as its sender wrote it.
func marshal(v any) (json.RawMessage, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return v, nil
	}
	return json.MarshalWithOption(v, json.DisableHTMLEscape())
}

// Initialize makes the server ready as the launcher defines it:
// initialize (the latest protocol), notifications/initialized, then every
// page of tools/list.
func (u *Upstream) Initialize(ctx context.Context) (*mcp.InitializeResult, []*mcp.Tool, error) {
	params := map[string]any{
		"protocolVersion": mcp.LatestVersion,
		"capabilities":    map[string]any{"roots": map[string]any{"listChanged": false}},
		"clientInfo":      clientInfo,
	}
	var raw json.RawMessage
	if err := u.call(ctx, "initialize", params, &raw); err != nil {
		return nil, nil, err
	}
	var init mcp.InitializeResult
	if err := json.Unmarshal(raw, &init); err != nil {
		return nil, nil, fmt.Errorf("initialize: the server's result is not what MCP says: %v", err)
	}
	init.Raw = raw
	if err := u.notify("notifications/initialized", nil); err != nil {
		return nil, nil, err
	}
	tools, err := u.listTools(ctx)
	if err != nil {
		return nil, nil, err
	}
	return &init, tools, nil
}

// clientInfo is how the launcher introduces itself to servers.
var clientInfo = mcp.Implementation{Name: "mcpgen", Version: "launcher"}

// maxPages bounds tools/list paging against a server that never stops.
const maxPages = 1000

func (u *Upstream) listTools(ctx context.Context) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	var cursor string
	for range maxPages {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var page struct {
			Tools      []*mcp.Tool `json:"tools"`
			NextCursor string      `json:"nextCursor"`
		}
		if err := u.call(ctx, "tools/list", params, &page); err != nil {
			return nil, err
		}
		tools = append(tools, page.Tools...)
		if page.NextCursor == "" {
			return tools, nil
		}
		if page.NextCursor == cursor {
			return nil, fmt.Errorf("tools/list: the server repeats cursor %q", cursor)
		}
		cursor = page.NextCursor
	}
	return nil, fmt.Errorf("tools/list: more than %d pages", maxPages)
}
