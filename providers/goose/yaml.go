package goose

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// A ymap is a YAML mapping that Render writes: its keys in order, each value a string, a
// []string, a ymap, an int64, a bool or nil. Render writes it as text itself, and
// fingerprints the same values: yaml.v3's encoder, and decoding the text again to
// fingerprint it, cost more than the rest of a render.
type ymap []ypair

type ypair struct {
	k string
	v any
}

func (m *ymap) add(k string, v any) { *m = append(*m, ypair{k, v}) }

// text writes m as a block mapping at indent, two spaces a level, lists indented under
// their key, as yaml.v3's encoder with SetIndent(2) writes one.
func (m ymap) text(b []byte, indent int) []byte {
	pad := strings.Repeat(" ", indent)
	for _, p := range m {
		b = append(b, pad...)
		b = appendScalar(b, p.k)
		b = append(b, ':')
		switch v := p.v.(type) {
		case nil:
			b = append(b, " null\n"...)
		case string:
			b = append(b, ' ')
			b = appendScalar(b, v)
			b = append(b, '\n')
		case int64:
			b = append(b, ' ')
			b = strconv.AppendInt(b, v, 10)
			b = append(b, '\n')
		case bool:
			b = append(b, ' ')
			b = strconv.AppendBool(b, v)
			b = append(b, '\n')
		case []string:
			if len(v) == 0 {
				b = append(b, " []\n"...)
				continue
			}
			b = append(b, '\n')
			for _, s := range v {
				b = append(b, pad...)
				b = append(b, "  - "...)
				b = appendScalar(b, s)
				b = append(b, '\n')
			}
		case ymap:
			if len(v) == 0 {
				b = append(b, " {}\n"...)
				continue
			}
			b = append(b, '\n')
			b = v.text(b, indent+2)
		}
	}
	return b
}

// generic is m as yaml.v3 decodes its text: what Fingerprint takes.
func (m ymap) generic() map[string]any {
	g := make(map[string]any, len(m))
	for _, p := range m {
		switch v := p.v.(type) {
		case []string:
			l := make([]any, len(v))
			for i, s := range v {
				l[i] = s
			}
			g[p.k] = l
		case ymap:
			g[p.k] = v.generic()
		default:
			g[p.k] = v
		}
	}
	return g
}

// appendScalar writes s as a YAML string: plain when YAML reads it back as that string,
// else single-quoted, else (a character single quotes cannot hold) double-quoted.
func appendScalar(b []byte, s string) []byte {
	switch {
	case plainSafe(s):
		return append(b, s...)
	case printable(s):
		b = append(b, '\'')
		b = append(b, strings.ReplaceAll(s, "'", "''")...)
		return append(b, '\'')
	}
	b = append(b, '"')
	for i, w := 0, 0; i < len(s); i += w {
		r, size := utf8.DecodeRuneInString(s[i:])
		w = size
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\t':
			b = append(b, `\t`...)
		case r == utf8.RuneError && size == 1:
			b = append(b, `\uFFFD`...)
		case !printableRune(r):
			if r > 0xFFFF {
				b = append(b, `\U`...)
				b = append(b, leftPad(strconv.FormatInt(int64(r), 16), 8)...)
			} else {
				b = append(b, `\u`...)
				b = append(b, leftPad(strconv.FormatInt(int64(r), 16), 4)...)
			}
		default:
			b = append(b, s[i:i+size]...)
		}
	}
	return append(b, '"')
}

func leftPad(s string, n int) string {
	return strings.Repeat("0", n-len(s)) + s
}

// plainSafe reports whether s reads back as itself unquoted, conservatively: printable
// ASCII that starts with a letter, "_", "/" or "$", or with "-" before a letter; no ": "
// or " #", no blank at either end, no ":" at the end; and not a word that YAML reads as a
// boolean or null. What starts with a digit, "." or "+" may be a number or a date: quoted.
func plainSafe(s string) bool {
	if s == "" || s[0] == ' ' || s[len(s)-1] == ' ' || s[len(s)-1] == ':' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	if strings.Contains(s, ": ") || strings.Contains(s, " #") {
		return false
	}
	switch c := s[0]; {
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '/' || c == '$':
	case c == '-' && len(s) > 1 && s[1] != ' ' && (s[1] < '0' || s[1] > '9') && s[1] != '.' && s != "---":
	default:
		return false // digits, ., +, and YAML's indicators
	}
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "y", "n", "null":
		return false // a boolean or null, to YAML 1.1 or 1.2
	}
	return true
}

// printable reports whether single quotes can hold s: printable characters, no line break.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !printableRune(r) || r == '\n' {
			return false
		}
	}
	return true
}

// printableRune is YAML's printable set, without the line breaks (U+0085, U+2028, U+2029),
// which a scalar would fold, and the byte order mark.
func printableRune(r rune) bool {
	switch {
	case r == 0x85 || r == 0x2028 || r == 0x2029 || r == 0xFEFF:
		return false
	case r >= 0x20 && r <= 0x7E, r >= 0xA0 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD, r >= 0x10000 && r <= 0x10FFFF:
		return true
	}
	return false
}
