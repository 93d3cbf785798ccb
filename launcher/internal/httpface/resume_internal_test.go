package httpface

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The helpers of the resume tests that read the session's state.

// waitKeptAnswer waits until the answer to the request whose id is key
// is kept, its client gone.
func waitKeptAnswer(t *testing.T, s *session, key string) {
	t.Helper()
	waitFor(t, "the answer to be kept", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for tr := range s.detached {
			if tr.key == key && tr.answerSeq != 0 {
				return true
			}
		}
		return false
	})
}

func (s *session) tagForTest() string { return s.tag }

// checkKept checks the bounds of what s keeps for a resume.
func checkKept(t *testing.T, s *session) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	n, bytes := 0, 0
	for _, k := range s.kept {
		n++
		bytes += len(k.line)
	}
	if n > maxBacklog || bytes > maxBacklogBytes || bytes != s.keptBytes {
		t.Errorf("kept %d events, %d bytes (counted %d): the bounds are %d, %d", n, bytes, s.keptBytes, maxBacklog, maxBacklogBytes)
	}
}

// dropAfterEvent POSTs a hold call with id, reads its first event, and
// drops the connection; it returns that event's id once the face saw the
// client go.
func dropAfterEvent(t *testing.T, url, sid string, s *session, id int) string {
	t.Helper()
	resp := request(t, http.MethodPost, url, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"hold","params":{"_meta":{"progressToken":%d}}}`, id, id))
	ev := mustSSE(t, bufio.NewReader(resp.Body))
	resp.Body.Close()
	waitIdle(t, s)
	return ev.id
}

// A POST kept for its client's resume is forgotten keepDetached after its
// client went; then a resume is refused, and says to send the request
// again.
func TestDetachedForgotten(t *testing.T) {
	defer func(d time.Duration) { keepDetached = d }(keepDetached)
	keepDetached = 10 * time.Millisecond
	f, srv, _ := holdFace(t, Options{})
	url := srv.URL + "/mcp"
	sid := initialize(t, url)
	s := sessionByID(f, sid)
	last := dropAfterEvent(t, url, sid, s, 7)
	waitFor(t, "the POST to be forgotten", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.resumable) == 0 && len(s.detached) == 0 && len(s.kept) == 0
	})
	resp := request(t, http.MethodGet, url, sid, "", "Last-Event-ID", last)
	if body := readAll(t, resp); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "send the request again") {
		t.Errorf("a resume of a forgotten POST: %s %s, want 400 saying to send it again", resp.Status, body)
	}
}

// A session keeps maxDetached POSTs for their clients' resumes at most:
// past it, the one detached longest is forgotten.
func TestDetachedBounded(t *testing.T) {
	// Fewer than the calls that the agent connection has under way at
	// once: each is held until release.
	defer func(n int) { maxDetached = n }(maxDetached)
	maxDetached = 4
	f, srv, release := holdFace(t, Options{})
	url := srv.URL + "/mcp"
	sid := initialize(t, url)
	s := sessionByID(f, sid)
	var ids []string
	for i := range maxDetached + 3 {
		ids = append(ids, dropAfterEvent(t, url, sid, s, 100+i))
		s.mu.Lock()
		n := len(s.detached)
		s.mu.Unlock()
		if n > maxDetached {
			t.Fatalf("%d POSTs detached, more than %d", n, maxDetached)
		}
	}
	close(release)
	waitKeptAnswer(t, s, fmt.Sprint(100+len(ids)-1))
	for i, id := range []string{ids[0], ids[len(ids)-1]} {
		resp := request(t, http.MethodGet, url, sid, "", "Last-Event-ID", id)
		body := readAll(t, resp)
		if got, want := resp.StatusCode, []int{http.StatusBadRequest, http.StatusOK}[i]; got != want {
			t.Errorf("a resume of %s: %s %s, want %d", id, resp.Status, body, want)
		}
	}
}
