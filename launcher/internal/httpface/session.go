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

// Bounds on what waits for a session's GET stream while it has none (see
// session.deliver): past either, the oldest goes.
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

	in      chan []byte   // lines of the POSTs, for Read
	ended   chan struct{} // closed once the session ends
	endOnce sync.Once
	rest    []byte // what Read has not given yet of a line; Read's only

	mu           sync.Mutex
	why          error              // why it ended
	answers      map[string]*stream // POSTs waiting for their answers, by request id
	tokens       map[string]*stream // and by the progress token they gave
	posts        []*stream          // POSTs waiting, oldest first
	get          *stream            // the GET stream; nil: none open
	open         int                // requests open (its streams), which keep it from expiring
	backlog      [][]byte           // lines for a GET stream that is not open
	backlogBytes int
	lost         int    // lines of the backlog lost since the log last said so
	used         uint64 // counts every request's end: the expiry timer's check
	expiry       *time.Timer
}

func newSession(f *Face, id, server, subject string) *session {
	s := &session{
		f: f, id: id, server: server, subject: subject,
		in:      make(chan []byte),
		ended:   make(chan struct{}),
		answers: map[string]*stream{},
		tokens:  map[string]*stream{},
	}
	s.expiry = time.AfterFunc(f.opts.SessionTimeout, func() { s.expire(0) })
	return s
}

var errEnded = errors.New("the HTTP session has ended")

// Read gives the agent connection's read loop the POSTs' lines.
func (s *session) Read(p []byte) (int, error) {
	if len(s.rest) == 0 {
		select {
		case s.rest = <-s.in:
		case <-s.ended:
			// Not io.EOF: an agent that ended its session is owed no
			// answer (see agent.Conn's drain).
			return 0, errEnded
		}
	}
	n := copy(p, s.rest)
	s.rest = s.rest[n:]
	return n, nil
}

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
	out := append([]*stream(nil), s.posts...)
	if s.get != nil {
		out = append(out, s.get)
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
		s.backlog, s.backlogBytes = nil, 0
		s.mu.Unlock()
		close(s.ended)
		s.expiry.Stop()
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

// hand gives a line to the agent connection's read loop, and reports
// false when the client went or the session ended first.
func (s *session) hand(r *http.Request, line []byte) bool {
	select {
	case s.in <- line:
		return true
	case <-r.Context().Done():
	case <-s.ended:
	}
	return false
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
	st.key = key
	token := progressToken(msg.Params)
	s.mu.Lock()
	if s.answers[key] != nil {
		s.mu.Unlock()
		writeMessage(w, http.StatusBadRequest, &mcp.Message{ID: msg.ID, Error: mcp.NewError(mcp.CodeInvalidRequest, "request id %s is already in flight in this session", key)})
		return
	}
	s.answers[key] = st
	if token != "" && s.tokens[token] == nil {
		s.tokens[token] = st
		st.token = token
	}
	s.posts = append(s.posts, st)
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
	s.dropLocked(st)
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

// serveGet serves the session's GET stream: what the agent is sent that is
// no POST's, until the client or the session ends it.
func (s *session) serveGet(w http.ResponseWriter, r *http.Request) {
	w.Header().Set(sessionHeader, s.id)
	if !s.begin(w) {
		return
	}
	defer s.finish()
	st := newStream(w, s.id)
	s.mu.Lock()
	if s.get != nil {
		s.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		writeMessage(w, http.StatusConflict, &mcp.Message{Error: mcp.NewError(mcp.CodeInvalidRequest, "this session has a GET stream open already: one at a time")})
		return
	}
	st.startEvents()
	s.get = st
	backlog := s.backlog
	s.backlog, s.backlogBytes = nil, 0
	// What waited goes first: a Write that finds this stream waits for
	// its lock until then.
	st.mu.Lock()
	s.mu.Unlock()
	for _, line := range backlog {
		st.eventLocked(line)
	}
	st.mu.Unlock()
	select {
	case <-r.Context().Done():
	case <-s.ended:
	}
	st.close()
	s.mu.Lock()
	if s.get == st {
		s.get = nil
	}
	s.mu.Unlock()
}

// Write takes one line the agent connection writes to the agent, and
// delivers it: an answer to the POST that asked (none, if its client went:
// the answer is lost, as the transport allows), anything else as
// deliver says. It fails only once the session has ended: the agent
// connection then ends too.
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
		s.mu.Lock()
		st := s.answers[msg.ID.String()]
		if st != nil {
			// What is sent after the answer is not the POST's.
			s.dropLocked(st)
		}
		s.mu.Unlock()
		if st != nil {
			st.answer(line)
		}
		return len(line), nil
	}
	s.deliver(msg, line)
	return len(line), nil
}

// dropLocked forgets a POST's stream: answered, or its handler returns.
func (s *session) dropLocked(st *stream) {
	if s.answers[st.key] == st {
		delete(s.answers, st.key)
	}
	if st.token != "" && s.tokens[st.token] == st {
		delete(s.tokens, st.token)
	}
	for i, p := range s.posts {
		if p == st {
			s.posts = append(s.posts[:i], s.posts[i+1:]...)
			break
		}
	}
}

// deliver sends the agent a line that answers none of its POSTs: progress
// to the POST whose request gave its token; the rest to the GET stream,
// or, while there is none, to the newest POST that waits (as an event: a
// server's request during a tool call is that call's), or, while there is
// none either, into a backlog for the next GET stream (bounded: past
// maxBacklog lines or maxBacklogBytes, the oldest are lost, and logged).
// A stream whose client went takes nothing: the next in that order does.
func (s *session) deliver(msg *mcp.Message, line []byte) {
	progress := ""
	if msg.Method == "notifications/progress" {
		progress = progressTokenOf(msg.Params)
	}
	for range 3 {
		s.mu.Lock()
		var st *stream
		switch {
		case progress != "" && s.tokens[progress] != nil:
			st = s.tokens[progress]
		case s.get != nil:
			st = s.get
		case len(s.posts) > 0:
			st = s.posts[len(s.posts)-1]
		default:
			s.backlogLocked(line)
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		if st.event(line) {
			return
		}
		// Its client went: it takes nothing more.
		s.mu.Lock()
		if s.get == st {
			s.get = nil
		} else {
			s.dropLocked(st)
		}
		s.mu.Unlock()
	}
	s.mu.Lock()
	s.backlogLocked(line)
	s.mu.Unlock()
}

func (s *session) currentGet() *stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.get
}

func (s *session) backlogLocked(line []byte) {
	select {
	case <-s.ended:
		return
	default:
	}
	s.backlog = append(s.backlog, line)
	s.backlogBytes += len(line)
	for len(s.backlog) > maxBacklog || s.backlogBytes > maxBacklogBytes {
		s.backlogBytes -= len(s.backlog[0])
		s.backlog[0] = nil
		s.backlog = s.backlog[1:]
		s.lost++
		if s.lost == 1 {
			s.f.log.Warn("http: the client opens no GET stream: messages for it are lost", "session", s.id, "server", s.server)
		}
	}
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

// A stream is one open response: a POST that waits for its answer, or the
// GET stream. Its handler owns it until it closes it; Write's goroutine
// writes to it meanwhile, under mu.
type stream struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	sid string
	// key is its request's id, as the session's answers have it; token
	// the progress token its request gave, if it is the key of the
	// session's tokens.
	key, token string
	done       chan struct{} // closed once the answer is written

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
	eventPrefix = []byte("event: message\ndata: ")
	eventEnd    = []byte("\n\n")
)

// event writes a line as an event, and reports whether it was.
func (st *stream) event(line []byte) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.eventLocked(line)
}

func (st *stream) eventLocked(line []byte) bool {
	if st.over || st.failed {
		return false
	}
	if !st.sse {
		st.startEvents()
	}
	data := line[:len(line)-1] // without its "\n"
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
// JSON, or the last event of its event stream.
func (st *stream) answer(line []byte) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.over {
		return
	}
	if st.sse {
		st.eventLocked(line)
	} else if !st.failed {
		h := st.w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(line)))
		st.w.WriteHeader(http.StatusOK)
		if _, err := st.w.Write(line); err != nil {
			st.failed = true
		}
	}
	st.over = true
	close(st.done)
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
