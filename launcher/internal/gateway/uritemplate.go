package gateway

import (
	"errors"
	"regexp"
	"strings"
)

// maxTemplate bounds the URI templates that are compiled for routing: a
// server's template is hostile input too.
const maxTemplate = 2 << 10

// compileTemplate returns a regexp that matches the URIs an RFC 6570 URI
// template expands to, so that resources/read and completion/complete of a
// URI no server listed go to the server whose template it fits. Each
// expression matches what its operator can produce: a simple one no "/",
// "?" or "#" (it percent-encodes them), "+" and "#" anything, the path
// and query operators their own prefixed parts.
func compileTemplate(t string) (*regexp.Regexp, error) {
	if len(t) > maxTemplate {
		return nil, errors.New("template too long")
	}
	var b strings.Builder
	b.WriteString("^")
	for t != "" {
		open := strings.IndexByte(t, '{')
		if open < 0 {
			b.WriteString(regexp.QuoteMeta(t))
			break
		}
		b.WriteString(regexp.QuoteMeta(t[:open]))
		end := strings.IndexByte(t[open:], '}')
		if end < 0 {
			return nil, errors.New("unclosed expression")
		}
		expr := t[open+1 : open+end]
		t = t[open+end+1:]
		op := byte(0)
		if expr != "" && strings.IndexByte("+#./;?&", expr[0]) >= 0 {
			op = expr[0]
		}
		switch op {
		case 0:
			b.WriteString(`[^/?#]*`)
		case '+':
			b.WriteString(`.*`)
		case '#':
			b.WriteString(`(?:#.*)?`)
		case '.':
			b.WriteString(`(?:\.[^/?#]*)*`)
		case '/':
			b.WriteString(`(?:/[^/?#]*)*`)
		case ';':
			b.WriteString(`(?:;[^/?#]*)*`)
		case '?':
			b.WriteString(`(?:\?[^#]*)?`)
		case '&':
			b.WriteString(`(?:&[^#]*)*`)
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}
