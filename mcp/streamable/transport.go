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
// above it: it keeps the session id of the initialize answer and the
// negotiated protocol version and sends them on every later request, opens
// the GET stream once the client has sent notifications/initialized,
// resumes event streams that drop (Last-Event-ID, after the server's retry
// delay), and ends the session (DELETE) at Close. It never lets a request
// hang: when the server's answer cannot be had (an HTTP error, an answer too
// large, a stream that cannot be resumed, no answer within
// Options.RequestTimeout), the reader gets a JSON-RPC error response for
// that request, with code CodeTransportError and a message that says why.
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
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"

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
	// bring nothing) before the transport gives up on a stream.
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
	// firstReconnect and maxReconnectDelay shape the backoff between
	// reconnections when the server gave no retry delay.
	firstReconnect    = time.Second
	maxReconnectDelay = 30 * time.Second
)

// Options configures a Transport. The zero value is usable.
type Options struct {
	// Header is sent with every request: the manifest's headers, resolved.
	// It may not set the headers the transport owns (Accept, Content-Type,
	// Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID).
	Header http.Header
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
	// MaxReconnects bounds the failed reconnections in a row of a stream
	// (default DefaultMaxReconnects).
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
	session   string // Mcp-Session-Id, from the initialize answer
	version   string // the negotiated protocol version
	expired   bool   // the server ended the session: no DELETE
	inflight  map[mcp.ID]*pending
	listening bool // the GET stream has been started
	closing   bool // no new goroutines
	wg        sync.WaitGroup

	closeOnce sync.Once
}

// A pending request is one whose answer the reader has not had yet.
type pending struct {
	id     mcp.ID
	method string
	cancel context.CancelCauseFunc // ends its exchange
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
		switch http.CanonicalHeaderKey(name) {
		case "Accept", "Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-Id":
			return nil, fmt.Errorf("header %s: the transport sets it itself; leave it out", name)
		case "Authorization":
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
	t.ctx, t.cancel = context.WithCancelCause(context.Background())
	return t, nil
}

// checkRedirect follows a few redirects within the endpoint's origin that
// keep the method (307, 308: FastMCP's /mcp -> /mcp/), and no others: a
// redirect elsewhere would take the headers and the token along.
func checkRedirect(req *http.Request, via []*http.Request) error {
	first, last := via[0], via[len(via)-1]
	switch {
	case len(via) >= 3:
		return errors.New("more than 3 redirects")
	case req.URL.Scheme != first.URL.Scheme || req.URL.Host != first.URL.Host:
		return fmt.Errorf("the server redirects to another origin, %s: use that URL if you trust it", redact(req.URL.String()))
	case req.Method != last.Method:
		return fmt.Errorf("the server redirects %s to %s %s: use that URL", last.Method, req.Method, redact(req.URL.String()))
	}
	return nil
}

// redact returns rawURL without its user info and query, which may hold
// credentials, for messages.
func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(an unparsable URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range []byte(name) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
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

// send sends one line that Write was given.
func (t *Transport) send(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	msg, err := mcp.DecodeMessage(line)
	if err != nil {
		t.log.Warn("streamable: not sending a line that is not a JSON-RPC message", "error", err)
		return
	}
	body := bytes.Clone(line)
	if msg.IsRequest() {
		t.request(msg.ID, msg.Method, body)
		return
	}
	var cancelled mcp.ID
	if msg.Method == "notifications/cancelled" {
		var params struct {
			RequestID mcp.ID `json:"requestId"`
		}
		if json.Unmarshal(msg.Params, &params) == nil {
			cancelled = params.RequestID
		}
	}
	accepted := t.oneWay(msg.Method, body)
	if cancelled.IsValid() {
		// After the notification, so that the server hears of the
		// cancellation before it sees the stream go.
		t.cancelRequest(cancelled)
	}
	if accepted && msg.Method == "notifications/initialized" {
		t.listen()
	}
}

// request starts the exchange of a request, and returns once the POST has
// been written (or could not be).
func (t *Transport) request(id mcp.ID, method string, body []byte) {
	t.mu.Lock()
	if t.closing {
		t.mu.Unlock()
		return
	}
	if _, dup := t.inflight[id]; dup {
		t.mu.Unlock()
		t.log.Warn("streamable: not sending a request whose id is already waiting for an answer", "id", id.String(), "method", method)
		return
	}
	ctx, cancel := context.WithCancelCause(t.ctx)
	p := &pending{id: id, method: method, cancel: cancel}
	t.inflight[id] = p
	t.wg.Add(1)
	full := len(t.inflight) > maxInFlight
	t.mu.Unlock()

	if full {
		// Answered from a goroutine of its own: Write must not wait on
		// the reader, which may itself be waiting to write.
		go func() {
			defer t.wg.Done()
			defer cancel(nil)
			t.answerError(p, CodeTransportError, fmt.Sprintf("more than %d requests are waiting for an answer from %s; retry later", maxInFlight, t.where))
		}()
		return
	}
	wrote := make(chan struct{})
	var once sync.Once
	signal := func() { once.Do(func() { close(wrote) }) }
	go t.exchange(ctx, p, body, signal) // ends with the exchange; t.wg counts it
	timer := time.NewTimer(oneWayTimeout)
	defer timer.Stop()
	select {
	case <-wrote:
	case <-t.done:
	case <-timer.C:
	}
}

// oneWay POSTs a notification or a response, and reports whether the server
// accepted it.
func (t *Transport) oneWay(method string, body []byte) bool {
	ctx, cancel := context.WithTimeout(t.ctx, oneWayTimeout)
	defer cancel()
	what := method
	if what == "" {
		what = "a response"
	}
	resp, sentSession, err := t.do(ctx, http.MethodPost, body, false, "", nil)
	if err != nil {
		switch {
		case t.ctx.Err() != nil:
		case unreachable(err):
			t.fail(t.unreachableError("POST", err))
		default:
			t.log.Warn("streamable: could not send "+what, "url", t.where, "error", err)
		}
		return false
	}
	defer discard(resp.Body)
	switch {
	case resp.StatusCode == http.StatusNotFound && sentSession:
		t.fail(t.expiredError("POST"))
		return false
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		t.log.Warn("streamable: the server refused "+what, "url", t.where, "status", resp.Status, "body", snippet(readSome(resp.Body, maxErrorBody)))
		return false
	}
	return true
}

// cancelRequest ends the exchange of a request that the client cancelled:
// it wants no answer.
func (t *Transport) cancelRequest(id mcp.ID) {
	t.mu.Lock()
	p := t.inflight[id]
	delete(t.inflight, id)
	t.mu.Unlock()
	if p != nil {
		p.cancel(errCancelled)
	}
}

// do sends one HTTP request to the endpoint with the transport's headers.
// Unless fresh (an initialize), it carries the session id and the protocol
// version; sentSession says whether it carried a session id. wrote, if set,
// is called when the request has been written.
func (t *Transport) do(ctx context.Context, method string, body []byte, fresh bool, lastEventID string, wrote func()) (resp *http.Response, sentSession bool, err error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	if wrote != nil {
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) { wrote() },
		})
	}
	req, err := http.NewRequestWithContext(ctx, method, t.url, rd)
	if err != nil {
		return nil, false, err
	}
	h := req.Header
	for k, v := range t.header {
		h[k] = v
	}
	if t.bearer != "" {
		h.Set("Authorization", "Bearer "+t.bearer)
	}
	switch method {
	case http.MethodPost:
		h.Set("Content-Type", "application/json")
		h.Set("Accept", "application/json, text/event-stream")
	case http.MethodGet:
		h.Set("Accept", "text/event-stream")
	}
	if !fresh {
		t.mu.Lock()
		session, version := t.session, t.version
		t.mu.Unlock()
		if session != "" {
			h.Set("Mcp-Session-Id", session)
			sentSession = true
		}
		if version != "" {
			h.Set("Mcp-Protocol-Version", version)
		}
	}
	if lastEventID != "" {
		h.Set("Last-Event-Id", lastEventID)
	}
	resp, err = t.client.Do(req)
	if wrote != nil {
		wrote()
	}
	if err != nil {
		// url.Error quotes the whole URL, query included: keep its cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, sentSession, err
	}
	return resp, sentSession, nil
}

// exchange POSTs a request and delivers its answer to the reader, or an
// error response when there is none to be had.
func (t *Transport) exchange(ctx context.Context, p *pending, body []byte, wrote func()) {
	defer t.wg.Done()
	defer p.cancel(nil)
	if t.requestTimeout > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, t.requestTimeout, errTimedOut)
		defer stop()
	}
	initialize := p.method == "initialize"
	resp, sentSession, err := t.do(ctx, http.MethodPost, body, initialize, "", wrote)
	if err != nil {
		t.unanswered(ctx, p, "POST", err)
		return
	}
	status := resp.StatusCode
	switch {
	case status == http.StatusNotFound && sentSession:
		discard(resp.Body)
		t.fail(t.expiredError("POST"))
		return
	case status < 200 || status > 299:
		t.answerHTTPError(p, resp)
		return
	case status == http.StatusAccepted:
		discard(resp.Body)
		t.answerError(p, CodeTransportError, fmt.Sprintf("POST %s: the server accepted the request (202) without answering it", t.where))
		return
	}
	if initialize {
		if err := t.takeSession(resp.Header.Get("Mcp-Session-Id")); err != nil {
			discard(resp.Body)
			t.answerError(p, CodeTransportError, fmt.Sprintf("POST %s: %v", t.where, err))
			return
		}
	}
	switch mediaType(resp.Header.Get("Content-Type")) {
	case "application/json":
		t.readJSON(ctx, p, resp.Body)
	case "text/event-stream":
		t.readStream(ctx, p, resp.Body)
	default:
		discard(resp.Body)
		t.answerError(p, CodeTransportError, fmt.Sprintf("POST %s: the server answered with Content-Type %q; MCP answers are application/json or text/event-stream",
			t.where, resp.Header.Get("Content-Type")))
	}
}

func mediaType(contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return strings.ToLower(strings.TrimSpace(contentType))
	}
	return mt
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

// readJSON delivers a JSON answer: one message, or a batch of them.
func (t *Transport) readJSON(ctx context.Context, p *pending, body io.ReadCloser) {
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, int64(t.maxMsg)+1))
	switch {
	case err != nil:
		t.unanswered(ctx, p, "POST", err)
		return
	case len(data) > t.maxMsg:
		t.answerError(p, CodeTransportError, fmt.Sprintf("POST %s: the answer is longer than %d bytes", t.where, t.maxMsg))
		return
	}
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(data, &batch); err != nil {
			t.answerError(p, CodeTransportError, fmt.Sprintf("POST %s: the answer is not JSON: %v", t.where, err))
			return
		}
		for _, m := range batch {
			if !t.deliver(m, p) {
				return
			}
		}
	} else if !t.deliver(data, p) {
		return
	}
	if t.isPending(p) {
		t.answerError(p, CodeTransportError, fmt.Sprintf("POST %s: the server's answer holds no response to the request: %s", t.where, snippet(data)))
	}
}

// readStream delivers the messages of a request's event stream until its
// response, resuming the stream (GET with Last-Event-ID, after the server's
// retry delay) when it ends before.
func (t *Transport) readStream(ctx context.Context, p *pending, body io.ReadCloser) {
	var (
		lastID   string
		retry    time.Duration
		failures int
	)
	for {
		if body != nil {
			sse := newSSEReader(body, t.maxMsg)
			delivered, err := t.events(sse, p)
			if err == nil && !t.isPending(p) {
				// Answered. The server should end the stream now: reading
				// it to its end, for a moment at most, lets the next
				// request reuse the connection.
				timer := time.AfterFunc(drainGrace, func() { body.Close() })
				_, _ = t.events(sse, nil)
				timer.Stop()
			}
			body.Close()
			body = nil
			if sse.idSeen {
				lastID = sse.lastID
			}
			if sse.retry > 0 {
				retry = sse.retry
			}
			switch {
			case !t.isPending(p) || ctx.Err() != nil:
				t.unanswered(ctx, p, "GET", ctx.Err())
				return
			case errors.Is(err, errEventTooLarge):
				t.answerError(p, CodeTransportError, fmt.Sprintf("%s: an event of the answer is longer than %d bytes", t.where, t.maxMsg))
				return
			case lastID == "":
				t.answerError(p, CodeTransportError, fmt.Sprintf("%s: the server closed the answer's event stream before the response, with no event id to resume it from", t.where))
				return
			case delivered || sse.idSeen:
				failures = 0
			default:
				failures++
			}
		}
		if failures > t.maxReconnects {
			t.answerError(p, CodeTransportError, fmt.Sprintf("%s: the answer's event stream could not be resumed (%d attempts)", t.where, failures))
			return
		}
		if !sleep(ctx, reconnectDelay(retry, failures)) {
			t.unanswered(ctx, p, "GET", ctx.Err())
			return
		}
		resp, _, err := t.do(ctx, http.MethodGet, nil, false, lastID, nil)
		switch {
		case err != nil:
			if ctx.Err() != nil || unreachable(err) {
				t.unanswered(ctx, p, "GET", err)
				return
			}
			t.log.Debug("streamable: resuming an answer failed", "url", t.where, "error", err)
			failures++
		case resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotFound:
			// 404 too: a server may have no GET route at all. If the
			// session is gone, the next POST will say so.
			discard(resp.Body)
			t.answerError(p, CodeTransportError, fmt.Sprintf("%s: the server closed the answer's event stream before the response, and offers no GET to resume it (%s)", t.where, resp.Status))
			return
		case resp.StatusCode/100 == 2 && mediaType(resp.Header.Get("Content-Type")) == "text/event-stream":
			body = resp.Body
		default:
			t.log.Debug("streamable: resuming an answer failed", "url", t.where, "status", resp.Status)
			discard(resp.Body)
			failures++
		}
	}
}

// events delivers the messages of an event stream until it ends, the
// request it answers (owner, if set) has its response, or the transport
// ends. It reports whether it delivered any message. An event too large
// ends it with errEventTooLarge; the stream may be read on.
func (t *Transport) events(sse *sseReader, owner *pending) (delivered bool, err error) {
	for {
		ev, err := sse.next()
		if err != nil {
			return delivered, err
		}
		if ev.Type != "message" || len(bytes.TrimSpace(ev.Data)) == 0 {
			continue // a priming event, or one that is not a message
		}
		if !t.deliver(ev.Data, owner) {
			return delivered, t.ctx.Err()
		}
		delivered = true
		if owner != nil && !t.isPending(owner) {
			return delivered, nil
		}
	}
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
	t.version = r.ProtocolVersion
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
	if t.settle(p.id, p) == nil {
		return
	}
	p.cancel(errAnswered)
	resp := &mcp.Message{ID: p.id, Error: &mcp.Error{Code: code, Message: message}}
	t.push(append(resp.AppendJSON(nil), '\n'))
}

// answerHTTPError answers a request that the server refused with an HTTP
// error; the server's JSON-RPC error, if its body holds one, is kept.
func (t *Transport) answerHTTPError(p *pending, resp *http.Response) {
	body := readSome(resp.Body, maxErrorBody)
	discard(resp.Body)
	code := int64(CodeTransportError)
	detail := snippet(body)
	if m, err := mcp.DecodeMessage(bytes.TrimSpace(body)); err == nil && m.Error != nil {
		code, detail = m.Error.Code, m.Error.Message
	}
	msg := fmt.Sprintf("POST %s: %s", t.where, resp.Status)
	if detail != "" {
		msg += ": " + detail
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		msg += " (check the bearer token and headers)"
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		msg += " (check the URL: it must name the server's MCP endpoint, often ending in /mcp)"
	}
	t.answerError(p, code, msg)
}

// unanswered decides what becomes of a request whose exchange stopped
// without its response: nothing when it was answered or cancelled, or the
// transport ended; the end of the session when the server cannot be
// reached; an error response otherwise.
func (t *Transport) unanswered(ctx context.Context, p *pending, method string, err error) {
	if !t.isPending(p) || t.ctx.Err() != nil {
		return
	}
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, errTimedOut):
		t.answerError(p, CodeTransportError, fmt.Sprintf("%s: no answer within %s", t.where, t.requestTimeout))
	case ctx.Err() != nil:
		// Cancelled: the client wants no answer.
	case unreachable(err):
		t.fail(t.unreachableError(method, err))
	default:
		t.answerError(p, CodeTransportError, fmt.Sprintf("%s %s: %v", method, t.where, err))
	}
}

// listen opens the GET stream for the server's own messages, once, and
// waits a little for its headers: a client's next request then finds the
// stream open, as the server expects.
func (t *Transport) listen() {
	t.mu.Lock()
	if !t.listenEnabled || t.listening || t.closing {
		t.mu.Unlock()
		return
	}
	t.listening = true
	t.wg.Add(1)
	t.mu.Unlock()
	ready := make(chan struct{})
	go t.runListen(ready) // ends with the stream; t.wg counts it
	timer := time.NewTimer(listenWait)
	defer timer.Stop()
	select {
	case <-ready:
	case <-t.done:
	case <-timer.C:
	}
}

// runListen reads the GET stream and reconnects it when it ends, until the
// transport ends, the server says it offers none, or too many
// reconnections in a row fail. Losing it is logged, not fatal: requests
// and their answers do not need it.
func (t *Transport) runListen(ready chan struct{}) {
	defer t.wg.Done()
	var once sync.Once
	signal := func() { once.Do(func() { close(ready) }) }
	defer signal()
	var (
		lastID   string
		retry    time.Duration
		failures int
	)
	for first := true; ; first = false {
		resp, sentSession, err := t.do(t.ctx, http.MethodGet, nil, false, lastID, nil)
		signal()
		switch {
		case t.ctx.Err() != nil:
			if err == nil {
				discard(resp.Body)
			}
			return
		case err != nil:
			if unreachable(err) {
				t.fail(t.unreachableError("GET", err))
				return
			}
			t.log.Debug("streamable: the GET stream failed", "url", t.where, "error", err)
			failures++
		case resp.StatusCode == http.StatusNotFound && sentSession && !first:
			// The stream worked with this session: now the session is
			// gone. (A first GET may meet a server with no GET route.)
			discard(resp.Body)
			t.fail(t.expiredError("GET"))
			return
		case resp.StatusCode/100 == 2 && mediaType(resp.Header.Get("Content-Type")) == "text/event-stream":
			sse := newSSEReader(resp.Body, t.maxMsg)
			delivered := false
			for {
				d, err := t.events(sse, nil)
				delivered = delivered || d
				if !errors.Is(err, errEventTooLarge) {
					break
				}
				t.log.Warn("streamable: dropping an event of the GET stream longer than the limit", "url", t.where, "limit", t.maxMsg)
			}
			resp.Body.Close()
			if sse.idSeen {
				lastID = sse.lastID
			}
			if sse.retry > 0 {
				retry = sse.retry
			}
			if delivered || sse.idSeen {
				failures = 0
			} else {
				failures++
			}
		case first:
			// 405 is how a server says it offers no stream; others say it
			// less politely (400, 404).
			t.log.Debug("streamable: the server offers no GET stream", "url", t.where, "status", resp.Status)
			discard(resp.Body)
			return
		default:
			t.log.Debug("streamable: reconnecting the GET stream failed", "url", t.where, "status", resp.Status)
			discard(resp.Body)
			failures++
		}
		if failures > t.maxReconnects {
			t.log.Warn("streamable: giving up the GET stream; the server's own messages (list changes, requests) will not arrive", "url", t.where, "attempts", failures)
			return
		}
		if !sleep(t.ctx, reconnectDelay(retry, failures)) {
			return
		}
	}
}

// reconnectDelay is the wait before reconnecting a stream: the server's
// retry delay when it gave one (the spec says to respect it), else a
// backoff from one second to thirty.
func reconnectDelay(retry time.Duration, failures int) time.Duration {
	if retry > 0 {
		return retry
	}
	d := firstReconnect << min(max(failures-1, 0), 5)
	return min(d, maxReconnectDelay)
}

// sleep waits for d, and reports false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// deleteSession asks the server to end the session. A server may refuse
// (405); it will expire the session in time.
func (t *Transport) deleteSession() {
	ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
	defer cancel()
	resp, _, err := t.do(ctx, http.MethodDelete, nil, false, "", nil)
	if err != nil {
		t.log.Debug("streamable: could not end the session", "url", t.where, "error", err)
		return
	}
	discard(resp.Body)
	if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusMethodNotAllowed {
		t.log.Debug("streamable: the server did not end the session", "url", t.where, "status", resp.Status)
	}
}

// discard reads a little of a body, so that its connection may be reused,
// and closes it.
func discard(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, maxErrorBody))
	body.Close()
}

func readSome(r io.Reader, n int64) []byte {
	b, _ := io.ReadAll(io.LimitReader(r, n))
	return b
}

// snippet quotes the start of what a server sent, for a message: one line
// (white space collapsed), printable, at most 200 bytes.
func snippet(b []byte) string {
	const limit = 200
	var out strings.Builder
	for i, f := range strings.Fields(string(b)) {
		if i > 0 {
			out.WriteByte(' ')
		}
		for _, r := range f {
			if !unicode.IsGraphic(r) {
				r = '?'
			}
			out.WriteRune(r)
		}
		if out.Len() > limit {
			break
		}
	}
	s := out.String()
	if len(s) > limit {
		s = strings.ToValidUTF8(s[:limit], "") + "..."
	}
	return s
}
