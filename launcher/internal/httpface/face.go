// Package httpface is the launcher's HTTP face: the workspace gateway at
// /mcp, and each server alone at /servers/NAME/mcp, over Streamable HTTP in
// both eras. Beside the stdio faces (mcpgen connect), it is the third user
// of the agent connection type (launcher/internal/agent): an HTTP session,
// named by its Mcp-Session-Id, is one legacy agent's connection, served by
// the gateway or a server's hub as a connection of lines is (see session);
// the modern era's stateless requests travel on connections the face
// keeps for each client (see stateless.go). What reaches the endpoints has
// passed httpguard (Host and Origin on loopback, media types, the body's
// size and deadline) and httpauth (bearer tokens, JWTs).
//
// How a legacy session's messages travel: each POST carries one message to
// the session's agent connection; the answer to a request goes to the POST
// that asked, as JSON, or as an event stream once something else must go
// there first (progress of its own, or a message for the agent while it has
// no GET stream). What the agent is sent otherwise goes to its GET stream,
// or waits for one, within bounds. DELETE ends the session; a session
// unused for the session timeout ends too. An agent that does not read what
// it is sent is dropped at the bounds of a stdio agent: the session's
// writes block on its streams as a pipe's would, and the agent connection's
// outbox bounds what waits.
package httpface

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpgen/mcpgen/launcher/internal/agent"
	"github.com/mcpgen/mcpgen/launcher/internal/httpauth"
	"github.com/mcpgen/mcpgen/launcher/internal/httpguard"
	"github.com/mcpgen/mcpgen/mcp"
)

// Defaults of the Options' bounds.
const (
	// DefaultSessionTimeout ends a session that nothing used for that long.
	DefaultSessionTimeout = 30 * time.Minute
	// DefaultMaxSessions bounds the sessions open at once.
	DefaultMaxSessions = 1024
	// DefaultMaxStreams bounds a session's requests open at once (POSTs
	// that wait for their answers, and the GET stream): what its agent
	// connection admits (agent.MaxInFlight under way, agent.MaxWaiting
	// waiting), and a few notifications and answers on their way in.
	DefaultMaxStreams = agent.MaxInFlight + agent.MaxWaiting + 8
	// DefaultMaxAllStreams bounds the requests open at once, all sessions
	// together.
	DefaultMaxAllStreams = 4096
)

// retryAfter is the Retry-After, in seconds, of a 503 for too many
// sessions or streams: some end within that.
const retryAfter = 5

// A Serve function serves one agent on rwc, a connection of lines (as
// gateway.Gateway.Serve and hub.Hub.Serve do), until rwc closes or the
// server side ends it; it closes rwc before it returns.
type Serve func(ctx context.Context, rwc io.ReadWriteCloser)

// Options configure a Face.
type Options struct {
	// Log hears of sessions that end for a reason the agent did not give,
	// and of what was lost.
	Log *slog.Logger
	// Endpoint returns what serves an agent of server's endpoint (""
	// the gateway's), or why there is none: the workspace has no such
	// server (404). tools is the gateway endpoint's ?tools, one of
	// Tools, or "".
	Endpoint func(server, tools string) (Serve, error)
	// Tools are the values that the gateway's endpoint takes in its
	// ?tools parameter: how an agent's session lists the workspace's
	// tools (connect --tools over HTTP). None: it takes none.
	Tools []string
	// Open counts a session as a client of the launcher, for as long as
	// it is open (Close, once it ends): it keeps the launcher from
	// exiting for idleness. It reports false when the launcher exits:
	// the session is refused. nil: nothing is counted.
	Open  func() bool
	Close func()
	// Ready, once closed, lets sessions begin: the workspace serves (its
	// first manifest applied). nil: at once.
	Ready <-chan struct{}
	// Auth admits requests (nil: every one); Loopback checks the Host and
	// Origin of every request (httpguard.Local).
	Auth     *httpauth.Authenticator
	Loopback bool
	// SessionTimeout, MaxSessions, MaxStreams (per session) and
	// MaxAllStreams: 0 is the default.
	SessionTimeout time.Duration
	MaxSessions    int
	MaxStreams     int
	MaxAllStreams  int
	// MaxBody bounds a POST's body; 0: httpguard.MaxBody.
	MaxBody int64
	// StatelessLinger is how long a stateless agent outlives its last
	// request (see stateless.go); 0: DefaultStatelessLinger.
	StatelessLinger time.Duration
}

// A Face serves the workspace's MCP endpoints over HTTP. Its goroutines: one
// per session, which serves the session's agent connection and ends with it
// (Close ends them all, and waits).
type Face struct {
	opts Options
	log  *slog.Logger
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu       sync.Mutex
	sessions map[string]*session
	agents   map[statelessKey]*statelessAgent
	streams  int  // requests open, all sessions together
	closed   bool // Close was called: no more sessions
}

// New returns a Face; ctx bounds every session's agent connection.
func New(ctx context.Context, opts Options) *Face {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = DefaultSessionTimeout
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = DefaultMaxStreams
	}
	if opts.MaxAllStreams <= 0 {
		opts.MaxAllStreams = DefaultMaxAllStreams
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = httpguard.MaxBody
	}
	if opts.StatelessLinger <= 0 {
		opts.StatelessLinger = DefaultStatelessLinger
	}
	f := &Face{opts: opts, log: opts.Log, sessions: map[string]*session{}, agents: map[statelessKey]*statelessAgent{}}
	f.ctx, f.stop = context.WithCancel(ctx)
	return f
}

// Handler is the face's HTTP handler: the MCP endpoints, behind the
// authenticator, the Protected Resource Metadata, which is public, and a
// 404 for every other path; behind httpguard.Local on loopback.
func (f *Face) Handler() http.Handler {
	var endpoint http.Handler = http.HandlerFunc(f.serveMCP)
	if f.opts.Auth != nil {
		endpoint = f.opts.Auth.Wrap(endpoint)
	}
	mux := http.NewServeMux()
	mux.Handle(httpauth.GatewayPath, endpoint)
	mux.Handle("/servers/{name}/mcp", endpoint)
	if a := f.opts.Auth; a != nil {
		mux.HandleFunc(httpauth.MetadataPath, a.ServeMetadata)
		mux.HandleFunc(httpauth.MetadataPath+"/", a.ServeMetadata)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		httpguard.Refuse(w, http.StatusNotFound, "no MCP endpoint here: the workspace gateway is at "+httpauth.GatewayPath+", each server at "+httpauth.ServerPath("NAME"))
	})
	var h http.Handler = mux
	if f.opts.Loopback {
		h = httpguard.Local(h)
	}
	return h
}

// Close ends every session (their agents' requests under way are
// cancelled, their streams end) and refuses new ones; it returns once
// every session's agent connection has ended.
func (f *Face) Close() {
	f.mu.Lock()
	f.closed = true
	all := make([]*session, 0, len(f.sessions))
	for _, s := range f.sessions {
		all = append(all, s)
	}
	agents := make([]*statelessAgent, 0, len(f.agents))
	for _, a := range f.agents {
		agents = append(agents, a)
	}
	f.mu.Unlock()
	for _, s := range all {
		s.end(errFaceClosed)
	}
	for _, a := range agents {
		a.end(errFaceClosed)
	}
	f.stop()
	f.wg.Wait()
}

// Sessions returns how many sessions are open.
func (f *Face) Sessions() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sessions)
}

// Stateless returns how many stateless agents are open.
func (f *Face) Stateless() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.agents)
}

var (
	errFaceClosed = errors.New("the launcher is stopping")
	errDeleted    = errors.New("the client ended the session (DELETE)")
	errExpired    = errors.New("the session expired")
	errConnEnded  = errors.New("the agent connection ended")
)

// serveMCP serves an MCP endpoint: POST, GET and DELETE of the legacy
// Streamable HTTP transport.
func (f *Face) serveMCP(w http.ResponseWriter, r *http.Request) {
	server := r.PathValue("name")
	switch r.Method {
	case http.MethodPost, http.MethodGet, http.MethodDelete:
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		httpguard.Refuse(w, http.StatusMethodNotAllowed, "an MCP endpoint takes POST, GET and DELETE")
		return
	}
	if !httpguard.Check(w, r) {
		return
	}
	if !f.checkTools(w, r, server) {
		return
	}
	// A POST without a session may be of the modern era, whose version
	// the stateless face checks against the body's.
	stateless := r.Method == http.MethodPost && r.Header.Get(sessionHeader) == ""
	if v := r.Header.Get(versionHeader); v != "" && !stateless && !slices.Contains(mcp.SupportedVersions, v) {
		httpguard.Refuse(w, http.StatusBadRequest, "unsupported MCP-Protocol-Version "+strconv.Quote(v)+": this endpoint speaks "+strings.Join(mcp.SupportedVersions, ", "))
		return
	}
	switch r.Method {
	case http.MethodPost:
		f.post(w, r, server)
	case http.MethodGet:
		if s := f.sessionOf(w, r, server); s != nil {
			s.serveGet(w, r)
		}
	case http.MethodDelete:
		if s := f.sessionOf(w, r, server); s != nil {
			s.end(errDeleted)
			w.WriteHeader(http.StatusNoContent)
		}
	}
}

// checkTools answers 400 to a ?tools that the endpoint does not take: on
// a server's endpoint, or a value not among Options.Tools.
func (f *Face) checkTools(w http.ResponseWriter, r *http.Request, server string) bool {
	tools := toolsOf(r)
	switch {
	case tools == "":
		return true
	case server != "":
		httpguard.Refuse(w, http.StatusBadRequest, "?tools chooses how the gateway lists the workspace's tools: a server's endpoint lists its own; use the gateway's, "+httpauth.GatewayPath)
		return false
	case !slices.Contains(f.opts.Tools, tools):
		httpguard.Refuse(w, http.StatusBadRequest, "?tools="+strconv.Quote(tools)+": use one of "+strings.Join(f.opts.Tools, ", "))
		return false
	}
	return true
}

// toolsOf is r's ?tools, "" if none.
func toolsOf(r *http.Request) string { return r.URL.Query().Get("tools") }

// post serves a POST: one message for the session's agent connection, or
// an initialize that begins a session.
func (f *Face) post(w http.ResponseWriter, r *http.Request, server string) {
	body, ok := httpguard.ReadBody(w, r, f.opts.MaxBody)
	if !ok {
		return
	}
	msg, line, bad := decode(body)
	if bad != nil {
		writeMessage(w, http.StatusBadRequest, bad)
		return
	}
	var s *session
	if r.Header.Get(sessionHeader) == "" {
		if wantsStateless(r, msg) {
			f.stateless(w, r, server, msg)
			return
		}
		if v := r.Header.Get(versionHeader); v != "" && !slices.Contains(mcp.SupportedVersions, v) {
			httpguard.Refuse(w, http.StatusBadRequest, "unsupported MCP-Protocol-Version "+strconv.Quote(v)+": this endpoint speaks "+strings.Join(append(slices.Clone(mcp.ModernVersions), mcp.SupportedVersions...), ", "))
			return
		}
		if !msg.IsRequest() || msg.Method != "initialize" {
			httpguard.Refuse(w, http.StatusBadRequest, "no "+sessionHeader+" header: a session begins with initialize, whose answer carries the session's id")
			return
		}
		if s = f.newSession(w, r, server); s == nil {
			return
		}
	} else if s = f.sessionOf(w, r, server); s == nil {
		return
	}
	s.post(w, r, msg, line)
}

// sessionHeader names the session of a request, and of the answer to an
// initialize.
const sessionHeader = "Mcp-Session-Id"

// sessionOf returns the session that r names, or answers r: 400 without
// a session id, 404 for one that is unknown, ended, of another endpoint
// or of another subject.
func (f *Face) sessionOf(w http.ResponseWriter, r *http.Request, server string) *session {
	id := r.Header.Get(sessionHeader)
	if id == "" {
		httpguard.Refuse(w, http.StatusBadRequest, "no "+sessionHeader+" header: a session begins with a POST of initialize, whose answer carries the session's id")
		return nil
	}
	f.mu.Lock()
	s := f.sessions[id]
	f.mu.Unlock()
	if s == nil || s.server != server || s.subject != subjectOf(r) {
		httpguard.Refuse(w, http.StatusNotFound, "no session "+strconv.Quote(id)+" here (it ended, expired, or never was): initialize a new one")
		return nil
	}
	return s
}

// subjectOf is who the request was admitted as: a JWT's subject, or ""
// (a bearer token, or no authentication). A session answers its subject
// only.
func subjectOf(r *http.Request) string {
	id, _ := httpauth.FromContext(r.Context())
	return id.Subject
}

// newSession begins a session for an initialize, or answers r: 503 when
// the launcher is stopping or has as many sessions as it may, 404 when
// the endpoint's server is not the workspace's.
func (f *Face) newSession(w http.ResponseWriter, r *http.Request, server string) *session {
	if f.opts.Ready != nil {
		select {
		case <-f.opts.Ready:
		case <-r.Context().Done():
			return nil
		case <-f.ctx.Done():
			unavailable(w, "the launcher is stopping")
			return nil
		}
	}
	serve, err := f.opts.Endpoint(server, toolsOf(r))
	if err != nil {
		httpguard.Refuse(w, http.StatusNotFound, err.Error())
		return nil
	}
	f.mu.Lock()
	switch {
	case f.closed:
		f.mu.Unlock()
		unavailable(w, "the launcher is stopping")
		return nil
	case len(f.sessions) >= f.opts.MaxSessions:
		f.mu.Unlock()
		f.log.Warn("http: session refused", "reason", "too many sessions", "max", f.opts.MaxSessions, "remote", r.RemoteAddr)
		unavailable(w, "too many sessions open ("+strconv.Itoa(f.opts.MaxSessions)+"): try again later")
		return nil
	}
	if f.opts.Open != nil && !f.opts.Open() {
		f.mu.Unlock()
		unavailable(w, "the launcher is exiting")
		return nil
	}
	s := newSession(f, newID(), server, subjectOf(r))
	f.sessions[s.id] = s
	f.goServe(serve, s, s.end)
	f.mu.Unlock()
	return s
}

// goServe serves an agent connection on rwc (a session, a stateless agent)
// on a goroutine of the face's, which Close waits for; end ends rwc's
// owner once the connection has ended. The caller holds f.mu, and has
// checked that the face is not closed.
func (f *Face) goServe(serve Serve, rwc io.ReadWriteCloser, end func(error)) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		serve(f.ctx, rwc)
		end(errConnEnded)
	}()
}

// forget removes an ended session, and counts it out of the launcher's
// clients.
func (f *Face) forget(s *session) {
	f.mu.Lock()
	was := f.sessions[s.id] == s
	delete(f.sessions, s.id)
	f.mu.Unlock()
	if was && f.opts.Close != nil {
		f.opts.Close()
	}
}

// takeStream counts a request that opens a stream, unless as many are
// open as may be.
func (f *Face) takeStream() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.streams >= f.opts.MaxAllStreams {
		return false
	}
	f.streams++
	return true
}

func (f *Face) releaseStream() {
	f.mu.Lock()
	f.streams--
	f.mu.Unlock()
}

// unavailable answers 503, with when to try again.
func unavailable(w http.ResponseWriter, msg string) {
	w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	httpguard.Refuse(w, http.StatusServiceUnavailable, msg)
}

// newID returns a new session id: 128 random bits, in hex (visible
// ASCII, as the transport asks).
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// decode reads a POST's body: one JSON-RPC message, and the line that
// carries it to the agent connection (the body with its line breaks,
// which JSON allows between tokens only, made spaces, and "\n"). A body
// that is not a message gets the error to answer with 400: -32700 when it
// is not JSON, -32600 when it is a batch (which MCP dropped) or not a
// message.
func decode(body []byte) (*mcp.Message, []byte, *mcp.Message) {
	msg, err := mcp.DecodeMessage(body)
	if err != nil {
		var de *mcp.DecodeError
		if !errors.As(err, &de) {
			return nil, nil, &mcp.Message{Error: mcp.NewError(mcp.CodeParseError, "%v", err)}
		}
		if errors.Is(err, mcp.ErrBatch) {
			return nil, nil, &mcp.Message{Error: mcp.NewError(mcp.CodeInvalidRequest, "JSON-RPC batches are not accepted: send one message per POST")}
		}
		return nil, nil, &mcp.Message{ID: de.ID, Error: de.Err}
	}
	if !msg.IsRequest() && !msg.IsNotification() && !msg.IsResponse() {
		return nil, nil, &mcp.Message{Error: mcp.NewError(mcp.CodeInvalidRequest, "the body is not a JSON-RPC request, notification or response")}
	}
	line := body
	for i, b := range line {
		if b == '\n' || b == '\r' {
			line[i] = ' '
		}
	}
	// The message's fields alias body, as the line does: neither is
	// changed again.
	return msg, append(line, '\n'), nil
}

// writeMessage answers with status and a JSON-RPC message (an error).
func writeMessage(w http.ResponseWriter, status int, msg *mcp.Message) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(agent.EncodeLine(msg))
}
