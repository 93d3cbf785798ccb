package httpface

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/internal/agent"
	"github.com/mcpgen/mcpgen/mcp"
)

// holdHandler is testHandler with a method more: hold (a progress
// notification for its request's token; then, once release is closed,
// another, and its params as its answer).
type holdHandler struct {
	testHandler
	release <-chan struct{}
}

func (h *holdHandler) Request(call *agent.Call) {
	if call.Method() != "hold" {
		h.testHandler.Request(call)
		return
	}
	params := call.Params()
	progress := func(n int) {
		h.conn.Send(&mcp.Message{Method: "notifications/progress", Params: json.RawMessage(fmt.Sprintf(`{"progressToken":%s,"progress":%d}`, progressToken(params), n))})
	}
	progress(1)
	call.Hold()
	h.conn.Go(func() {
		select {
		case <-h.release:
		case <-h.conn.Context().Done():
			call.Answer(nil, mcp.NewError(agent.CodeUnavailable, "ended"))
			return
		}
		progress(2)
		call.Answer(params, nil)
	})
}

// holdFace is testFace whose sessions are served by a holdHandler; its
// hold calls go on once release is closed.
func holdFace(t *testing.T, opts Options) (*Face, *httptest.Server, chan struct{}) {
	t.Helper()
	release := make(chan struct{})
	opts.Endpoint = func(string, string) (Serve, error) {
		return func(ctx context.Context, rwc io.ReadWriteCloser) {
			h := &holdHandler{release: release}
			h.conn = agent.New(ctx, rwc, h, agent.Options{})
			h.conn.Serve()
		}, nil
	}
	f, srv, _ := testFace(t, opts)
	return f, srv, release
}

// An event of an event stream: its id and its data.
type sseEvent struct{ id, data string }

// nextSSE reads the next event that has data; ok is false once the
// stream ends.
func nextSSE(rd *bufio.Reader) (ev sseEvent, ok bool) {
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return ev, false
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if ev.data != "" {
				return ev, true
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			ev.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			ev.data = strings.TrimPrefix(line, "data: ")
		}
	}
}

// mustSSE reads the next event, which must have an id.
func mustSSE(t *testing.T, rd *bufio.Reader) sseEvent {
	t.Helper()
	ev, ok := nextSSE(rd)
	if !ok {
		t.Fatal("the event stream ended")
	}
	if ev.id == "" {
		t.Fatalf("event %.80q has no id", ev.data)
	}
	return ev
}

// allSSE reads every event until the stream ends.
func allSSE(t *testing.T, body io.Reader) []sseEvent {
	t.Helper()
	rd := bufio.NewReader(body)
	var out []sseEvent
	for {
		ev, ok := nextSSE(rd)
		if !ok {
			return out
		}
		out = append(out, ev)
	}
}

func sessionByID(f *Face, sid string) *session {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sessions[sid]
}

// waitIdle waits until s has no request open: the face saw its clients go.
func waitIdle(t *testing.T, s *session) {
	t.Helper()
	waitFor(t, "the session's requests to end", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.open == 0
	})
}

// A POST whose client goes after an event, before its answer, is resumed
// by a GET with that event's id: it gets what came since on that stream,
// its answer last, and ends; a POST of another request meanwhile gets its
// own answer, never this one.
func TestResumePOST(t *testing.T) {
	for _, when := range []string{"answered while gone", "answered while resumed"} {
		t.Run(when, func(t *testing.T) {
			f, srv, release := holdFace(t, Options{})
			url := srv.URL + "/mcp"
			sid := initialize(t, url)
			s := sessionByID(f, sid)
			resp := request(t, http.MethodPost, url, sid, `{"jsonrpc":"2.0","id":7,"method":"hold","params":{"_meta":{"progressToken":"p"}}}`)
			first := mustSSE(t, bufio.NewReader(resp.Body))
			if want := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`; first.data != want {
				t.Fatalf("first event %q, want %q", first.data, want)
			}
			resp.Body.Close() // the connection drops
			waitIdle(t, s)

			var get *http.Response
			if when == "answered while gone" {
				close(release)
				waitKeptAnswer(t, s, "7")
				get = request(t, http.MethodGet, url, sid, "", "Last-Event-ID", first.id)
			} else {
				get = request(t, http.MethodGet, url, sid, "", "Last-Event-ID", first.id)
				waitFor(t, "the resume", func() bool {
					s.mu.Lock()
					defer s.mu.Unlock()
					return s.open == 1
				})
				other := request(t, http.MethodPost, url, sid, `{"jsonrpc":"2.0","id":8,"method":"echo","params":{"other":true}}`)
				if body := readAll(t, other); body != `{"jsonrpc":"2.0","id":8,"result":{"other":true}}`+"\n" {
					t.Errorf("another request's answer: %s", body)
				}
				close(release)
			}
			defer get.Body.Close()
			if get.StatusCode != http.StatusOK || get.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("the resume: %s %q %s", get.Status, get.Header.Get("Content-Type"), readAll(t, get))
			}
			events := allSSE(t, get.Body)
			want := []string{
				`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":2}}`,
				`{"jsonrpc":"2.0","id":7,"result":{"_meta":{"progressToken":"p"}}}`,
			}
			var got []string
			seen := map[string]bool{first.id: true}
			for _, ev := range events {
				got = append(got, ev.data)
				if ev.id == "" || seen[ev.id] {
					t.Errorf("event %q: id %q, want one of its own", ev.data, ev.id)
				}
				seen[ev.id] = true
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("the resumed stream:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// A GET stream resumed after an event gets what was sent on it since,
// though its client had read it already (it may have been lost on the
// way), and then what comes next; the response it resumes ends.
func TestResumeGET(t *testing.T) {
	f, srv, _ := testFace(t, Options{})
	url := srv.URL + "/mcp"
	sid := initialize(t, url)
	s := sessionByID(f, sid)
	get := request(t, http.MethodGet, url, sid, "")
	defer get.Body.Close()
	waitFor(t, "the GET stream", func() bool { return s.currentGet() != nil })
	rd := bufio.NewReader(get.Body)
	var sent []sseEvent
	for i := range 3 {
		// notify: a notification on the GET stream, then its answer.
		readAll(t, request(t, http.MethodPost, url, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"notify"}`, 10+i)))
		sent = append(sent, mustSSE(t, rd))
	}
	resumed := request(t, http.MethodGet, url, sid, "", "Last-Event-ID", sent[0].id)
	defer resumed.Body.Close()
	if resumed.StatusCode != http.StatusOK {
		t.Fatalf("the resume: %s %s", resumed.Status, readAll(t, resumed))
	}
	if _, ok := nextSSE(rd); ok {
		t.Error("the resumed response goes on")
	}
	rrd := bufio.NewReader(resumed.Body)
	for _, want := range sent[1:] {
		if got := mustSSE(t, rrd); got != want {
			t.Errorf("replayed %+v, want %+v", got, want)
		}
	}
	readAll(t, request(t, http.MethodPost, url, sid, `{"jsonrpc":"2.0","id":20,"method":"notify"}`))
	next := mustSSE(t, rrd)
	if next.data != sent[0].data || next.id == sent[2].id {
		t.Errorf("after the replay: %+v, want a new event of %q", next, sent[0].data)
	}
}

// A Last-Event-ID that names no event this session kept gets a 400 that
// says what to do, and the session goes on.
func TestResumeRefused(t *testing.T) {
	f, srv, _ := testFace(t, Options{})
	url := srv.URL + "/mcp"
	sid := initialize(t, url)
	other := initialize(t, url)
	// An event of the other session's.
	s := sessionByID(f, other)
	get := request(t, http.MethodGet, url, other, "")
	defer get.Body.Close()
	waitFor(t, "the GET stream", func() bool { return s.currentGet() != nil })
	readAll(t, request(t, http.MethodPost, url, other, `{"jsonrpc":"2.0","id":2,"method":"notify"}`))
	foreign := mustSSE(t, bufio.NewReader(get.Body)).id
	tag, _, _ := strings.Cut(foreign, "-")
	for _, tc := range []struct{ name, id, want string }{
		{"another session's", foreign, "another session"},
		{"garbage", "hello", "no event id"},
		{"garbage with dashes", "a-b-c", "no event id"},
		{"an event never sent", tag + "-0-99", "no such event"},
		{"a stream never begun", tag + "-99-1", "no such event"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := tc.id
			if tc.name != "another session's" {
				// The same forms, with this session's tag.
				id = strings.Replace(id, tag, sessionByID(f, sid).tagForTest(), 1)
			}
			resp := request(t, http.MethodGet, url, sid, "", "Last-Event-ID", id)
			if resp.StatusCode != http.StatusBadRequest {
				resp.Body.Close() // an event stream: it would not end
				t.Fatalf("Last-Event-ID %q: %s, want 400 saying %q", id, resp.Status, tc.want)
			}
			body := readAll(t, resp)
			if !strings.Contains(body, tc.want) || !strings.Contains(body, `"code":-32600`) {
				t.Errorf("Last-Event-ID %q: %s %s, want 400 saying %q", id, resp.Status, body, tc.want)
			}
		})
	}
	resp := request(t, http.MethodPost, url, sid, `{"jsonrpc":"2.0","id":9,"method":"ping"}`)
	if body := readAll(t, resp); !strings.Contains(body, `"id":9,"result":{}`) {
		t.Errorf("ping after the refusals: %s %s", resp.Status, body)
	}
}

// What a session keeps for a resume is bounded, in events and in bytes:
// under a flood, a resume from an event the bounds let go is refused,
// one from within them gets the rest.
func TestResumeBounded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n, size int
	}{
		{"events", 3 * maxBacklog, 8},
		{"bytes", 200, 16 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, srv, _ := testFace(t, Options{})
			url := srv.URL + "/mcp"
			sid := initialize(t, url)
			s := sessionByID(f, sid)
			get := request(t, http.MethodGet, url, sid, "")
			defer get.Body.Close()
			waitFor(t, "the GET stream", func() bool { return s.currentGet() != nil })
			rd := bufio.NewReader(get.Body)
			var events []sseEvent
			// Floods of at most 200 at once: more, queued faster than
			// they are written, would drop the agent (agent.MaxNotes).
			for i := 0; i < tc.n; i += 200 {
				n := min(200, tc.n-i)
				readAll(t, request(t, http.MethodPost, url, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"flood","params":{"n":%d,"size":%d}}`, 100+i, n, tc.size)))
				for range n {
					events = append(events, mustSSE(t, rd))
				}
			}
			checkKept(t, s)
			// What the bounds let the session keep, at most, of the last
			// events: each is about as long as the flood's.
			fit := min(maxBacklog, maxBacklogBytes/(len(events[0].data)+1))
			if len(events) <= fit+1 {
				t.Fatalf("%d events: the flood passed no bound", len(events))
			}
			resp := request(t, http.MethodGet, url, sid, "", "Last-Event-ID", events[0].id)
			if resp.StatusCode != http.StatusBadRequest {
				resp.Body.Close() // an event stream: it would not end
				t.Errorf("a resume from the first event: %s, want 400 (no longer kept)", resp.Status)
			} else if body := readAll(t, resp); !strings.Contains(body, "no longer kept") {
				t.Errorf("a resume from the first event: %s %s, want 400 (no longer kept)", resp.Status, body)
			}
			from := len(events) - fit/2
			resp = request(t, http.MethodGet, url, sid, "", "Last-Event-ID", events[from].id)
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("a resume within the bounds: %s %s", resp.Status, readAll(t, resp))
			}
			rrd := bufio.NewReader(resp.Body)
			for _, want := range events[from+1:] {
				if got := mustSSE(t, rrd); got != want {
					t.Fatalf("replayed %q, want %q", got.id, want.id)
				}
			}
		})
	}
}
