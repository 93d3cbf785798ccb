package mcp

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
)

func TestIDUnmarshal(t *testing.T) {
	tests := []struct {
		in      string
		want    string // the ID's text; "" when an error is expected
		wantErr string
	}{
		{in: `7`, want: `7`},
		{in: " \t7\r\n", want: `7`},
		{in: `-3`, want: `-3`},
		{in: `0`, want: `0`},
		{in: `-0`, want: `-0`},
		{in: `123456789012345678901234567890`, want: `123456789012345678901234567890`},
		{in: `1.0`, want: `1`},
		{in: `1e3`, want: `1000`},
		{in: `-2.5e1`, want: `-25`},
		{in: `"abc"`, want: `"abc"`},
		{in: `""`, want: `""`},
		{in: `"a\u0062c"`, want: `"abc"`},
		{in: `"a\/b"`, want: `"a/b"`},
		{in: `"é"`, want: `"é"`},
		{in: `"\ud83d\ude00"`, want: `"😀"`},
		{in: `"tab\there"`, want: `"tab\there"`},
		{in: "\"bad\xffutf8\"", want: `"bad` + "\ufffd" + `utf8"`},
		{in: `1.5`, wantErr: "fraction"},
		{in: `1e400`, wantErr: "fraction"},
		{in: `9007199254740994.0`, wantErr: "fraction"},
		{in: `null`, wantErr: "must not be null"},
		{in: `true`, wantErr: "integer or a string"},
		{in: `{}`, wantErr: "integer or a string"},
		{in: `[]`, wantErr: "integer or a string"},
		{in: `"abc`, wantErr: "end of input"},
		{in: ``, wantErr: "end of input"},
		{in: `7 8`, wantErr: "after id"},
		{in: `01`, wantErr: "after id"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var id ID
			err := id.UnmarshalJSON([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("UnmarshalJSON(%s) = %v, %v; want error containing %q", tt.in, id, err, tt.wantErr)
				}
				return
			}
			if err != nil || id.String() != tt.want {
				t.Fatalf("UnmarshalJSON(%s) = %s, %v; want %s", tt.in, id, err, tt.want)
			}
		})
	}
}

func TestIDValues(t *testing.T) {
	tests := []struct {
		id        ID
		wantText  string
		wantValid bool
	}{
		{ID{}, "null", false},
		{Int64ID(0), "0", true},
		{Int64ID(-42), "-42", true},
		{StringID("abc"), `"abc"`, true},
		{StringID(`a"b\c` + "\n"), `"a\"b\\c\n"`, true},
		{StringID(""), `""`, true},
	}
	for _, tt := range tests {
		if got := tt.id.String(); got != tt.wantText {
			t.Errorf("String() = %s, want %s", got, tt.wantText)
		}
		if got := tt.id.IsValid(); got != tt.wantValid {
			t.Errorf("%s: IsValid() = %v, want %v", tt.id, got, tt.wantValid)
		}
		b, err := tt.id.MarshalJSON()
		if err != nil || string(b) != tt.wantText {
			t.Errorf("MarshalJSON() = %s, %v; want %s", b, err, tt.wantText)
		}
	}

	// Two spellings of one string are one map key; an integer and the
	// string of its digits are not.
	var escaped ID
	if err := escaped.UnmarshalJSON([]byte(`"a\u0062c"`)); err != nil {
		t.Fatal(err)
	}
	m := map[ID]int{StringID("abc"): 1, Int64ID(7): 2}
	if m[escaped] != 1 || m[StringID("7")] != 0 {
		t.Errorf("map lookups: %v, %v; want 1, 0", m[escaped], m[StringID("7")])
	}

	// Inside a struct, through goccy.
	var p struct {
		RequestID ID `json:"requestId"`
	}
	if err := json.Unmarshal([]byte(`{"requestId":"x"}`), &p); err != nil || p.RequestID != StringID("x") {
		t.Errorf(`decode {"requestId":"x"}: %v, %v`, p.RequestID, err)
	}
	if err := json.Unmarshal([]byte(`{"requestId":null}`), &p); err == nil {
		t.Errorf(`decode {"requestId":null}: no error`)
	}
}

func TestDecodeMessage(t *testing.T) {
	tests := []struct {
		name string
		line string
		want *Message
	}{
		{"request", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"x"}}`,
			&Message{ID: Int64ID(1), Method: "tools/list", Params: json.RawMessage(`{"cursor":"x"}`)}},
		{"request with string id", `{"jsonrpc":"2.0","id":"a-1","method":"ping"}`,
			&Message{ID: StringID("a-1"), Method: "ping"}},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			&Message{Method: "notifications/initialized"}},
		{"array params", `{"jsonrpc":"2.0","id":2,"method":"x","params":[1,2]}`,
			&Message{ID: Int64ID(2), Method: "x", Params: json.RawMessage(`[1,2]`)}},
		{"null params", `{"jsonrpc":"2.0","id":2,"method":"x","params":null}`,
			&Message{ID: Int64ID(2), Method: "x"}},
		{"result", `{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}`,
			&Message{ID: Int64ID(3), Result: json.RawMessage(`{"tools":[]}`)}},
		{"null result", `{"jsonrpc":"2.0","id":3,"result":null}`,
			&Message{ID: Int64ID(3), Result: json.RawMessage(`null`)}},
		{"error", `{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"no such method","data":{"m":"x"}}}`,
			&Message{ID: Int64ID(4), Error: &Error{Code: -32601, Message: "no such method", Data: json.RawMessage(`{"m":"x"}`)}}},
		{"error with null id", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`,
			&Message{Error: &Error{Code: -32700, Message: "parse error"}}},
		{"error without id", `{"jsonrpc":"2.0","error":{"code":1.0,"message":"x","extra":true}}`,
			&Message{Error: &Error{Code: 1, Message: "x"}}},
		{"any order, white space, unknown members",
			" {\r\n\t\"params\" : { \"a\" : [ 1 , 2 ] } , \"x-extra\":{\"id\":9}, \"method\":\"m\",\"id\" : 5 ,\"jsonrpc\":\"2.0\" } ",
			&Message{ID: Int64ID(5), Method: "m", Params: json.RawMessage(`{ "a" : [ 1 , 2 ] }`)}},
		{"escapes", `{"jsonrpc":"2\u002e0","id":"\u0031","method":"tools\/call"}`,
			&Message{ID: StringID("1"), Method: "tools/call"}},
		{"escaped member name", `{"jsonrpc":"2.0","\u0069d":6,"method":"m"}`,
			&Message{ID: Int64ID(6), Method: "m"}},
		{"deep but allowed", `{"jsonrpc":"2.0","method":"m","params":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`,
			&Message{Method: "m", Params: json.RawMessage(strings.Repeat("[", 100) + strings.Repeat("]", 100))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeMessage([]byte(tt.line))
			if err != nil {
				t.Fatalf("DecodeMessage: %v", err)
			}
			if !equalMessages(got, tt.want) {
				t.Fatalf("DecodeMessage(%s)\n got %s\nwant %s", tt.line, dump(got), dump(tt.want))
			}
			// What decodes re-encodes to something that decodes the same.
			again, err := DecodeMessage(got.AppendJSON(nil))
			if err != nil || !equalMessages(again, got) {
				t.Fatalf("re-decoding %s: %s, %v", got.AppendJSON(nil), dump(again), err)
			}
		})
	}
}

func TestDecodeMessageErrors(t *testing.T) {
	tests := []struct {
		name      string
		line      string
		wantCode  int64
		wantMsg   string // a substring of the error message
		wantReply bool
		wantID    ID
	}{
		// Not JSON: -32700, answered only when it was meant to be JSON.
		{"empty", ``, CodeParseError, "empty message", false, ID{}},
		{"text", `Server listening on stdio`, CodeParseError, "invalid character 'S'", false, ID{}},
		{"truncated", `{"jsonrpc":"2.0",`, CodeParseError, "end of input", true, ID{}},
		{"trailing data", `{"jsonrpc":"2.0","method":"m"} x`, CodeParseError, "after top-level value", true, ID{}},
		{"trailing after array", `[1] 2`, CodeParseError, "after top-level value", true, ID{}},
		{"trailing after value", `1 2`, CodeParseError, "after top-level value", false, ID{}},
		{"bad literal", `{"a":tru}`, CodeParseError, "in literal true", true, ID{}},
		{"bad escape", `{"a":"\x"}`, CodeParseError, "in string escape", true, ID{}},
		{"short unicode escape", `{"a":"\u12"}`, CodeParseError, `in \u escape`, true, ID{}},
		{"escape at end", `{"a":"\`, CodeParseError, "end of input in string escape", true, ID{}},
		{"control character", "{\"a\":\"x\ty\"}", CodeParseError, "in string literal", true, ID{}},
		{"unterminated string", `{"a":"xy`, CodeParseError, "end of input in string literal", true, ID{}},
		{"leading zero", `{"a":01}`, CodeParseError, "after object value", true, ID{}},
		{"bare minus", `{"a":-}`, CodeParseError, "in numeric literal", true, ID{}},
		{"empty fraction", `{"a":1.}`, CodeParseError, "after decimal point", true, ID{}},
		{"empty exponent", `{"a":1e}`, CodeParseError, "in exponent", true, ID{}},
		{"unquoted key", `{a:1}`, CodeParseError, "looking for an object key", true, ID{}},
		{"missing colon", `{"a" 1}`, CodeParseError, "after object key", true, ID{}},
		{"missing value", `{"a":}`, CodeParseError, "looking for a value", true, ID{}},
		{"trailing comma", `{"a":1,}`, CodeParseError, "looking for an object key", true, ID{}},
		{"bad array", `{"a":[1 2]}`, CodeParseError, "after array element", true, ID{}},
		{"too deep", `{"a":` + strings.Repeat("[", jsonwire.MaxDepth+1) + strings.Repeat("]", jsonwire.MaxDepth+1) + `}`, CodeParseError, "max depth", true, ID{}},
		{"too deep objects", strings.Repeat(`{"a":`, jsonwire.MaxDepth+1) + `1` + strings.Repeat("}", jsonwire.MaxDepth+1), CodeParseError, "max depth", true, ID{}},
		{"bad value in id", `{"id":x}`, CodeParseError, "looking for a value", true, ID{}},
		{"bad key inside error", `{"jsonrpc":"2.0","error":{"code":1,"message":"m",}}`, CodeParseError, "object key", true, ID{}},

		// A byte order mark is named, and a request still gets its id.
		{"bom request", "\xef\xbb\xbf" + `{"jsonrpc":"2.0","id":1,"method":"ping"}`, CodeParseError, "line starts with a UTF-8 byte order mark; send JSON without one", true, Int64ID(1)},
		{"bom notification", "\xef\xbb\xbf" + `{"jsonrpc":"2.0","method":"notifications/initialized"}`, CodeParseError, "byte order mark", true, ID{}},
		{"bom response", "\xef\xbb\xbf" + `{"jsonrpc":"2.0","id":1,"result":{}}`, CodeParseError, "byte order mark", false, ID{}},
		{"bom broken json", "\xef\xbb\xbf" + ` {"jsonrpc":"2.0","id":1,`, CodeParseError, "byte order mark", true, ID{}},
		{"bom text", "\xef\xbb\xbfhello", CodeParseError, "byte order mark", false, ID{}},
		{"bom alone", "\xef\xbb\xbf", CodeParseError, "byte order mark", false, ID{}},
		{"two boms", "\xef\xbb\xbf\xef\xbb\xbf" + `{"jsonrpc":"2.0","id":1,"method":"ping"}`, CodeParseError, "byte order mark", false, ID{}},

		// JSON but not a message: -32600.
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, CodeInvalidRequest, "batch", true, ID{}},
		{"empty batch", ` [] `, CodeInvalidRequest, "batch", true, ID{}},
		{"number", `42`, CodeInvalidRequest, "must be a JSON object", true, ID{}},
		{"string", `"ping"`, CodeInvalidRequest, "must be a JSON object", true, ID{}},
		{"empty object", `{}`, CodeInvalidRequest, `missing "jsonrpc"`, true, ID{}},
		{"missing jsonrpc", `{"id":1,"method":"ping"}`, CodeInvalidRequest, `missing "jsonrpc"`, true, Int64ID(1)},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, CodeInvalidRequest, `"jsonrpc" must be "2.0"`, true, Int64ID(1)},
		{"jsonrpc number", `{"jsonrpc":2.0,"id":1,"method":"ping"}`, CodeInvalidRequest, `"jsonrpc" must be "2.0"`, true, Int64ID(1)},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, CodeInvalidRequest, "id must not be null", true, ID{}},
		{"bool id", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, CodeInvalidRequest, "integer or a string", true, ID{}},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, CodeInvalidRequest, "integer or a string", true, ID{}},
		{"array id", `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, CodeInvalidRequest, "integer or a string", true, ID{}},
		{"fraction id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, CodeInvalidRequest, "fraction", true, ID{}},
		{"method not a string", `{"jsonrpc":"2.0","id":1,"method":5}`, CodeInvalidRequest, `"method" must be a string`, true, Int64ID(1)},
		{"empty method", `{"jsonrpc":"2.0","id":1,"method":""}`, CodeInvalidRequest, `"method" must not be empty`, true, Int64ID(1)},
		{"string params", `{"jsonrpc":"2.0","id":1,"method":"m","params":"x"}`, CodeInvalidRequest, `"params" must be an object`, true, Int64ID(1)},
		{"number params", `{"jsonrpc":"2.0","id":1,"method":"m","params":5}`, CodeInvalidRequest, `"params" must be an object`, true, Int64ID(1)},
		{"method and result", `{"jsonrpc":"2.0","id":1,"method":"m","result":{}}`, CodeInvalidRequest, `must not have "result"`, true, Int64ID(1)},
		{"method and error", `{"jsonrpc":"2.0","id":1,"method":"m","error":{"code":1,"message":"x"}}`, CodeInvalidRequest, `must not have "result" or "error"`, true, Int64ID(1)},
		{"result and error", `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`, CodeInvalidRequest, "both", false, Int64ID(1)},
		{"neither", `{"jsonrpc":"2.0","id":1}`, CodeInvalidRequest, `missing "method", "result" or "error"`, true, Int64ID(1)},
		{"result without id", `{"jsonrpc":"2.0","result":{}}`, CodeInvalidRequest, "must have an id", false, ID{}},
		{"result with null id", `{"jsonrpc":"2.0","id":null,"result":{}}`, CodeInvalidRequest, "must have an id", false, ID{}},
		{"response with params", `{"jsonrpc":"2.0","id":1,"result":{},"params":{}}`, CodeInvalidRequest, `must not have "params"`, false, Int64ID(1)},
		{"duplicate id", `{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}`, CodeInvalidRequest, `duplicate member "id"`, true, Int64ID(2)},
		{"duplicate method", `{"jsonrpc":"2.0","method":"a","method":"b"}`, CodeInvalidRequest, `duplicate member "method"`, true, ID{}},
		{"error not an object", `{"jsonrpc":"2.0","id":1,"error":"bad"}`, CodeInvalidRequest, `"error" must be an object`, false, Int64ID(1)},
		{"empty error", `{"jsonrpc":"2.0","id":1,"error":{}}`, CodeInvalidRequest, `must have "code" and "message"`, false, Int64ID(1)},
		{"error without message", `{"jsonrpc":"2.0","id":1,"error":{"code":1}}`, CodeInvalidRequest, `must have "code" and "message"`, false, Int64ID(1)},
		{"error code string", `{"jsonrpc":"2.0","id":1,"error":{"code":"1","message":"x"}}`, CodeInvalidRequest, `"error.code" must be an integer`, false, Int64ID(1)},
		{"error code fraction", `{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"x"}}`, CodeInvalidRequest, `"error.code" must be an integer`, false, Int64ID(1)},
		{"error code too big", `{"jsonrpc":"2.0","id":1,"error":{"code":99999999999999999999,"message":"x"}}`, CodeInvalidRequest, `out of range`, false, Int64ID(1)},
		{"error message not a string", `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":2}}`, CodeInvalidRequest, `"error.message" must be a string`, false, Int64ID(1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, err := DecodeMessage([]byte(tt.line))
			var derr *DecodeError
			if !errors.As(err, &derr) {
				t.Fatalf("DecodeMessage(%.80s) = %s, %v; want a *DecodeError", tt.line, dump(msg), err)
			}
			if msg != nil {
				t.Errorf("message = %s, want nil", dump(msg))
			}
			if derr.Err.Code != tt.wantCode || !strings.Contains(derr.Err.Message, tt.wantMsg) {
				t.Errorf("error = %d %q; want %d containing %q", derr.Err.Code, derr.Err.Message, tt.wantCode, tt.wantMsg)
			}
			if derr.Reply != tt.wantReply || derr.ID != tt.wantID {
				t.Errorf("Reply, ID = %v, %s; want %v, %s", derr.Reply, derr.ID, tt.wantReply, tt.wantID)
			}
			if !errors.Is(err, &Error{Code: tt.wantCode}) {
				t.Errorf("errors.Is(err, code %d) = false", tt.wantCode)
			}
			if got, want := errors.Is(err, ErrBatch), strings.HasPrefix(strings.TrimSpace(tt.line), "[") && tt.wantCode == CodeInvalidRequest; got != want {
				t.Errorf("errors.Is(err, ErrBatch) = %v, want %v", got, want)
			}
			resp := derr.Response()
			if (resp != nil) != tt.wantReply {
				t.Fatalf("Response() = %s, want one: %v", dump(resp), tt.wantReply)
			}
			if resp != nil && (resp.ID != tt.wantID || resp.Error != derr.Err) {
				t.Errorf("Response() = %s", dump(resp))
			}
		})
	}
}

func TestAppendJSON(t *testing.T) {
	tests := []struct {
		name string
		msg  *Message
		want string
	}{
		{"request", &Message{ID: Int64ID(1), Method: "tools/call", Params: json.RawMessage(`{"name":"echo"}`)},
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`},
		{"request without params", &Message{ID: StringID("x"), Method: "ping"},
			`{"jsonrpc":"2.0","id":"x","method":"ping"}`},
		{"notification", &Message{Method: "notifications/initialized"},
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{"result", &Message{ID: Int64ID(2), Result: json.RawMessage(`{}`)},
			`{"jsonrpc":"2.0","id":2,"result":{}}`},
		{"error", &Message{ID: Int64ID(3), Error: &Error{Code: -32602, Message: "bad", Data: json.RawMessage(`[1]`)}},
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad","data":[1]}}`},
		{"error without id", &Message{Error: &Error{Code: -32700, Message: "parse error"}},
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`},
		{"escaping", &Message{Method: "a\"b\\c\nd\x01\u2028é\xff", Params: json.RawMessage(`{}`)},
			`{"jsonrpc":"2.0","method":"a\"b\\c\nd\u0001` + "\u2028é" + `\ufffd","params":{}}`},
		{"empty", &Message{}, `{"jsonrpc":"2.0"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(tt.msg.AppendJSON(nil)); got != tt.want {
				t.Errorf("AppendJSON\n got %s\nwant %s", got, tt.want)
			}
			if got, err := tt.msg.MarshalJSON(); string(got) != tt.want || err != nil {
				t.Errorf("MarshalJSON = %s, %v", got, err)
			}
			if got := string(tt.msg.AppendJSON([]byte("prefix"))); got != "prefix"+tt.want {
				t.Errorf("AppendJSON(prefix) = %s", got)
			}
		})
	}
}

// TestDecodeErrorServerResponse: a server answers every line it cannot
// parse (JSON-RPC 2.0, section 5), text included; a client only what was
// meant to be JSON. Neither answers what looks like a response.
func TestDecodeErrorServerResponse(t *testing.T) {
	tests := []struct {
		name, line     string
		server, client bool  // whether each role answers
		wantCode       int64 // of the answer
	}{
		{"plain text", `Listening on stdio`, true, false, CodeParseError},
		{"ansi colours", "\x1b[32mready\x1b[0m", true, false, CodeParseError},
		{"number", `42`, true, true, CodeInvalidRequest},
		{"truncated json", `{"jsonrpc":"2.0","id":1`, true, true, CodeParseError},
		{"bom and text", "\xef\xbb\xbfhello", true, false, CodeParseError},
		{"invalid request", `{"jsonrpc":"2.0","id":1,"method":5}`, true, true, CodeInvalidRequest},
		{"invalid response", `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}`, false, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeMessage([]byte(tt.line))
			var derr *DecodeError
			if !errors.As(err, &derr) {
				t.Fatalf("DecodeMessage(%q) = %v, want a *DecodeError", tt.line, err)
			}
			server, client := derr.ServerResponse(), derr.Response()
			if (server != nil) != tt.server || (client != nil) != tt.client {
				t.Fatalf("server answers %s, client answers %s; want %v, %v", dump(server), dump(client), tt.server, tt.client)
			}
			if server != nil && (server.Error.Code != tt.wantCode || server.ID != derr.ID) {
				t.Errorf("server answers %s, want code %d under id %s", dump(server), tt.wantCode, derr.ID)
			}
		})
	}
}

func TestErrorValues(t *testing.T) {
	err := fmt.Errorf("tools/call: %w", NewError(CodeMethodNotFound, "method not found: %s", "x"))
	if !errors.Is(err, ErrMethodNotFound) || errors.Is(err, ErrInvalidParams) {
		t.Errorf("errors.Is by code does not work on %v", err)
	}
	if got, want := err.Error(), "tools/call: method not found: x (jsonrpc error -32601)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func equalMessages(a, b *Message) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.ID != b.ID || a.Method != b.Method || !bytes.Equal(a.Params, b.Params) || !bytes.Equal(a.Result, b.Result) {
		return false
	}
	if a.Error == nil || b.Error == nil {
		return a.Error == b.Error
	}
	return a.Error.Code == b.Error.Code && a.Error.Message == b.Error.Message && bytes.Equal(a.Error.Data, b.Error.Data)
}

func dump(m *Message) string {
	if m == nil {
		return "<nil>"
	}
	return string(m.AppendJSON(nil))
}
