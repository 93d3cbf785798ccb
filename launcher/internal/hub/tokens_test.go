package hub

import (
	"testing"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
)

// TestRequestToken: the progress token of a request's params is replaced
// where it is, and everything else stays byte for byte.
func TestRequestToken(t *testing.T) {
	tests := []struct {
		params    string
		want      string // with the token replaced by "T"
		wantToken string // the client's, as written
	}{
		{`{"name":"x","_meta":{"progressToken":"tok"}}`, `{"name":"x","_meta":{"progressToken":"T"}}`, `"tok"`},
		{`{ "_meta" : { "a":1, "progressToken" : 7 , "b":[2]}, "arguments":{"s":"<&>"} }`, `{ "_meta" : { "a":1, "progressToken" : "T" , "b":[2]}, "arguments":{"s":"<&>"} }`, `7`},
		{`{"_meta":{"progress\u0054oken":"a\u0062"}}`, `{"_meta":{"progress\u0054oken":"T"}}`, `"a\u0062"`},
		{`{"_meta":{"progressToken":1,"progressToken":2}}`, `{"_meta":{"progressToken":"T","progressToken":"T"}}`, `2`},
		{`{"_META":{"ProgressTOKEN":"x"}}`, `{"_META":{"ProgressTOKEN":"T"}}`, `"x"`}, // as Go's decoders read it
		{`{"progressToken":"top","_meta":{}}`, `{"progressToken":"top","_meta":{}}`, ``},
		{`{"arguments":{"text":"progressToken"}}`, `{"arguments":{"text":"progressToken"}}`, ``},
		{`{"_meta":"progressToken"}`, `{"_meta":"progressToken"}`, ``},
		{`{"_meta":{"progressToken":`, `{"_meta":{"progressToken":`, ``},
		{`{}`, `{}`, ``},
	}
	for _, tt := range tests {
		spans, token := requestToken([]byte(tt.params))
		got := tt.params
		if len(spans) > 0 {
			got = string(splice([]byte(tt.params), spans, []byte(`"T"`)))
		}
		if got != tt.want || string(token) != tt.wantToken {
			t.Errorf("%s:\n got %s, token %s\nwant %s, token %s", tt.params, got, token, tt.want, tt.wantToken)
		}
	}
}

// TestTokenKey: a token is found whatever the spelling the server uses
// for it, and only an integer or a string is one.
func TestTokenKey(t *testing.T) {
	tests := []struct {
		raw, want string
		ok        bool
	}{
		{`"mcpgen-1"`, `"mcpgen-1"`, true},
		{`"mcpgen\u002d1"`, `"mcpgen-1"`, true},
		{`12`, `12`, true},
		{`null`, ``, false},
		{`{}`, ``, false},
		{``, ``, false},
	}
	for _, tt := range tests {
		got, ok := tokenKey([]byte(tt.raw))
		if got != tt.want || ok != tt.ok {
			t.Errorf("tokenKey(%s) = %q, %v; want %q, %v", tt.raw, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzRequestToken: whatever a client sends, the params that go to the
// server are JSON again, and carry the hub's token wherever a decoder
// would find the client's.
func FuzzRequestToken(f *testing.F) {
	for _, s := range []string{
		`{"name":"x","_meta":{"progressToken":"tok"}}`,
		`{"_meta":{"progress\u0054oken":1,"progressToken":2},"_meta":{"progressToken":3}}`,
		`{"arguments":{"_meta":{"progressToken":"inner"}}}`,
		`{}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, params string) {
		if jsonwire.Valid([]byte(params)) != nil {
			return
		}
		spans, _ := requestToken([]byte(params))
		if len(spans) == 0 {
			return
		}
		out := splice([]byte(params), spans, []byte(`"T"`))
		if err := jsonwire.Valid(out); err != nil {
			t.Fatalf("%s became %s: %v", params, out, err)
		}
		var p struct {
			Meta struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			} `json:"_meta"`
		}
		if err := json.Unmarshal(out, &p); err == nil && string(p.Meta.ProgressToken) != `"T"` {
			t.Fatalf("%s became %s: a decoder finds the token %s", params, out, p.Meta.ProgressToken)
		}
	})
}
