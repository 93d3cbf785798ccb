package providers

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sync"
	"unicode/utf8"

	json "github.com/goccy/go-json"
)

// FingerprintJSON returns Fingerprint of the value that raw, one valid JSON value, decodes
// to (numbers as json.Number), without decoding it: the canonical JSON is written from the
// bytes, which costs a fraction of a decode into any. What a decode would change (escapes in
// strings, a key written twice) goes the decoder's way, so the fingerprints are the same.
func FingerprintJSON(raw []byte) string {
	buf := canonicalBuffers.Get().(*[]byte)
	b, _ := appendCanonicalJSON((*buf)[:0], raw, 0)
	sum := sha256.Sum256(b)
	if cap(b) <= 1<<16 { // a buffer a huge entry grew goes
		*buf = b
		canonicalBuffers.Put(buf)
	}
	return FingerprintPrefix + hex.EncodeToString(sum[:6])
}

// canonicalBuffers keep the buffers that FingerprintJSON writes canonical JSON into:
// emit --provider all fingerprints every entry of every agent, and allocating each one's
// buffer anew was most of what a merge allocated.
var canonicalBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// A canonicalMember is one member of an object being written: its decoded key, and where
// its key and value, written canonically, are in the scratch buffer.
type canonicalMember struct {
	key             []byte
	keyAt, valAt, e int
}

// appendCanonicalJSON appends the canonical JSON of the value at raw[i], and returns where
// it ends. A string without escapes, valid UTF-8, is its own canonical form: it is copied.
func appendCanonicalJSON(b, raw []byte, i int) ([]byte, int) {
	i = skipBlank(raw, i)
	if i >= len(raw) {
		return append(b, "null"...), i
	}
	switch raw[i] {
	case '{':
		// The members are written after b as they come, then in key order.
		start := len(b)
		var ms []canonicalMember
		i = skipBlank(raw, i+1)
		for i < len(raw) && raw[i] != '}' {
			end := endOfString(raw, i)
			m := canonicalMember{keyAt: len(b)}
			q := raw[i:end]
			if plainString(q) {
				m.key = q[1 : len(q)-1]
				b = append(b, q...)
			} else {
				key := decodeJSONString(q)
				m.key = []byte(key)
				b = appendString(b, key)
			}
			i = skipBlank(raw, end)
			i++ // ':'
			m.valAt = len(b)
			b, i = appendCanonicalJSON(b, raw, i)
			m.e = len(b)
			ms = append(ms, m)
			i = skipBlank(raw, i)
			if i < len(raw) && raw[i] == ',' {
				i = skipBlank(raw, i+1)
			}
		}
		// Sorted by key; of a key written twice, the last, as a decode into a map keeps it.
		slices.SortStableFunc(ms, func(x, y canonicalMember) int { return bytes.Compare(x.key, y.key) })
		scratch := append([]byte(nil), b[start:]...)
		b = append(b[:start], '{')
		n := 0
		for k, m := range ms {
			if k+1 < len(ms) && bytes.Equal(ms[k+1].key, m.key) {
				continue
			}
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = append(b, scratch[m.keyAt-start:m.valAt-start]...)
			b = append(b, ':')
			b = append(b, scratch[m.valAt-start:m.e-start]...)
		}
		return append(b, '}'), i + 1
	case '[':
		b = append(b, '[')
		i = skipBlank(raw, i+1)
		for n := 0; i < len(raw) && raw[i] != ']'; n++ {
			if n > 0 {
				b = append(b, ',')
			}
			b, i = appendCanonicalJSON(b, raw, i)
			i = skipBlank(raw, i)
			if i < len(raw) && raw[i] == ',' {
				i = skipBlank(raw, i+1)
			}
		}
		return append(b, ']'), i + 1
	case '"':
		end := endOfString(raw, i)
		if q := raw[i:end]; plainString(q) {
			return append(b, q...), end
		}
		return appendString(b, decodeJSONString(raw[i:end])), end
	}
	start := i
	for i < len(raw) && !bytes.ContainsRune([]byte(",}] \t\r\n"), rune(raw[i])) {
		i++
	}
	return append(b, raw[start:i]...), i // true, false, null, a number as written
}

// plainString reports whether the JSON string q is written as its canonical form is: no
// escape, valid UTF-8 (a valid string holds no raw control character or quote).
func plainString(q []byte) bool {
	return len(q) >= 2 && bytes.IndexByte(q, '\\') < 0 && utf8.Valid(q)
}

func skipBlank(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\r' || raw[i] == '\n') {
		i++
	}
	return i
}

// endOfString returns the offset just past the string that starts at raw[i].
func endOfString(raw []byte, i int) int {
	for i++; i < len(raw); i++ {
		switch raw[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(raw)
}

// decodeJSONString returns the text of a JSON string: as it is written when it has no
// escape and is valid UTF-8, else as the decoder reads it.
func decodeJSONString(q []byte) string {
	if len(q) >= 2 && bytes.IndexByte(q, '\\') < 0 && utf8.Valid(q) {
		return string(q[1 : len(q)-1])
	}
	var s string
	if err := json.Unmarshal(q, &s); err != nil {
		return string(q)
	}
	return s
}
