package streamable

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/mcpgen/mcpgen/mcp"
)

// listen opens the GET stream for the server's own messages, once, and
// waits a little for its headers: a client's next request then finds the
// stream open, as the server expects.
func (t *Transport) listen() {
	t.mu.Lock()
	// The modern binding has no GET stream (subscriptions/listen is its
	// long stream, a request like any other).
	if !t.listenEnabled || t.listening || t.closing || t.pinned == mcp.EraModern {
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
// reconnections in a row fail or bring nothing. Losing it is logged and
// kept for Notice, not fatal: requests and their answers do not need it.
//
// A stream "brings nothing" when it ends before steadyStream without a
// message: an event id alone does not count, or a server that primes each
// stream with an id and closes it at once (with "retry: 1") would be
// reconnected hundreds of times a second for as long as the session runs.
// Such streams are reconnected after listenDelay, which holds a floor and
// doubles with each one.
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
		opened := t.now()
		resp, sentSession, err := t.do(t.ctx, http.MethodGet, nil, false, lastID, nil, nil)
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
			if delivered || t.now().Sub(opened) >= steadyStream {
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
			t.giveUpListen(failures, retry)
			return
		}
		if !t.wait(t.ctx, listenDelay(retry, failures)) {
			return
		}
	}
}

// giveUpListen records that the GET stream was given up, for the log and
// for Notice.
func (t *Transport) giveUpListen(attempts int, retry time.Duration) {
	notice := fmt.Sprintf("the GET stream was given up after %d connections in a row that failed or brought no message", attempts)
	if retry > 0 {
		notice += fmt.Sprintf(" (the server asks to reconnect after %s)", retry)
	}
	notice += ": the server's own messages (list changes, its requests) will not arrive until a new session"
	t.mu.Lock()
	t.notice = notice
	t.mu.Unlock()
	t.log.Warn("streamable: giving up the GET stream; the server's own messages (list changes, requests) will not arrive",
		"url", t.where, "attempts", attempts, "retry", retry)
}

// Notice says what went wrong with the session that no request sees: ""
// while the GET stream runs (or the server offers none), else why it was
// given up. `mcpgen status` shows it.
func (t *Transport) Notice() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.notice
}

// listenDelay is the wait before the GET stream is reconnected: the
// server's retry delay, but minListenDelay at least, doubled for each
// connection in a row that failed or brought nothing, up to
// maxReconnectDelay (or the server's delay, if longer). The spec asks a
// client to respect the server's delay, which waiting longer does; the
// floor bounds what a server can make us do with "retry: 1".
func listenDelay(retry time.Duration, failures int) time.Duration {
	base := max(retry, minListenDelay)
	d := base << min(max(failures-1, 0), 6)
	return min(d, max(maxReconnectDelay, base))
}

// resumeDelay is the wait before a request's event stream is resumed: the
// server's retry delay as it gave it for the first resumption and after a
// stream that brought a message (the conformance suite's sse-retry checks
// that it is neither shorter nor much longer), else a backoff from one
// second. Streams that bring nothing in a row then wait as the GET
// stream's do: a server that closes each of them at once gets a few
// resumptions, not a storm.
func resumeDelay(retry time.Duration, failures int) time.Duration {
	if failures > 0 || retry <= 0 {
		return listenDelay(retry, failures)
	}
	return retry
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
