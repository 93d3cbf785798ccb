package streamable

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"
)

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
		if !t.wait(t.ctx, reconnectDelay(retry, failures)) {
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
