package httpface

// Resumability (the transport's "Resumability and Redelivery"): every
// event the session writes carries an id, TAG-N-SEQ, that names the
// session (TAG, random, so that another session's id is told apart), the
// stream it was sent on (N: 0 the GET stream, 1 and on the session's POSTs
// in order) and its place on that stream (SEQ, from 1). A session keeps
// what it sent on each stream, within one bound for all its streams
// together (maxBacklog events, maxBacklogBytes bytes: past either, the
// oldest goes), so that a GET with Last-Event-ID can replay what came on
// THAT stream after that event, and carry the stream on: for a POST's, its
// later messages and its answer, which ends the response; for the GET
// stream, what comes next. A POST whose client went before its answer,
// once it had sent an event, is kept (detached) for its resume: its
// progress and its answer wait in its log; it is forgotten keepDetached
// after its last response went, or once the session ends, whichever comes
// first. A POST that wrote nothing has no id to resume by: its answer is
// lost when its client goes, as the transport allows.

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgen/mcpgen/launcher/internal/agent"
	"github.com/mcpgen/mcpgen/mcp"
)

// Bounds on the POSTs kept for a resume after their clients went.
var (
	// keepDetached is how long a POST's stream is kept after its last
	// response went: a client reconnects within seconds (the TypeScript
	// SDK's backoff tops out at 30s), and a session unused ends anyway
	// after the session timeout. A variable for the tests.
	keepDetached = 5 * time.Minute
	// maxDetached bounds the POSTs a session keeps detached: past it,
	// the one detached longest is forgotten. As many as its agent
	// connection may have under way.
	maxDetached = agent.MaxInFlight
)

// A track is one of the session's streams as the transport means it (a
// POST's, or the GET stream), apart from the responses that carry it: the
// first one, and those of the GETs that resume it. Its fields are the
// session's, under its mu.
type track struct {
	n          uint64 // its number in the session: 0 the GET stream
	key, token string // a POST's: its request's id, and its progress token (if the session's tokens have it)
	conn       *stream
	seq        uint64  // its last event's number
	sent       uint64  // the GET stream's last event written to a response
	lost       uint64  // its events up to this one are no longer kept
	log        []*kept // its events kept for a resume, oldest first
	answerSeq  uint64  // a POST's answer's event; 0: none yet
	answered   bool    // a POST's answer came (to its log, or as its JSON)
	done       bool    // and reached a response: nothing is owed
	detached   time.Time
	expiry     *time.Timer
}

// A kept event: its line, and where it was sent.
type kept struct {
	tr   *track
	seq  uint64
	line []byte
}

// eventID is the id of a track's event seq.
func (s *session) eventID(tr *track, seq uint64) string {
	return s.tag + "-" + strconv.FormatUint(tr.n, 10) + "-" + strconv.FormatUint(seq, 10)
}

// keepLocked numbers a line sent on tr, keeps it for a resume, and
// drops the session's oldest kept past the bounds.
func (s *session) keepLocked(tr *track, line []byte) *kept {
	tr.seq++
	k := &kept{tr: tr, seq: tr.seq, line: line}
	if s.why != nil {
		return k // ended: nothing is kept
	}
	tr.log = append(tr.log, k)
	s.kept = append(s.kept, k)
	s.keptBytes += len(line)
	for len(s.kept) > maxBacklog || s.keptBytes > maxBacklogBytes {
		s.evictLocked()
	}
	return k
}

// evictLocked drops the oldest event kept. Each track's log is in the
// order of the session's, so it is its track's oldest too.
func (s *session) evictLocked() {
	k := s.kept[0]
	s.kept[0] = nil
	s.kept = s.kept[1:]
	s.keptBytes -= len(k.line)
	tr := k.tr
	if len(tr.log) > 0 && tr.log[0] == k {
		tr.log[0] = nil
		tr.log = tr.log[1:]
	}
	tr.lost = k.seq
	switch {
	case tr == s.get && k.seq > tr.sent:
		s.lost++
		if s.lost == 1 {
			s.f.log.Warn("http: the client opens no GET stream: messages for it are lost", "session", s.id, "server", s.server)
		}
	case tr != s.get && k.seq == tr.answerSeq && !tr.done:
		s.f.log.Warn("http: an answer kept for a client to resume was lost: too much was sent since", "session", s.id, "server", s.server, "request", tr.key)
	}
}

// unkeepLocked takes back the event just kept, that went to no response
// and goes to another stream: the transport sends a message on one
// stream only. Only Write's goroutine keeps events: it is the last one of
// its track and of the session, unless the bounds dropped it already.
func (s *session) unkeepLocked(k *kept) {
	tr := k.tr
	if n := len(tr.log); n > 0 && tr.log[n-1] == k {
		tr.log[n-1] = nil
		tr.log = tr.log[:n-1]
	}
	if n := len(s.kept); n > 0 && s.kept[n-1] == k {
		s.kept[n-1] = nil
		s.kept = s.kept[:n-1]
		s.keptBytes -= len(k.line)
	}
}

// wroteLocked notes that a track's events up to seq reached a response.
func (s *session) wroteLocked(tr *track, seq uint64) {
	if tr.sent < seq {
		tr.sent = seq
	}
	if tr.answerSeq != 0 && seq >= tr.answerSeq {
		tr.done = true
	}
}

// newTrackLocked begins a POST's track.
func (s *session) newTrackLocked(key string) *track {
	s.tracks++
	tr := &track{n: s.tracks, key: key}
	s.posts = append(s.posts, tr)
	s.resumable[tr.n] = tr
	return tr
}

// leaveLocked is a response's handler's, once it is done with tr: if no
// other response carries tr on, a POST's track is forgotten, unless it
// owes its client what it may ask for again: a POST that wrote an event
// and whose answer did not reach a response is detached, kept for a
// resume.
func (s *session) leaveLocked(tr *track, st *stream) {
	if tr.conn != nil && tr.conn != st {
		return // a resume carries it on
	}
	tr.conn = nil
	if tr.n == 0 {
		return
	}
	s.unlistLocked(tr)
	switch {
	case tr.done || tr.seq == 0 || s.why != nil:
		s.forgetLocked(tr)
	case tr.expiry == nil:
		s.detachLocked(tr)
	}
}

// unlistLocked takes a POST's track off the list of those whose
// responses wait (the session's posts).
func (s *session) unlistLocked(tr *track) {
	for i, p := range s.posts {
		if p == tr {
			s.posts = append(s.posts[:i], s.posts[i+1:]...)
			return
		}
	}
}

// detachLocked keeps a POST's track for a resume, within its bounds.
func (s *session) detachLocked(tr *track) {
	tr.detached = time.Now()
	tr.expiry = time.AfterFunc(keepDetached, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if tr.conn == nil && s.detached[tr] {
			s.forgetLocked(tr)
		}
	})
	s.detached[tr] = true
	if len(s.detached) > maxDetached {
		var oldest *track
		for d := range s.detached {
			if oldest == nil || d.detached.Before(oldest.detached) {
				oldest = d
			}
		}
		s.forgetLocked(oldest)
	}
}

// attachLocked makes st carry tr on: a resume of it. It returns the
// response that carried it until then, if any: the client resumes a
// stream whose response it lost before this end saw it go. The caller
// ends that one once it has let go of s.mu (a write to it may hold its
// lock until it fails).
func (s *session) attachLocked(tr *track, st *stream) (old *stream) {
	old, tr.conn = tr.conn, st
	if tr.n == 0 {
		return old
	}
	if tr.expiry != nil {
		tr.expiry.Stop()
		tr.expiry = nil
	}
	delete(s.detached, tr)
	tr.detached = time.Time{}
	if !tr.answered && !containsTrack(s.posts, tr) {
		s.posts = append(s.posts, tr)
	}
	return old
}

func containsTrack(list []*track, tr *track) bool {
	for _, t := range list {
		if t == tr {
			return true
		}
	}
	return false
}

// forgetLocked forgets a POST's track, and what it kept.
func (s *session) forgetLocked(tr *track) {
	if s.answers[tr.key] == tr {
		delete(s.answers, tr.key)
	}
	if tr.token != "" && s.tokens[tr.token] == tr {
		delete(s.tokens, tr.token)
	}
	s.unlistLocked(tr)
	delete(s.detached, tr)
	delete(s.resumable, tr.n)
	if tr.expiry != nil {
		tr.expiry.Stop()
		tr.expiry = nil
	}
	if len(tr.log) > 0 {
		kept := s.kept[:0]
		for _, k := range s.kept {
			if k.tr == tr {
				s.keptBytes -= len(k.line)
			} else {
				kept = append(kept, k)
			}
		}
		clear(s.kept[len(kept):])
		s.kept = kept
		tr.log = nil
	}
}

// A resumeError is why a Last-Event-ID cannot be resumed from.
type resumeError string

func (e resumeError) Error() string { return string(e) }

// resumeLocked finds the track that a Last-Event-ID names, and the place
// on it to resume after, or says why none.
//
// The transport leaves what to do with an id it cannot resume from to the
// server (it MAY replay). An empty stream would tell the client that it
// missed nothing, which it did, and the TypeScript SDK reconnects a GET
// stream that ends, at once, again and again. So each gets a 400 with a
// JSON-RPC error that says what was lost and what to do instead; the
// clients give up the resume after a few (the SDK's maxRetries).
func (s *session) resumeLocked(last string) (*track, uint64, error) {
	tag, rest, ok1 := strings.Cut(last, "-")
	ns, seqs, ok2 := strings.Cut(rest, "-")
	n, err1 := strconv.ParseUint(ns, 10, 64)
	seq, err2 := strconv.ParseUint(seqs, 10, 64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil || tag == "" {
		return nil, 0, resumeError(fmt.Sprintf("Last-Event-ID %q is no event id of this endpoint's: resume with the id of the last event received, or open the GET stream without Last-Event-ID", last))
	}
	if tag != s.tag {
		return nil, 0, resumeError(fmt.Sprintf("Last-Event-ID %q is an event of another session: resume a stream with an id of this session's, or open the GET stream without Last-Event-ID", last))
	}
	tr := s.get
	if n != 0 {
		tr = s.resumable[n]
	}
	switch {
	case tr == nil && n <= s.tracks:
		return nil, 0, resumeError(fmt.Sprintf("Last-Event-ID %q: that request's stream is no longer kept (it was answered, or its client went more than %s ago, or too much was sent since): send the request again if its answer is missing", last, keepDetached))
	case tr == nil || seq > tr.seq:
		return nil, 0, resumeError(fmt.Sprintf("Last-Event-ID %q: no such event was sent in this session: resume with the id of the last event received", last))
	case seq < tr.lost:
		what := "open the GET stream without Last-Event-ID"
		if tr.n != 0 {
			what = "send the request again"
		}
		return nil, 0, resumeError(fmt.Sprintf("Last-Event-ID %q: events after it are no longer kept (a session keeps its last %d events, %d bytes): %s", last, maxBacklog, maxBacklogBytes, what))
	}
	return tr, seq, nil
}

// replayLocked returns tr's events after seq.
func replayLocked(tr *track, seq uint64) []*kept {
	for i, k := range tr.log {
		if k.seq > seq {
			return append([]*kept(nil), tr.log[i:]...)
		}
	}
	return nil
}

// refuseResume answers a GET whose Last-Event-ID cannot be resumed from.
func refuseResume(w http.ResponseWriter, err error) {
	writeMessage(w, http.StatusBadRequest, &mcp.Message{Error: mcp.NewError(mcp.CodeInvalidRequest, "%s", err.Error())})
}
