package jsonwire

import (
	stdjson "encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	json "github.com/goccy/go-json"
)

func TestValid(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantMsg string // "" for valid
		wantAt  int
	}{
		{"object", `{"a":[1,-2.5e3,true,false,null,"x\u00e9\n"]}`, "", 0},
		{"spaces around", " \t\r\n{} \n", "", 0},
		{"string", `"just text"`, "", 0},
		{"invalid utf-8 in a string passes", "\"\xff\"", "", 0},
		{"empty", ``, "unexpected end of input looking for a value", 0},
		{"text", `hello`, "invalid character 'h' looking for a value", 0},
		{"trailing", `{} x`, "invalid character 'x' after top-level value", 3},
		{"two values", `1 2`, "invalid character '2' after top-level value", 2},
		{"truncated", `{"a":`, "unexpected end of input looking for a value", 5},
		{"trailing comma", `{"a":1,}`, "invalid character '}' looking for an object key", 7},
		{"missing colon", `{"a" 1}`, "invalid character '1' after object key", 5},
		{"bad array", `[1 2]`, "invalid character '2' after array element", 3},
		{"leading zero", `01`, "invalid character '1' after top-level value", 1},
		{"bare minus", `-`, "unexpected end of input in numeric literal", 1},
		{"empty fraction", `1.`, "unexpected end of input after decimal point in numeric literal", 2},
		{"empty exponent", `1e+`, "unexpected end of input in exponent of numeric literal", 3},
		{"bad literal", `[tru]`, "invalid character ']' in literal true", 4},
		{"bad escape", `"\x"`, "invalid character 'x' in string escape", 2},
		{"short unicode escape", `"\u12"`, `invalid character '"' in \u escape`, 5},
		{"control character", "\"a\tb\"", "invalid character 0x09 in string literal", 2},
		{"unterminated string", `"abc`, "unexpected end of input in string literal", 4},
		{"byte order mark", "\xef\xbb\xbf{}", "invalid character 0xef looking for a value", 0},
		{"too deep", strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), "exceeded max depth of 10000", MaxDepth},
		{"deep enough", strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth), "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Valid([]byte(tt.in))
			if tt.wantMsg == "" {
				if err != nil {
					t.Fatalf("Valid(%.40q) = %v, want nil", tt.in, err)
				}
				return
			}
			var serr *SyntaxError
			if !errors.As(err, &serr) {
				t.Fatalf("Valid(%.40q) = %v, want a *SyntaxError", tt.in, err)
			}
			if serr.Msg != tt.wantMsg || serr.Offset != tt.wantAt {
				t.Errorf("Valid(%.40q) = %q at %d, want %q at %d", tt.in, serr.Msg, serr.Offset, tt.wantMsg, tt.wantAt)
			}
			if got, want := err.Error(), fmt.Sprintf("%s at offset %d", tt.wantMsg, tt.wantAt); got != want {
				t.Errorf("Error() = %q, want %q", got, want)
			}
		})
	}
}

func TestIsObject(t *testing.T) {
	for in, want := range map[string]bool{`{}`: true, ` {"a":1} `: true, `[]`: false, `{`: false, `{} {}`: false, ``: false, `null`: false} {
		if got := IsObject([]byte(in)); got != want {
			t.Errorf("IsObject(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestAppendString pins the exact encoding: the providers' fingerprints
// hash it, so a change here would make every entry look edited by hand.
func TestAppendString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `""`},
		{"plain text", `"plain text"`},
		{`quote " and backslash \`, `"quote \" and backslash \\"`},
		{"named \n\r\t", `"named \n\r\t"`},
		{"other controls \x00\x08\x0c\x1f", `"other controls \u0000\u0008\u000c\u001f"`},
		{"DEL \x7f stays", "\"DEL \x7f stays\""},
		{"html <a href='x?a=1&b=2'>", `"html <a href='x?a=1&b=2'>"`},
		{"slash / stays", `"slash / stays"`},
		{"é 😀 \u2028", "\"é 😀 \u2028\""},
		{"bad \xff\xfe utf-8", `"bad \ufffd\ufffd utf-8"`},
		{"surrogate \xed\xa0\x80", `"surrogate \ufffd\ufffd\ufffd"`},
	}
	for _, tt := range tests {
		if got := string(AppendString([]byte("prefix:"), tt.in)); got != "prefix:"+tt.want {
			t.Errorf("AppendString(%q) = %s, want %s", tt.in, got, "prefix:"+tt.want)
		}
	}
}

func TestUnquoteAgreesWithDecoders(t *testing.T) {
	for _, s := range []string{"", "plain", "quote\"back\\slash", "ctl\x00\x1f\x7f", "\t\r\n\b\f", "é😀\u2028", "bad\xff\xfe", "\xed\xa0\x80", "<&>"} {
		enc := AppendString(nil, s)
		var viaGoccy, viaStd string
		if err := json.Unmarshal(enc, &viaGoccy); err != nil {
			t.Errorf("%q encodes to invalid JSON %s: %v", s, enc, err)
			continue
		}
		if err := stdjson.Unmarshal(enc, &viaStd); err != nil || viaStd != viaGoccy {
			t.Errorf("%q: encoding/json reads %s as %q, %v; goccy as %q", s, enc, viaStd, err, viaGoccy)
		}
		ours := Unquote(enc, true)
		if ours != viaGoccy || !utf8.ValidString(ours) {
			t.Errorf("%q: Unquote = %q, goccy = %q", s, ours, viaGoccy)
		}
		if again := Unquote(AppendString(nil, ours), true); again != ours {
			t.Errorf("%q: decoding, encoding and decoding again gives %q, want %q", s, again, ours)
		}
	}
	for lit, want := range map[string]string{
		`"a\u0062c"`:         "abc",
		`"\ud83d\ude00"`:     "😀",
		`"\ud83d"`:           "\ufffd",
		`"\ud83d\u0041"`:     "\ufffdA",
		`"\/\"\\\b\f\n\r\t"`: "/\"\\\b\f\n\r\t",
	} {
		if got := Unquote([]byte(lit), true); got != want {
			t.Errorf("Unquote(%s) = %q, want %q", lit, got, want)
		}
	}
}

func TestMembers(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		at      int
		want    string // key=value@keyAt/valueAt, space separated
		wantErr string
	}{
		{"empty", `{}`, 0, "", ""},
		{"spaced", ` { "a" : 1 , "b":[ 2 ] } trailing is not ours`, 0, `a=1@3/9 b=[ 2 ]@13/17`, ""},
		{"escaped key", `{"a\u0062":"x","a":{"n":null}}`, 0, `ab="x"@1/11 a={"n":null}@15/19`, ""},
		{"duplicates kept", `{"k":1,"k":2}`, 0, `k=1@1/5 k=2@7/11`, ""},
		{"inner object", `{"outer":{"in":true}}`, 9, `in=true@10/15`, ""},
		{"not an object", `[1]`, 0, "", "invalid character '[' looking for an object at offset 0"},
		{"bad value", `{"a":tru}`, 0, "", "invalid character '}' in literal true at offset 8"},
		{"truncated", `{"a":1`, 0, "", "unexpected end of input after object value at offset 6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := Members([]byte(tt.in), tt.at)
			if fmt.Sprint(err) != fmt.Sprint(nilIfEmpty(tt.wantErr)) {
				t.Fatalf("Members(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			var got []string
			for _, m := range ms {
				if string(tt.in[m.KeyAt:m.KeyAt+len(m.RawKey)]) != string(m.RawKey) || string(tt.in[m.ValueAt:m.ValueAt+len(m.Value)]) != string(m.Value) {
					t.Errorf("member %q: offsets %d, %d do not point at it", m.Key, m.KeyAt, m.ValueAt)
				}
				got = append(got, fmt.Sprintf("%s=%s@%d/%d", m.Key, m.Value, m.KeyAt, m.ValueAt))
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("Members(%q) = %s, want %s", tt.in, strings.Join(got, " "), tt.want)
			}
		})
	}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func TestMarshal(t *testing.T) {
	b, err := Marshal(map[string]any{"url": "https://x.example/?a=1&b=<2>", "n": 1})
	if want := `{"n":1,"url":"https://x.example/?a=1&b=<2>"}`; err != nil || string(b) != want {
		t.Errorf("Marshal = %s, %v; want %s", b, err, want)
	}
	if _, err := Marshal(func() {}); err == nil {
		t.Error("Marshal(func) = nil error, want one")
	}
}

// FuzzValid checks the scanner against encoding/json's, which is the
// reference for what JSON is.
func FuzzValid(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}]}`, `"\ud83d\ude00"`, `-0.5e+3`, `[1,]`, `{"a" 1}`, "\"\xff\"", "  true  ", `01`, `"\u12"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := Valid(data)
		if want := stdjson.Valid(data); (err == nil) != want && !strings.Contains(fmt.Sprint(err), "max depth") {
			t.Fatalf("Valid(%q) = %v; encoding/json says valid=%v", data, err, want)
		}
		var serr *SyntaxError
		if err != nil && (!errors.As(err, &serr) || serr.Offset < 0 || serr.Offset > len(data)) {
			t.Fatalf("Valid(%q) = %v: not a *SyntaxError with an offset in the input", data, err)
		}
		if err == nil && len(data) > 0 {
			if ms, merr := Members(data, 0); IsObject(data) && merr != nil {
				t.Fatalf("Members(%q) = %v, %v on a valid object", data, ms, merr)
			}
		}
	})
}

func BenchmarkValid(b *testing.B) {
	data := []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello, world","n":[1,2.5,true,null]}}}`)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if err := Valid(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendString(b *testing.B) {
	s := strings.Repeat(`some file contents with "quotes" and \ escapes, é and <html> `, 100)
	b.SetBytes(int64(len(s)))
	var buf []byte
	for b.Loop() {
		buf = AppendString(buf[:0], s)
	}
}
