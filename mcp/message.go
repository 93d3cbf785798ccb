// Package mcp speaks the Model Context Protocol over stdio: newline-delimited
// JSON-RPC 2.0, one message per line. It owns every byte that mcpgen reads
// from or writes to an MCP peer, in layers that can be used on their own:
//
//   - [Message], [ID] and [Error]: the JSON-RPC envelope, decoded and encoded
//     by hand so that ids and payloads pass through unchanged.
//   - [Reader] and [Writer]: the framing, one message per line, with a cap on
//     the line length.
//   - [Conn]: a symmetric JSON-RPC peer (MCP servers send requests too):
//     concurrent handlers, calls correlated by id, cancellation, progress.
//   - [Server]: the runtime of mcpgen's built-in servers: the initialize
//     handshake, tools/list and tools/call.
//   - [Client]: what the launcher and the tests use to drive a server.
//
// The hub that shares one server among many agents forwards messages with the
// low layers and rewrites ids, which is why an [ID] keeps the exact JSON text
// it was read from.
package mcp

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	json "github.com/goccy/go-json"
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
func StringID(s string) ID { return ID{string(appendString(nil, s))} }

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
	s := scanner{data: data}
	s.skipSpace()
	start := s.pos
	if err := s.value(0); err != nil {
		return err
	}
	end := s.pos
	if !s.atEnd() {
		return s.unexpected("after id")
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
		return ID{string(appendString(nil, unquote(lit, true)))}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		s := scanner{data: lit}
		if integer, _ := s.number(); integer {
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
		dst = appendString(dst, m.Method)
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
	dst = appendString(dst, e.Message)
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
	// ID is the offending request's id, when it could be read.
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
func DecodeMessage(line []byte) (*Message, error) {
	s := scanner{data: line}
	if s.atEnd() {
		return nil, parseError(line, s.errorf("empty message"))
	}
	if s.peek() != '{' {
		if err := s.value(0); err != nil {
			return nil, parseError(line, err)
		}
		if !s.atEnd() {
			return nil, parseError(line, s.unexpected("after top-level value"))
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
	s.pos++ // '{'
	for more := s.peek() != '}'; more; {
		if s.peek() != '"' {
			return nil, parseError(line, s.unexpected("looking for an object key"))
		}
		kstart := s.pos
		escaped, err := s.str()
		if err != nil {
			return nil, parseError(line, err)
		}
		key := line[kstart:s.pos]
		if escaped {
			key = appendString(nil, unquote(key, true))
		}
		if s.peek() != ':' {
			return nil, parseError(line, s.unexpected("after object key"))
		}
		s.pos++
		s.skipSpace()
		vstart := s.pos
		escaped = false
		if s.pos < len(line) && line[s.pos] == '"' {
			escaped, err = s.str()
		} else {
			err = s.value(1)
		}
		if err != nil {
			return nil, parseError(line, err)
		}
		v := line[vstart:s.pos]

		bit := 0
		switch string(key) {
		case `"jsonrpc"`:
			bit = hasVersion
			if v[0] != '"' || (string(v) != `"2.0"` && unquote(v, escaped) != "2.0") {
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

		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			more = false
		default:
			return nil, parseError(line, s.unexpected("after object value"))
		}
	}
	s.pos++ // '}'
	if !s.atEnd() {
		return nil, parseError(line, s.unexpected("after top-level value"))
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
	s := scanner{data: prefix[:min(len(prefix), peekLimit)]}
	if s.peek() != '{' {
		return
	}
	s.pos++
	for s.peek() == '"' {
		kstart := s.pos
		escaped, err := s.str()
		if err != nil {
			return
		}
		key := unquote(prefix[kstart:s.pos], escaped)
		switch key {
		case "method":
			isRequest = true
		case "result", "error":
			isResponse = true
		}
		if s.peek() != ':' {
			return
		}
		s.pos++
		s.skipSpace()
		vstart := s.pos
		if err := s.value(1); err != nil {
			return
		}
		if key == "id" && prefix[vstart] != 'n' {
			id, _ = parseID(prefix[vstart:s.pos])
		}
		if s.peek() != ',' {
			return
		}
		s.pos++
	}
	return
}

func parseError(line []byte, err error) *DecodeError {
	// Answer only what was meant to be JSON: a peer that prints a banner or
	// a stack trace on stdout is not waiting for anything.
	i := skipSpaceAt(line, 0)
	reply := i < len(line) && (line[i] == '{' || line[i] == '[')
	return &DecodeError{Err: NewError(CodeParseError, "parse error: %v", err), Reply: reply}
}

func skipSpaceAt(b []byte, i int) int {
	s := scanner{data: b, pos: i}
	s.skipSpace()
	return s.pos
}

// decodeErrorObject reads a JSON-RPC error object from v, whose syntax was
// checked. It returns the problem with its shape, if any.
func decodeErrorObject(v []byte) (*Error, string) {
	if v[0] != '{' {
		return nil, `"error" must be an object`
	}
	e := &Error{}
	var haveCode, haveMessage bool
	s := scanner{data: v, pos: 1}
	if s.peek() == '}' {
		return nil, `"error" must have "code" and "message"`
	}
	for {
		s.peek()
		kstart := s.pos
		kesc, _ := s.str()
		key := unquote(v[kstart:s.pos], kesc)
		s.peek() // ':'
		s.pos++
		s.skipSpace()
		vstart := s.pos
		var vesc bool
		if v[s.pos] == '"' {
			vesc, _ = s.str()
		} else {
			_ = s.value(1)
		}
		val := v[vstart:s.pos]
		switch key {
		case "code":
			haveCode = true
			lit := string(val)
			if val[0] != '-' && (val[0] < '0' || val[0] > '9') {
				return nil, `"error.code" must be an integer`
			}
			if sc := (scanner{data: val}); !mustInteger(&sc) {
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
			e.Message = unquote(val, vesc)
		case "data":
			e.Data = val
		}
		if s.peek() == ',' {
			s.pos++
			continue
		}
		break
	}
	if !haveCode || !haveMessage {
		return nil, `"error" must have "code" and "message"`
	}
	return e, ""
}

func mustInteger(s *scanner) bool {
	integer, err := s.number()
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
	return unquote(lit, escaped)
}
