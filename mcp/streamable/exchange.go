package streamable

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

// send sends one line that Write was given.
func (t *Transport) send(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	// The message decoded from its own copy, which its exchange owns: the
	// caller's line is theirs again once Write returns.
	body := bytes.Clone(line)
	msg, err := mcp.DecodeMessage(body)
	if err != nil {
		t.log.Warn("streamable: not sending a line that is not a JSON-RPC message", "error", err)
		return
	}
	if msg.IsRequest() {
		t.request(msg, body)
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
	if cancelled.IsValid() && t.cancelModern(cancelled) {
		return
	}
	if t.modernEra() {
		t.oneWayModern(msg, body)
		return
	}
	accepted := t.oneWay(msg.Method, body, nil)
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
func (t *Transport) request(msg *mcp.Message, body []byte) {
	id, method := msg.ID, msg.Method
	modern, version := t.modernRequest(msg)
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
	p := &pending{id: id, method: method, cancel: cancel, modern: modern, version: version}
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
	go t.exchange(ctx, p, msg, body, signal) // ends with the exchange; t.wg counts it
	timer := time.NewTimer(oneWayTimeout)
	defer timer.Stop()
	select {
	case <-wrote:
	case <-t.done:
	case <-timer.C:
	}
}

// oneWay POSTs a notification or a response (with the modern binding's
// headers, when set), and reports whether the server accepted it.
func (t *Transport) oneWay(method string, body []byte, modern http.Header) bool {
	ctx, cancel := context.WithTimeout(t.ctx, oneWayTimeout)
	defer cancel()
	what := method
	if what == "" {
		what = "a response"
	}
	resp, sentSession, err := t.do(ctx, http.MethodPost, body, false, "", nil, modern)
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

// exchange POSTs a request and delivers its answer to the reader, or an
// error response when there is none to be had.
func (t *Transport) exchange(ctx context.Context, p *pending, msg *mcp.Message, body []byte, wrote func()) {
	defer t.wg.Done()
	defer p.cancel(nil)
	if p.modern {
		t.exchangeModern(ctx, p, msg, body, wrote)
		return
	}
	if t.requestTimeout > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, t.requestTimeout, errTimedOut)
		defer stop()
	}
	initialize := p.method == "initialize"
	resp, sentSession, err := t.do(ctx, http.MethodPost, body, initialize, "", wrote, nil)
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
	t.readAnswer(ctx, p, resp, t.readStream)
}

// readAnswer reads the answer to a request's POST by its media type: one
// JSON message, or an event stream that stream reads (each era has its
// own); another type fails the request.
func (t *Transport) readAnswer(ctx context.Context, p *pending, resp *http.Response, stream func(context.Context, *pending, io.ReadCloser)) {
	switch mediaType(resp.Header.Get("Content-Type")) {
	case "application/json":
		t.readJSON(ctx, p, resp.Body)
	case "text/event-stream":
		stream(ctx, p, resp.Body)
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
// retry delay: see resumeDelay) when it ends before. Resumed streams that
// bring no message count as failed resumptions, even with an event id: a
// server may close the POST's own stream after its priming event, but one
// that does so with every resumption is not answering.
func (t *Transport) readStream(ctx context.Context, p *pending, body io.ReadCloser) {
	var (
		lastID   string
		retry    time.Duration
		failures int
	)
	for resumed := false; ; resumed = true {
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
			case delivered:
				failures = 0
			case resumed:
				failures++
			}
		}
		if failures > t.maxReconnects {
			t.answerError(p, CodeTransportError, fmt.Sprintf("%s: the answer's event stream could not be resumed (%d attempts)", t.where, failures))
			return
		}
		if !t.wait(ctx, resumeDelay(retry, failures)) {
			t.unanswered(ctx, p, "GET", ctx.Err())
			return
		}
		resp, _, err := t.do(ctx, http.MethodGet, nil, false, lastID, nil, nil)
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

// answerHTTPError answers a request that the server refused with an HTTP
// error; the server's JSON-RPC error, if its body holds one, is kept (its
// code, message and data: a modern server's refusal of initialize lists
// the versions it speaks).
func (t *Transport) answerHTTPError(p *pending, resp *http.Response) {
	body := readSome(resp.Body, maxErrorBody)
	discard(resp.Body)
	code := int64(CodeTransportError)
	detail := snippet(body)
	var data json.RawMessage
	if m, err := mcp.DecodeMessage(bytes.TrimSpace(body)); err == nil && m.Error != nil {
		code, detail, data = m.Error.Code, m.Error.Message, m.Error.Data
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
	t.answerWith(p, &mcp.Error{Code: code, Message: msg, Data: data})
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
