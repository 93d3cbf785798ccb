// Package streamable is the client end of MCP's Streamable HTTP transport
// (protocol revisions 2025-03-26 and later): how mcpgen reaches a remote
// (url) server.
//
// A [Transport] looks like the stdio of a server process: an
// io.ReadWriteCloser of newline-delimited JSON-RPC messages. Each line
// written is POSTed to the server's endpoint; what the server sends (the
// JSON or event-stream answers to those POSTs, and the messages of the GET
// stream that it may offer for messages of its own) is read back as lines.
// So whatever speaks MCP over a pipe (mcp.NewConn, mcp.NewClient, the
// launcher's hub) speaks it over HTTP unchanged:
//
//	t, err := streamable.New("https://mcp.example.com/mcp", streamable.Options{BearerToken: token})
//	client := mcp.NewClient(ctx, t, t, mcp.ClientOptions{})
//
// The transport does what the protocol asks of the HTTP layer and nothing
// above it. It speaks the binding of either era of the protocol (see
// modern.go), as the messages it carries say or as Options.Protocol pins:
//
//   - Legacy (2025-11-25 and earlier): it keeps the session id of the
//     initialize answer and the negotiated protocol version and sends them
//     on every later request, opens the GET stream once the client has sent
//     notifications/initialized, resumes event streams that drop
//     (Last-Event-ID, after the server's retry delay, within bounds: see
//     listenDelay), and ends the session (DELETE) at Close.
//   - Modern (2026-07-28): no session, no GET stream, no resumption; every
//     POST carries MCP-Protocol-Version, Mcp-Method and Mcp-Name as the body
//     says, and the Mcp-Param headers that the tool's x-mcp-header
//     annotations ask for (see params.go); tools whose annotations are
//     invalid are left out of tools/list; subscriptions/listen is the one
//     long stream.
//
// It never lets a request hang: when the server's answer cannot be had (an
// HTTP error, an answer too large, a stream that cannot be resumed or, in
// the modern era, a stream that broke, no answer within
// Options.RequestTimeout), the reader gets a JSON-RPC error response for
// that request, with code CodeTransportError (or the server's own error, as
// its HTTP error's body held it) and a message that says why.
//
// Failures of the whole session end the reader with an error, as a server
// process's exit ends its stdout: ErrSessionExpired when the server answers
// 404 to the session (the caller must start a new session with a new
// Transport), and an error naming the endpoint when the server cannot be
// reached at all.
package streamable

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

// ErrSessionExpired is matched (errors.Is) by the error that ends a
// Transport whose server answered 404 Not Found to a request that carried
// the session id: the server has ended the session, and a new one must be
// started with a new Transport and a new initialize.
var ErrSessionExpired = errors.New("the server ended the session (404 Not Found)")

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("streamable: transport closed")

// CodeTransportError is the JSON-RPC error code of the responses that the
// transport writes in the server's stead, when the HTTP exchange of a
// request failed. It is the code the launcher and the TypeScript SDK use for
// a server that cannot answer.
const CodeTransportError = -32000

// Defaults and bounds.
const (
	// DefaultMaxMessageSize bounds one message from the server (a JSON
	// answer, an event's data), as mcp.MaxLineSize bounds a stdio line.
	DefaultMaxMessageSize = mcp.MaxLineSize
	// DefaultRequestTimeout bounds the exchange of one request, from the
	// POST to the response, resumptions included. It is a backstop: callers
	// time out their requests themselves (mcp.Client does, in a minute),
	// and the notifications/cancelled they send ends the exchange at once.
	DefaultRequestTimeout = 30 * time.Minute
	// DefaultMaxReconnects is how many reconnections in a row may fail (or
	// bring no message) before the transport gives up on a stream.
	DefaultMaxReconnects = 5

	// maxInFlight bounds the requests waiting for an answer; one more is
	// answered with an error at once.
	maxInFlight = 256
	// oneWayTimeout bounds the POST of a notification or a response, which
	// the server should accept (202) at once, and how long Write waits for
	// a request to be sent.
	oneWayTimeout = 30 * time.Second
	// listenWait is how long Write(notifications/initialized) waits for
	// the GET stream's headers, so that the stream is open before the
	// client's next request; the stream is not abandoned after it.
	listenWait = 3 * time.Second
	// deleteTimeout bounds the DELETE that ends the session at Close.
	deleteTimeout = 5 * time.Second
	// maxErrorBody bounds what is read of an error answer, to quote it.
	maxErrorBody = 64 << 10
	// maxSessionID bounds the session id a server may hand out; it goes
	// back in a header of every request.
	maxSessionID = 4096
	// drainGrace is how long the rest of an answered event stream is read,
	// so that its connection can be reused.
	drainGrace = 2 * time.Second
	// minListenDelay is the shortest wait before the GET stream is
	// reconnected, whatever retry delay the server gives, and the first
	// of the backoff when it gives none; the backoff doubles up to
	// maxReconnectDelay. See listenDelay.
	minListenDelay    = time.Second
	maxReconnectDelay = 30 * time.Second
	// steadyStream is how long a GET stream must stay open to count as
	// working although it brought no message: a server with nothing to
	// say, behind a proxy that cuts idle connections, is not failing.
	steadyStream = 10 * time.Second
)

// Options configures a Transport. The zero value is usable.
type Options struct {
	// Header is sent with every request: the manifest's headers, resolved.
	// It may not set the headers the transport owns (Accept, Content-Type,
	// Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID, Mcp-Method,
	// Mcp-Name, Mcp-Param-*).
	Header http.Header
	// Protocol pins the binding: "" or "auto" follows the messages (a
	// request whose _meta names a modern revision is sent the modern way
	// until initialize has made the session legacy: see modern.go); a
	// modern revision (2026-07-28) sends every message the modern way; a
	// legacy one (2025-11-25...) the legacy way, as before the modern
	// revision. The client must speak the same era: see mcp.Client.Open.
	Protocol string
	// BearerToken, when set, is sent as "Authorization: Bearer TOKEN".
	// The caller resolves it (from the environment); the transport never
	// logs it, nor any header, nor the URL's query or user info.
	BearerToken string
	// NoListen keeps the transport from opening the GET stream for the
	// server's own messages.
	NoListen bool
	// RequestTimeout bounds each request's exchange (default
	// DefaultRequestTimeout; negative: no bound).
	RequestTimeout time.Duration
	// MaxMessageSize bounds each message from the server (default
	// DefaultMaxMessageSize).
	MaxMessageSize int
	// MaxReconnects bounds the reconnections in a row of a stream that
	// fail or bring no message (default DefaultMaxReconnects).
	MaxReconnects int
	// Logger receives what goes wrong that no caller sees otherwise (a
	// notification the server refused, a stream given up). Nothing is
	// logged when it is nil.
	Logger *slog.Logger
}

// A Transport is one session with a Streamable HTTP server, as an
// io.ReadWriteCloser of newline-delimited JSON-RPC messages.
//
// Write takes complete lines (a trailing partial line is kept for the next
// Write) and returns once each message has been sent: a request when its
// POST is written (its answer arrives later, through Read), a notification
// or a response when the server has accepted it. Read returns the server's
// messages in the order they arrive. Read may be called from one goroutine
// and Write from another; both are safe for concurrent use.
//
// The goroutines of a Transport (one per request waiting for its answer, one
// for the GET stream) belong to it and end at Close, which waits for them.
type Transport struct {
	url    string // as given, for requests
	where  string // without query and user info, for messages
	header http.Header
	bearer string
	client *http.Client
	log    *slog.Logger

	maxMsg         int
	requestTimeout time.Duration
	maxReconnects  int
	listenEnabled  bool
	pinned         mcp.Era // the era Options.Protocol pins; EraUnknown: auto
	pinnedVersion  string  // and its revision

	// wait waits before a stream is reconnected, and reports false if ctx
	// ended first: sleep, or in tests a function that sees the delays
	// chosen without taking them; now tells how long a stream lasted.
	wait func(ctx context.Context, d time.Duration) bool
	now  func() time.Time

	// ctx is cancelled at Close or when the session fails: it ends every
	// exchange and stream.
	ctx    context.Context
	cancel context.CancelCauseFunc

	in       chan []byte   // the server's messages for Read, each a line with its "\n"
	done     chan struct{} // closed at Close or when the session fails
	doneOnce sync.Once
	endErr   error // what Read returns once in is drained; set before done is closed

	wmu  sync.Mutex // serialises Write
	wbuf []byte     // a partial line

	rmu  sync.Mutex // serialises Read
	rbuf []byte     // the rest of the line being read

	mu        sync.Mutex
	session   string  // Mcp-Session-Id, from the initialize answer
	version   string  // the negotiated protocol version
	era       mcp.Era // as the traffic showed it (auto): see modern.go
	modernV   string  // the modern revision the server took, once it did
	expired   bool    // the server ended the session: no DELETE
	inflight  map[mcp.ID]*pending
	listening bool   // the GET stream has been started
	notice    string // why the GET stream was given up (Notice)
	closing   bool   // no new goroutines
	wg        sync.WaitGroup

	closeOnce sync.Once

	tools toolHeaders // what the modern tools/list results said of x-mcp-header
}

// A pending request is one whose answer the reader has not had yet.
type pending struct {
	id     mcp.ID
	method string
	cancel context.CancelCauseFunc // ends its exchange
	// modern is set for a request sent the modern way (see modern.go);
	// version is the revision it names.
	modern  bool
	version string
}

// Causes of the end of an exchange.
var (
	errAnswered  = errors.New("answered")
	errCancelled = errors.New("cancelled by the client")
	errTimedOut  = errors.New("request timed out")
)

// New returns a transport to the MCP endpoint at rawURL (http or https).
// It sends nothing until the first Write.
func New(rawURL string, opts Options) (*Transport, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("url %q: want an absolute http or https URL, such as https://mcp.example.com/mcp", redact(rawURL))
	}
	for name, values := range opts.Header {
		switch canon := http.CanonicalHeaderKey(name); {
		case ownHeader(canon):
			return nil, fmt.Errorf("header %s: the transport sets it itself; leave it out", name)
		case canon == "Authorization":
			if opts.BearerToken != "" {
				return nil, errors.New("header Authorization conflicts with the bearer token: keep one of them")
			}
		}
		if !validHeaderName(name) {
			return nil, fmt.Errorf("header %q: not a valid header name", name)
		}
		for _, v := range values {
			if strings.ContainsAny(v, "\r\n\x00") {
				return nil, fmt.Errorf("header %s: a value must be one line", name)
			}
		}
	}
	if strings.ContainsAny(opts.BearerToken, "\r\n\x00 ") {
		return nil, errors.New("the bearer token holds spaces or line breaks: check the variable that holds it")
	}
	pinned, pinnedVersion, err := parseProtocol(opts.Protocol)
	if err != nil {
		return nil, err
	}
	t := &Transport{
		url:            rawURL,
		where:          redact(rawURL),
		header:         opts.Header.Clone(),
		bearer:         opts.BearerToken,
		log:            opts.Logger,
		maxMsg:         opts.MaxMessageSize,
		requestTimeout: opts.RequestTimeout,
		maxReconnects:  opts.MaxReconnects,
		listenEnabled:  !opts.NoListen,
		pinned:         pinned,
		pinnedVersion:  pinnedVersion,
		wait:           sleep,
		now:            time.Now,
		in:             make(chan []byte, 16),
		done:           make(chan struct{}),
		inflight:       make(map[mcp.ID]*pending),
	}
	if t.header == nil {
		t.header = http.Header{}
	}
	if t.header.Get("User-Agent") == "" {
		t.header.Set("User-Agent", "mcpgen")
	}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	if t.maxMsg <= 0 {
		t.maxMsg = DefaultMaxMessageSize
	}
	if t.requestTimeout == 0 {
		t.requestTimeout = DefaultRequestTimeout
	}
	if t.maxReconnects <= 0 {
		t.maxReconnects = DefaultMaxReconnects
	}
	t.client = &http.Client{
		Transport: &http.Transport{
			Proxy:                  http.ProxyFromEnvironment,
			DialContext:            (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:      true,
			MaxIdleConnsPerHost:    16,
			TLSHandshakeTimeout:    10 * time.Second,
			MaxResponseHeaderBytes: 256 << 10,
			// Under the 5 s keep-alive of Node's HTTP server, where most
			// MCP servers run: a POST is not retried on a connection that
			// the server closed as we reused it.
			IdleConnTimeout: 4 * time.Second,
		},
		CheckRedirect: checkRedirect,
	}
	t.tools.listing = make(chan struct{}, 1)
	t.ctx, t.cancel = context.WithCancelCause(context.Background())
	return t, nil
}

// Read reads the server's messages, one line each. Once the transport is
// closed it returns io.EOF; once the session has failed, the error that
// ended it (ErrSessionExpired, or the server could not be reached), after
// the messages that arrived before.
func (t *Transport) Read(p []byte) (int, error) {
	t.rmu.Lock()
	defer t.rmu.Unlock()
	if len(t.rbuf) == 0 {
		select {
		case t.rbuf = <-t.in:
		case <-t.done:
			select {
			case t.rbuf = <-t.in:
			default:
				return 0, t.endErr
			}
		}
	}
	n := copy(p, t.rbuf)
	t.rbuf = t.rbuf[n:]
	return n, nil
}

// Write sends each complete line of p as one message. A line that is not a
// JSON-RPC message is dropped (and logged). After Close it returns
// ErrClosed; after the session failed, the error that ended it.
func (t *Transport) Write(p []byte) (int, error) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if err := t.writeErr(); err != nil {
		return 0, err
	}
	rest := p
	if len(t.wbuf) > 0 {
		t.wbuf = append(t.wbuf, p...)
		rest = t.wbuf
	}
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		t.send(rest[:i])
		rest = rest[i+1:]
		if err := t.writeErr(); err != nil {
			t.wbuf = t.wbuf[:0]
			return 0, err
		}
	}
	if len(rest) > t.maxMsg {
		t.wbuf = t.wbuf[:0]
		return len(p), fmt.Errorf("streamable: a message longer than %d bytes without a line end", t.maxMsg)
	}
	t.wbuf = append(t.wbuf[:0], rest...)
	return len(p), nil
}

func (t *Transport) writeErr() error {
	select {
	case <-t.done:
		if t.endErr == io.EOF {
			return ErrClosed
		}
		return t.endErr
	default:
		return nil
	}
}

// Close ends the session: exchanges and streams stop, the session is
// deleted on the server (DELETE, when it gave a session id and has not
// ended it), and Read returns io.EOF once it has returned what it has. It
// waits for the transport's goroutines, and for the DELETE for a few
// seconds at most.
func (t *Transport) Close() error {
	t.closeOnce.Do(func() {
		t.mu.Lock()
		t.closing = true
		session, expired := t.session, t.expired
		t.mu.Unlock()
		t.end(io.EOF)
		t.cancel(ErrClosed)
		t.wg.Wait()
		if session != "" && !expired {
			t.deleteSession()
		}
		t.client.CloseIdleConnections()
	})
	return nil
}

// end makes Read return err once it has returned what is queued.
func (t *Transport) end(err error) {
	t.doneOnce.Do(func() {
		t.endErr = err
		close(t.done)
	})
}

// fail ends the session with err: every exchange and stream stops, Write
// returns err, and so does Read once it has returned what is queued.
func (t *Transport) fail(err error) {
	t.mu.Lock()
	if errors.Is(err, ErrSessionExpired) {
		t.expired = true
	}
	t.mu.Unlock()
	select {
	case <-t.done:
		return
	default:
	}
	t.log.Warn("streamable: the session ended", "url", t.where, "error", err)
	t.end(err)
	t.cancel(err)
}

// unreachable reports whether err says that the server could not be
// reached at all (no connection), which ends the session as a process's
// exit would; other failures fail one request.
func unreachable(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func (t *Transport) unreachableError(method string, err error) error {
	return fmt.Errorf("%s %s: cannot reach the server: %w", method, t.where, err)
}

func (t *Transport) expiredError(method string) error {
	return fmt.Errorf("%s %s: %w; start a new session", method, t.where, ErrSessionExpired)
}

// takeSession keeps the session id of the initialize answer.
func (t *Transport) takeSession(id string) error {
	if id == "" {
		return nil
	}
	if len(id) > maxSessionID || !visibleASCII(id) {
		return fmt.Errorf("the server's session id is not %d visible ASCII characters at most, as MCP requires", maxSessionID)
	}
	t.mu.Lock()
	t.session = id
	t.mu.Unlock()
	return nil
}

func visibleASCII(s string) bool {
	for _, c := range []byte(s) {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return s != ""
}

// deliver hands one message from the server to the reader, and reports
// false when the transport has ended. A response settles the request it
// answers, and ends that request's exchange unless it came on the
// exchange's own answer (owner); one that answers no pending request (a
// replay) is dropped.
func (t *Transport) deliver(data []byte, owner *pending) bool {
	line := make([]byte, 0, len(data)+1)
	line = append(line, data...)
	// In JSON a raw newline can only be white space: a blank keeps the
	// meaning and the framing (a pretty-printed answer, data: lines).
	for i, c := range line {
		if c == '\n' {
			line[i] = ' '
		}
	}
	msg, err := mcp.DecodeMessage(line)
	if err != nil {
		t.log.Warn("streamable: ignoring a message from the server that is not JSON-RPC", "url", t.where, "error", err, "message", snippet(line))
		return true
	}
	if owner != nil && owner.modern && msg.IsRequest() {
		// A modern server asks through input_required results; nobody
		// would read an answer to this.
		t.log.Warn("streamable: dropping a request that a modern server sent on an answer's stream", "url", t.where, "method", msg.Method)
		return true
	}
	if msg.IsResponse() {
		p := t.settle(msg.ID, nil)
		if p == nil {
			t.log.Debug("streamable: dropping a response to no pending request", "url", t.where, "id", msg.ID.String())
			return true
		}
		if p != owner {
			p.cancel(errAnswered)
		}
		if p.method == "initialize" && msg.Error == nil {
			t.takeVersion(msg.Result)
		}
		if p.modern {
			line = t.modernResponse(p, msg, line)
		}
	}
	return t.push(append(line, '\n'))
}

// takeVersion keeps the protocol version of the initialize result, for the
// Mcp-Protocol-Version header of every later request.
func (t *Transport) takeVersion(result json.RawMessage) {
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(result, &r) != nil || len(r.ProtocolVersion) > 64 || !visibleASCII(r.ProtocolVersion) {
		return // the client will find the result wanting
	}
	t.mu.Lock()
	// The session is legacy now, for the rest of the transport's life.
	t.version, t.era = r.ProtocolVersion, mcp.EraLegacy
	t.mu.Unlock()
}

// push queues a line for Read, and reports false when the transport ended
// first.
func (t *Transport) push(line []byte) bool {
	select {
	case t.in <- line:
		return true
	case <-t.ctx.Done():
		return false
	}
}

// settle removes the pending request id (only if it is p, when p is set);
// it returns the request, or nil when it was not pending.
func (t *Transport) settle(id mcp.ID, p *pending) *pending {
	t.mu.Lock()
	got := t.inflight[id]
	if got == nil || (p != nil && got != p) {
		t.mu.Unlock()
		return nil
	}
	delete(t.inflight, id)
	t.mu.Unlock()
	return got
}

func (t *Transport) isPending(p *pending) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.inflight[p.id] == p
}

// answerError answers a pending request with an error in the server's
// stead.
func (t *Transport) answerError(p *pending, code int64, message string) {
	t.answerWith(p, &mcp.Error{Code: code, Message: message})
}

// answerWith answers a pending request with werr in the server's stead.
func (t *Transport) answerWith(p *pending, werr *mcp.Error) {
	if t.settle(p.id, p) == nil {
		return
	}
	p.cancel(errAnswered)
	resp := &mcp.Message{ID: p.id, Error: werr}
	t.push(append(resp.AppendJSON(nil), '\n'))
}
