package streamable

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/mcp"
)

// waitLong bounds a test's wait for what must happen soon.
const waitLong = 20 * time.Second

// stormGet answers the GET stream as the hostile server of the hardening
// issue does: a priming event with a fresh id and "retry: 1", then the end
// of the stream. An id used to reset the count of failed reconnections, so
// the client reconnected every millisecond for as long as the session ran.
func stormGet(gets *atomic.Int64) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		n := gets.Add(1)
		startSSE(w)
		event(w, fmt.Sprintf("id: g%d", n), "retry: 1", "data:")
	}
}

// TestGetStreamRetryStormRealTime is the guard in real time against the
// reconnection storm: over a fixed window, a GET stream that closes at
// once with "retry: 1" is reconnected a few times at most. The bound is
// generous (the floor allows 3 in 2 s); the storm made hundreds.
// TestGetStreamRetryStorm checks the delays themselves.
func TestGetStreamRetryStormRealTime(t *testing.T) {
	if testing.Short() {
		t.Skip("an attack test in real time: run without -short")
	}
	f := newFake(t)
	var gets atomic.Int64
	f.get = stormGet(&gets)
	tr, _ := newTransport(t, f.url(), Options{})
	l := newLines(t, tr)
	l.handshake()
	const window = 2 * time.Second
	start := gets.Load()
	time.Sleep(window)
	n := gets.Load() - start
	t.Logf("GET stream reconnections: %d in %s (%.1f/s)", n, window, float64(n)/window.Seconds())
	if n > 5 {
		t.Errorf("GET stream reconnections in %s: got %d, want 5 at most (a second at least between them)", window, n)
	}
}

// waits stands in for Transport.wait: it records the delays the transport
// chooses, and returns at once, so a test sees many reconnections' worth
// of delays without taking them. After limit waits it reports false, which
// ends the stream as the transport's end would: a transport that never
// gives up is stopped there.
type waits struct {
	limit int

	mu     sync.Mutex
	delays []time.Duration
}

func (w *waits) wait(ctx context.Context, d time.Duration) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.delays) >= w.limit || ctx.Err() != nil {
		return false
	}
	w.delays = append(w.delays, d)
	return true
}

func (w *waits) got() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.delays)
}

// TestGetStreamRetryStorm (hardening issue: "retry: 1" on the GET stream):
// a server that answers the GET stream with an id and "retry: 1" and
// closes it gets its stream reconnected after a second at least, then
// after delays that double, since no stream brings a message; and after
// MaxReconnects such streams in a row the transport gives up the stream,
// and says so.
func TestGetStreamRetryStorm(t *testing.T) {
	f := newFake(t)
	var gets atomic.Int64
	f.get = stormGet(&gets)
	tr, logs := newTransport(t, f.url(), Options{})
	w := &waits{limit: 64}
	tr.wait = w.wait
	l := newLines(t, tr)
	l.handshake()

	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second}
	deadline := time.Now().Add(waitLong)
	for !strings.Contains(logs.String(), "giving up the GET stream") && len(w.got()) < w.limit && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := w.got(); !slices.Equal(got, want) {
		t.Errorf("delays before reconnecting the GET stream: got %v, want %v", got, want)
	}
	if n := gets.Load(); n != int64(len(want))+1 {
		t.Errorf("GETs: got %d, want %d", n, len(want)+1)
	}
	if !strings.Contains(logs.String(), "giving up the GET stream") {
		t.Errorf("logs: got %q, want the GET stream given up", logs.String())
	}
	wantNotice := "the GET stream was given up after 6 connections in a row that failed or brought no message (the server asks to reconnect after 1ms)"
	if got := tr.Notice(); !strings.HasPrefix(got, wantNotice) {
		t.Errorf("Notice: got %q, want it to begin %q", got, wantNotice)
	}
	// Requests do not need the stream.
	l.write(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if m := l.read(); m.Error != nil {
		t.Errorf("a request after the stream was given up: %v", m.Error)
	}
}

// A clock is a test's time: it moves when the test says.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestGetStreamReconnects: GET streams that end are reconnected after the
// floor (a second) at least, and without backoff or an end when they are
// not failing: they bring messages, or stay open a while with nothing to
// say (a proxy that cuts idle connections).
func TestGetStreamReconnects(t *testing.T) {
	tests := []struct {
		name string
		// get writes one stream, number n; the clock is the transport's.
		get  func(w http.ResponseWriter, n int64, c *clock)
		want time.Duration // every delay
	}{
		{"messages, retry 1", func(w http.ResponseWriter, n int64, c *clock) {
			event(w, fmt.Sprintf("id: g%d", n), "retry: 1", `data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
		}, time.Second},
		{"messages, retry 3000", func(w http.ResponseWriter, n int64, c *clock) {
			event(w, fmt.Sprintf("id: g%d", n), "retry: 3000", `data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
		}, 3 * time.Second},
		{"idle for a minute, then cut", func(w http.ResponseWriter, n int64, c *clock) {
			event(w, fmt.Sprintf("id: g%d", n), "data:")
			c.advance(time.Minute)
		}, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t)
			c := &clock{now: time.Unix(1e9, 0)}
			var gets atomic.Int64
			f.get = func(w http.ResponseWriter, r *http.Request) {
				startSSE(w)
				tt.get(w, gets.Add(1), c)
			}
			tr, _ := newTransport(t, f.url(), Options{})
			w := &waits{limit: 20}
			tr.wait, tr.now = w.wait, c.Now
			l := newLines(t, tr)
			l.handshake()
			go func() { // reads the stream's messages; ends when the transport closes
				for {
					if _, err := l.r.Read(); err != nil {
						return
					}
				}
			}()
			deadline := time.Now().Add(waitLong)
			for len(w.got()) < w.limit && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			got := w.got()
			if len(got) < w.limit {
				t.Errorf("reconnections: got %d, want %d", len(got), w.limit)
			}
			for i, d := range got {
				if d != tt.want {
					t.Fatalf("delay %d: got %v, want %v (all: %v)", i, d, tt.want, got)
				}
			}
			if n := tr.Notice(); n != "" {
				t.Errorf("Notice: got %q, want none", n)
			}
		})
	}
}

// TestListenDelay: the floor, the backoff and its cap.
func TestListenDelay(t *testing.T) {
	tests := []struct {
		retry    time.Duration
		failures int
		want     time.Duration
	}{
		{0, 0, time.Second},
		{0, 1, time.Second},
		{0, 3, 4 * time.Second},
		{0, 20, 30 * time.Second},
		{time.Millisecond, 0, time.Second},
		{time.Millisecond, 2, 2 * time.Second},
		{5 * time.Second, 0, 5 * time.Second},
		{5 * time.Second, 2, 10 * time.Second},
		{5 * time.Second, 9, 30 * time.Second},
		{time.Minute, 3, time.Minute}, // the server's own delay is longer than the cap
	}
	for _, tt := range tests {
		if got := listenDelay(tt.retry, tt.failures); got != tt.want {
			t.Errorf("listenDelay(%v, %d): got %v, want %v", tt.retry, tt.failures, got, tt.want)
		}
	}
	// A request's stream is resumed after the server's delay as it is,
	// until resumed streams bring nothing.
	if got := resumeDelay(500*time.Millisecond, 0); got != 500*time.Millisecond {
		t.Errorf("resumeDelay(500ms, 0): got %v, want 500ms", got)
	}
	if got := resumeDelay(500*time.Millisecond, 1); got != time.Second {
		t.Errorf("resumeDelay(500ms, 1): got %v, want 1s", got)
	}
}

// TestResumeRetryStorm: the same storm on a request's own event stream. The
// first resumption comes after the server's retry delay exactly (the
// conformance suite's sse-retry checks it), later ones after a second at
// least, doubled for each resumed stream that brought no message; after
// MaxReconnects of those in a row the request gets an error.
func TestResumeRetryStorm(t *testing.T) {
	f := newFake(t)
	var gets atomic.Int64
	f.call = func(w http.ResponseWriter, r *http.Request, _ *mcp.Message) {
		startSSE(w)
		event(w, "id: p1", "retry: 1", "data:")
	}
	f.get = stormGet(&gets)
	tr, _ := newTransport(t, f.url(), Options{NoListen: true})
	w := &waits{limit: 64}
	tr.wait = w.wait
	l := newLines(t, tr)
	l.handshake()
	l.write(`{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"slow"}}`)
	m := l.read()
	if m.ID != mcp.StringID("c1") || m.Error == nil || !strings.Contains(m.Error.Message, "could not be resumed (6 attempts)") {
		t.Errorf("got %s, want an error: the stream could not be resumed", m.AppendJSON(nil))
	}
	want := []time.Duration{time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second}
	if got := w.got(); !slices.Equal(got, want) {
		t.Errorf("delays before resuming: got %v, want %v", got, want)
	}
}
