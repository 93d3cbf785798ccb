package httpface

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/internal/agent"
	"github.com/mcpgen/mcpgen/mcp"
)

// Bounds on what a session keeps of what it sent, for a resume, and of
// what waits for its GET stream while it has none (see session.deliver and
// resume.go), all its streams together: past either, the oldest goes.
const (
	maxBacklog      = agent.MaxNotes
	maxBacklogBytes = agent.SoftQueued
)

// A session is one agent's HTTP session, and the connection of lines that
// the gateway or a hub serves it on (its Serve function): Read gives the
// agent connection the messages the POSTs carry, one line each, in the
// order they came; Write takes what the agent connection writes to the
// agent, one line a call from its outbox's writer, and delivers it to the
// stream it belongs to. A Write blocks while that stream's client does not
// read, as a pipe's would: what waits meanwhile is the outbox's, within its
// bounds.
type session struct {
	f       *Face
	id      string
	server  string // the endpoint's server; "" the gateway
	subject string // who began it (a JWT's sub), whom it answers

	feed    // the POSTs' lines, for Read; ended once the session ends
	endOnce sync.Once

	tag string // its event ids' first part (see resume.go)

	mu        sync.Mutex
	why       error             // why it ended
	answers   map[string]*track // POSTs waiting for their answers, by request id
	tokens    map[string]*track // and by the progress token they gave
	posts     []*track          // POSTs whose responses wait, oldest first
	get       *track            // the GET stream; its conn nil: none open
	tracks    uint64            // the POSTs' tracks begun
	resumable map[uint64]*track // POSTs' tracks that a GET may resume, by number
	detached  map[*track]bool   // those whose clients went
	kept      []*kept           // events kept, of every track, oldest first
	keptBytes int
	open      int    // requests open (its streams), which keep it from expiring
	lost      int    // lines for the GET stream lost since the log last said so
	used      uint64 // counts every request's end: the expiry timer's check
	expiry    *time.Timer
}

func newSession(f *Face, id, server, subject string) *session {
	s := &session{
		f: f, id: id, server: server, subject: subject,
		feed:      newFeed(),
		tag:       newID()[:8],
		answers:   map[string]*track{},
		tokens:    map[string]*track{},
		get:       &track{},
		resumable: map[uint64]*track{},
		detached:  map[*track]bool{},
	}
	s.expiry = time.AfterFunc(f.opts.SessionTimeout, func() { s.expire(0) })
	return s
}

var errEnded = errors.New("the HTTP session has ended")

// Close ends the session: the agent connection closes it when it ends
// (the agent was dropped, its server left the workspace).
func (s *session) Close() error {
	s.end(errConnEnded)
	return nil
}

// SetWriteDeadline cuts short what blocks on the session's streams: the
// agent connection's outbox sets it when it closes, to bound its last
// writes to an agent that does not read.
func (s *session) SetWriteDeadline(t time.Time) error {
	for _, st := range s.streams() {
		st.setWriteDeadline(t)
	}
	return nil
}

func (s *session) streams() []*stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*stream
	for _, tr := range s.posts {
		if tr.conn != nil {
			out = append(out, tr.conn)
		}
	}
	if s.get.conn != nil {
		out = append(out, s.get.conn)
	}
	return out
}

// end ends the session, once: Read ends (the agent connection ends with
// it, and cancels what the agent left under way), its streams end, and
// its id is forgotten.
func (s *session) end(why error) {
	s.endOnce.Do(func() {
		s.mu.Lock()
		s.why = why
		for tr := range s.detached {
			s.forgetLocked(tr)
		}
		for _, tr := range s.resumable {
			tr.log = nil
		}
		s.get.log = nil
		clear(s.kept)
		s.kept, s.keptBytes = nil, 0
		// Under mu: finish sets it anew.
		s.expiry.Stop()
		s.mu.Unlock()
		close(s.ended)
		s.f.forget(s)
		if why != errDeleted && why != errFaceClosed {
			s.f.log.Info("http: session ended", "session", s.id, "server", s.server, "reason", why)
		}
	})
}

// expire ends the session if it was unused since its timer was set:
// used is what s.used was then.
func (s *session) expire(used uint64) {
	s.mu.Lock()
	idle := s.open == 0 && s.used == used
	s.mu.Unlock()
	if idle {
		s.end(errExpired)
	}
}

// begin counts a request that opens a stream, unless the session or the
// face has as many open as may be: it reports false, and has answered w.
func (s *session) begin(w http.ResponseWriter) bool {
	s.mu.Lock()
	if s.open >= s.f.opts.MaxStreams {
		s.mu.Unlock()
		unavailable(w, "too many requests open in this session: wait for answers before asking more")
		return false
	}
	if !s.f.takeStream() {
		s.mu.Unlock()
		unavailable(w, "too many requests open: try again later")
		return false
	}
	s.open++
	s.expiry.Stop()
	s.mu.Unlock()
	return true
}

// finish counts a request's end: once none is open, the session expires
// after the session timeout unless another comes.
func (s *session) finish() {
	s.f.releaseStream()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open--
	s.used++
	if s.open == 0 {
		used := s.used
		s.expiry.Stop()
		s.expiry = time.AfterFunc(s.f.opts.SessionTimeout, func() { s.expire(used) })
	}
}

// post serves a POST of msg (line) in the session: a request's answer
// goes back on it; a notification or a response is accepted (202) once
// the agent connection has read it.
func (s *session) post(w http.ResponseWriter, r *http.Request, msg *mcp.Message, line []byte) {
	w.Header().Set(sessionHeader, s.id)
	if !s.begin(w) {
		return
	}
	defer s.finish()
	if !msg.IsRequest() {
		if !s.hand(r, line) {
			s.goneAnswer(w, nil)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	st := newStream(w, s.id)
	key := msg.ID.String()
	token := progressToken(msg.Params)
	s.mu.Lock()
	if s.answers[key] != nil {
		s.mu.Unlock()
		writeMessage(w, http.StatusBadRequest, &mcp.Message{ID: msg.ID, Error: mcp.NewError(mcp.CodeInvalidRequest, "request id %s is already in flight in this session", key)})
		return
	}
	tr := s.newTrackLocked(key)
	tr.conn = st
	s.answers[key] = tr
	if token != "" && s.tokens[token] == nil {
		s.tokens[token] = tr
		tr.token = token
	}
	s.mu.Unlock()
	// Registered before the line goes: its answer may come at once.
	handed := s.hand(r, line)
	if handed {
		select {
		case <-st.done:
		case <-r.Context().Done():
		case <-s.ended:
		}
	}
	answered := st.close()
	s.mu.Lock()
	if !handed {
		// The agent connection never had it: nothing will answer it.
		s.forgetLocked(tr)
	}
	s.leaveLocked(tr, st)
	s.mu.Unlock()
	if !answered && r.Context().Err() == nil {
		// The session ended before the answer came: the request gets
		// an answer all the same, an error.
		s.goneAnswer(w, st)
	}
}

// goneAnswer answers a request that the session ended under, on its
// stream as it is: 404 before anything was written (the session is no
// more), an error event for the request's id on an event stream.
func (s *session) goneAnswer(w http.ResponseWriter, st *stream) {
	if st == nil || !st.sse {
		s.mu.Lock()
		why := s.why
		s.mu.Unlock()
		msg := "the session ended"
		if why != nil {
			msg += ": " + why.Error()
		}
		writeMessage(w, http.StatusNotFound, &mcp.Message{Error: mcp.NewError(agent.CodeUnavailable, "%s", msg)})
	}
}

// serveGet serves a GET: the session's GET stream, what the agent is sent
// that is no POST's, until the client or the session ends it; or, with
// Last-Event-ID, the resume of the stream that event was sent on (see
// resume.go).
func (s *session) serveGet(w http.ResponseWriter, r *http.Request) {
	w.Header().Set(sessionHeader, s.id)
	last := r.Header.Get("Last-Event-ID")
	if !s.begin(w) {
		return
	}
	defer s.finish()
	st := newStream(w, s.id)
	s.mu.Lock()
	tr, from := s.get, s.get.sent
	if last != "" {
		var err error
		if tr, from, err = s.resumeLocked(last); err != nil {
			s.mu.Unlock()
			refuseResume(w, err)
			return
		}
	} else if tr.conn != nil {
		s.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		writeMessage(w, http.StatusConflict, &mcp.Message{Error: mcp.NewError(mcp.CodeInvalidRequest, "this session has a GET stream open already: one at a time")})
		return
	}
	st.startEvents()
	old := s.attachLocked(tr, st)
	replay := replayLocked(tr, from)
	// What is replayed goes first: a Write that finds this stream waits
	// for its lock until then.
	st.mu.Lock()
	s.mu.Unlock()
	if old != nil {
		old.end()
	}
	var wrote uint64
	for _, k := range replay {
		if !st.eventLocked(s.eventID(tr, k.seq), k.line) {
			break
		}
		wrote = k.seq
	}
	st.mu.Unlock()
	s.mu.Lock()
	// The client has what came up to its Last-Event-ID: a POST's answer
	// too, perhaps, though its write seemed to fail.
	s.wroteLocked(tr, max(wrote, from))
	finished := tr.done
	s.mu.Unlock()
	if finished {
		// A POST's stream ends with its answer.
		st.end()
	}
	select {
	case <-st.done:
	case <-r.Context().Done():
	case <-s.ended:
	}
	st.close()
	s.mu.Lock()
	s.leaveLocked(tr, st)
	s.mu.Unlock()
}

// Write takes one line the agent connection writes to the agent, and
// delivers it: an answer to the POST that asked (kept for its client to
// resume, if it went after an event; else lost, as the transport allows),
// anything else as deliver says. It fails only once the session has
// ended: the agent connection then ends too.
func (s *session) Write(line []byte) (int, error) {
	select {
	case <-s.ended:
		return 0, errEnded
	default:
	}
	msg, err := mcp.DecodeMessage(line)
	if err != nil {
		// The agent connection writes messages it made: never so.
		s.f.log.Warn("http: an unreadable line for the agent was dropped", "session", s.id, "error", err)
		return len(line), nil
	}
	if msg.IsResponse() {
		s.answer(msg.ID.String(), line)
		return len(line), nil
	}
	s.deliver(msg, line)
	return len(line), nil
}

// answer delivers the answer to the POST whose request's id is key: as
// JSON while its response wrote nothing else, else as the last event of
// its stream.
func (s *session) answer(key string, line []byte) {
	s.mu.Lock()
	tr := s.answers[key]
	if tr == nil {
		s.mu.Unlock()
		return
	}
	// What is sent after the answer is not the POST's; its id may be
	// used again.
	delete(s.answers, key)
	if tr.token != "" && s.tokens[tr.token] == tr {
		delete(s.tokens, tr.token)
	}
	s.unlistLocked(tr)
	tr.answered = true
	conn := tr.conn
	if tr.seq == 0 {
		s.mu.Unlock()
		// Nothing was sent on it: it has no id to resume by.
		if conn != nil && conn.answer("", line) {
			s.mu.Lock()
			tr.done = true
			s.mu.Unlock()
		}
		return
	}
	k := s.keepLocked(tr, line)
	tr.answerSeq = k.seq
	s.mu.Unlock()
	if conn != nil && conn.answer(s.eventID(tr, k.seq), line) {
		s.mu.Lock()
		s.wroteLocked(tr, k.seq)
		s.mu.Unlock()
	}
}

// deliver sends the agent a line that answers none of its POSTs: progress
// to the POST whose request gave its token (kept for its client to
// resume, if it went); the rest to the GET stream, or, while there is
// none, to the newest POST that waits (as an event: a server's request
// during a tool call is that call's), or, while there is none either, to
// wait for the next GET stream. A response whose client went takes
// nothing more but its own: the next in that order does.
func (s *session) deliver(msg *mcp.Message, line []byte) {
	progress := ""
	if msg.Method == "notifications/progress" {
		progress = progressTokenOf(msg.Params)
	}
	for range 3 {
		s.mu.Lock()
		tr, own := s.get, false
		switch {
		case progress != "" && s.tokens[progress] != nil:
			tr, own = s.tokens[progress], true
		case s.get.conn != nil:
		case len(s.posts) > 0:
			tr = s.posts[len(s.posts)-1]
		}
		k := s.keepLocked(tr, line)
		conn := tr.conn
		s.mu.Unlock()
		if conn == nil {
			return // kept for the next GET stream, or a POST's resume
		}
		ok := conn.event(s.eventID(tr, k.seq), line)
		s.mu.Lock()
		if ok {
			s.wroteLocked(tr, k.seq)
			s.mu.Unlock()
			return
		}
		// Its client went: it takes nothing more but its own (kept for
		// its resume).
		switch {
		case tr.conn != conn:
			// Another response took the stream on since it was kept:
			// that one had it replayed.
			s.mu.Unlock()
			return
		case tr == s.get:
			tr.conn = nil
		default:
			s.unlistLocked(tr)
		}
		if own {
			s.mu.Unlock()
			return
		}
		s.unkeepLocked(k)
		s.mu.Unlock()
	}
	s.mu.Lock()
	s.keepLocked(s.get, line)
	s.mu.Unlock()
}

// currentGet returns the response of the GET stream, or nil.
func (s *session) currentGet() *stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.get.conn
}

// progressToken returns the key of the progress token a request's params
// give (_meta.progressToken), or "".
func progressToken(params json.RawMessage) string {
	if len(params) == 0 {
		return ""
	}
	var p struct {
		Meta struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	return tokenKey(p.Meta.ProgressToken)
}

// progressTokenOf returns the key of a progress notification's token.
func progressTokenOf(params json.RawMessage) string {
	var p struct {
		ProgressToken json.RawMessage `json:"progressToken"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	return tokenKey(p.ProgressToken)
}

// tokenKey is a token's key: its JSON, compact; "" for none.
func tokenKey(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return ""
	}
	return b.String()
}

// A stream is one open response: a POST that waits for its answer, or a
// GET (the GET stream, or a resume of a stream; see track). Its handler owns it until it closes it; Write's goroutine
// writes to it meanwhile, under mu.
type stream struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	sid  string
	done chan struct{} // closed once the answer is written, or it ends

	mu     sync.Mutex
	sse    bool // the response is an event stream
	over   bool // answered, or its handler returns: nothing more is written
	failed bool // a write failed: the client went

	// deadline guards rc's deadline against the handler's return.
	deadline    sync.Mutex
	closed      bool // the handler is done with it
	deadlineSet bool // a deadline was set, which close clears
}

func newStream(w http.ResponseWriter, sid string) *stream {
	return &stream{w: w, rc: http.NewResponseController(w), sid: sid, done: make(chan struct{})}
}

// startEvents makes the response an event stream, and sends its headers;
// the caller holds mu or owns the stream alone.
func (st *stream) startEvents() {
	h := st.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // a proxy must not hold events back
	st.w.WriteHeader(http.StatusOK)
	st.sse = true
	st.flush()
}

func (st *stream) flush() {
	if err := st.rc.Flush(); err != nil {
		st.failed = true
	}
}

var (
	idPrefix    = []byte("id: ")
	eventPrefix = []byte("event: message\ndata: ")
	eventEnd    = []byte("\n\n")
)

// event writes a line as an event with id ("": none), and reports
// whether it was.
func (st *stream) event(id string, line []byte) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.eventLocked(id, line)
}

func (st *stream) eventLocked(id string, line []byte) bool {
	if st.over || st.failed {
		return false
	}
	if !st.sse {
		st.startEvents()
	}
	data := line[:len(line)-1] // without its "\n"
	if id != "" {
		// One write for the id and its line: it is ASCII of our own.
		b := make([]byte, 0, len(idPrefix)+len(id)+1)
		b = append(append(append(b, idPrefix...), id...), '\n')
		if _, err := st.w.Write(b); err != nil {
			st.failed = true
			return false
		}
	}
	if _, err := st.w.Write(eventPrefix); err != nil {
		st.failed = true
		return false
	}
	if _, err := st.w.Write(data); err != nil {
		st.failed = true
		return false
	}
	if _, err := st.w.Write(eventEnd); err != nil {
		st.failed = true
		return false
	}
	st.flush()
	return !st.failed
}

// answer writes the answer to the stream's request: the whole body, as
// JSON, or the last event of its event stream (with id, if not ""). It
// reports whether it was written.
func (st *stream) answer(id string, line []byte) bool {
	return st.answerWith(id, line, http.StatusOK)
}

// answerWith is answer, with the HTTP status of an answer that is the
// whole body (a stateless request's error: see statusOf).
func (st *stream) answerWith(id string, line []byte, status int) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.over {
		return false
	}
	ok := false
	if st.sse {
		ok = st.eventLocked(id, line)
	} else if !st.failed {
		h := st.w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(line)))
		st.w.WriteHeader(status)
		if _, err := st.w.Write(line); err != nil {
			st.failed = true
		}
		ok = !st.failed
	}
	st.over = true
	close(st.done)
	return ok
}

// end ends the stream before its handler closes it: nothing more is
// written, and its handler, which waits for done, returns.
func (st *stream) end() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.over {
		st.over = true
		close(st.done)
	}
}

// close ends the stream for its handler, which returns next: nothing
// more is written to it. It reports whether it was answered.
func (st *stream) close() (answered bool) {
	st.mu.Lock()
	answered = st.over
	if !st.over {
		st.over = true
		close(st.done)
	}
	st.mu.Unlock()
	st.deadline.Lock()
	st.closed = true
	if st.deadlineSet {
		// The connection may carry the client's next request: a
		// deadline set for this response must not fail that one's.
		_ = st.rc.SetWriteDeadline(time.Time{})
	}
	st.deadline.Unlock()
	return answered
}

// setWriteDeadline sets the deadline of the stream's connection, unless
// its handler has returned.
func (st *stream) setWriteDeadline(t time.Time) {
	st.deadline.Lock()
	defer st.deadline.Unlock()
	if !st.closed && st.rc.SetWriteDeadline(t) == nil {
		st.deadlineSet = true
	}
}
