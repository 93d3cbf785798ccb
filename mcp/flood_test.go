package mcp

import (
	"context"
	"io"
	"strconv"
	"sync"
	"testing"
	"time"
)

// floodInput hands a Conn n requests, one line per Read call (or more
// calls for a line longer than the buffer), so that bufio reads no line
// ahead: what it has handed out is what the Conn read. While held reports
// true, the Conn must not read more than bound lines: the reader checks that
// on every Read, so the check does not depend on how long anything takes.
type floodInput struct {
	t     *testing.T
	n     int
	line  func(i int) string
	bound int
	held  func() bool

	mu       sync.Mutex
	consumed int
	pending  string // the rest of the line being read
	over     bool   // reported once
}

func (in *floodInput) Read(p []byte) (int, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.pending == "" {
		if in.consumed == in.n {
			return 0, io.EOF
		}
		if in.consumed >= in.bound && !in.over && in.held() {
			in.over = true
			in.t.Errorf("the Conn read request %d while it was held; want at most %d", in.consumed+1, in.bound)
		}
		in.consumed++
		in.pending = in.line(in.consumed) + "\n"
	}
	n := copy(p, in.pending)
	in.pending = in.pending[n:]
	return n, nil
}

func (in *floodInput) read() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.consumed
}

// gatedWriter blocks every write until it is opened, as a pipe does when
// nobody reads it, and counts the writers it holds. Once open, it records
// which ids were answered.
type gatedWriter struct {
	t    *testing.T
	open chan struct{}

	mu       sync.Mutex
	opened   bool
	blocked  int
	answered []bool // by id
	answers  int
}

func newGatedWriter(t *testing.T, n int) *gatedWriter {
	return &gatedWriter{t: t, open: make(chan struct{}), answered: make([]bool, n+1)}
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.blocked++
	w.mu.Unlock()
	<-w.open
	msg, err := DecodeMessage(p[:len(p)-1])
	w.mu.Lock()
	defer w.mu.Unlock()
	w.blocked--
	if err != nil || msg.Error != nil || !msg.IsResponse() {
		w.t.Errorf("the server wrote %q, want an answer", p)
		return len(p), nil
	}
	id, err := strconv.Atoi(msg.ID.String())
	if err != nil || id < 1 || id >= len(w.answered) || w.answered[id] {
		w.t.Errorf("answer to id %s: unknown, or answered twice", msg.ID)
		return len(p), nil
	}
	w.answered[id] = true
	w.answers++
	return len(p), nil
}

func (w *gatedWriter) isOpen() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.opened
}

func (w *gatedWriter) blockedWriters() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.blocked
}

func (w *gatedWriter) release() {
	w.mu.Lock()
	w.opened = true
	w.mu.Unlock()
	close(w.open)
}

// TestServerFloodUnreadOutput writes a flood of requests to a Server whose
// output nobody reads (issue 8: 100k pings grew a server to 0.6 GB). The
// server must stop reading after a bounded number of lines, whatever the
// requests: an inline ping blocks the read loop on its write; tool calls
// fill the slots, then the queue, then the read loop waits. Once the output
// is read, every request is answered, the flood included.
func TestServerFloodUnreadOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("an attack test: a flood of requests: run without -short")
	}
	ping := func(i int) string { return `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"ping"}` }
	toolCall := func(i int) string {
		return `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"flood"}}}`
	}
	tests := []struct {
		name        string
		n           int
		maxInFlight int // 0: the default
		line        func(i int) string
		wantRead    int // lines read when the server has stopped
		// whether it stops in admit, waiting for room (else in a write)
		wantAdmitWait bool
	}{
		// A ping's answer blocks the read loop itself.
		{"200k pings", 200000, 0, ping, 1, false},
		// Calls fill the slots and the queue; the next one waits.
		{"tool calls, 4 slots", 20000, 4, toolCall, 2*4 + 1, true},
		{"tool calls, default slots", 20000, 0, toolCall, 2*DefaultMaxInFlight + 1, true},
		{"a call then pings", 20000, 4, func(i int) string {
			if i == 1 {
				return toolCall(i)
			}
			return ping(i)
		}, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkGoroutines(t)
			s := testServer(t, &ServerOptions{MaxInFlight: tt.maxInFlight, Logger: discardLogger()})
			waits := make(chan struct{}, 1)
			s.admitWaits = func() {
				select {
				case waits <- struct{}{}:
				default:
				}
			}
			out := newGatedWriter(t, tt.n)
			in := &floodInput{t: t, n: tt.n, line: tt.line, bound: tt.wantRead, held: func() bool { return !out.isOpen() }}
			ctx, cancel := context.WithTimeout(t.Context(), hangGuard)
			defer cancel()
			served := make(chan error, 1)
			go func() { served <- s.Serve(ctx, in, out) }()

			// Wait until the server has read what it may and is writing
			// (the Writer lets one write at a time through; the others
			// wait for it), and, for calls, until its read loop waits for
			// room. A server without backpressure would read on, which
			// the input reports.
			if tt.wantAdmitWait {
				waitDone(t, waits, "the read loop waiting for room")
			}
			for out.blockedWriters() == 0 || in.read() < tt.wantRead {
				if ctx.Err() != nil {
					out.release()
					t.Fatalf("the server never stopped: %d writers blocked, %d lines read; want one writing and %d read",
						out.blockedWriters(), in.read(), tt.wantRead)
				}
				time.Sleep(time.Millisecond)
			}
			if got := in.read(); got != tt.wantRead {
				t.Errorf("the server read %d lines before it stopped, want %d", got, tt.wantRead)
			}

			out.release()
			if err := <-served; err != nil {
				t.Fatalf("Serve = %v", err)
			}
			if in.read() != tt.n || out.answers != tt.n {
				t.Fatalf("read %d of %d requests and answered %d, want all", in.read(), tt.n, out.answers)
			}
		})
	}
}
