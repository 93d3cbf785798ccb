//go:build unix

package mcp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	json "github.com/goccy/go-json"
)

// A peer that does not read its input, as a server that hangs: a pipe of
// the runtime's (non-blocking, as a server's stdin is), whose read end the
// test reads only when it says so.
func deafPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// readLines reads n lines from r, failing after hangGuard.
func readLines(t *testing.T, r io.Reader, n int) []*Message {
	t.Helper()
	got := make(chan []*Message, 1)
	go func() { // ends once n lines are read, or the pipe is closed at the test's end
		rd := NewReader(r)
		var msgs []*Message
		for len(msgs) < n {
			m, err := rd.Read()
			if err != nil {
				break
			}
			msgs = append(msgs, m)
		}
		got <- msgs
	}()
	select {
	case msgs := <-got:
		return msgs
	case <-t.Context().Done():
		t.Fatal("the lines never came")
		return nil
	}
}

// TestWriterTryWrite: TryWrite writes a line whole, or nothing, and says
// which: over a pipe that nobody reads it writes until the pipe is full,
// then refuses without waiting; the line it began when the pipe filled
// ends whole, before any other; a writer without a descriptor it can write
// without blocking refuses every line.
func TestWriterTryWrite(t *testing.T) {
	var buf bytes.Buffer
	if wrote, err := NewWriter(&buf).TryWrite(&Message{Method: "ping"}); wrote || err != nil || buf.Len() > 0 {
		t.Errorf("TryWrite to a bytes.Buffer = %v, %v (wrote %q), want false and nothing written", wrote, err, buf.String())
	}

	r, w := deafPipe(t)
	wr := NewWriter(w)
	text := strings.Repeat("x", 10<<10)
	sent := 0
	for ; sent < 100; sent++ {
		wrote, err := wr.TryWrite(&Message{Method: "notifications/message", Params: json.RawMessage(fmt.Sprintf(`{"n":%d,"data":%q}`, sent, text))})
		if err != nil {
			t.Fatal(err)
		}
		if !wrote {
			break
		}
	}
	if sent == 0 || sent == 100 {
		t.Fatalf("%d lines of 10 KiB taken by a pipe that nobody reads, want some, then a refusal", sent)
	}
	// One more, written by a blocking Write once the pipe is read: it
	// comes after every line TryWrite took, and the refused one is not
	// there.
	wrote := make(chan error, 1)
	go func() {
		wrote <- wr.Write(&Message{Method: "notifications/message", Params: json.RawMessage(`{"n":-1}`)})
	}()
	msgs := readLines(t, r, sent+1)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	for i, m := range msgs {
		var p struct {
			N    int    `json:"n"`
			Data string `json:"data"`
		}
		_ = json.Unmarshal(m.Params, &p)
		want := i
		if i == sent {
			want = -1
		}
		if p.N != want || (want >= 0 && p.Data != text) {
			t.Errorf("line %d: n %d (%d bytes of data), want n %d whole", i, p.N, len(p.Data), want)
		}
	}
}

// TestConnTryGo: TryGo sends a request only when it can without waiting:
// a refused one (ErrWouldBlock, which is ErrNotSent too) was never sent
// and delivers nothing, and every one sent reaches the peer whole; a call
// cancelled without waiting, the peer still not reading, returns at once,
// and the peer gets the cancellation once it reads.
func TestConnTryGo(t *testing.T) {
	stdout, _ := io.Pipe() // the peer never answers
	r, w := deafPipe(t)
	c := startConn(t, stdout, w, ConnOptions{})
	text := strings.Repeat("y", 8<<10)
	var calls []*AsyncCall
	for len(calls) < 100 {
		a, err := c.TryGo(t.Context(), "tools/call", json.RawMessage(fmt.Sprintf(`{"name":"echo","arguments":{"text":%q}}`, text)),
			func(json.RawMessage, error) {})
		if errors.Is(err, ErrWouldBlock) {
			if !errors.Is(err, ErrNotSent) || a != nil {
				t.Errorf("TryGo refused: %v, %v; want ErrNotSent too, and no call", a, err)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, a)
	}
	if len(calls) == 0 || len(calls) == 100 {
		t.Fatalf("%d calls of 8 KiB taken by a peer that does not read, want some, then a refusal", len(calls))
	}

	cancelled := make(chan bool, 1)
	go func() { cancelled <- calls[0].CancelNoWait(errors.New("no longer needed")) }()
	select {
	case pending := <-cancelled:
		if !pending {
			t.Errorf("CancelNoWait of a pending call = false")
		}
	case <-t.Context().Done():
		t.Fatal("CancelNoWait waited for a peer that does not read")
	}
	if _, err := calls[0].Await(t.Context()); err == nil || err.Error() != "no longer needed" {
		t.Errorf("the cancelled call's outcome: %v, want its cause", err)
	}

	msgs := readLines(t, r, len(calls)+1)
	for i, m := range msgs[:len(calls)] {
		if m.ID != calls[i].ID() || !strings.Contains(string(m.Params), text) {
			t.Errorf("request %d: got id %s (%d bytes), want %s whole", i, m.ID, len(m.Params), calls[i].ID())
		}
	}
	last := msgs[len(calls)]
	var p struct {
		RequestID ID `json:"requestId"`
	}
	if err := json.Unmarshal(last.Params, &p); err != nil || last.Method != "notifications/cancelled" || p.RequestID != calls[0].ID() {
		t.Errorf("after the requests the peer got %s, want the cancellation of %s", last.AppendJSON(nil), calls[0].ID())
	}
}
