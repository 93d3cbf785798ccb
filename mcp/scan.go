package mcp

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// This file holds a small JSON scanner. DecodeMessage walks the envelope with
// it instead of unmarshalling into a struct because it must (1) tell a syntax
// error (-32700) from a well-formed line with the wrong shape (-32600), (2) keep
// params, result and error data as the exact bytes that were read, (3) match
// member names exactly (encoding/json and goccy match them case-insensitively,
// so "ID" would be taken for "id"), and (4) be fast: the hub decodes every line.

// maxDepth bounds the nesting of arrays and objects, so that a line of 16 MiB
// of "[" cannot exhaust the stack; encoding/json uses the same limit.
const maxDepth = 10000

// A syntaxError is a line that is not JSON.
type syntaxError struct {
	msg string
	off int
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("%s at offset %d", e.msg, e.off)
}

// scanner reads one JSON text held in data; pos is the next byte to read.
type scanner struct {
	data []byte
	pos  int
}

func (s *scanner) errorf(format string, args ...any) error {
	return &syntaxError{msg: fmt.Sprintf(format, args...), off: s.pos}
}

// unexpected reports the byte at pos, or the end of input.
func (s *scanner) unexpected(context string) error {
	if s.pos >= len(s.data) {
		return s.errorf("unexpected end of input %s", context)
	}
	return s.errorf("invalid character %s %s", quoteByte(s.data[s.pos]), context)
}

func quoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return "'" + string(c) + "'"
	}
	return fmt.Sprintf("0x%02x", c)
}

func (s *scanner) skipSpace() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// atEnd reports whether only white space is left.
func (s *scanner) atEnd() bool {
	s.skipSpace()
	return s.pos >= len(s.data)
}

// peek returns the next byte after white space, or 0 at the end of input
// (which a NUL byte in the input also gives: use atEnd to tell them apart).
func (s *scanner) peek() byte {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

// value skips one JSON value starting at pos (no leading white space),
// checking its syntax.
func (s *scanner) value(depth int) error {
	if s.pos >= len(s.data) {
		return s.unexpected("looking for a value")
	}
	switch c := s.data[s.pos]; {
	case c == '{':
		return s.object(depth + 1)
	case c == '[':
		return s.array(depth + 1)
	case c == '"':
		_, err := s.str()
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		_, err := s.number()
		return err
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	default:
		return s.unexpected("looking for a value")
	}
}

func (s *scanner) literal(lit string) error {
	for i := 0; i < len(lit); i++ {
		if s.pos >= len(s.data) || s.data[s.pos] != lit[i] {
			return s.unexpected("in literal " + lit)
		}
		s.pos++
	}
	return nil
}

func (s *scanner) object(depth int) error {
	if depth > maxDepth {
		return s.errorf("exceeded max depth of %d", maxDepth)
	}
	s.pos++ // '{'
	if s.peek() == '}' {
		s.pos++
		return nil
	}
	for {
		if s.peek() != '"' {
			return s.unexpected("looking for an object key")
		}
		if _, err := s.str(); err != nil {
			return err
		}
		if s.peek() != ':' {
			return s.unexpected("after object key")
		}
		s.pos++
		s.skipSpace()
		if err := s.value(depth); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil
		default:
			return s.unexpected("after object value")
		}
	}
}

func (s *scanner) array(depth int) error {
	if depth > maxDepth {
		return s.errorf("exceeded max depth of %d", maxDepth)
	}
	s.pos++ // '['
	if s.peek() == ']' {
		s.pos++
		return nil
	}
	for {
		s.skipSpace()
		if err := s.value(depth); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return nil
		default:
			return s.unexpected("after array element")
		}
	}
}

// plain marks the bytes that a string holds as they are: not the quote, not
// the backslash, not a control character.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str skips a string starting at pos (on the opening quote). escaped reports
// whether the string holds a backslash escape.
func (s *scanner) str() (escaped bool, err error) {
	data := s.data
	i := s.pos + 1
	for {
		for i < len(data) && plain[data[i]] {
			i++
		}
		if i >= len(data) {
			s.pos = i
			return escaped, s.unexpected("in string literal")
		}
		switch data[i] {
		case '"':
			s.pos = i + 1
			return escaped, nil
		case '\\':
			escaped = true
			if i+1 >= len(data) {
				s.pos = len(data)
				return escaped, s.unexpected("in string escape")
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for j := i + 2; j < i+6; j++ {
					if j >= len(data) || !isHex(data[j]) {
						s.pos = min(j, len(data))
						return escaped, s.unexpected("in \\u escape")
					}
				}
				i += 6
			default:
				s.pos = i + 1
				return escaped, s.unexpected("in string escape")
			}
		default: // a control character
			s.pos = i
			return escaped, s.unexpected("in string literal")
		}
	}
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// number skips a number starting at pos. integer reports whether it has
// neither a fraction nor an exponent.
func (s *scanner) number() (integer bool, err error) {
	integer = true
	if s.data[s.pos] == '-' {
		s.pos++
	}
	switch {
	case s.pos < len(s.data) && s.data[s.pos] == '0':
		s.pos++
	case s.pos < len(s.data) && s.data[s.pos] >= '1' && s.data[s.pos] <= '9':
		s.digits()
	default:
		return false, s.unexpected("in numeric literal")
	}
	if s.pos < len(s.data) && s.data[s.pos] == '.' {
		integer = false
		s.pos++
		if s.digits() == 0 {
			return false, s.unexpected("after decimal point in numeric literal")
		}
	}
	if s.pos < len(s.data) && (s.data[s.pos] == 'e' || s.data[s.pos] == 'E') {
		integer = false
		s.pos++
		if s.pos < len(s.data) && (s.data[s.pos] == '+' || s.data[s.pos] == '-') {
			s.pos++
		}
		if s.digits() == 0 {
			return false, s.unexpected("in exponent of numeric literal")
		}
	}
	return integer, nil
}

func (s *scanner) digits() int {
	start := s.pos
	for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
		s.pos++
	}
	return s.pos - start
}

// unquote decodes a JSON string literal that str has already checked.
// Invalid UTF-8 becomes U+FFFD, as encoding/json does, so that what is
// decoded is always valid text and re-encodes to the same value.
func unquote(lit []byte, escaped bool) string {
	body := lit[1 : len(lit)-1]
	if !escaped && utf8.Valid(body) {
		return string(body)
	}
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); {
		c := body[i]
		if c == '\\' {
			switch body[i+1] {
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r := hex4(body[i+2 : i+6])
				i += 6
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if i+6 <= len(body) && body[i] == '\\' && body[i+1] == 'u' {
						r2 = hex4(body[i+2 : i+6])
					}
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						r = dec
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				out = utf8.AppendRune(out, r)
				continue
			default: // '"', '\\', '/'
				out = append(out, body[i+1])
			}
			i += 2
			continue
		}
		if c < utf8.RuneSelf {
			out = append(out, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(body[i:])
		out = utf8.AppendRune(out, r) // RuneError for a bad byte
		i += size
	}
	return string(out)
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		default:
			c = c - 'A' + 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// appendString appends s as a JSON string. It escapes only what JSON
// requires (quote, backslash, control characters) and replaces invalid UTF-8
// with U+FFFD, so that the output is valid JSON that decodes back to the same
// text that unquote produces.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			const hex = "0123456789abcdef"
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// isJSONValue reports whether raw holds one JSON value.
func isJSONValue(raw []byte) bool {
	s := scanner{data: raw}
	s.skipSpace()
	return s.value(0) == nil && s.atEnd()
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
