package hub

import (
	"context"
	"errors"
	"io"
	"sync"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

// CodeUnavailable is the JSON-RPC error code of requests that the server
// cannot answer any more: it stopped, crashed or restarted while they were
// in flight. It is the code the TypeScript SDK uses for a closed connection.
const CodeUnavailable = -32000

// CodeTimeout is the JSON-RPC error code of a request that the server did
// not answer within its tool_timeout (a tool call gets an error result
// instead: see client.timedOut). It is the code the TypeScript SDK uses
// for a request that timed out.
const CodeTimeout = -32001

// An Upstream is the launcher's end of one server process's stdio, and the
// server's only peer: an mcp.Conn, on which the launcher makes its own
// requests (the handshake, pings, re-listing tools, through an mcp.Client)
// and forwards its clients' requests (Conn.Go), each under an id of the
// Conn's. The server's own requests and notifications go to the hub.
//
// Run reads the server's output until it ends (the server exited): then
// every pending request fails, which the hub turns into a CodeUnavailable
// error for its client.
type Upstream struct {
	name   string
	conn   *mcp.Conn
	client *mcp.Client // the launcher's own requests, on conn
	hub    *Hub

	// A modern server's list changes come on a subscription (see listen).
	mu  sync.Mutex
	sub subscription

	err  error // why the upstream ended; set before done is closed
	done chan struct{}
	// ended is closed when the Conn ends (OnEnd), before done: the
	// server's requests that wait (a call held for an agent's input) stop
	// waiting then, as nobody would read their answers, and done follows.
	ended chan struct{}
}

// NewUpstream returns an Upstream for a new process of the hub's server,
// which reads r (the server's stdout) and writes w (its stdin). Call Run.
func (h *Hub) NewUpstream(r io.Reader, w io.Writer) *Upstream {
	u := &Upstream{name: h.name, hub: h, done: make(chan struct{}), ended: make(chan struct{})}
	u.conn = mcp.NewConn(r, w, mcp.ConnOptions{
		// No request of the server is answered on the read loop, not even
		// a ping: an answer written there could wait for a server whose
		// stdin is full while it waits for us to read its stdout.
		Handler:        mcp.HandlerFunc(u.serverRequest),
		OnNotification: u.serverNotification,
		// Detached as soon as it ends or cannot be written to, not when its
		// supervisor notices: a request that comes in between then waits
		// for the next process instead of failing as if it had been in
		// flight.
		OnEnd: func(error) {
			close(u.ended)
			h.Detach(u)
		},
		Logger: h.log.With("server", h.name),
	})
	u.client = mcp.ClientOn(u.conn, mcp.ClientOptions{
		Info:         clientInfo,
		Capabilities: json.RawMessage(`{"roots":{"listChanged":false}}`),
		Timeout:      -1, // the caller's ctx bounds each call: the startup timeout, the ping timeout
	})
	return u
}

// clientInfo is how the launcher introduces itself to servers.
var clientInfo = mcp.Implementation{Name: "mcpgen", Version: "launcher"}

// Run reads the server's messages until its output ends; call it once, on
// a goroutine of its own. It returns when the upstream has ended: every
// request pending then has its error, and the server's own requests have
// been answered.
func (u *Upstream) Run() {
	err := u.conn.Run(context.Background())
	if err == nil {
		err = errors.New("the server closed its output (it exited)")
	}
	u.err = err
	close(u.done)
}

// Done is closed when the upstream has ended: the server closed its
// output, and every request pending then has been answered.
func (u *Upstream) Done() <-chan struct{} { return u.done }

// Err says why the upstream ended; valid once Done is closed.
func (u *Upstream) Err() error { return u.err }

// Ping pings the server, which must answer within ctx.
func (u *Upstream) Ping(ctx context.Context) error { return u.client.Ping(ctx) }

// Initialize makes the server ready as the launcher defines it: Open with
// no era known (a probe), then every page of tools/list.
func (u *Upstream) Initialize(ctx context.Context) (*mcp.InitializeResult, []*mcp.Tool, error) {
	return u.Open(ctx, mcp.OpenOptions{})
}

// Open makes the server ready as the launcher defines it, in the era that
// opts and the server decide (see mcp.Client.Open): for a legacy server
// initialize and notifications/initialized, for a modern one
// server/discover and a subscription to its list changes (listen); then
// every page of tools/list. The result is the server's answer to
// initialize, or a modern server's discover result in that form
// (InitializeResult.Discover has it as sent).
func (u *Upstream) Open(ctx context.Context, opts mcp.OpenOptions) (*mcp.InitializeResult, []*mcp.Tool, error) {
	init, err := u.client.Open(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	if init.Era == mcp.EraModern {
		// Before the tools are listed: a change after the listing is heard.
		u.listen(init)
	}
	tools, err := u.client.ListTools(ctx)
	if err != nil {
		return nil, nil, err
	}
	return init, tools, nil
}

// Era is the server's era, once Open has found it.
func (u *Upstream) Era() mcp.Era { return u.client.Era() }

func (u *Upstream) listTools(ctx context.Context) ([]*mcp.Tool, error) {
	return u.client.ListTools(ctx)
}

// errStopping is why an upstream refuses requests once it is detached: its
// process is being stopped, and its stdin is about to close.
var errStopping = errors.New("the server is stopping")

// refuse makes the upstream send nothing more (see mcp.Conn.StopSending):
// new requests fail with mcp.ErrNotSent, so that they go to the server's
// next process, while the requests already sent are still answered. It is
// called before the server's stdin is closed (Hub.Detach does), so that no
// write races with the close to end the upstream early.
func (u *Upstream) refuse(why error) { u.conn.StopSending(why) }

// refuses reports whether the upstream takes no more requests.
func (u *Upstream) refuses() bool { return u.conn.Unsent() != nil || u.conn.Err() != nil }

// send forwards a request to the server under an id of the upstream's and
// calls then with the raw result, or with the error: the server's own
// (*mcp.Error), or CodeUnavailable when the upstream ends first. A request
// that never reached the server (the upstream refuses requests, it has
// ended, or the write failed) is refused with an error that matches
// mcp.ErrNotSent, and then is not called. Unless wait, one that could not
// be written without waiting is refused so too, with an error that
// matches mcp.ErrWouldBlock (see mcp.Conn.TryGo).
func (u *Upstream) send(ctx context.Context, method string, params json.RawMessage, then func(json.RawMessage, *mcp.Error), wait bool) (*mcp.AsyncCall, error) {
	result := func(result json.RawMessage, err error) {
		if err != nil {
			then(nil, u.wireError(err))
			return
		}
		then(result, nil)
	}
	if wait {
		return u.conn.Go(ctx, method, params, result)
	}
	return u.conn.TryGo(ctx, method, params, result)
}

// wireError is the error a client gets for a request that failed upstream.
func (u *Upstream) wireError(err error) *mcp.Error {
	var werr *mcp.Error
	switch {
	case errors.As(err, &werr):
		return werr
	case errors.Is(err, mcp.ErrClosed):
		return unavailable(u.name, err)
	}
	// An answer the hub could not take, longer than a line may be: the
	// same request would fail again.
	return mcp.NewError(mcp.CodeInternalError, "server %q: %v", u.name, err)
}

func unavailable(server string, cause error) *mcp.Error {
	return mcp.NewError(CodeUnavailable, "server %q is unavailable: %v; the request was not completed, retry it", server, cause)
}

// sendRaw passes a message to the server as it is: a client's notification.
func (u *Upstream) sendRaw(msg *mcp.Message) error { return u.conn.Send(msg) }

// serverRequest answers a request of the server's; see Hub.serverRequest.
func (u *Upstream) serverRequest(ctx context.Context, req *mcp.Request) (any, error) {
	return u.hub.serverRequest(ctx, u, req)
}

func (u *Upstream) serverNotification(_ context.Context, msg *mcp.Message) {
	if u.client.Era() == mcp.EraModern {
		var ok bool
		if msg, ok = u.subscribed(msg); !ok {
			return
		}
	}
	u.hub.serverNotification(u, msg)
}
