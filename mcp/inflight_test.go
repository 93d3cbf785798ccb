package mcp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// blockingHandler answers "block" when released or cancelled, and tells
// which requests started; "ping" is meant to be answered inline.
type blockingHandler struct {
	started chan ID
	release chan struct{}
}

func newBlockingHandler() *blockingHandler {
	return &blockingHandler{started: make(chan ID, 100), release: make(chan struct{})}
}

func (h *blockingHandler) Handle(ctx context.Context, req *Request) (any, error) {
	switch req.Method {
	case "ping":
		return nil, nil
	case "block":
		h.started <- req.ID
		select {
		case <-h.release:
			return map[string]string{"done": req.ID.String()}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return nil, NewError(CodeMethodNotFound, "method not found: %s", req.Method)
}

func (h *blockingHandler) next(t *testing.T) ID {
	t.Helper()
	select {
	case id := <-h.started:
		return id
	case <-t.Context().Done():
		t.Fatal("no handler started")
		return ID{}
	}
}

func isPing(method string) bool { return method == "ping" }

func block(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"block"}`, id)
}

func cancelRequest(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`, id)
}

// TestConnCancelWhileSlotsFull: with every slot taken, the Conn still reads
// on (up to as many waiting requests), so that the peer's cancellations
// and inline requests get through: a cancelled running request frees its
// slot for the oldest waiting one, a cancelled waiting one never starts,
// and neither is answered.
func TestConnCancelWhileSlotsFull(t *testing.T) {
	checkGoroutines(t)
	peer, r, w := newFakePeer(t)
	h := newBlockingHandler()
	c := startConn(t, r, w, ConnOptions{Handler: h, Inline: isPing, MaxInFlight: 2})

	peer.send(block(1))
	peer.send(block(2))
	running := []ID{h.next(t), h.next(t)}
	slices.SortFunc(running, func(a, b ID) int { return strings.Compare(a.String(), b.String()) })
	if fmt.Sprint(running) != "[1 2]" {
		t.Fatalf("running %v, want [1 2]", running)
	}
	peer.send(block(3)) // waits
	peer.send(block(4)) // waits
	peer.send(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	if resp := peer.recv(); resp.ID != Int64ID(5) || string(resp.Result) != "{}" {
		t.Fatalf("peer got %s, want the answer to ping 5 while the slots are full", dump(resp))
	}

	peer.send(cancelRequest(3)) // waiting: dropped
	peer.send(cancelRequest(1)) // running: its slot goes to 4, the oldest left waiting
	if id := h.next(t); id != Int64ID(4) {
		t.Fatalf("request %s started, want 4", id)
	}
	peer.send(block(6)) // waits: 2 and 4 run
	peer.send(`{"jsonrpc":"2.0","id":7,"method":"ping"}`)
	if resp := peer.recv(); resp.ID != Int64ID(7) {
		t.Fatalf("peer got %s, want the answer to ping 7", dump(resp))
	}

	close(h.release)
	var answered []string
	for range 3 {
		resp := peer.recv()
		if resp.Error != nil {
			t.Fatalf("peer got %s", dump(resp))
		}
		answered = append(answered, resp.ID.String())
	}
	slices.Sort(answered)
	if fmt.Sprint(answered) != "[2 4 6]" {
		t.Fatalf("answered %v, want [2 4 6]: the cancelled 1 and 3 get no answer", answered)
	}
	peer.w.Close()
	waitDone(t, c.Done(), "Run")
	if id := h.next(t); id != Int64ID(6) {
		t.Fatalf("request %s started, want 6", id)
	}
	select {
	case id := <-h.started:
		t.Fatalf("request %s started; 3 was cancelled while it waited", id)
	default:
	}
	c.Close() // closes the peer's input: nothing more was written
	for line := range peer.lines {
		t.Errorf("peer got %s after the last answer", line)
	}
}

// TestConnRunCancelledAnswersWaiting: when Run's context ends, the running
// request is cancelled, the waiting one starts with a cancelled context, and
// the one that the read loop holds for want of room is refused: every
// request read is answered.
func TestConnRunCancelledAnswersWaiting(t *testing.T) {
	checkGoroutines(t)
	peer, r, w := newFakePeer(t)
	h := newBlockingHandler()
	c := NewConn(r, w, ConnOptions{Handler: h, MaxInFlight: 1, Logger: testLogger(t)})
	defer c.Close()
	ctx, cancel := context.WithCancel(t.Context())
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()

	peer.send(block(1))
	h.next(t)
	peer.send(block(2)) // waits for the slot
	peer.send(block(3)) // the Conn has read it (a pipe write returns when read); no room to wait
	cancel()
	want := map[string]string{
		"1": "context canceled",
		"2": "context canceled",
		"3": "block not started: the connection is closing",
	}
	for range want {
		resp := peer.recv()
		if resp.Error == nil || !strings.Contains(resp.Error.Message, want[resp.ID.String()]) {
			t.Errorf("peer got %s, want an error with %q", dump(resp), want[resp.ID.String()])
		}
		delete(want, resp.ID.String())
	}
	if err := <-runErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
}

// TestConnInlineRequests: inline requests are answered on the read loop,
// in order, with a context that the peer cannot cancel; a duplicate id of
// a running request is refused like any other.
func TestConnInlineRequests(t *testing.T) {
	checkGoroutines(t)
	peer, r, w := newFakePeer(t)
	h := newBlockingHandler()
	startConn(t, r, w, ConnOptions{Handler: h, Inline: isPing, MaxInFlight: 1})

	peer.send(block(1))
	h.next(t)
	for id := 2; id <= 20; id++ {
		peer.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id))
	}
	for id := 2; id <= 20; id++ {
		if resp := peer.recv(); resp.ID != Int64ID(int64(id)) {
			t.Fatalf("peer got %s, want the answer to ping %d: inline answers keep their order", dump(resp), id)
		}
	}
	peer.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if resp := peer.recv(); resp.ID != Int64ID(1) || resp.Error == nil || resp.Error.Code != CodeInvalidRequest {
		t.Fatalf("peer got %s, want -32600 for an id in use", dump(resp))
	}
	close(h.release)
	if resp := peer.recv(); resp.ID != Int64ID(1) || resp.Error != nil {
		t.Fatalf("peer got %s, want the answer to 1", dump(resp))
	}
}

// TestConnWaitingBytesBound: waiting requests are bounded by the bytes of
// their params too, not only by their number, since lines may be 16 MiB
// long: one big request may wait, a second one stops the read loop.
func TestConnWaitingBytesBound(t *testing.T) {
	checkGoroutines(t)
	h := newBlockingHandler()
	big := func(i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"block","params":{"pad":"%s"}}`, i, strings.Repeat("x", 9<<20))
	}
	lines := []func(int) string{block, block, big, big, block, block}
	var released atomic.Bool
	out := newGatedWriter(t, len(lines))
	out.release()
	in := &floodInput{t: t, n: len(lines), line: func(i int) string { return lines[i-1](i) },
		bound: 4, held: func() bool { return !released.Load() }}
	c := NewConn(in, out, ConnOptions{Handler: h, MaxInFlight: 2, Logger: testLogger(t)})
	waits := make(chan struct{}, 1)
	c.admitWaits = func() {
		select {
		case waits <- struct{}{}:
		default:
		}
	}
	defer c.Close()
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(t.Context()) }()

	waitDone(t, waits, "the read loop waiting for room")
	if got := in.read(); got != 4 { // 1 and 2 run, 3 waits, 4 has no room
		t.Errorf("the Conn read %d lines before it waited, want 4", got)
	}
	released.Store(true)
	close(h.release)
	if err := <-runErr; err != nil {
		t.Fatalf("Run = %v", err)
	}
	if out.answers != len(lines) {
		t.Fatalf("%d answers, want %d", out.answers, len(lines))
	}
}
