package jsonfile

import (
	"bytes"
	"errors"
	"fmt"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/providers"
)

// A Member is one member of a JSON object, as written.
type Member struct {
	Key    string // decoded
	RawKey []byte
	Value  []byte
	At     int // offset of the key in the document
	ValAt  int // offset of the value
}

// Members returns the members of the object that starts at data[at], which must be valid
// JSON, in order, duplicates included.
func Members(data []byte, at int) []Member {
	var ms []Member
	i := skipSpace(data, at+1)
	if i >= len(data) || data[i] == '}' {
		return nil
	}
	for i < len(data) {
		keyStart := i
		i = skipString(data, i)
		rawKey := data[keyStart:i]
		i = skipSpace(data, i)
		i = skipSpace(data, i+1) // ':'
		valueStart := i
		i = skipValue(data, i)
		ms = append(ms, Member{Key: decodeKey(rawKey), RawKey: rawKey, Value: data[valueStart:i], At: keyStart, ValAt: valueStart})
		i = skipSpace(data, i)
		if i >= len(data) || data[i] == '}' {
			break
		}
		i = skipSpace(data, i+1) // ','
		if i < len(data) && data[i] == '}' {
			break // a trailing comma, which JSONC allows
		}
	}
	return ms
}

// Last returns the member named key (the last one, as JavaScript reads a key written
// twice), or nil.
func Last(ms []Member, key string) *Member {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Key == key {
			return &ms[i]
		}
	}
	return nil
}

// Validate returns "line:col: invalid JSON: ..." when data is not one valid JSON value.
func Validate(data []byte) error {
	if json.Valid(data) {
		return nil
	}
	var v any
	err := json.Unmarshal(data, &v)
	var serr *json.SyntaxError
	if !errors.As(err, &serr) {
		if err == nil {
			err = errors.New("not valid")
		}
		return fmt.Errorf("invalid JSON: %w", err)
	}
	at := int(serr.Offset)
	if at > 0 && at <= len(data) && !bytes.Contains([]byte(serr.Error()), []byte("end of JSON input")) {
		at-- // the offset is just past the offending byte
	}
	line, col := Position(data, at)
	return fmt.Errorf("%d:%d: invalid JSON: %s", line, col, serr.Error())
}

// KindOf names the kind of the JSON value that b starts with.
func KindOf(b []byte) string {
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// Position returns the 1-based line and column (in bytes) of offset at.
func Position(data []byte, at int) (line, col int) {
	at = min(at, len(data))
	line = 1 + bytes.Count(data[:at], []byte("\n"))
	return line, at - (bytes.LastIndexByte(data[:at], '\n') + 1) + 1
}

// TrimSpace drops JSON whitespace around b.
func TrimSpace(b []byte) []byte {
	return bytes.Trim(b, " \t\r\n")
}

// Str encodes a JSON string; URLs keep their & as is.
func Str(s string) []byte {
	return providers.AppendJSONString(make([]byte, 0, len(s)+2), s)
}

// Strs encodes a JSON array of strings.
func Strs(ss []string) []byte {
	n := 2
	for _, s := range ss {
		n += len(s) + 3
	}
	b := append(make([]byte, 0, n), '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = providers.AppendJSONString(b, s)
	}
	return append(b, ']')
}

// Object is a JSON object that keeps its keys in insertion order, written as members are
// added.
type Object struct {
	b []byte
	n int
}

// Add appends a member, its value JSON as given.
func (o *Object) Add(key string, val []byte) {
	if o.n == 0 {
		o.b = append(o.b, '{')
	} else {
		o.b = append(o.b, ',')
	}
	o.b = providers.AppendJSONString(o.b, key)
	o.b = append(o.b, ':')
	o.b = append(o.b, val...)
	o.n++
}

// Len is the number of members.
func (o *Object) Len() int { return o.n }

// Bytes writes the object, compact.
func (o *Object) Bytes() []byte {
	if o.n == 0 {
		return []byte("{}")
	}
	return append(o.b, '}')
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n') {
		i++
	}
	return i
}

// skipString returns the offset just past the string that starts at data[i].
func skipString(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(data)
}

// skipValue returns the offset just past the value that starts at data[i].
func skipValue(data []byte, i int) int {
	if i >= len(data) {
		return i
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				i = skipString(data, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default:
		for i < len(data) && !bytes.ContainsRune([]byte(",}] \t\r\n"), rune(data[i])) {
			i++
		}
		return i
	}
}

// decodeKey returns the text of a JSON string.
func decodeKey(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 && len(raw) >= 2 {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return string(raw)
	}
	return s
}
