package jsonfile

import (
	"bytes"
	"testing"
)

// sameCompact is json.Compact on both sides, compared, without the copies.
func TestSameCompact(t *testing.T) {
	values := []string{
		`{}`, `{ }`, "{\n}", `{"a":1}`, `{"a": 1}`, `{"a":2}`, `{"a":"x y"}`, `{"a":"xy"}`, `{"a":"x  y"}`,
		`{"a":"\""}`, `{"a": "\""}`, `{"a":"\\"}`, `{"a":"\\","b":1}`, `{"a":"\\\"","b":1}`, `{"a":"\"","b":1}`,
		`["a",  "b"]`, `["a","b"]`, `["a b"]`, `["ab"]`, `"a"`, ` "a" `, `1`, `10`, `{"a":[1,2]}`, "{\r\n\t\"a\" :\t[1 , 2]\r\n}",
	}
	for _, a := range values {
		for _, b := range values {
			var ca, cb bytes.Buffer
			if compact(&ca, []byte(a)) != nil || compact(&cb, []byte(b)) != nil {
				t.Fatalf("%s or %s is not JSON", a, b)
			}
			want := bytes.Equal(ca.Bytes(), cb.Bytes())
			if got := sameCompact([]byte(a), []byte(b)); got != want {
				t.Errorf("sameCompact(%s, %s) = %v, want %v", a, b, got, want)
			}
		}
	}
}
