package providers

import (
	"bytes"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	json "github.com/goccy/go-json"
)

// FingerprintPrefix starts every fingerprint; 12 lower-case hex digits follow it.
const FingerprintPrefix = "sha256:"

// Fingerprint returns "sha256:" and the first 12 hex digits of the SHA-256 of the canonical
// JSON of v. It identifies an entry's content, not its spelling: re-indenting it, reordering
// its keys or changing its quoting keeps the fingerprint; changing a value does not.
//
// v is a decoded generic value: nil, bool, string, json.Number, the integer and float types,
// []any and map[string]any. The canonical JSON sorts map keys, has no insignificant
// whitespace, writes a json.Number as written and other numbers in their shortest form,
// escapes only what JSON requires (never '<', '>' or '&') and replaces invalid UTF-8 with
// U+FFFD. Floats that JSON cannot hold become the strings "nan", "inf" and "-inf" (their TOML
// spelling). A value implementing encoding.TextMarshaler (the times that a TOML decoder
// returns) becomes its text; anything else goes through a JSON round trip first, and becomes
// null if that fails.
func Fingerprint(v any) string {
	sum := sha256.Sum256(appendCanonical(nil, v))
	return FingerprintPrefix + hex.EncodeToString(sum[:6])
}

// appendCanonical appends the canonical JSON of v to b.
func appendCanonical(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, v)
	case string:
		return appendString(b, v)
	case json.Number:
		if v == "" {
			return append(b, '0')
		}
		return append(b, v...)
	case int:
		return strconv.AppendInt(b, int64(v), 10)
	case int8:
		return strconv.AppendInt(b, int64(v), 10)
	case int16:
		return strconv.AppendInt(b, int64(v), 10)
	case int32:
		return strconv.AppendInt(b, int64(v), 10)
	case int64:
		return strconv.AppendInt(b, v, 10)
	case uint:
		return strconv.AppendUint(b, uint64(v), 10)
	case uint8:
		return strconv.AppendUint(b, uint64(v), 10)
	case uint16:
		return strconv.AppendUint(b, uint64(v), 10)
	case uint32:
		return strconv.AppendUint(b, uint64(v), 10)
	case uint64:
		return strconv.AppendUint(b, v, 10)
	case float32:
		return appendFloat(b, float64(v), 32)
	case float64:
		return appendFloat(b, v, 64)
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanonical(b, e)
		}
		return append(b, ']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendCanonical(b, v[k])
		}
		return append(b, '}')
	case encoding.TextMarshaler:
		text, err := v.MarshalText()
		if err != nil {
			return append(b, "null"...)
		}
		return appendString(b, string(text))
	}
	return appendCanonical(b, generic(v))
}

// generic turns any other value into nil, bool, string, json.Number, []any or map[string]any
// through a JSON round trip; nil when v cannot be encoded.
func generic(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil
	}
	return out
}

// appendFloat writes f the way JSON writers do (ES6 number to string): the shortest digits
// that read back as f, in exponent form only below 1e-6 and from 1e21.
func appendFloat(b []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"nan"`...)
	case math.IsInf(f, 1):
		return append(b, `"inf"`...)
	case math.IsInf(f, -1):
		return append(b, `"-inf"`...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) ||
			bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// 1e-07 becomes 1e-7.
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// AppendJSONString appends s as a JSON string, escaping only quotes, backslashes and
// control characters (no HTML escaping: a URL keeps its &), invalid UTF-8 as U+FFFD.
func AppendJSONString(b []byte, s string) []byte { return appendString(b, s) }

// appendString writes s as a JSON string, escaping only quotes, backslashes and control
// characters.
func appendString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c >= 0x20:
				b = append(b, c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// Reasons a Conflict gives.
const (
	// ReasonHandWritten: the file holds a server of that name that mcpgen never wrote.
	ReasonHandWritten = "written by hand"
	// ReasonEdited: mcpgen wrote the server, and someone changed it since.
	ReasonEdited = "edited by hand since mcpgen wrote it"
	// ReasonOtherManifest: another manifest wrote the server (Conflict.Owner).
	ReasonOtherManifest = "written by another manifest"
)

// Conflict is a server that a merge would have to overwrite or delete although a person
// wrote or changed it, or another manifest owns it.
type Conflict struct {
	Name   string
	Reason string // ReasonHandWritten, ReasonEdited or ReasonOtherManifest
	Owner  string // with ReasonOtherManifest: the manifest that owns the server
	Line   int    // where the server starts in the file; 0 if unknown
}

// ConflictError is what a merge returns, without merging anything, when it would overwrite
// or delete servers that it does not own. It lists every such server, in file order.
type ConflictError struct {
	Conflicts []Conflict
}

// Error lists the conflicts, each with its line, and says how to resolve them.
func (e *ConflictError) Error() string {
	var b strings.Builder
	byHand, others := 0, 0
	for i, c := range e.Conflicts {
		if i > 0 {
			b.WriteString("; ")
		}
		if c.Line > 0 {
			fmt.Fprintf(&b, "%d: ", c.Line)
		}
		if c.Reason == ReasonOtherManifest {
			fmt.Fprintf(&b, "server %q belongs to another manifest, %s", c.Name, c.Owner)
			others++
			continue
		}
		fmt.Fprintf(&b, "server %q was %s", c.Name, c.Reason)
		byHand++
	}
	const apart = `to keep both manifests' servers, set a prefix in this one (prefix = "acme-") or write its servers into the project's own config (--scope project)`
	switch {
	case others == 0 && byHand == 1:
		b.WriteString(": to keep the change, copy it into the manifest or rename the server there; to discard it, re-run with --force")
	case others == 0:
		b.WriteString(": to keep the changes, copy them into the manifest or rename the servers there; to discard them, re-run with --force")
	case byHand == 0:
		b.WriteString(": " + apart + "; to take them over, re-run with --force")
	default:
		b.WriteString(": to keep the changes by hand, copy them into the manifest or rename the servers there; " + apart + "; to discard the changes and take the servers over, re-run with --force")
	}
	return b.String()
}

// Owned is an entry of a config that mcpgen wrote, and the manifest that
// owns it: "" for an entry written by an mcpgen that recorded no owner.
type Owned struct {
	Name  string
	Owner string
}

// Ownership decides how a merge treats the entries that mcpgen wrote: those
// of the manifest merging (Owner, or one of its Aliases) it replaces and
// removes; those of another manifest it keeps, and refuses to overwrite;
// those written by an mcpgen that recorded no owner (legacy) it takes over
// when the manifest has a server of that name, and keeps otherwise: it
// cannot tell whose they are, and removing is what cannot be undone.
type Ownership struct {
	Owner   string
	Aliases []string
}

// Mine reports whether an entry marked with owner belongs to the manifest.
func (o Ownership) Mine(owner string) bool {
	return owner == o.Owner || slices.Contains(o.Aliases, owner)
}

// Legacy reports whether an entry marked with owner was written without
// one, by an older mcpgen, for a manifest that has an owner.
func (o Ownership) Legacy(owner string) bool {
	return owner == "" && !o.Mine(owner)
}

// CheckEntryName checks the name of an entry to merge: not empty, valid
// UTF-8, and not seen before (seen records it).
func CheckEntryName(name string, seen map[string]bool) error {
	switch {
	case name == "":
		return errors.New("entry with an empty name: give every server a name")
	case !utf8.ValidString(name):
		return fmt.Errorf("entry %q: the name is not valid UTF-8", name)
	case seen[name]:
		return fmt.Errorf("entry %q appears twice: give each server its own name", name)
	}
	seen[name] = true
	return nil
}
