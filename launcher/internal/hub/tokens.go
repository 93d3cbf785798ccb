package hub

import (
	"bytes"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
	"github.com/mcpgen/mcpgen/mcp"
)

// This file rewrites progress tokens and request ids inside raw params,
// byte for byte: everything else of a message passes through as its sender
// wrote it, and nothing is decoded and encoded again.

// A span is a value's place in a message's params.
type span struct{ start, end int }

// requestToken finds params._meta.progressToken in a request's params:
// every occurrence (a duplicate key is as good as another to a decoder),
// and the last one's text.
func requestToken(params []byte) (spans []span, token []byte) {
	if !bytes.Contains(params, []byte(`"progressToken"`)) && !bytes.Contains(params, []byte(`\u`)) {
		return nil, nil // the common case, without a scan (a key may be spelled with escapes)
	}
	top, err := jsonwire.Members(params, 0)
	if err != nil {
		return nil, nil
	}
	for _, m := range top {
		if m.Key != "_meta" || len(m.Value) == 0 || m.Value[0] != '{' {
			continue
		}
		meta, err := jsonwire.Members(params, m.ValueAt)
		if err != nil {
			return nil, nil
		}
		for _, t := range meta {
			if t.Key == "progressToken" {
				spans = append(spans, span{t.ValueAt, t.ValueAt + len(t.Value)})
				token = t.Value
			}
		}
	}
	return spans, token
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
