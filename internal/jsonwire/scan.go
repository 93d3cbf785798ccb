package jsonwire

import (
	"fmt"
)

// MaxDepth bounds the nesting of arrays and objects that a Scanner accepts,
// so that a line of megabytes of "[" cannot exhaust the stack. It is
// encoding/json's limit too.
const MaxDepth = 10000

// A SyntaxError is text that is not JSON.
type SyntaxError struct {
	Msg    string // what is wrong, without the offset
	Offset int    // of the offending byte, or the length of the input at its end
}

// Error returns the message and the offset.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s at offset %d", e.Msg, e.Offset)
}

// A Scanner reads JSON text held in Data; Pos is the next byte to read. Its
// Skip methods step over one token or value, checking its syntax, so that
// the caller keeps Data[start:Pos] as the value's exact text. It allocates
// only for errors.
type Scanner struct {
	Data []byte
	Pos  int
}

// Errorf returns a *SyntaxError at Pos.
func (s *Scanner) Errorf(format string, args ...any) error {
	return &SyntaxError{Msg: fmt.Sprintf(format, args...), Offset: s.Pos}
}

// Unexpected reports the byte at Pos, or the end of the input, as a
// *SyntaxError; context says what was being read ("after object key").
func (s *Scanner) Unexpected(context string) error {
	if s.Pos >= len(s.Data) {
		return s.Errorf("unexpected end of input %s", context)
	}
	return s.Errorf("invalid character %s %s", quoteByte(s.Data[s.Pos]), context)
}

func quoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return "'" + string(c) + "'"
	}
	return fmt.Sprintf("0x%02x", c)
}

// SkipSpace steps over JSON white space.
func (s *Scanner) SkipSpace() {
	for s.Pos < len(s.Data) {
		switch s.Data[s.Pos] {
		case ' ', '\t', '\n', '\r':
			s.Pos++
		default:
			return
		}
	}
}

// AtEnd reports whether only white space is left.
func (s *Scanner) AtEnd() bool {
	s.SkipSpace()
	return s.Pos >= len(s.Data)
}

// Peek returns the next byte after white space, or 0 at the end of the
// input (which a NUL byte in the input also gives: use AtEnd to tell them
// apart).
func (s *Scanner) Peek() byte {
	s.SkipSpace()
	if s.Pos >= len(s.Data) {
		return 0
	}
	return s.Data[s.Pos]
}

// SkipValue steps over one JSON value starting at Pos (no leading white
// space), checking its syntax. depth is how many arrays and objects enclose
// it, counted towards MaxDepth.
func (s *Scanner) SkipValue(depth int) error {
	if s.Pos >= len(s.Data) {
		return s.Unexpected("looking for a value")
	}
	switch c := s.Data[s.Pos]; {
	case c == '{':
		return s.object(depth + 1)
	case c == '[':
		return s.array(depth + 1)
	case c == '"':
		_, err := s.SkipString()
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		_, err := s.SkipNumber()
		return err
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	default:
		return s.Unexpected("looking for a value")
	}
}

func (s *Scanner) literal(lit string) error {
	for i := 0; i < len(lit); i++ {
		if s.Pos >= len(s.Data) || s.Data[s.Pos] != lit[i] {
			return s.Unexpected("in literal " + lit)
		}
		s.Pos++
	}
	return nil
}

func (s *Scanner) object(depth int) error {
	if depth > MaxDepth {
		return s.Errorf("exceeded max depth of %d", MaxDepth)
	}
	s.Pos++ // '{'
	if s.Peek() == '}' {
		s.Pos++
		return nil
	}
	for {
		if s.Peek() != '"' {
			return s.Unexpected("looking for an object key")
		}
		if _, err := s.SkipString(); err != nil {
			return err
		}
		if s.Peek() != ':' {
			return s.Unexpected("after object key")
		}
		s.Pos++
		s.SkipSpace()
		if err := s.SkipValue(depth); err != nil {
			return err
		}
		switch s.Peek() {
		case ',':
			s.Pos++
		case '}':
			s.Pos++
			return nil
		default:
			return s.Unexpected("after object value")
		}
	}
}

func (s *Scanner) array(depth int) error {
	if depth > MaxDepth {
		return s.Errorf("exceeded max depth of %d", MaxDepth)
	}
	s.Pos++ // '['
	if s.Peek() == ']' {
		s.Pos++
		return nil
	}
	for {
		s.SkipSpace()
		if err := s.SkipValue(depth); err != nil {
			return err
		}
		switch s.Peek() {
		case ',':
			s.Pos++
		case ']':
			s.Pos++
			return nil
		default:
			return s.Unexpected("after array element")
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

// SkipString steps over a string starting at Pos (on its opening quote).
// escaped reports whether the string holds a backslash escape, which tells
// Unquote whether it has work to do. Bytes that are not UTF-8 pass, as in
// encoding/json; Unquote replaces them.
func (s *Scanner) SkipString() (escaped bool, err error) {
	data := s.Data
	i := s.Pos + 1
	for {
		for i < len(data) && plain[data[i]] {
			i++
		}
		if i >= len(data) {
			s.Pos = i
			return escaped, s.Unexpected("in string literal")
		}
		switch data[i] {
		case '"':
			s.Pos = i + 1
			return escaped, nil
		case '\\':
			escaped = true
			if i+1 >= len(data) {
				s.Pos = len(data)
				return escaped, s.Unexpected("in string escape")
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for j := i + 2; j < i+6; j++ {
					if j >= len(data) || !isHex(data[j]) {
						s.Pos = min(j, len(data))
						return escaped, s.Unexpected("in \\u escape")
					}
				}
				i += 6
			default:
				s.Pos = i + 1
				return escaped, s.Unexpected("in string escape")
			}
		default: // a control character
			s.Pos = i
			return escaped, s.Unexpected("in string literal")
		}
	}
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// SkipNumber steps over a number starting at Pos. integer reports whether
// it has neither a fraction nor an exponent.
func (s *Scanner) SkipNumber() (integer bool, err error) {
	integer = true
	if s.Data[s.Pos] == '-' {
		s.Pos++
	}
	switch {
	case s.Pos < len(s.Data) && s.Data[s.Pos] == '0':
		s.Pos++
	case s.Pos < len(s.Data) && s.Data[s.Pos] >= '1' && s.Data[s.Pos] <= '9':
		s.digits()
	default:
		return false, s.Unexpected("in numeric literal")
	}
	if s.Pos < len(s.Data) && s.Data[s.Pos] == '.' {
		integer = false
		s.Pos++
		if s.digits() == 0 {
			return false, s.Unexpected("after decimal point in numeric literal")
		}
	}
	if s.Pos < len(s.Data) && (s.Data[s.Pos] == 'e' || s.Data[s.Pos] == 'E') {
		integer = false
		s.Pos++
		if s.Pos < len(s.Data) && (s.Data[s.Pos] == '+' || s.Data[s.Pos] == '-') {
			s.Pos++
		}
		if s.digits() == 0 {
			return false, s.Unexpected("in exponent of numeric literal")
		}
	}
	return integer, nil
}

func (s *Scanner) digits() int {
	start := s.Pos
	for s.Pos < len(s.Data) && s.Data[s.Pos] >= '0' && s.Data[s.Pos] <= '9' {
		s.Pos++
	}
	return s.Pos - start
}

// Valid checks that data holds one JSON value, with white space around it
// allowed. It returns nil or a *SyntaxError.
func Valid(data []byte) error {
	s := Scanner{Data: data}
	s.SkipSpace()
	if err := s.SkipValue(0); err != nil {
		return err
	}
	if !s.AtEnd() {
		return s.Unexpected("after top-level value")
	}
	return nil
}

// IsObject reports whether data holds one JSON object, with white space
// around it allowed.
func IsObject(data []byte) bool {
	s := Scanner{Data: data}
	return s.Peek() == '{' && Valid(data) == nil
}
