package streamable

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// sseRead reads every event of stream, recording errEventTooLarge as an
// event of type "TOO LARGE" and stopping at the first other error.
func sseRead(stream string, max int) (events []sseEvent, r *sseReader, err error) {
	r = newSSEReader(strings.NewReader(stream), max)
	for {
		ev, err := r.next()
		switch {
		case errors.Is(err, errEventTooLarge):
			events = append(events, sseEvent{Type: "TOO LARGE"})
			continue
		case err == io.EOF:
			return events, r, nil
		case err != nil:
			return events, r, err
		}
		events = append(events, ev)
	}
}

func TestSSEReader(t *testing.T) {
	type ev = sseEvent
	tests := []struct {
		name   string
		stream string
		max    int
		want   []ev
		lastID string
		seen   bool // an id was dispatched (lastID may be "")
		retry  time.Duration
	}{
		{name: "one message", stream: "data: {}\n\n", want: []ev{{"message", []byte("{}")}}},
		{name: "priming event then message", stream: "id: e1\nretry: 500\ndata: \n\nid: e2\ndata: {\"a\":1}\n\n",
			want: []ev{{"message", []byte("")}, {"message", []byte(`{"a":1}`)}}, lastID: "e2", seen: true, retry: 500 * time.Millisecond},
		{name: "priming event only, with empty data", stream: "id: e1\nretry: 500\ndata:\n\n", want: []ev{{"message", []byte("")}}, lastID: "e1", seen: true, retry: 500 * time.Millisecond},
		{name: "crlf line ends", stream: "id: 7\r\ndata: x\r\n\r\n", want: []ev{{"message", []byte("x")}}, lastID: "7", seen: true},
		{name: "multi-line data joined by newlines", stream: "data: {\ndata:  \"a\": 1\ndata: }\n\n", want: []ev{{"message", []byte("{\n \"a\": 1\n}")}}},
		{name: "no space after the colon", stream: "data:x\n\n", want: []ev{{"message", []byte("x")}}},
		{name: "comments and unknown fields are ignored", stream: ": keep-alive\nfoo: bar\ndata: x\n\n", want: []ev{{"message", []byte("x")}}},
		{name: "event type", stream: "event: endpoint\ndata: /x\n\nevent: message\ndata: y\n\n",
			want: []ev{{"endpoint", []byte("/x")}, {"message", []byte("y")}}},
		{name: "event type resets after each event", stream: "event: ping\ndata: 1\n\ndata: 2\n\n",
			want: []ev{{"ping", []byte("1")}, {"message", []byte("2")}}},
		{name: "byte order mark at the start", stream: "\xef\xbb\xbfdata: x\n\n", want: []ev{{"message", []byte("x")}}},
		{name: "an event cut by the end is dropped, with its id", stream: "id: 1\ndata: a\n\nid: 2\ndata: b\n", want: []ev{{"message", []byte("a")}}, lastID: "1", seen: true},
		{name: "an id with NUL is ignored", stream: "id: 1\n\nid: a\x00b\ndata: x\n\n", want: []ev{{"message", []byte("x")}}, lastID: "1", seen: true},
		{name: "an empty id resets the last id", stream: "id: 1\n\nid\ndata: x\n\n", want: []ev{{"message", []byte("x")}}, lastID: "", seen: true},
		{name: "the id carries over to later events", stream: "id: 1\ndata: a\n\ndata: b\n\n", want: []ev{{"message", []byte("a")}, {"message", []byte("b")}}, lastID: "1", seen: true},
		{name: "retry that is not digits is ignored", stream: "retry: 5s\nretry: -1\ndata: x\n\n", want: []ev{{"message", []byte("x")}}},
		{name: "an event without data is not dispatched", stream: "id: 1\nevent: x\n\ndata: y\n\n", want: []ev{{"message", []byte("y")}}, lastID: "1", seen: true},
		{name: "retry is capped", stream: "retry: 99999999999999999999\n\n", retry: maxRetry},
		{name: "field without a colon", stream: "data\n\n", want: []ev{{"message", []byte("")}}},
		{name: "data at the cap", max: 4, stream: "data: abcd\n\n", want: []ev{{"message", []byte("abcd")}}},
		{name: "data over the cap is skipped, the next event is read", max: 4, stream: "data: abcde\n\ndata: ok\n\n",
			want: []ev{{"TOO LARGE", nil}, {"message", []byte("ok")}}},
		{name: "data lines that add up over the cap", max: 4, stream: "data: ab\ndata: cd\n\ndata: ok\n\n",
			want: []ev{{"TOO LARGE", nil}, {"message", []byte("ok")}}},
		{name: "a line far over the cap is skipped without being kept", max: 4, stream: "data: " + strings.Repeat("x", 100<<10) + "\n\ndata: ok\n\n",
			want: []ev{{"TOO LARGE", nil}, {"message", []byte("ok")}}},
		{name: "an event too large still sets the id", max: 4, stream: "id: big\ndata: abcdef\n\n", want: []ev{{"TOO LARGE", nil}}, lastID: "big", seen: true},
		{name: "empty stream", stream: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			max := tt.max
			if max == 0 {
				max = 1 << 20
			}
			got, r, err := sseRead(tt.stream, max)
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if !sameEvents(got, tt.want) {
				t.Errorf("events:\ngot  %q\nwant %q", got, tt.want)
			}
			if r.lastID != tt.lastID || r.idSeen != tt.seen {
				t.Errorf("last id: got %q (seen %v), want %q (seen %v)", r.lastID, r.idSeen, tt.lastID, tt.seen)
			}
			if r.retry != tt.retry {
				t.Errorf("retry: got %v, want %v", r.retry, tt.retry)
			}
		})
	}
}

func sameEvents(a, b []sseEvent) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type || string(a[i].Data) != string(b[i].Data) {
			return false
		}
	}
	return true
}

// FuzzSSEReader checks that no stream makes the reader fail, hand out an
// event over the cap, or keep an id with a NUL in it.
func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{
		"data: {}\n\n",
		"id: e1\nretry: 500\ndata: \n\n",
		"\xef\xbb\xbfevent: x\r\ndata: a\r\ndata: b\r\n\r\n",
		": c\nid\nretry: 12x\ndata\n\n",
		"data: " + strings.Repeat("y", 40) + "\n\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, stream string) {
		const max = 16
		events, r, err := sseRead(stream, max)
		if err != nil {
			t.Fatalf("error: %v", err)
		}
		for _, ev := range events {
			if len(ev.Data) > max {
				t.Errorf("event of %d bytes over the cap of %d", len(ev.Data), max)
			}
		}
		if strings.Contains(r.lastID, "\x00") {
			t.Errorf("last id %q holds a NUL", r.lastID)
		}
		if r.retry < 0 || r.retry > maxRetry {
			t.Errorf("retry %v out of bounds", r.retry)
		}
	})
}
