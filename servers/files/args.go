package files

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	json "github.com/goccy/go-json"
)

// arguments reads a tool's arguments one typed field at a time, so that
// every problem names the argument. The first problem is kept in err and
// later reads return zero values, as bufio.Scanner does.
type arguments struct {
	fields map[string]json.RawMessage
	err    error
}

// parseArguments decodes the arguments object and refuses names that the
// tool does not take (its schema says additionalProperties: false).
func parseArguments(raw json.RawMessage, known ...string) *arguments {
	a := &arguments{}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return a
	}
	if raw[0] != '{' {
		a.err = fmt.Errorf("arguments must be a JSON object with %s", strings.Join(quoteAll(known), ", "))
		return a
	}
	if err := json.Unmarshal(raw, &a.fields); err != nil {
		a.err = fmt.Errorf("arguments are not a valid JSON object: %v", err)
		return a
	}
	var unknown []string
	for name := range a.fields {
		if !slices.Contains(known, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		word := "argument"
		if len(unknown) > 1 {
			word = "arguments"
		}
		a.err = fmt.Errorf("unknown %s %s; this tool takes %s", word, strings.Join(quoteAll(unknown), ", "), strings.Join(quoteAll(known), ", "))
	}
	return a
}

// value returns the raw value of name, or nil when it is absent or null
// (null stands for "not given"). A missing required argument sets err.
func (a *arguments) value(name string, required bool) json.RawMessage {
	if a.err != nil {
		return nil
	}
	v := bytes.TrimSpace(a.fields[name])
	if len(v) == 0 || string(v) == "null" {
		if required {
			a.err = fmt.Errorf("missing required argument %q", name)
		}
		return nil
	}
	return v
}

// string returns the string argument name.
func (a *arguments) string(name string, required bool) string {
	v := a.value(name, required)
	if v == nil {
		return ""
	}
	var s string
	if v[0] != '"' || json.Unmarshal(v, &s) != nil {
		a.err = fmt.Errorf("argument %q must be a string, not %s", name, describe(v))
	}
	return s
}

// integer returns the integer argument name, or def when it is absent. It
// accepts integral numbers written as 10.0 or 1e3; below least is an error.
func (a *arguments) integer(name string, def, least int) int {
	v := a.value(name, false)
	if v == nil {
		return def
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if c := v[0]; err != nil || (c != '-' && (c < '0' || c > '9')) || f != math.Trunc(f) {
		a.err = fmt.Errorf("argument %q must be an integer, not %s", name, describe(v))
		return def
	}
	if f < float64(least) {
		a.err = fmt.Errorf("argument %q must be at least %d, not %s", name, least, v)
		return def
	}
	return int(min(f, math.MaxInt32))
}

// boolean returns the boolean argument name, false when absent.
func (a *arguments) boolean(name string) bool {
	v := a.value(name, false)
	switch string(v) {
	case "", "false":
		return false
	case "true":
		return true
	}
	a.err = fmt.Errorf("argument %q must be true or false, not %s", name, describe(v))
	return false
}

// describe names the JSON type of v, with v itself when short, for errors.
func describe(v json.RawMessage) string {
	var kind string
	switch v[0] {
	case '"':
		kind = "a string"
	case '{':
		kind = "an object"
	case '[':
		kind = "an array"
	case 't', 'f':
		kind = "a boolean"
	default:
		kind = "a number"
	}
	if len(v) <= 40 {
		return kind + " (" + string(v) + ")"
	}
	return kind
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strconv.Quote(n)
	}
	return out
}
