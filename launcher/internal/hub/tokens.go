package hub

import (
	"bytes"
	"strings"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
	"github.com/mcpgen/mcpgen/mcp"
)

// This file rewrites progress tokens and request ids inside raw params,
// byte for byte: everything else of a message passes through as its sender
// wrote it, and nothing is decoded and encoded again.

// A span is a value's place in a message's params.
type span struct{ start, end int }

// requestToken finds params._meta.progressToken in a request's params:
// every occurrence, and the last one's text. A duplicate key is as good as
// another to a decoder, and Go's decoders match keys regardless of case:
// the server must find the hub's token whichever it takes.
func requestToken(params []byte) (spans []span, token []byte) {
	if !mayHoldToken(params) {
		return nil, nil // the common case, without a scan
	}
	top, err := jsonwire.Members(params, 0)
	if err != nil {
		return nil, nil
	}
	for _, m := range top {
		if !strings.EqualFold(m.Key, "_meta") || len(m.Value) == 0 || m.Value[0] != '{' {
			continue
		}
		meta, err := jsonwire.Members(params, m.ValueAt)
		if err != nil {
			return nil, nil
		}
		for _, t := range meta {
			if strings.EqualFold(t.Key, "progressToken") {
				spans = append(spans, span{t.ValueAt, t.ValueAt + len(t.Value)})
				token = t.Value
			}
		}
	}
	return spans, token
}

// mayHoldToken reports whether params may name a progressToken, in any
// case, or with escapes (which it leaves to the scan), without allocating.
func mayHoldToken(params []byte) bool {
	const key = `progresstoken"`
	for rest := params; ; {
		i := bytes.IndexByte(rest, '"')
		if i < 0 || len(rest) < i+1+len(key) {
			break
		}
		rest = rest[i+1:]
		if (rest[0] == 'p' || rest[0] == 'P') && bytes.EqualFold(rest[:len(key)], []byte(key)) {
			return true
		}
	}
	return bytes.Contains(params, []byte(`\u`))
}

// memberSpans finds the top-level members named key in an object: a
// notification's progressToken or requestId.
func memberSpans(params []byte, key string) (spans []span, value []byte) {
	members, err := jsonwire.Members(params, 0)
	if err != nil {
		return nil, nil
	}
	for _, m := range members {
		if m.Key == key {
			spans = append(spans, span{m.ValueAt, m.ValueAt + len(m.Value)})
			value = m.Value
		}
	}
	return spans, value
}

// splice returns params with every span replaced by value.
func splice(params []byte, spans []span, value []byte) []byte {
	out := make([]byte, 0, len(params)+len(spans)*len(value))
	at := 0
	for _, s := range spans {
		out = append(out, params[at:s.start]...)
		out = append(out, value...)
		at = s.end
	}
	return append(out, params[at:]...)
}

// tokenKey is a progress token as a map key: the canonical text of the
// integer or string, so that "a\u0062" finds "ab". ok is false for a value
// that is neither.
func tokenKey(raw []byte) (key string, ok bool) {
	var id mcp.ID
	if len(raw) == 0 || id.UnmarshalJSON(raw) != nil {
		return "", false
	}
	return id.String(), true
}
