package agent

import (
	"bytes"
	"cmp"
	"slices"
	"sync/atomic"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
	"github.com/mcpgen/mcpgen/mcp"
)

// This file is the agent's era, request by request, once for every face.
// An agent opens a legacy session with initialize; a request whose _meta
// names a version is served statelessly in the modern era (2026-07-28),
// beside a legacy session on the same connection if the agent mixes them.
// A modern request's _meta is read and checked here, server/discover is
// answered here from what the face describes (Handler.Describe), and
// what a modern request is answered is completed here: resultType, the
// server's identity, the caching hints of what may be cached, the tools of
// tools/list in a stable order. subscriptions/listen is subscribe.go's,
// the tasks extension tasks.go's.
//
// What a forwarded request carries to a server of either era is the
// face's (the hub's forAgent, the one place). Translation between eras
// is the hub's (hub/translate.go, with package translate), at the seams
// marked "seam: translation": where a server's input_required result
// reaches a legacy agent (hub.Upstream.forward: it never reaches
// legacyResult here), and where a server's request during a modern agent's
// call is answered (hub.Hub.serverRequest).

// A Description is what a face says of the server it stands for: a
// server's (the hub), or the workspace's (the gateway).
type Description struct {
	// Capabilities in the form server/discover answers them.
	Capabilities json.RawMessage
	// ServerInfo is an mcp.Implementation, encoded: what a modern result
	// names in _meta.
	ServerInfo   json.RawMessage
	Instructions string
	// Own says that the face is the server the agent sees (the gateway,
	// whose results come from several servers): a server's identity in a
	// result is replaced by the face's. Else (the hub) a modern server's
	// own is kept, and the face's added to a legacy server's results.
	Own bool
}

// listTTL is how long, in milliseconds, an agent may hold a list fresh
// when it listens for the list's changes (a subscription of its asks for
// them, and the face tells them): a change ends it at once. An agent that
// does not listen gets 0: it asks again when it needs the list.
const listTTL = 5 * 60 * 1000

// logLevels are the log levels, the most verbose first: the index of a
// level is its rank.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// LogRank returns the rank of a log level (see logLevels), and false for a
// word that is none.
func LogRank(level string) (int, bool) {
	i := slices.Index(logLevels, level)
	return i, i >= 0
}

// readEra reads a request's era from its params: modern when _meta names a
// modern version, with what its _meta says; legacy otherwise. A request
// that names a version nobody speaks gets UnsupportedProtocolVersionError,
// which lists those the launcher speaks; a modern request whose _meta is
// malformed, lacks the client's capabilities or asks for a log level that
// is none gets -32602, naming the member. A legacy request's _meta is left
// to its server, as it always was.
func readEra(params json.RawMessage) (meta mcp.RequestMeta, modern bool, err *mcp.Error) {
	// Most requests of a legacy session name no version: no scan.
	if !bytes.Contains(params, []byte(mcp.MetaProtocolVersion)) {
		return meta, false, nil
	}
	meta, perr := mcp.ParseRequestMeta(params)
	if perr != nil {
		return meta, false, asError(perr)
	}
	switch mcp.VersionEra(meta.ProtocolVersion) {
	case mcp.EraModern:
	case mcp.EraLegacy:
		return meta, false, nil // a legacy client naming its session's version
	default:
		if !meta.Modern() {
			return meta, false, nil // the version's key was elsewhere in params
		}
		return meta, false, mcp.UnsupportedVersionError(meta.ProtocolVersion, mcp.AllVersions())
	}
	if err := mcp.CheckModernRequest(&meta, mcp.ModernVersions); err != nil {
		return meta, false, err
	}
	if meta.LogLevel != "" {
		if _, ok := LogRank(meta.LogLevel); !ok {
			return meta, false, mcp.NewError(mcp.CodeInvalidParams, "invalid params: _meta[%q]: %q is not a log level (%s)",
				mcp.MetaLogLevel, meta.LogLevel, "debug, info, notice, warning, error, critical, alert or emergency")
		}
	}
	return meta, true, nil
}

// WantsLog reports whether the agent asked for a server's log message of
// level (the message's params.level) in a modern request under way: one
// whose _meta's logLevel is level or more verbose. A log message is the
// request's in the modern revision: an agent without a legacy session
// hears only those.
func (c *Conn) WantsLog(level string) bool {
	rank, ok := LogRank(level)
	if !ok {
		rank = len(logLevels) - 1 // a level that is none: as loud as can be, rather than lost
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.logCalls == 0 {
		return false
	}
	for _, call := range c.calls {
		if call.modern && call.meta.LogLevel != "" {
			if want, _ := LogRank(call.meta.LogLevel); want <= rank {
				return true
			}
		}
	}
	return false
}

// Trace returns the OpenTelemetry trace context that the request carried
// in its _meta (W3C traceparent and tracestate), as log attributes: none
// when it carried none. mcpgen's own log lines about the call carry them,
// so that they join the agent's trace.
func (call *Call) Trace() []any {
	if call.meta.Traceparent == "" {
		return nil
	}
	attrs := []any{"traceparent", call.meta.Traceparent}
	if call.meta.Tracestate != "" {
		attrs = append(attrs, "tracestate", call.meta.Tracestate)
	}
	return attrs
}

func asError(err error) *mcp.Error {
	if e, ok := err.(*mcp.Error); ok {
		return e
	}
	return mcp.NewError(mcp.CodeInvalidParams, "invalid params: %v", err)
}

// EraCounts count an agent's requests by era: how a status tells an agent
// that stays modern through mcpgen from one that fell back to a session.
type EraCounts struct {
	Legacy, Modern int64
}

// EraTotals count the requests of each era of every agent of a face, those
// that left included (Options.Eras): what status shows of a face.
type EraTotals struct {
	Legacy, Modern atomic.Int64
}

// Eras returns how many requests of each era the agent sent.
func (c *Conn) Eras() EraCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.eras
}

// An EraStatus is what status shows of an agent's era: whether it opened
// a legacy session, and how many requests of each era it sent (an agent
// that stays modern through mcpgen sends modern ones only).
type EraStatus struct {
	Name    string
	Session bool
	EraCounts
}

// EraStatus returns what status shows of the agent's era.
func (c *Conn) EraStatus() EraStatus {
	name := c.DisplayName()
	c.mu.Lock()
	defer c.mu.Unlock()
	return EraStatus{Name: name, Session: c.session, EraCounts: c.eras}
}

// Session reports whether the agent opened a legacy session (initialize).
func (c *Conn) Session() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// noteModern counts a modern request, and takes the agent's identity from
// its _meta while it has no session: a stateless agent is named by its
// requests (the first one's clientInfo), as a legacy one by its
// initialize. The first is logged, at debug level: how to see that an
// agent stays modern through mcpgen.
func (c *Conn) noteModern(meta *mcp.RequestMeta) {
	if c.opts.Eras != nil {
		c.opts.Eras.Modern.Add(1)
	}
	c.mu.Lock()
	c.eras.Modern++
	first := c.eras.Modern == 1
	if !c.session && c.id.Info.Name == "" && meta.ClientInfo != nil {
		var info mcp.Implementation
		if json.Unmarshal(meta.ClientInfo, &info) == nil {
			c.id.Info = info
			c.id.ProtocolVersion = meta.ProtocolVersion
			c.id.ClientInfo = bytes.Clone(meta.ClientInfo)
			c.id.Capabilities = bytes.Clone(meta.ClientCapabilities)
		}
	}
	c.mu.Unlock()
	if first {
		c.log.Debug("client speaks the modern revision", "client", c.DisplayName(), "version", meta.ProtocolVersion)
	}
}

func (c *Conn) noteLegacy() {
	if c.opts.Eras != nil {
		c.opts.Eras.Legacy.Add(1)
	}
	c.mu.Lock()
	c.eras.Legacy++
	c.mu.Unlock()
}

// cacheable reports whether a method's complete result carries caching
// hints in the modern era, and which of the face's lists it is (for
// listTTL), "" for none.
func cacheable(method string) (ok bool, list string) {
	switch method {
	case "tools/list":
		return true, "tools"
	case "prompts/list":
		return true, "prompts"
	case "resources/list", "resources/templates/list":
		return true, "resources"
	case "resources/read", "server/discover":
		return true, ""
	}
	return false, ""
}

// complete returns a modern call's result as the modern revision has it:
// with resultType and the server's identity, the caching hints of a
// cacheable result, the tools of tools/list in a stable order. What the
// result has already (a modern server's own) is kept. A result that is not
// an object is left as it is.
func (c *Conn) complete(call *Call, result json.RawMessage) json.RawMessage {
	var info json.RawMessage
	own := false
	if d := c.h.Describe(); d != nil {
		info, own = d.ServerInfo, d.Own
	}
	if own && bytes.Contains(result, []byte(mcp.MetaServerInfo)) {
		result = withoutServerInfo(result)
	}
	out, err := mcp.CompleteResult(result, info)
	if err != nil {
		return result
	}
	switch mcp.ResultType(out) {
	case mcp.ResultComplete:
	case ResultTask:
		c.noteTask(call, out) // its server gets its tasks/get (see tasks.go)
		return out
	default:
		return out // input_required: not cacheable
	}
	if ok, list := cacheable(call.method); ok && !hasMember(out, "ttlMs") {
		ttl := 0
		if list != "" && c.listening(list) {
			ttl = listTTL
		}
		if o, err := mcp.Cacheable(out, int64(ttl), mcp.CachePrivate); err == nil {
			out = o
		}
	}
	if call.method == "tools/list" {
		out = stableTools(out)
	}
	return out
}

// withoutServerInfo returns result without the server's identity in its
// _meta, for a face that names itself instead.
func withoutServerInfo(result json.RawMessage) json.RawMessage {
	members, err := jsonwire.Members(result, 0)
	if err != nil {
		return result
	}
	for _, m := range members {
		if m.Key != "_meta" || !jsonwire.IsObject(m.Value) {
			continue
		}
		meta, err := mcp.SetMembers(m.Value, mcp.ObjectMember{Key: mcp.MetaServerInfo})
		if err != nil {
			return result
		}
		out, err := mcp.SetMembers(result, mcp.ObjectMember{Key: "_meta", Value: meta})
		if err != nil {
			return result
		}
		return out
	}
	return result
}

// hasMember reports whether the object obj has a member key at its top.
func hasMember(obj json.RawMessage, key string) bool {
	if !bytes.Contains(obj, []byte(`"`+key+`"`)) {
		return false
	}
	members, err := jsonwire.Members(obj, 0)
	if err != nil {
		return false
	}
	for _, m := range members {
		if m.Key == key {
			return true
		}
	}
	return false
}

// stableTools returns a tools/list result with its tools in the order of
// their names, so that the same tools are listed the same way whatever
// order their server gave them in (the modern revision asks it, for the
// agents' caches); one already in order is returned as it is.
func stableTools(result json.RawMessage) json.RawMessage {
	members, err := jsonwire.Members(result, 0)
	if err != nil {
		return result
	}
	for _, m := range members {
		if m.Key != "tools" {
			continue
		}
		var tools []json.RawMessage
		if json.Unmarshal(m.Value, &tools) != nil {
			return result
		}
		names := make([]string, len(tools))
		for i, t := range tools {
			var n struct {
				Name string `json:"name"`
			}
			_ = json.Unmarshal(t, &n)
			names[i] = n.Name
		}
		if slices.IsSorted(names) {
			return result
		}
		order := make([]int, len(tools))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(names[a], names[b]) })
		list := make([]byte, 0, len(m.Value))
		list = append(list, '[')
		for i, j := range order {
			if i > 0 {
				list = append(list, ',')
			}
			list = append(list, tools[j]...)
		}
		list = append(list, ']')
		out, err := mcp.SetMembers(result, mcp.ObjectMember{Key: "tools", Value: list})
		if err != nil {
			return result
		}
		return out
	}
	return result
}

// discover answers server/discover from what the face describes: the
// versions the launcher speaks to agents (both eras: it serves legacy
// sessions too), the face's capabilities, identity and instructions. A
// face that does not know yet (its server never started) is waited for,
// off the read loop, as a request would wait.
func (c *Conn) discover(call *Call) {
	call.Release()
	call.modern = true // its answer is a modern result, whatever the request said
	c.described(call, func(d *Description) { call.Answer(discoverResult(d), nil) })
}

// discoverResult is the answer to server/discover for a face described by
// d; complete adds resultType and the caching hints.
func discoverResult(d *Description) json.RawMessage {
	b := make([]byte, 0, 128+len(d.Capabilities)+len(d.ServerInfo)+len(d.Instructions))
	b = append(b, `{"supportedVersions":[`...)
	for i, v := range mcp.AllVersions() {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonwire.AppendString(b, v)
	}
	b = append(b, `],"capabilities":`...)
	if len(d.Capabilities) > 0 {
		b = append(b, d.Capabilities...)
	} else {
		b = append(b, `{}`...)
	}
	if d.Instructions != "" {
		b = append(b, `,"instructions":`...)
		b = jsonwire.AppendString(b, d.Instructions)
	}
	if len(d.ServerInfo) > 0 {
		b = append(b, `,"_meta":{"`+mcp.MetaServerInfo+`":`...)
		b = append(b, d.ServerInfo...)
		b = append(b, '}')
	}
	return append(b, '}')
}

// asWireError turns an error into the JSON-RPC error an agent receives.
func asWireError(err error) *mcp.Error {
	if e, ok := err.(*mcp.Error); ok {
		return e
	}
	return mcp.NewError(CodeUnavailable, "%v", err)
}

// legacyResult is where a result reaches a legacy request: as it is, since
// the hub's upstream has made a modern server's results legacy already
// (hub.legacyResult), and answered its input_required results itself by
// asking the agent (seam: translation, hub/translate.go).
func legacyResult(call *Call, result json.RawMessage) json.RawMessage { return result }
