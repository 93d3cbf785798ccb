package mcp

import (
	"bytes"
	"fmt"
	"slices"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
)

// MCP has two eras. Legacy revisions (2025-11-25 and earlier) open a
// session with the initialize handshake, and the server may send requests
// of its own (sampling, elicitation, roots). Modern revisions (2026-07-28
// and later) have no handshake: every request names its version and the
// client's capabilities in params._meta, servers answer server/discover,
// and a server that needs input returns an input_required result that the
// client answers by retrying the request (multi round-trip requests).
// This file holds what both sides of either era need to tell them apart.

// An Era is the generation of the protocol a peer speaks.
type Era uint8

const (
	EraUnknown Era = iota // not known yet: never probed, never seen
	EraLegacy             // the initialize handshake
	EraModern             // per-request metadata, no handshake
)

// String names the era as status and logs show it.
func (e Era) String() string {
	switch e {
	case EraLegacy:
		return "legacy"
	case EraModern:
		return "modern"
	}
	return "unknown"
}

// ParseEra reads an era as String writes it; "" is EraUnknown.
func ParseEra(s string) (Era, bool) {
	switch s {
	case "legacy":
		return EraLegacy, true
	case "modern":
		return EraModern, true
	case "", "unknown":
		return EraUnknown, true
	}
	return EraUnknown, false
}

// ModernVersion is the modern revision this package speaks.
const ModernVersion = statelessVersion

// ModernVersions lists the modern revisions this package speaks, newest
// first. Do not modify it.
var ModernVersions = []string{ModernVersion}

// VersionEra tells which era revision v belongs to: EraUnknown for a
// revision this package does not know.
func VersionEra(v string) Era {
	switch {
	case slices.Contains(ModernVersions, v):
		return EraModern
	case slices.Contains(SupportedVersions, v):
		return EraLegacy
	}
	return EraUnknown
}

// AllVersions lists every revision this package speaks, modern ones
// first, newest first within each era.
func AllVersions() []string { return allVersions() }

// Keys of params._meta and result._meta.
const (
	MetaProtocolVersion    = metaProtocolVersion
	MetaClientCapabilities = metaClientCapabilities
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaServerInfo         = metaServerInfo
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
	MetaProgressToken      = "progressToken"
	// OpenTelemetry's trace context, as W3C Trace Context names it.
	MetaTraceparent = "traceparent"
	MetaTracestate  = "tracestate"
)

// Error codes of the modern revision: -32020 to -32099 are the spec's.
const (
	CodeHeaderMismatch              = -32020
	CodeMissingRequiredCapability   = -32021
	CodeUnsupportedProtocolVersion  = codeUnsupportedVersion
	firstSpecCode, lastSpecCode     = -32099, -32020
	unsupportedVersionMessage       = "Unsupported protocol version"
	missingCapabilityMessagePattern = "Missing required client capability: %s"
)

// UnsupportedVersionError is the modern error for a request whose
// version the receiver does not speak: it lists the versions it does.
func UnsupportedVersionError(requested string, supported []string) *Error {
	data, _ := jsonwire.Marshal(struct {
		Supported []string `json:"supported"`
		Requested string   `json:"requested"`
	}{supported, requested})
	return &Error{Code: CodeUnsupportedProtocolVersion, Message: unsupportedVersionMessage, Data: data}
}

// MissingCapabilityError is the modern error for a request that needs a
// capability the client did not declare: its data names it as the
// revision's schema has it, a ClientCapabilities object
// (requiredCapabilities).
func MissingCapabilityError(capability string) *Error {
	data := append(jsonwire.AppendString([]byte(`{"requiredCapabilities":{`), capability), `:{}}}`...)
	return &Error{Code: CodeMissingRequiredCapability, Message: fmt.Sprintf(missingCapabilityMessagePattern, capability), Data: data}
}

// SupportedVersions reads the versions an UnsupportedProtocolVersionError
// lists; ok is false for any other error.
func (e *Error) SupportedVersions() (versions []string, ok bool) {
	if e == nil || e.Code != CodeUnsupportedProtocolVersion {
		return nil, false
	}
	var d struct {
		Supported []string `json:"supported"`
	}
	if json.Unmarshal(e.Data, &d) != nil {
		return nil, false
	}
	return d.Supported, true
}

// IsModern reports whether e is one of the errors that only a modern peer
// sends (the spec's own range, -32020 to -32099): a legacy server answers
// an unknown method with a generic error, never with these. A dual-era
// client's probe falls back to the handshake on any other error.
func (e *Error) IsModern() bool {
	return e != nil && e.Code >= firstSpecCode && e.Code <= lastSpecCode
}

// RequestMeta is what a request says of itself in params._meta: in the
// modern era its version, the client's capabilities and identity, and in
// both eras its progress token and trace context.
type RequestMeta struct {
	ProtocolVersion    string
	ClientCapabilities json.RawMessage // an object, as sent; nil when absent
	ClientInfo         json.RawMessage // as sent; nil when absent
	LogLevel           string
	ProgressToken      json.RawMessage // as sent; nil when absent
	Traceparent        string
	Tracestate         string
}

// Modern reports whether the request names a protocol version in _meta:
// the mark of a modern request (a legacy client sends no version there).
func (m *RequestMeta) Modern() bool { return m.ProtocolVersion != "" }

// ParseRequestMeta reads params._meta. A request without params or
// without _meta has an empty RequestMeta. Members of the wrong type are
// errors that say which (-32602), as are params that are not an object;
// members it does not know are left alone.
func ParseRequestMeta(params json.RawMessage) (RequestMeta, error) {
	var m RequestMeta
	meta, err := metaObject(params)
	if err != nil || meta == nil {
		return m, err
	}
	members, err := jsonwire.Members(meta, 0)
	if err != nil {
		return m, NewError(CodeInvalidParams, "invalid params: _meta: %v", err)
	}
	for _, mb := range members {
		switch mb.Key {
		case MetaProtocolVersion, MetaLogLevel, MetaTraceparent, MetaTracestate:
			s, ok := stringValue(mb.Value)
			if !ok {
				return m, NewError(CodeInvalidParams, "invalid params: _meta[%q] must be a string", mb.Key)
			}
			switch mb.Key {
			case MetaProtocolVersion:
				m.ProtocolVersion = s
			case MetaLogLevel:
				m.LogLevel = s
			case MetaTraceparent:
				m.Traceparent = s
			case MetaTracestate:
				m.Tracestate = s
			}
		case MetaClientCapabilities:
			if !jsonwire.IsObject(mb.Value) {
				return m, NewError(CodeInvalidParams, "invalid params: _meta[%q] must be an object", mb.Key)
			}
			m.ClientCapabilities = mb.Value
		case MetaClientInfo:
			if !jsonwire.IsObject(mb.Value) {
				return m, NewError(CodeInvalidParams, "invalid params: _meta[%q] must be an object", mb.Key)
			}
			m.ClientInfo = mb.Value
		case MetaProgressToken:
			m.ProgressToken = mb.Value
		}
	}
	return m, nil
}

// SubscriptionID reads the subscription id a notification is tagged
// with (params._meta's io.modelcontextprotocol/subscriptionId), and
// reports whether it has a valid one.
func SubscriptionID(params json.RawMessage) (ID, bool) {
	if !bytes.Contains(params, []byte(MetaSubscriptionID)) {
		return ID{}, false
	}
	meta, err := metaObject(params)
	if err != nil || meta == nil {
		return ID{}, false
	}
	members, err := jsonwire.Members(meta, 0)
	if err != nil {
		return ID{}, false
	}
	for _, mb := range members {
		if mb.Key == MetaSubscriptionID {
			var id ID
			if id.UnmarshalJSON(mb.Value) != nil {
				return ID{}, false
			}
			return id, true
		}
	}
	return ID{}, false
}

// metaObject returns params._meta as written, nil when there is none.
func metaObject(params json.RawMessage) ([]byte, error) {
	params = bytes.TrimSpace(params)
	if len(params) == 0 || string(params) == "null" {
		return nil, nil
	}
	// Most requests carry no _meta at all: skip the scan.
	if !bytes.Contains(params, []byte(`"_meta"`)) {
		if params[0] != '{' {
			return nil, NewError(CodeInvalidParams, "invalid params: params must be an object")
		}
		return nil, nil
	}
	members, err := jsonwire.Members(params, 0)
	if err != nil {
		return nil, NewError(CodeInvalidParams, "invalid params: %v", err)
	}
	var meta []byte
	for _, mb := range members {
		if mb.Key == "_meta" {
			meta = mb.Value
		}
	}
	if meta != nil && !jsonwire.IsObject(meta) {
		return nil, NewError(CodeInvalidParams, "invalid params: _meta must be an object")
	}
	return meta, nil
}

func stringValue(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	return jsonwire.Unquote(v, bytes.IndexByte(v, '\\') >= 0), true
}

// CheckModernRequest checks what the modern revision requires of a
// request's _meta, for a receiver that speaks the versions in supported:
// a version it speaks (else UnsupportedProtocolVersionError) and the
// client's capabilities.
func CheckModernRequest(m *RequestMeta, supported []string) *Error {
	if !slices.Contains(supported, m.ProtocolVersion) {
		return UnsupportedVersionError(m.ProtocolVersion, supported)
	}
	if m.ClientCapabilities == nil {
		return NewError(CodeInvalidParams, "invalid params: _meta[%q] is required", MetaClientCapabilities)
	}
	return nil
}

// An ObjectMember is one member to set in a JSON object: its key and its
// value, encoded.
type ObjectMember struct {
	Key   string
	Value json.RawMessage
}

// SetMembers returns the object obj with each member set: replaced where
// obj has it, appended otherwise; a member whose Value is nil is deleted.
// The rest of obj stays as written. obj must be a JSON object (or empty,
// which is {}).
func SetMembers(obj json.RawMessage, set ...ObjectMember) (json.RawMessage, error) {
	obj = bytes.TrimSpace(obj)
	if len(obj) == 0 || string(obj) == "null" {
		obj = json.RawMessage(`{}`)
	}
	members, err := jsonwire.Members(obj, 0)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(obj)+64)
	out = append(out, '{')
	done := make([]bool, len(set))
	n := 0
	for _, mb := range members {
		value := mb.Value
		for i, s := range set {
			if s.Key == mb.Key {
				value, done[i] = s.Value, true
			}
		}
		if value == nil {
			continue // deleted
		}
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, mb.RawKey...)
		out = append(out, ':')
		out = append(out, value...)
		n++
	}
	for i, s := range set {
		if done[i] || s.Value == nil {
			continue
		}
		if n > 0 {
			out = append(out, ',')
		}
		out = jsonwire.AppendString(out, s.Key)
		out = append(out, ':')
		out = append(out, s.Value...)
		n++
	}
	return append(out, '}'), nil
}

// SetMeta returns params with the members of params._meta set as
// SetMembers sets them (a nil Value deletes the member), _meta created
// when absent.
func SetMeta(params json.RawMessage, set ...ObjectMember) (json.RawMessage, error) {
	meta, err := metaObject(params)
	if err != nil {
		return nil, err
	}
	meta2, err := SetMembers(meta, set...)
	if err != nil {
		return nil, err
	}
	return SetMembers(params, ObjectMember{Key: "_meta", Value: meta2})
}

// Result types of the modern revision: every result has one, and a
// result without (from a legacy server) is complete.
const (
	ResultComplete      = "complete"
	ResultInputRequired = "input_required"
)

// ResultType reads a result's resultType: ResultComplete when absent.
func ResultType(result json.RawMessage) string {
	// Only the top level counts, and most results have none: look first.
	if !bytes.Contains(result, []byte(`"resultType"`)) {
		return ResultComplete
	}
	members, err := jsonwire.Members(result, 0)
	if err != nil {
		return ResultComplete
	}
	for _, mb := range members {
		if mb.Key == "resultType" {
			if s, ok := stringValue(mb.Value); ok {
				return s
			}
		}
	}
	return ResultComplete
}

// An InputRequest is one request for input of an input_required result:
// what a legacy server would have sent as a request of its own.
type InputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// An InputRequiredResult is the interim result of a multi round-trip
// request: the requests the client must answer, keyed by names of the
// server's, and the state to echo when it retries.
type InputRequiredResult struct {
	InputRequests map[string]InputRequest
	// Keys is InputRequests' keys in the order the result listed them.
	Keys         []string
	RequestState string
	HasState     bool // requestState was present (it may be "")
}

// ParseInputRequired reads an input_required result.
func ParseInputRequired(result json.RawMessage) (*InputRequiredResult, error) {
	members, err := jsonwire.Members(result, 0)
	if err != nil {
		return nil, err
	}
	r := &InputRequiredResult{}
	for _, mb := range members {
		switch mb.Key {
		case "inputRequests":
			reqs, err := jsonwire.Members(mb.Value, 0)
			if err != nil {
				return nil, fmt.Errorf("inputRequests: %v", err)
			}
			r.InputRequests = make(map[string]InputRequest, len(reqs))
			for _, req := range reqs {
				var ir InputRequest
				if err := json.Unmarshal(req.Value, &ir); err != nil || ir.Method == "" {
					return nil, fmt.Errorf("inputRequests[%q]: not a request", req.Key)
				}
				if _, dup := r.InputRequests[req.Key]; !dup {
					r.Keys = append(r.Keys, req.Key)
				}
				r.InputRequests[req.Key] = ir
			}
		case "requestState":
			s, ok := stringValue(mb.Value)
			if !ok {
				return nil, fmt.Errorf("requestState: not a string")
			}
			r.RequestState, r.HasState = s, true
		}
	}
	if len(r.InputRequests) == 0 && !r.HasState {
		return nil, fmt.Errorf("an input_required result without inputRequests or requestState")
	}
	return r, nil
}

// MarshalJSON encodes the result as the wire carries it, with its
// resultType.
func (r *InputRequiredResult) MarshalJSON() ([]byte, error) {
	b := []byte(`{"resultType":"input_required"`)
	if len(r.Keys) > 0 {
		b = append(b, `,"inputRequests":{`...)
		for i, k := range r.Keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonwire.AppendString(b, k)
			b = append(b, ':')
			req, err := jsonwire.Marshal(r.InputRequests[k])
			if err != nil {
				return nil, err
			}
			b = append(b, req...)
		}
		b = append(b, '}')
	}
	if r.HasState {
		b = append(b, `,"requestState":`...)
		b = jsonwire.AppendString(b, r.RequestState)
	}
	return append(b, '}'), nil
}

// RetryParams reads what a retried request carries for a multi
// round-trip: the client's answers, by the keys of the server's
// inputRequests, and the state it echoes. ok is false when params have
// neither.
func RetryParams(params json.RawMessage) (responses map[string]json.RawMessage, state string, hasState, ok bool, err error) {
	if !bytes.Contains(params, []byte(`"inputResponses"`)) && !bytes.Contains(params, []byte(`"requestState"`)) {
		return nil, "", false, false, nil
	}
	members, err := jsonwire.Members(params, 0)
	if err != nil {
		return nil, "", false, false, NewError(CodeInvalidParams, "invalid params: %v", err)
	}
	for _, mb := range members {
		switch mb.Key {
		case "inputResponses":
			rs, err := jsonwire.Members(mb.Value, 0)
			if err != nil {
				return nil, "", false, false, NewError(CodeInvalidParams, "invalid params: inputResponses must be an object")
			}
			responses = make(map[string]json.RawMessage, len(rs))
			for _, r := range rs {
				responses[r.Key] = r.Value
			}
			ok = true
		case "requestState":
			s, isString := stringValue(mb.Value)
			if !isString {
				return nil, "", false, false, NewError(CodeInvalidParams, "invalid params: requestState must be a string")
			}
			state, hasState, ok = s, true, true
		}
	}
	return responses, state, hasState, ok, nil
}

// CompleteResult returns result with what the modern revision requires of
// a complete result: resultType (when absent), and the server's identity
// in _meta (when serverInfo is not nil and _meta has none).
func CompleteResult(result, serverInfo json.RawMessage) (json.RawMessage, error) {
	if out, ok := appendComplete(result, serverInfo); ok {
		return out, nil
	}
	set := []ObjectMember{}
	members, err := jsonwire.Members(result, 0)
	if err != nil {
		return nil, err
	}
	hasType, meta := false, []byte(nil)
	for _, mb := range members {
		switch mb.Key {
		case "resultType":
			hasType = true
		case "_meta":
			meta = mb.Value
		}
	}
	if !hasType {
		set = append(set, ObjectMember{Key: "resultType", Value: json.RawMessage(`"complete"`)})
	}
	if serverInfo != nil && !bytes.Contains(meta, []byte(`"`+MetaServerInfo+`"`)) {
		m, err := SetMembers(meta, ObjectMember{Key: MetaServerInfo, Value: serverInfo})
		if err != nil {
			return nil, err
		}
		set = append(set, ObjectMember{Key: "_meta", Value: m})
	}
	if len(set) == 0 {
		return result, nil
	}
	return SetMembers(result, set...)
}

// appendComplete is CompleteResult's short way, for the result of most
// calls, which has neither resultType nor _meta (a legacy server's): both
// are appended to the object as written, without scanning its members;
// ok is false for any other result.
func appendComplete(result, serverInfo json.RawMessage) (json.RawMessage, bool) {
	r := bytes.TrimSpace(result)
	if len(r) < 2 || r[0] != '{' || r[len(r)-1] != '}' ||
		bytes.Contains(r, []byte(`"resultType"`)) || bytes.Contains(r, []byte(`"_meta"`)) {
		return nil, false
	}
	out := make([]byte, 0, len(r)+64+len(serverInfo))
	out = append(out, r[:len(r)-1]...)
	if len(bytes.TrimSpace(r[1:len(r)-1])) > 0 {
		out = append(out, ',')
	}
	out = append(out, `"resultType":"complete"`...)
	if serverInfo != nil {
		out = append(out, `,"_meta":{"`+MetaServerInfo+`":`...)
		out = append(out, serverInfo...)
		out = append(out, '}')
	}
	return append(out, '}'), true
}

// Cache scopes of cacheable results (ttlMs says for how long).
const (
	CachePublic  = "public"
	CachePrivate = "private"
)

// Cacheable returns result with ttlMs and cacheScope set, as the modern
// revision requires of lists, resources/read and server/discover.
func Cacheable(result json.RawMessage, ttlMs int64, scope string) (json.RawMessage, error) {
	return SetMembers(result,
		ObjectMember{Key: "ttlMs", Value: json.RawMessage(fmt.Sprint(ttlMs))},
		ObjectMember{Key: "cacheScope", Value: jsonwire.AppendString(nil, scope)})
}

// A DiscoverResult is a modern server's answer to server/discover.
type DiscoverResult struct {
	SupportedVersions []string        `json:"supportedVersions"`
	Capabilities      json.RawMessage `json:"capabilities"`
	Instructions      string          `json:"instructions,omitempty"`
	ServerInfo        Implementation  `json:"-"` // from _meta
	// Raw is the result as the server sent it.
	Raw json.RawMessage `json:"-"`
}

// ParseDiscoverResult reads a server/discover result.
func ParseDiscoverResult(result json.RawMessage) (*DiscoverResult, error) {
	var w struct {
		SupportedVersions []string        `json:"supportedVersions"`
		Capabilities      json.RawMessage `json:"capabilities"`
		Instructions      string          `json:"instructions"`
		Meta              struct {
			ServerInfo Implementation `json:"io.modelcontextprotocol/serverInfo"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(result, &w); err != nil {
		return nil, err
	}
	if len(w.SupportedVersions) == 0 {
		return nil, fmt.Errorf("a discover result without supportedVersions")
	}
	if len(w.Capabilities) == 0 {
		w.Capabilities = json.RawMessage(`{}`)
	}
	return &DiscoverResult{
		SupportedVersions: w.SupportedVersions,
		Capabilities:      w.Capabilities,
		Instructions:      w.Instructions,
		ServerInfo:        w.Meta.ServerInfo,
		Raw:               slices.Clone(result),
	}, nil
}

// ChooseVersion picks the newest revision of ours that a peer lists,
// within era (EraUnknown: any); "" when none.
func ChooseVersion(theirs []string, era Era) string {
	for _, v := range AllVersions() {
		if (era == EraUnknown || VersionEra(v) == era) && slices.Contains(theirs, v) {
			return v
		}
	}
	return ""
}

// InitializeResult is what the discover result tells a legacy client of
// the server, in the form of an answer to initialize at LatestVersion:
// its capabilities, identity and instructions. Of the capabilities, those
// that a legacy client would use through requests that the modern revision
// removed are left out: logging (logging/setLevel; the level now goes in
// each request's _meta) and resources.subscribe (resources/subscribe; now
// subscriptions/listen). The result keeps d as its Discover.
func (d *DiscoverResult) InitializeResult() *InitializeResult {
	caps := legacyCapabilities(d.Capabilities)
	r := &InitializeResult{
		ProtocolVersion: LatestVersion,
		Capabilities:    caps,
		ServerInfo:      d.ServerInfo,
		Instructions:    d.Instructions,
		Era:             EraModern,
		Discover:        d,
	}
	r.Raw, _ = jsonwire.Marshal(struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ServerInfo      Implementation  `json:"serverInfo"`
		Instructions    string          `json:"instructions,omitempty"`
	}{r.ProtocolVersion, caps, r.ServerInfo, r.Instructions})
	return r
}

// legacyCapabilities returns modern capabilities without what legacy
// clients cannot use as they would (see DiscoverResult.InitializeResult);
// the rest stays as written. Capabilities that are not an object are {}.
func legacyCapabilities(caps json.RawMessage) json.RawMessage {
	members, err := jsonwire.Members(caps, 0)
	if err != nil {
		return emptyObject
	}
	var set []ObjectMember
	for _, mb := range members {
		switch mb.Key {
		case "logging":
			set = append(set, ObjectMember{Key: "logging"}) // deleted
		case "resources":
			if bytes.Contains(mb.Value, []byte(`"subscribe"`)) {
				r, err := SetMembers(mb.Value, ObjectMember{Key: "subscribe"})
				if err != nil {
					r = emptyObject
				}
				set = append(set, ObjectMember{Key: "resources", Value: r})
			}
		}
	}
	if len(set) == 0 {
		return caps
	}
	out, err := SetMembers(caps, set...)
	if err != nil {
		return emptyObject
	}
	return out
}
