package jsonwire

import (
	"unicode/utf16"
	"unicode/utf8"
)

// AppendString appends s to dst as a JSON string. It escapes only what
// JSON requires: the quote, the backslash and control characters (\n, \r
// and \t by name, the others as \u00XX), never <, > or &; and it replaces
// invalid UTF-8 with \ufffd. So the output is valid JSON, the same for the
// same text, and decodes (with Unquote, or any decoder) to the text that
// Unquote would make of s.
func AppendString(dst []byte, s string) []byte {
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

// Unquote decodes a JSON string literal, quotes included, whose syntax has
// been checked (by a Scanner, or because it is part of valid JSON). escaped
// is what SkipString reported; pass true when unsure, which only costs time.
// Invalid UTF-8 and unpaired surrogates become U+FFFD, as in encoding/json,
// so that the text is always valid UTF-8 and AppendString gives it back.
func Unquote(lit []byte, escaped bool) string {
	body := lit[1 : len(lit)-1]
	if !escaped && utf8.Valid(body) {
		if k, ok := commonKey(body); ok {
			return k
		}
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

// commonKey returns the keys that every MCP message has, and the members of
// _meta that every modern request has, without a copy: the proxy reads
// them in each message it forwards (Members). (A switch on string(b) does
// not allocate.)
func commonKey(b []byte) (string, bool) {
	switch string(b) {
	case "jsonrpc":
		return "jsonrpc", true
	case "id":
		return "id", true
	case "method":
		return "method", true
	case "params":
		return "params", true
	case "result":
		return "result", true
	case "error":
		return "error", true
	case "name":
		return "name", true
	case "version":
		return "version", true
	case "arguments":
		return "arguments", true
	case "content":
		return "content", true
	case "type":
		return "type", true
	case "text":
		return "text", true
	case "_meta":
		return "_meta", true
	case "progressToken":
		return "progressToken", true
	case "resultType":
		return "resultType", true
	case "traceparent":
		return "traceparent", true
	case "tracestate":
		return "tracestate", true
	case "io.modelcontextprotocol/protocolVersion":
		return "io.modelcontextprotocol/protocolVersion", true
	case "io.modelcontextprotocol/clientCapabilities":
		return "io.modelcontextprotocol/clientCapabilities", true
	case "io.modelcontextprotocol/clientInfo":
		return "io.modelcontextprotocol/clientInfo", true
	case "io.modelcontextprotocol/serverInfo":
		return "io.modelcontextprotocol/serverInfo", true
	case "io.modelcontextprotocol/logLevel":
		return "io.modelcontextprotocol/logLevel", true
	}
	return "", false
}
