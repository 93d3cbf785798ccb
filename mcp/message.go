// Package mcp speaks the Model Context Protocol over stdio: newline-delimited
// JSON-RPC 2.0, one message per line. It owns every byte that mcpgen reads
// from or writes to an MCP peer, in layers that can be used on their own:
//
//   - [Message], [ID] and [Error]: the JSON-RPC envelope, decoded and encoded
//     by hand so that ids and payloads pass through unchanged.
//   - [Reader] and [Writer]: the framing, one message per line, with a cap on
//     the line length.
//   - [Conn]: a symmetric JSON-RPC peer (MCP servers send requests too):
//     handlers in goroutines, a bounded number at once, with backpressure
//     on the reader; cheap requests answered on the read loop; calls
//     correlated by id ([Conn.Go] hands back the raw result), cancellation,
//     progress.
//   - [Server]: the runtime of mcpgen's built-in servers: the initialize
//     handshake, tools/list and tools/call.
//   - [Client]: what the launcher and the tests use to drive a server.
//
// The hub that shares one server among many agents forwards messages with the
// low layers and rewrites ids, which is why an [ID] keeps the exact JSON text
// it was read from.
//
// Of mcpgen's packages, mcp imports only internal/jsonwire, the JSON scanner
// and string encoder that it shares with the providers.
package mcp

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
)

// An ID is a JSON-RPC request id, an integer or a string, held as JSON text
// (7 or "abc"). An integer keeps the digits it was read with, so that it goes
// back to the peer unchanged whatever its size; a string is held in one
// canonical spelling, so that "a\u0062" and "ab" are the same ID. IDs are
// comparable and may be used as map keys. The zero ID means "no id" (a
// notification, or an error response to a line whose id was unreadable).
type ID struct{ raw string }

// Int64ID returns the id n.
func Int64ID(n int64) ID { return ID{strconv.FormatInt(n, 10)} }

// StringID returns the id s.
func StringID(s string) ID { return ID{string(jsonwire.AppendString(nil, s))} }

// IsValid reports whether id is set.
func (id ID) IsValid() bool { return id.raw != "" }

// String returns the id's JSON text: 7, "abc", or null for the zero ID.
func (id ID) String() string {
	if id.raw == "" {
		return "null"
	}
	return id.raw
}

// MarshalJSON returns the id's JSON text, or null for the zero ID.
func (id ID) MarshalJSON() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalJSON accepts an integer or a string. It rejects null, booleans,
// objects, arrays and numbers with a fractional part.
func (id *ID) UnmarshalJSON(data []byte) error {
	s := jsonwire.Scanner{Data: data}
	s.SkipSpace()
	start := s.Pos
	if err := s.SkipValue(0); err != nil {
		return err
	}
	end := s.Pos
	if !s.AtEnd() {
		return s.Unexpected("after id")
	}
	parsed, err := parseID(data[start:end])
	if err != nil {
		return err
	}
	*id = parsed
	return nil
}

// parseID reads an id from lit, a JSON value whose syntax was checked.
// Integers keep their exact text; strings are re-encoded only when their text
// is not already canonical (escapes, invalid UTF-8), so that two spellings of
// the same string are the same ID.
func parseID(lit []byte) (ID, error) {
	switch c := lit[0]; {
	case c == '"':
		body := lit[1 : len(lit)-1]
		if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
			return ID{string(lit)}, nil
		}
		return ID{string(jsonwire.AppendString(nil, jsonwire.Unquote(lit, true)))}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		s := jsonwire.Scanner{Data: lit}
		if integer, _ := s.SkipNumber(); integer {
			return ID{string(lit)}, nil
		}
		if n, ok := canonicalInteger(lit); ok {
			return ID{n}, nil
		}
		return ID{}, errors.New("id must be an integer or a string, not a fraction")
	case c == 'n':
		return ID{}, errors.New("id must not be null")
	default:
		return ID{}, errors.New("id must be an integer or a string")
	}
}

// A Message is one JSON-RPC 2.0 message: a request (Method and ID), a
// notification (Method, no ID) or a response (ID, and Result or Error).
//
// Params, Result and Error.Data are raw JSON. After DecodeMessage they alias
// the decoded line.
type Message struct {
	ID     ID
	Method string
	Params json.RawMessage // absent when nil
	Result json.RawMessage // absent when nil
	Error  *Error
}

// IsRequest reports whether m is a request, which expects a response.
func (m *Message) IsRequest() bool { return m.Method != "" && m.ID.IsValid() }

// IsNotification reports whether m is a notification, which gets no response.
func (m *Message) IsNotification() bool { return m.Method != "" && !m.ID.IsValid() }

// IsResponse reports whether m is a response to a request.
func (m *Message) IsResponse() bool { return m.Method == "" && (len(m.Result) > 0 || m.Error != nil) }

// MarshalJSON encodes m; see AppendJSON.
func (m *Message) MarshalJSON() ([]byte, error) { return m.AppendJSON(nil), nil }

// AppendJSON appends m's JSON encoding to dst. It always writes
// "jsonrpc":"2.0", then only the fields that are set. An error response
// without an id gets "id":null, as JSON-RPC requires. Raw fields are copied
// as they are: they must be valid JSON (the Writer keeps a message on one
// line even if they hold newlines).
func (m *Message) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0"`...)
	if m.ID.IsValid() {
		dst = append(dst, `,"id":`...)
		dst = append(dst, m.ID.raw...)
	} else if m.Method == "" && m.Error != nil {
		dst = append(dst, `,"id":null`...)
	}
	if m.Method != "" {
		dst = append(dst, `,"method":`...)
		dst = jsonwire.AppendString(dst, m.Method)
	}
	if len(m.Params) > 0 {
		dst = append(dst, `,"params":`...)
		dst = append(dst, m.Params...)
	}
	if len(m.Result) > 0 {
		dst = append(dst, `,"result":`...)
		dst = append(dst, m.Result...)
	}
	if m.Error != nil {
		dst = append(dst, `,"error":`...)
		dst = m.Error.appendJSON(dst)
	}
	return append(dst, '}')
}

// JSON-RPC error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// An Error is a JSON-RPC error object. A handler that returns one sends it
// to the peer as is; Call returns the peer's errors as *Error (wrapped).
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// The standard wire errors, for errors.Is: an *Error matches any of them
// with the same code. Use NewError to build one with a useful message; do
// not modify these.
var (
	ErrParse          = &Error{Code: CodeParseError, Message: "parse error"}
	ErrInvalidRequest = &Error{Code: CodeInvalidRequest, Message: "invalid request"}
	ErrMethodNotFound = &Error{Code: CodeMethodNotFound, Message: "method not found"}
	ErrInvalidParams  = &Error{Code: CodeInvalidParams, Message: "invalid params"}
	ErrInternal       = &Error{Code: CodeInternalError, Message: "internal error"}
)

// NewError returns an error with the given code and a formatted message.
func NewError(code int64, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Error returns the message and the code.
func (e *Error) Error() string {
	return fmt.Sprintf("%s (jsonrpc error %d)", e.Message, e.Code)
}

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, ErrMethodNotFound) works whatever the message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

func (e *Error) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, e.Code, 10)
	dst = append(dst, `,"message":`...)
	dst = jsonwire.AppendString(dst, e.Message)
	if len(e.Data) > 0 {
		dst = append(dst, `,"data":`...)
		dst = append(dst, e.Data...)
	}
	return append(dst, '}')
}

// ErrBatch is matched (errors.Is) by the DecodeError of a line holding a
// JSON array: MCP dropped batches in 2025-06-18, so a batch is answered -32600.
var ErrBatch = errors.New("batch requests are not supported")

// A DecodeError describes a line that is not a valid message.
type DecodeError struct {
	// Err is the error to answer with: code -32700 when the line is not
	// JSON, -32600 when it is JSON but not a valid message.
	Err *Error
	// ID is the offending request's id, when it could be read: from the
	// start of the line, when the line is not JSON further on.
	ID ID
	// Reply reports whether the line looked like a request (or was meant
	// to be JSON), so that its sender is waiting for an answer. Lines that
	// look like responses, or that are plain text (a server logging to
	// stdout by mistake), are only worth logging.
	Reply bool

	cause error // ErrBatch or ErrLineTooLong, for errors.Is
}

// Error returns what is wrong with the line.
func (e *DecodeError) Error() string { return e.Err.Message }

// Unwrap returns Err, and ErrBatch or ErrLineTooLong when that is the cause.
func (e *DecodeError) Unwrap() []error {
	if e.cause != nil {
		return []error{e.Err, e.cause}
	}
	return []error{e.Err}
}

// Response returns the error response to send for the bad line, or nil when
// none should be sent (Reply is false).
func (e *DecodeError) Response() *Message {
	if !e.Reply {
		return nil
	}
	return &Message{ID: e.ID, Error: e.Err}
}

// ServerResponse is Response for the server end of a connection, which
// JSON-RPC 2.0 asks to answer every line that it cannot parse: plain text
// gets -32700 with a null id too. Lines that look like responses still get
// nothing.
func (e *DecodeError) ServerResponse() *Message {
	if e.Reply || e.Err.Code == CodeParseError {
		return &Message{ID: e.ID, Error: e.Err}
	}
	return nil
}

// Bits for the members of a message, to catch duplicates.
const (
	hasVersion = 1 << iota
	hasID
	hasMethod
	hasParams
	hasResult
	hasError
)

// DecodeMessage decodes one line. On failure the error is a *DecodeError,
// which says how to answer. The returned message's raw fields alias line.
//
// Beyond JSON-RPC 2.0 it requires what MCP requires (ids are never null) and
// is strict where a lenient reading would be ambiguous: member names match
// exactly and a member may appear once. "params": null reads as no params.
//
// It walks the envelope with jsonwire's scanner rather than unmarshalling
// into a struct, because it must tell a syntax error (-32700) from a
// well-formed line of the wrong shape (-32600), keep params, result and
// error data as the exact bytes that were read, match member names exactly
// (goccy and encoding/json match them regardless of case, so "ID" would be
// taken for "id"), and be fast: the hub decodes every line.
func DecodeMessage(line []byte) (*Message, error) {
	if bytes.HasPrefix(line, utf8BOM) {
		return nil, bomError(line[len(utf8BOM):])
	}
	s := jsonwire.Scanner{Data: line}
	if s.AtEnd() {
		return nil, parseError(line, s.Errorf("empty message"))
	}
	if s.Peek() != '{' {
		if err := s.SkipValue(0); err != nil {
			return nil, parseError(line, err)
		}
		if !s.AtEnd() {
			return nil, parseError(line, s.Unexpected("after top-level value"))
		}
		if line[skipSpaceAt(line, 0)] == '[' {
			return nil, &DecodeError{Err: NewError(CodeInvalidRequest, "invalid request: %v", ErrBatch), Reply: true, cause: ErrBatch}
		}
		return nil, &DecodeError{Err: NewError(CodeInvalidRequest, "invalid request: a message must be a JSON object"), Reply: true}
	}

	var (
		m       = &Message{}
		seen    int
		nullID  bool
		invalid string // the first problem with the shape, reported only if the syntax is good
	)
	fail := func(format string, args ...any) {
		if invalid == "" {
			invalid = fmt.Sprintf(format, args...)
		}
	}
	s.Pos++ // '{'
	for more := s.Peek() != '}'; more; {
		if s.Peek() != '"' {
			return nil, parseError(line, s.Unexpected("looking for an object key"))
		}
		kstart := s.Pos
		escaped, err := s.SkipString()
		if err != nil {
			return nil, parseError(line, err)
		}
		key := line[kstart:s.Pos]
		if escaped {
			key = jsonwire.AppendString(nil, jsonwire.Unquote(key, true))
		}
		if s.Peek() != ':' {
			return nil, parseError(line, s.Unexpected("after object key"))
		}
		s.Pos++
		s.SkipSpace()
		vstart := s.Pos
		escaped = false
		if s.Pos < len(line) && line[s.Pos] == '"' {
			escaped, err = s.SkipString()
		} else {
			err = s.SkipValue(1)
		}
		if err != nil {
			return nil, parseError(line, err)
		}
		v := line[vstart:s.Pos]

		bit := 0
		switch string(key) {
		case `"jsonrpc"`:
			bit = hasVersion
			if v[0] != '"' || (string(v) != `"2.0"` && jsonwire.Unquote(v, escaped) != "2.0") {
				fail(`"jsonrpc" must be "2.0"`)
			}
		case `"id"`:
			bit = hasID
			if v[0] == 'n' {
				nullID = true
			} else if id, err := parseID(v); err != nil {
				fail("%v", err)
			} else {
				m.ID = id
			}
		case `"method"`:
			bit = hasMethod
			if v[0] != '"' {
				fail(`"method" must be a string`)
			} else if m.Method = methodName(v, escaped); m.Method == "" {
				fail(`"method" must not be empty`)
			}
		case `"params"`:
			bit = hasParams
			switch v[0] {
			case '{', '[':
				m.Params = v
			case 'n':
			default:
				fail(`"params" must be an object or an array`)
			}
		case `"result"`:
			bit = hasResult
			m.Result = v
		case `"error"`:
			bit = hasError
			e, problem := decodeErrorObject(v)
			if problem != "" {
				fail("%s", problem)
			}
			m.Error = e
		}
		if bit != 0 {
			if seen&bit != 0 {
				fail("duplicate member %s", key)
			}
			seen |= bit
		}

		switch s.Peek() {
		case ',':
			s.Pos++
		case '}':
			more = false
		default:
			return nil, parseError(line, s.Unexpected("after object value"))
		}
	}
	s.Pos++ // '}'
	if !s.AtEnd() {
		return nil, parseError(line, s.Unexpected("after top-level value"))
	}

	if invalid == "" {
		switch {
		case seen&hasVersion == 0:
			invalid = `missing "jsonrpc":"2.0"`
		case seen&hasMethod != 0:
			if seen&(hasResult|hasError) != 0 {
				invalid = `a request must not have "result" or "error"`
			} else if nullID {
				invalid = "id must not be null"
			}
		case seen&(hasResult|hasError) == hasResult|hasError:
			invalid = `a response must not have both "result" and "error"`
		case seen&(hasResult|hasError) == 0:
			invalid = `missing "method", "result" or "error"`
		case seen&hasParams != 0:
			invalid = `a response must not have "params"`
		case seen&hasResult != 0 && !m.ID.IsValid():
			invalid = "a result must have an id"
		}
	}
	if invalid != "" {
		return nil, &DecodeError{
			Err:   NewError(CodeInvalidRequest, "invalid request: %s", invalid),
			ID:    m.ID,
			Reply: seen&hasMethod != 0 || seen&(hasResult|hasError) == 0,
		}
	}
	return m, nil
}

// peekLimit bounds how much of an overlong line peekEnvelope reads: an id
// that comes after a megabyte of params is not worth a slower error path.
const peekLimit = 1 << 20

// peekEnvelope reads what it can of a truncated line: the id, and whether
// the members seen so far make it a request ("method") or a response
// ("result" or "error"). Peers usually write the id first, before the large
// params or result that made the line too long.
func peekEnvelope(prefix []byte) (id ID, isRequest, isResponse bool) {
	s := jsonwire.Scanner{Data: prefix[:min(len(prefix), peekLimit)]}
	if s.Peek() != '{' {
		return
	}
	s.Pos++
	for s.Peek() == '"' {
		kstart := s.Pos
		escaped, err := s.SkipString()
		if err != nil {
			return
		}
		key := jsonwire.Unquote(prefix[kstart:s.Pos], escaped)
		switch key {
		case "method":
			isRequest = true
		case "result", "error":
			isResponse = true
		}
		if s.Peek() != ':' {
			return
		}
		s.Pos++
		s.SkipSpace()
		vstart := s.Pos
		if err := s.SkipValue(1); err != nil {
			return
		}
		if key == "id" && prefix[vstart] != 'n' {
			id, _ = parseID(prefix[vstart:s.Pos])
		}
		if s.Peek() != ',' {
			return
		}
		s.Pos++
	}
	return
}

// utf8BOM is the byte order mark that some Windows tools put at the start
// of UTF-8 text. JSON text must not start with one (RFC 8259, section 8.1).
var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// bomError refuses a line that starts with a byte order mark, naming it:
// the mark is invisible in most editors and logs, so "invalid character"
// would leave the sender puzzled. The id is read from the rest of the line
// when it can be, so that the request fails at once instead of timing out.
func bomError(rest []byte) *DecodeError {
	err := &DecodeError{Err: NewError(CodeParseError, "parse error: line starts with a UTF-8 byte order mark; send JSON without one")}
	if bytes.HasPrefix(rest, utf8BOM) {
		return err // one mark is enough to explain; never recurse on a line of them
	}
	if msg, derr := DecodeMessage(rest); derr == nil {
		err.Reply = !msg.IsResponse()
		if msg.IsRequest() {
			err.ID = msg.ID
		}
		return err
	}
	i := skipSpaceAt(rest, 0)
	err.Reply = i < len(rest) && (rest[i] == '{' || rest[i] == '[')
	return err
}

func parseError(line []byte, err error) *DecodeError {
	// Answer only what was meant to be JSON: a peer that prints a banner or
	// a stack trace on stdout is not waiting for anything.
	i := skipSpaceAt(line, 0)
	reply := i < len(line) && (line[i] == '{' || line[i] == '[')
	derr := &DecodeError{Err: NewError(CodeParseError, "parse error: %v", err), Reply: reply}
	// A request whose start is valid (one cut short, one nested deeper
	// than MaxDepth further on) is answered under its id: its sender
	// waits for that id, and JSON-RPC's null id is for a request whose id
	// cannot be found.
	if id, isRequest, isResponse := peekEnvelope(line); isRequest && !isResponse {
		derr.ID = id
	}
	return derr
}

func skipSpaceAt(b []byte, i int) int {
	s := jsonwire.Scanner{Data: b, Pos: i}
	s.SkipSpace()
	return s.Pos
}

// decodeErrorObject reads a JSON-RPC error object from v, whose syntax was
// checked. It returns the problem with its shape, if any.
func decodeErrorObject(v []byte) (*Error, string) {
	if v[0] != '{' {
		return nil, `"error" must be an object`
	}
	e := &Error{}
	var haveCode, haveMessage bool
	s := jsonwire.Scanner{Data: v, Pos: 1}
	if s.Peek() == '}' {
		return nil, `"error" must have "code" and "message"`
	}
	for {
		s.Peek()
		kstart := s.Pos
		kesc, _ := s.SkipString()
		key := jsonwire.Unquote(v[kstart:s.Pos], kesc)
		s.Peek() // ':'
		s.Pos++
		s.SkipSpace()
		vstart := s.Pos
		var vesc bool
		if v[s.Pos] == '"' {
			vesc, _ = s.SkipString()
		} else {
			_ = s.SkipValue(1)
		}
		val := v[vstart:s.Pos]
		switch key {
		case "code":
			haveCode = true
			lit := string(val)
			if val[0] != '-' && (val[0] < '0' || val[0] > '9') {
				return nil, `"error.code" must be an integer`
			}
			if sc := (jsonwire.Scanner{Data: val}); !mustInteger(&sc) {
				n, ok := canonicalInteger(val)
				if !ok {
					return nil, `"error.code" must be an integer`
				}
				lit = n
			}
			code, err := strconv.ParseInt(lit, 10, 64)
			if err != nil {
				return nil, `"error.code" is out of range`
			}
			e.Code = code
		case "message":
			if val[0] != '"' {
				return nil, `"error.message" must be a string`
			}
			haveMessage = true
			e.Message = jsonwire.Unquote(val, vesc)
		case "data":
			e.Data = val
		}
		if s.Peek() == ',' {
			s.Pos++
			continue
		}
		break
	}
	if !haveCode || !haveMessage {
		return nil, `"error" must have "code" and "message"`
	}
	return e, ""
}

func mustInteger(s *jsonwire.Scanner) bool {
	integer, err := s.SkipNumber()
	return err == nil && integer
}

// methodName unquotes a method name, without allocating for the methods that
// every session sends.
func methodName(lit []byte, escaped bool) string {
	if !escaped {
		switch string(lit[1 : len(lit)-1]) {
		case "tools/call":
			return "tools/call"
		case "tools/list":
			return "tools/list"
		case "initialize":
			return "initialize"
		case "ping":
			return "ping"
		case "notifications/initialized":
			return "notifications/initialized"
		case "notifications/cancelled":
			return "notifications/cancelled"
		case "notifications/progress":
			return "notifications/progress"
		case "notifications/tools/list_changed":
			return "notifications/tools/list_changed"
		}
	}
	return jsonwire.Unquote(lit, escaped)
}

// canonicalInteger turns a number literal whose value is an integer written
// with a fraction or an exponent (1.0, 1e3) into plain integer text. It
// refuses values with a fractional part and values beyond 2^53, where a
// float64 (which is what JavaScript peers use for ids) is no longer exact.
func canonicalInteger(lit []byte) (string, bool) {
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil || f > 1<<53 || f < -(1<<53) || f != math.Trunc(f) {
		return "", false
	}
	return strconv.FormatInt(int64(f), 10), true
}
