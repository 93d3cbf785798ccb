package providers

import (
	"bytes"
	"testing"

	json "github.com/goccy/go-json"
)

// decodedFingerprint is Fingerprint of raw decoded as the mergers decode it.
func decodedFingerprint(raw []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", false
	}
	return Fingerprint(v), true
}

// FuzzFingerprintJSON: FingerprintJSON is Fingerprint of the decoded value, for every valid
// JSON value: fingerprints that files hold must not change with the way they are computed.
func FuzzFingerprintJSON(f *testing.F) {
	for _, s := range []string{
		`{"type":"stdio","command":"npx","args":["-y","x"],"env":{"A":"${A}"}}`,
		`{"b":1,"a":[true,false,null,1.50,-2e10],"a":"last"}`,
		`{"\u0041":"\u00e9\n\t\"\\/","é":"<&>","\ud83d\ude00":""}`,
		` [ {"x" : { } } , [ ] , "" ] `,
		`"\xff\xfe"`, `{"k":"a\u0000b"}`, `12345678901234567890`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		want, ok := decodedFingerprint(raw)
		if !ok {
			return
		}
		if got := FingerprintJSON(raw); got != want {
			t.Fatalf("FingerprintJSON(%q) = %s, want %s", raw, got, want)
		}
	})
}
