package jsonwire

import (
	json "github.com/goccy/go-json"
)

// Marshal encodes v with goccy/go-json, leaving <, > and & as they are:
// tool results carry code and markup, configs carry URLs with query
// strings, and escaping would make both larger and harder to read without
// changing what they mean. (goccy's MarshalNoEscape is about heap escape,
// not HTML: it escapes them.)
func Marshal(v any) ([]byte, error) {
	return json.MarshalWithOption(v, json.DisableHTMLEscape())
}
