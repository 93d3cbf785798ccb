package hub

import "testing"

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
