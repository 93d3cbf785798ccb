package providers

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"regexp"
	"testing"
	"time"

	json "github.com/goccy/go-json"
)

func TestCanonical(t *testing.T) {
	type pair struct {
		B int    `json:"b"`
		A string `json:"a"`
	}
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"nil", nil, `null`},
		{"bools", []any{true, false}, `[true,false]`},
		{"string escapes", "q\" b\\ \n\r\t \x01 \x7f", `"q\" b\\ \n\r\t \u0001 ` + "\x7f" + `"`},
		{"no HTML escaping", "<a&b>", `"<a&b>"`},
		{"unicode kept", "é ✓ \u2028", "\"é ✓ \u2028\""},
		{"invalid UTF-8", "a\xffb", `"a\ufffdb"`},
		{"number as written", json.Number("1.0"), `1.0`},
		{"number exponent as written", json.Number("1E2"), `1E2`},
		{"ints", []any{int(-1), int8(2), int16(3), int32(4), int64(math.MaxInt64), uint(5), uint8(6), uint16(7), uint32(8), uint64(math.MaxUint64)}, `[-1,2,3,4,9223372036854775807,5,6,7,8,18446744073709551615]`},
		{"float integral", 1.0, `1`},
		{"float", 0.1, `0.1`},
		{"float32", float32(0.1), `0.1`},
		{"float large", 1e21, `1e+21`},
		{"float below 1e21", 1e20, `100000000000000000000`},
		{"float small", 1e-7, `1e-7`},
		{"float negative zero", math.Copysign(0, -1), `-0`},
		{"nan", math.NaN(), `"nan"`},
		{"inf", []any{math.Inf(1), math.Inf(-1)}, `["inf","-inf"]`},
		{"map sorted", map[string]any{"b": 1.0, "a": []any{}, "A": map[string]any{}, "": nil}, `{"":null,"A":{},"a":[],"b":1}`},
		{"time", time.Date(1979, 5, 27, 7, 32, 0, 0, time.UTC), `"1979-05-27T07:32:00Z"`},
		{"other types through JSON", pair{B: 2, A: "x"}, `{"a":"x","b":2}`},
		{"typed slice", []string{"x", "y"}, `["x","y"]`},
		{"cannot encode", make(chan int), `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(appendCanonical(nil, tt.in)); got != tt.want {
				t.Errorf("canonical JSON of %#v:\n got %s\nwant %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestFingerprint(t *testing.T) {
	v := map[string]any{"command": "npx", "args": []any{"-y", "x"}}
	sum := sha256.Sum256([]byte(`{"args":["-y","x"],"command":"npx"}`))
	want := "sha256:" + hex.EncodeToString(sum[:])[:12]
	if got := Fingerprint(v); got != want {
		t.Errorf("Fingerprint(%v) = %s, want %s", v, got, want)
	}
	if !regexp.MustCompile(`^sha256:[0-9a-f]{12}$`).MatchString(want) {
		t.Errorf("fingerprint %q does not have the documented form", want)
	}
}

// decode reads JSON the way the Claude merger does: numbers as written.
func decode(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestFingerprintIsSemantic(t *testing.T) {
	base := `{"command":"npx","args":["-y","x"],"env":{"A":"1","B":"2"},"timeout":30000}`
	same := []string{
		"{\n  \"command\": \"npx\",\n  \"args\": [\"-y\", \"x\"],\n  \"env\": {\"B\": \"2\", \"A\": \"1\"},\n  \"timeout\": 30000\n}",
		`{"timeout":30000,"env":{"A":"1","B":"2"},"args":["-y","x"],"command":"\u006epx"}`,
	}
	different := []string{
		`{"command":"npx","args":["x","-y"],"env":{"A":"1","B":"2"},"timeout":30000}`,
		`{"command":"npx","args":["-y","x"],"env":{"A":"1","B":"3"},"timeout":30000}`,
		`{"command":"npx","args":["-y","x"],"env":{"A":"1","B":"2"},"timeout":30000.0}`,
		`{"command":"npx","args":["-y","x"],"env":{"A":"1","B":"2"}}`,
	}
	want := Fingerprint(decode(t, base))
	for _, s := range same {
		if got := Fingerprint(decode(t, s)); got != want {
			t.Errorf("Fingerprint(%s) = %s, want %s (same content as %s)", s, got, want, base)
		}
	}
	for _, s := range different {
		if got := Fingerprint(decode(t, s)); got == want {
			t.Errorf("Fingerprint(%s) = %s, the same as for %s", s, got, base)
		}
	}
}

func TestConflictError(t *testing.T) {
	tests := []struct {
		name string
		err  ConflictError
		want string
	}{
		{
			"one",
			ConflictError{Conflicts: []Conflict{{Name: "git", Reason: ReasonHandWritten, Line: 12}}},
			`12: server "git" was written by hand: to keep the change, copy it into the manifest or rename the server there; to discard it, re-run with --force`,
		},
		{
			"several, one without a line",
			ConflictError{Conflicts: []Conflict{{Name: "git", Reason: ReasonHandWritten, Line: 12}, {Name: "fs", Reason: ReasonEdited}}},
			`12: server "git" was written by hand; server "fs" was edited by hand since mcpgen wrote it: to keep the changes, copy them into the manifest or rename the servers there; to discard them, re-run with --force`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error():\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func BenchmarkFingerprint(b *testing.B) {
	v := map[string]any{
		"type":    "stdio",
		"command": "npx",
		"args":    []any{"-y", "@modelcontextprotocol/server-github"},
		"env":     map[string]any{"WORKSPACE_ID": "w1", "WORKSPACE_DIR": "/srv/w1", "USER_ID": "ana"},
		"timeout": json.Number("30000"),
	}
	b.ReportAllocs()
	for b.Loop() {
		Fingerprint(v)
	}
}
