package httpface

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
	"github.com/mcpgen/mcpgen/launcher/internal/agent"
	"github.com/mcpgen/mcpgen/launcher/internal/httpguard"
	"github.com/mcpgen/mcpgen/mcp"
)

// This file is the modern era of the face (revision 2026-07-28): a POST
// without a session that carries a modern request is served statelessly.
// Its headers are checked against its body (MCP-Protocol-Version, Mcp-Method,
// Mcp-Name), and it is answered on its own response, as JSON or as an event
// stream of its own notifications (progress, the log messages its _meta
// asked for) ending with its answer; subscriptions/listen is a long event
// stream. Closing a response cancels its request.
//
// The requests travel on agent connections that the face keeps for each
// subject at each endpoint (a stateless agent): one carries the subject's
// calls, so that a call held for the agent's input (input_required, when
// a legacy server asks) finds its hold when the retry comes on another
// POST; others carry its subscriptions, which hold their slots for as long
// as they last. A request goes there under an id of the connection's own
// (clients choose theirs alone, and may choose the same), and so does its
// progress token; what comes back is given back the client's. What the
// connection writes is never held up by a client: each request has its
// own bounded queue, which its handler drains to its response; a client
// that does not read loses its request (it is cancelled), not the others
// theirs. A stateless agent ends once no request of its has been open for
// the linger (DefaultStatelessLinger): it counts as a client of the
// launcher and of the servers until then.

// DefaultStatelessLinger is how long a stateless agent outlives its last
// request: as long as a call held for its input waits for the retry, by
// default (a server's input_timeout).
const DefaultStatelessLinger = 5 * time.Minute

const (
	// maxListenAgents bounds the agents that carry one subject's
	// subscriptions at one endpoint, each up to agent.MaxInFlight.
	maxListenAgents = 16
	// maxPending and maxPendingBytes bound what waits for one request's
	// client to read it: past either, the request is cut.
	maxPending      = agent.MaxNotes
	maxPendingBytes = agent.SoftQueued
	// keepAlivePeriod spaces the comments that keep a quiet subscription's
	// stream from being closed by an intermediary's idle timeout.
	keepAlivePeriod = 25 * time.Second
)

// Header names of the modern revision's request metadata.
const (
	versionHeader = "MCP-Protocol-Version"
	methodHeader  = "Mcp-Method"
	nameHeader    = "Mcp-Name"
)

// removedMethods are the legacy methods that the modern revision has not:
// a stateless request of one is answered 404, -32601.
var removedMethods = map[string]bool{
	"initialize": true, "ping": true, "logging/setLevel": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
}

// wantsStateless reports whether a POST without a session is of the modern
// era: its MCP-Protocol-Version names no legacy version, or its body's
// _meta names a version. A legacy client's first POST (initialize, with a
// legacy version or none) is not.
func wantsStateless(r *http.Request, msg *mcp.Message) bool {
	v := r.Header.Get(versionHeader)
	if v != "" && mcp.VersionEra(v) != mcp.EraLegacy {
		return true
	}
	return msg.Method != "initialize" && bytes.Contains(msg.Params, []byte(mcp.MetaProtocolVersion))
}

// A statelessKey names a stateless agent: the endpoint's server ("" the
// gateway), the subject it serves, and its lane: 0 carries the calls,
// 1 and up the subscriptions.
type statelessKey struct {
	server, subject string
	tools           string // the gateway's ?tools: a session lists in one way
	lane            int
}

// stateless serves a POST of the modern era.
func (f *Face) stateless(w http.ResponseWriter, r *http.Request, server string, msg *mcp.Message) {
	switch {
	case msg.IsNotification():
		// The revision has no client notification over HTTP (a client
		// cancels by closing its response): accepted, and let be.
		w.WriteHeader(http.StatusAccepted)
		return
	case !msg.IsRequest():
		writeMessage(w, http.StatusBadRequest, &mcp.Message{Error: mcp.NewError(mcp.CodeInvalidRequest, "a response has no request to answer here: without a session, the server asks for input in input_required results")})
		return
	}
	meta, err := checkRequest(r, msg)
	if err != nil {
		status := http.StatusBadRequest // the request cannot be taken as it is
		if err.Code == mcp.CodeMethodNotFound {
			status = http.StatusNotFound
		}
		writeMessage(w, status, &mcp.Message{ID: msg.ID, Error: err})
		return
	}
	listen := msg.Method == "subscriptions/listen"
	if f.opts.Ready != nil {
		select {
		case <-f.opts.Ready:
		case <-r.Context().Done():
			return
		case <-f.ctx.Done():
			unavailable(w, "the launcher is stopping")
			return
		}
	}
	if !f.takeStream() {
		unavailable(w, "too many requests open: try again later")
		return
	}
	defer f.releaseStream()
	a, refused := f.statelessAgent(r, server, subjectOf(r), listen)
	if a == nil {
		refused(w)
		return
	}
	mc, line, err := a.register(msg, meta, listen)
	if err != nil {
		a.finish()
		writeMessage(w, http.StatusBadRequest, &mcp.Message{ID: msg.ID, Error: err})
		return
	}
	mc.serve(w, r, line)
	a.finish()
}

// checkRequest checks a stateless request's _meta and the headers that
// mirror its body, and returns its _meta: an error says what is wrong, in
// the revision's terms (stateless answers it 400, or 404 for a method the
// revision has not).
func checkRequest(r *http.Request, msg *mcp.Message) (mcp.RequestMeta, *mcp.Error) {
	meta, perr := mcp.ParseRequestMeta(msg.Params)
	if perr != nil {
		return meta, asMCPError(perr)
	}
	if meta.ProtocolVersion == "" {
		return meta, mcp.NewError(mcp.CodeInvalidParams, "invalid params: _meta[%q] is required: a request without a session is of revision %s, and names its version, the client's capabilities and identity in params._meta", mcp.MetaProtocolVersion, mcp.ModernVersion)
	}
	header := r.Header.Get(versionHeader)
	if header == "" {
		return meta, mismatch("the %s header is required (it must be %q, the body's version)", versionHeader, meta.ProtocolVersion)
	}
	if header != meta.ProtocolVersion {
		return meta, mismatch("the %s header %q does not match the body's version %q", versionHeader, header, meta.ProtocolVersion)
	}
	if err := mcp.CheckModernRequest(&meta, mcp.ModernVersions); err != nil {
		return meta, err
	}
	switch method := r.Header.Get(methodHeader); {
	case method == "":
		return meta, mismatch("the %s header is required (it must be %q, the body's method)", methodHeader, msg.Method)
	case method != msg.Method:
		return meta, mismatch("the %s header %q does not match the body's method %q", methodHeader, method, msg.Method)
	}
	if member := nameMember(msg.Method); member != "" {
		want, _ := stringMember(msg.Params, member)
		got, present := r.Header[http.CanonicalHeaderKey(nameHeader)]
		if !present || len(got) != 1 {
			return meta, mismatch("the %s header is required once for %s (it must be params.%s)", nameHeader, msg.Method, member)
		}
		value, ok := decodeHeader(got[0])
		if !ok {
			return meta, mismatch("the %s header holds characters a header value may not, or a malformed =?base64?...?= value", nameHeader)
		}
		if value != want {
			return meta, mismatch("the %s header %q does not match params.%s %q", nameHeader, value, member, want)
		}
	}
	if removedMethods[msg.Method] {
		return meta, mcp.NewError(mcp.CodeMethodNotFound, "method not found: %s is not part of revision %s (it has no session, no ping, and a request's log level is in its _meta)", msg.Method, mcp.ModernVersion)
	}
	return meta, nil
}

func mismatch(format string, args ...any) *mcp.Error {
	return mcp.NewError(mcp.CodeHeaderMismatch, "Header mismatch: "+format, args...)
}

func asMCPError(err error) *mcp.Error {
	if e, ok := err.(*mcp.Error); ok {
		return e
	}
	return mcp.NewError(mcp.CodeInvalidParams, "invalid params: %v", err)
}

// nameMember is the member of params that Mcp-Name mirrors for a method,
// or "" when it mirrors none.
func nameMember(method string) string {
	switch method {
	case "tools/call", "prompts/get":
		return "name"
	case "resources/read":
		return "uri"
	}
	return ""
}

// stringMember returns params' member key when it is a string.
func stringMember(params json.RawMessage, key string) (string, bool) {
	members, err := jsonwire.Members(params, 0)
	if err != nil {
		return "", false
	}
	for _, mb := range members {
		if mb.Key == key {
			v := mb.Value
			if len(v) < 2 || v[0] != '"' {
				return "", false
			}
			return jsonwire.Unquote(v, bytes.IndexByte(v, '\\') >= 0), true
		}
	}
	return "", false
}

// decodeHeader reads a mirrored header's value: as it is, or the UTF-8
// text of its =?base64?...?= form. A value with characters a header may
// not carry, or a malformed encoded one, is not read.
func decodeHeader(v string) (string, bool) {
	for i := range len(v) {
		if c := v[i]; (c < 0x20 && c != '\t') || c > 0x7e {
			return "", false
		}
	}
	rest, encoded := strings.CutPrefix(v, "=?base64?")
	if !encoded {
		return v, true
	}
	rest, encoded = strings.CutSuffix(rest, "?=")
	if !encoded {
		return v, true
	}
	b, err := base64.StdEncoding.DecodeString(rest)
	if err != nil || !utf8.Valid(b) {
		return "", false
	}
	return string(b), true
}

// statusOf is the HTTP status of a stateless request's error answer, as
// the revision has it: 404 for a method the server has not, 400 for a
// request it cannot take as it is (its headers, its version, its _meta,
// a capability it needs of the client), 200 for the rest (a tool's
// failure is an answer).
func statusOf(err *mcp.Error) int {
	switch err.Code {
	case mcp.CodeMethodNotFound:
		return http.StatusNotFound
	case mcp.CodeHeaderMismatch, mcp.CodeMissingRequiredCapability, mcp.CodeUnsupportedProtocolVersion, mcp.CodeParseError, mcp.CodeInvalidRequest:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// statelessAgent returns an agent of the subject's at the endpoint with
// room for one more request, counted in (finish counts it out), made if
// need be; or, when there is none, what answers the POST: 404 for an
// endpoint whose server is not the workspace's, 503 at the bounds.
func (f *Face) statelessAgent(r *http.Request, server, subject string, listen bool) (*statelessAgent, func(http.ResponseWriter)) {
	first, last := 0, 0
	if listen {
		first, last = 1, maxListenAgents
	}
	var serve Serve
	tools := toolsOf(r)
	// Twice at most: the second time with what serves the endpoint.
	for {
		f.mu.Lock()
		free := -1 // a lane without an agent
		for lane := first; lane <= last; lane++ {
			key := statelessKey{server: server, subject: subject, tools: tools, lane: lane}
			a := f.agents[key]
			if a != nil && a.over() {
				delete(f.agents, key)
				a = nil
			}
			if a == nil {
				if free < 0 {
					free = lane
				}
				continue
			}
			if a.take(listen) {
				f.mu.Unlock()
				return a, nil
			}
		}
		if free < 0 {
			f.mu.Unlock()
			if listen {
				return nil, func(w http.ResponseWriter) {
					unavailable(w, "too many subscriptions open for this client: end some before asking more")
				}
			}
			return nil, func(w http.ResponseWriter) {
				unavailable(w, "too many requests open for this client: wait for answers before asking more")
			}
		}
		if serve == nil {
			f.mu.Unlock()
			s, err := f.opts.Endpoint(server, tools)
			if err != nil {
				return nil, func(w http.ResponseWriter) { httpguard.Refuse(w, http.StatusNotFound, err.Error()) }
			}
			serve = s
			continue // another request may have made the agent meanwhile
		}
		switch {
		case f.closed:
			f.mu.Unlock()
			return nil, func(w http.ResponseWriter) { unavailable(w, "the launcher is stopping") }
		case len(f.sessions)+len(f.agents) >= f.opts.MaxSessions:
			f.mu.Unlock()
			f.log.Warn("http: stateless client refused", "reason", "too many sessions", "max", f.opts.MaxSessions, "remote", r.RemoteAddr)
			return nil, func(w http.ResponseWriter) {
				unavailable(w, "too many clients ("+strconv.Itoa(f.opts.MaxSessions)+"): try again later")
			}
		}
		if f.opts.Open != nil && !f.opts.Open() {
			f.mu.Unlock()
			return nil, func(w http.ResponseWriter) { unavailable(w, "the launcher is exiting") }
		}
		a := newStatelessAgent(f, statelessKey{server: server, subject: subject, tools: tools, lane: free})
		a.take(listen)
		f.agents[a.key] = a
		f.goServe(serve, a, a.end)
		f.mu.Unlock()
		return a, nil
	}
}

// forgetAgent removes an ended stateless agent, and counts it out of the
// launcher's clients (once: end calls it once).
func (f *Face) forgetAgent(a *statelessAgent) {
	f.mu.Lock()
	if f.agents[a.key] == a {
		delete(f.agents, a.key)
	}
	f.mu.Unlock()
	if f.opts.Close != nil {
		f.opts.Close()
	}
}

// A statelessAgent is the connection of lines that carries stateless
// requests to the gateway or a server's hub, as a session carries a
// legacy agent's: Read gives the requests, each under an id of its own;
// Write takes what the agent connection writes, and puts it in the queue
// of the request it belongs to, never blocking.
type statelessAgent struct {
	f   *Face
	key statelessKey

	feed    // the requests' lines, for Read; ended once the agent ends
	endOnce sync.Once

	mu     sync.Mutex
	seq    int64
	calls  map[string]*modernCall // requests under way, by the agent connection's id (JSON text)
	open   int                    // requests taken and not finished
	used   uint64                 // counts every finish: the linger's check
	linger *time.Timer
}

func newStatelessAgent(f *Face, key statelessKey) *statelessAgent {
	return &statelessAgent{
		f: f, key: key,
		feed:  newFeed(),
		calls: map[string]*modernCall{},
	}
}

// take counts one more request in, unless the agent has as many as it
// may carry at once: a lane of subscriptions as many as its connection
// has slots (each holds one while it lasts); the lane of calls as many as
// its connection admits and keeps waiting (past which its POST is refused,
// 503). The caller holds f.mu.
func (a *statelessAgent) take(listen bool) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	max := agent.MaxInFlight + agent.MaxWaiting
	if listen {
		max = agent.MaxInFlight
	}
	if a.open >= max {
		return false
	}
	a.open++
	if a.linger != nil {
		a.linger.Stop()
	}
	return true
}

// finish counts a request out: once none is open, the agent ends after
// the linger unless another comes.
func (a *statelessAgent) finish() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.open--
	a.used++
	if a.open == 0 {
		used := a.used
		if a.linger != nil {
			a.linger.Stop()
		}
		a.linger = time.AfterFunc(a.f.opts.StatelessLinger, func() {
			a.mu.Lock()
			idle := a.open == 0 && a.used == used
			a.mu.Unlock()
			if idle {
				a.end(errExpired)
			}
		})
	}
}

// Close ends the agent: the agent connection closes it when it ends.
func (a *statelessAgent) Close() error {
	a.end(errConnEnded)
	return nil
}

// end ends the agent, once: its requests under way are answered with an
// error, and its connection ends (what it had under way is cancelled).
func (a *statelessAgent) end(why error) {
	a.endOnce.Do(func() {
		close(a.ended)
		a.mu.Lock()
		calls := a.calls
		a.calls = map[string]*modernCall{}
		if a.linger != nil {
			a.linger.Stop()
		}
		a.mu.Unlock()
		for _, mc := range calls {
			mc.gone(why)
		}
		a.f.forgetAgent(a)
		if why != errExpired && why != errFaceClosed {
			a.f.log.Info("http: stateless client's connection ended", "server", a.key.server, "reason", why)
		}
	})
}

// register makes a request the agent connection's: under an id of its
// own, and a progress token of its own if it gave one, and returns the
// line that carries it.
func (a *statelessAgent) register(msg *mcp.Message, meta mcp.RequestMeta, listen bool) (*modernCall, []byte, *mcp.Error) {
	a.mu.Lock()
	a.seq++
	own := mcp.Int64ID(a.seq)
	a.mu.Unlock()
	mc := &modernCall{a: a, id: msg.ID, own: own.String(), listen: listen, ready: make(chan struct{}, 1), logRank: -1}
	if meta.LogLevel != "" {
		mc.logRank, _ = agent.LogRank(meta.LogLevel)
	}
	if len(meta.ProgressToken) > 0 && string(meta.ProgressToken) != "null" {
		params, err := mcp.SetMeta(msg.Params, mcp.ObjectMember{Key: mcp.MetaProgressToken, Value: json.RawMessage(mc.own)})
		if err != nil {
			return nil, nil, asMCPError(err)
		}
		mc.token = meta.ProgressToken
		msg.Params = params
	}
	msg.ID = own
	line := agent.EncodeLine(msg)
	a.mu.Lock()
	a.calls[mc.own] = mc
	a.mu.Unlock()
	return mc, line, nil
}

// Write takes one line the agent connection writes, and queues it for the
// request it belongs to (see the file's comment): an answer, given back
// its client's id; progress, given back its client's token; a
// subscription's notification, given back its subscription's id; a log
// message, for each request under way that asked for its level. What
// belongs to no request is dropped: a stateless client has nowhere else
// to hear it. It fails only once the agent has ended.
func (a *statelessAgent) Write(line []byte) (int, error) {
	select {
	case <-a.ended:
		return 0, errEnded
	default:
	}
	msg, err := mcp.DecodeMessage(line)
	if err != nil {
		a.f.log.Warn("http: an unreadable line for a stateless client was dropped", "server", a.key.server, "error", err)
		return len(line), nil
	}
	switch {
	case msg.IsResponse():
		a.mu.Lock()
		mc := a.calls[msg.ID.String()]
		delete(a.calls, msg.ID.String())
		a.mu.Unlock()
		if mc != nil {
			msg.ID = mc.id
			mc.put(agent.EncodeLine(msg), true, msg.Error)
		}
	case msg.IsRequest():
		// A face sends a modern agent none (its servers' requests become
		// input_required results): refused, should one come.
		refusal := agent.EncodeLine(&mcp.Message{ID: msg.ID, Error: mcp.NewError(mcp.CodeMethodNotFound, "a stateless HTTP client answers no requests")})
		go func() {
			select {
			case a.in <- refusal:
			case <-a.ended:
			}
		}()
	case msg.Method == "notifications/progress":
		if mc := a.call(progressTokenOf(msg.Params)); mc != nil && mc.token != nil {
			if params, err := mcp.SetMembers(msg.Params, mcp.ObjectMember{Key: mcp.MetaProgressToken, Value: mc.token}); err == nil {
				msg.Params = params
				mc.put(agent.EncodeLine(msg), false, nil)
			}
		}
	case msg.Method == "notifications/message":
		a.logMessage(msg, line)
	default:
		if id, ok := mcp.SubscriptionID(msg.Params); ok {
			if mc := a.call(id.String()); mc != nil {
				if params, err := mcp.SetMeta(msg.Params, mcp.ObjectMember{Key: mcp.MetaSubscriptionID, Value: json.RawMessage(mc.id.String())}); err == nil {
					msg.Params = params
					mc.put(agent.EncodeLine(msg), false, nil)
				}
			}
		}
	}
	return len(line), nil
}

func (a *statelessAgent) call(own string) *modernCall {
	if own == "" {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls[own]
}

// logMessage gives a server's log message to each request under way whose
// _meta asked for its level or a more verbose one.
func (a *statelessAgent) logMessage(msg *mcp.Message, line []byte) {
	level, _ := stringMember(msg.Params, "level")
	rank, ok := agent.LogRank(level)
	if !ok {
		return
	}
	a.mu.Lock()
	var to []*modernCall
	for _, mc := range a.calls {
		if mc.logRank >= 0 && mc.logRank <= rank {
			to = append(to, mc)
		}
	}
	a.mu.Unlock()
	for _, mc := range to {
		mc.put(bytes.Clone(line), false, nil)
	}
}

// forget forgets a request that never reached the agent connection.
func (a *statelessAgent) forget(mc *modernCall) {
	a.mu.Lock()
	delete(a.calls, mc.own)
	a.mu.Unlock()
}

// cancel tells the agent connection that a request's client went (closing
// its response cancels it), unless it was answered meanwhile.
func (a *statelessAgent) cancel(mc *modernCall) {
	a.mu.Lock()
	_, open := a.calls[mc.own]
	delete(a.calls, mc.own)
	a.mu.Unlock()
	if !open {
		return
	}
	line := []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + mc.own + `,"reason":"the client closed its response"}}` + "\n")
	// On the agent's goroutine of the face's: the connection may not read
	// at once, and this handler is done.
	a.f.wg.Add(1)
	go func() {
		defer a.f.wg.Done()
		select {
		case a.in <- line:
		case <-a.ended:
		}
	}()
}

// A modernCall is one stateless request under way: what the agent
// connection sent it waits in its queue until its handler writes it.
type modernCall struct {
	a       *statelessAgent
	id      mcp.ID          // the client's
	own     string          // the agent connection's id, JSON text (and progress token)
	token   json.RawMessage // the client's progress token; nil when it gave none
	logRank int             // the most verbose log level it asked for; -1 none
	listen  bool
	ready   chan struct{} // signalled when lines wait

	mu      sync.Mutex
	lines   [][]byte
	bytes   int
	answer  *mcp.Error // the answer's error, once the answer waits
	final   bool       // the answer is queued: nothing more is
	cut     bool       // its client did not read: it takes nothing more
	why     error      // the agent ended under it
	done    bool       // its handler returned
	rc      *http.ResponseController
	blocked bool // a write deadline was set to free its handler
}

// put queues a line for the call's client: final when it is the answer,
// whose error errAnswer is (nil for a result). A queue past its bounds
// cuts the call: its handler ends its response, and the request is
// cancelled. The answer always has room.
func (mc *modernCall) put(line []byte, final bool, errAnswer *mcp.Error) {
	mc.mu.Lock()
	if mc.final || mc.cut || mc.done {
		mc.mu.Unlock()
		return
	}
	if !final && (len(mc.lines) >= maxPending || mc.bytes+len(line) > maxPendingBytes) {
		mc.cut = true
		// Its handler may be stuck in a write to the client: freed.
		if mc.rc != nil && mc.rc.SetWriteDeadline(time.Now()) == nil {
			mc.blocked = true
		}
		mc.a.f.log.Warn("http: a stateless client that does not read its response was cut off", "server", mc.a.key.server, "request", mc.id.String(), "waiting", len(mc.lines))
	} else {
		mc.lines = append(mc.lines, line)
		mc.bytes += len(line)
		mc.final, mc.answer = final, errAnswer
	}
	mc.mu.Unlock()
	select {
	case mc.ready <- struct{}{}:
	default:
	}
}

// gone ends a call whose agent ended under it.
func (mc *modernCall) gone(why error) {
	mc.mu.Lock()
	mc.why = why
	mc.mu.Unlock()
	select {
	case mc.ready <- struct{}{}:
	default:
	}
}

// take returns what waits, and what state the call is in.
func (mc *modernCall) take() (lines [][]byte, final bool, answer *mcp.Error, cut bool, why error) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	lines, mc.lines, mc.bytes = mc.lines, nil, 0
	return lines, mc.final, mc.answer, mc.cut, mc.why
}

// serve hands the request's line to the agent connection, and writes what
// comes for it to its response until its answer (a subscription: until
// its client or the agent ends it): the answer alone as JSON, or an event
// stream.
func (mc *modernCall) serve(w http.ResponseWriter, r *http.Request, line []byte) {
	a := mc.a
	st := newStream(w, "")
	mc.mu.Lock()
	mc.rc = st.rc
	mc.mu.Unlock()
	defer func() {
		mc.mu.Lock()
		mc.done = true
		blocked := mc.blocked
		mc.mu.Unlock()
		if blocked {
			// The connection may carry the client's next request.
			_ = st.rc.SetWriteDeadline(time.Time{})
		}
	}()
	if !a.hand(r, line) {
		a.forget(mc)
		if r.Context().Err() == nil {
			writeMessage(w, http.StatusServiceUnavailable, &mcp.Message{ID: mc.id, Error: mcp.NewError(agent.CodeUnavailable, "the workspace's connection for this client ended: try again")})
		}
		return
	}
	var tick <-chan time.Time
	if mc.listen {
		st.startEvents()
		t := time.NewTicker(keepAlivePeriod)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-mc.ready:
		case <-tick:
			if !st.comment() {
				a.cancel(mc)
				return
			}
			continue
		case <-r.Context().Done():
			a.cancel(mc)
			return
		}
		lines, final, answer, cut, why := mc.take()
		if cut {
			a.cancel(mc)
			return
		}
		if final && !st.sse && len(lines) == 1 {
			status := http.StatusOK
			if answer != nil {
				status = statusOf(answer)
			}
			st.answerWith("", lines[0], status)
			return
		}
		for _, l := range lines {
			if !st.event("", l) {
				a.cancel(mc)
				return
			}
		}
		if final {
			return
		}
		if why != nil {
			gone := &mcp.Message{ID: mc.id, Error: mcp.NewError(agent.CodeUnavailable, "the workspace's connection for this client ended (%v): try again", why)}
			if st.sse {
				st.event("", agent.EncodeLine(gone))
			} else {
				writeMessage(w, http.StatusServiceUnavailable, gone)
			}
			return
		}
	}
}

var keepAlive = []byte(": keep-alive\n\n")

// comment writes an event stream's keep-alive comment, and reports whether
// it was written.
func (st *stream) comment() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.over || st.failed {
		return false
	}
	if !st.sse {
		st.startEvents()
	}
	if _, err := st.w.Write(keepAlive); err != nil {
		st.failed = true
		return false
	}
	st.flush()
	return !st.failed
}
