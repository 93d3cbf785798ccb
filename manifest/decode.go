package manifest

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// decoder turns the generic map that go-toml decodes into the model, and
// collects every problem with its position instead of stopping at the first.
type decoder struct {
	file     string
	pos      positions
	errs     Errors
	warnings Errors
}

func (d *decoder) errorAt(at Position, path []string, format string, args ...any) {
	d.errs = append(d.errs, d.newError(at, path, format, args...))
}

func (d *decoder) newError(at Position, path []string, format string, args ...any) *Error {
	e := &Error{File: d.file, Pos: at, Msg: fmt.Sprintf(format, args...)}
	if len(path) >= 2 && path[0] == "servers" {
		e.Server, e.Key = path[1], dotted(path[2:])
	} else {
		e.Key = dotted(path)
	}
	return e
}

// valueWarning notes something valid but likely dangerous about a value.
func (d *decoder) valueWarning(path []string, format string, args ...any) {
	w := d.newError(d.pos.value(path), path, format, args...)
	w.Warning = true
	d.warnings = append(d.warnings, w)
}

// keyError reports a problem with a key itself (unknown, not allowed here).
func (d *decoder) keyError(path []string, format string, args ...any) {
	d.errorAt(d.pos.key(path), path, format, args...)
}

// valueError reports a problem with a key's value.
func (d *decoder) valueError(path []string, format string, args ...any) {
	d.errorAt(d.pos.value(path), path, format, args...)
}

// name is how messages refer to the key at path: relative to its server.
func name(path []string) string {
	if len(path) >= 2 && path[0] == "servers" {
		path = path[2:]
	}
	return dotted(path)
}

func child(path []string, key string) []string {
	return append(path[:len(path):len(path)], key)
}

// sortedKeys returns t's keys in the order they appear in the file.
func (d *decoder) sortedKeys(path []string, t map[string]any) []string {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	order := d.pos.childOrder(path, keys)
	slices.SortFunc(keys, func(a, b string) int {
		oa, okA := order[a]
		ob, okB := order[b]
		if okA && okB && oa != ob {
			return oa - ob
		}
		return strings.Compare(a, b)
	})
	return keys
}

func describe(v any) string {
	switch v := v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	default:
		_ = v
		return "a date or time"
	}
}

func (d *decoder) table(path []string, v any) (map[string]any, bool) {
	t, ok := v.(map[string]any)
	if !ok {
		d.valueError(path, "%q must be a table, not %s", name(path), describe(v))
	}
	return t, ok
}

func (d *decoder) str(path []string, v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		d.valueError(path, "%q must be a string, not %s", name(path), describe(v))
	}
	return s, ok
}

func (d *decoder) boolean(path []string, v any) (bool, bool) {
	b, ok := v.(bool)
	if !ok {
		d.valueError(path, "%q must be true or false, not %s", name(path), describe(v))
	}
	return b, ok
}

func (d *decoder) strs(path []string, v any) ([]string, bool) {
	a, ok := v.([]any)
	if !ok {
		if s, isStr := v.(string); isStr {
			d.valueError(path, "%q must be an array of strings: write [%q]", name(path), s)
		} else {
			d.valueError(path, "%q must be an array of strings, not %s", name(path), describe(v))
		}
		return nil, false
	}
	out := make([]string, 0, len(a))
	for i, e := range a {
		s, isStr := e.(string)
		if !isStr {
			d.valueError(child(path, indexKey(i)), "%q must hold only strings; element %d is %s", name(path), i+1, describe(e))
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

func (d *decoder) template(path []string, s string) Template {
	t, err := ParseTemplate(s)
	if err != nil {
		d.valueError(path, "%q: %v", name(path), err)
	}
	return t
}

func (d *decoder) templates(path []string, v any) []Template {
	ss, ok := d.strs(path, v)
	if !ok {
		return nil
	}
	out := make([]Template, len(ss))
	for i, s := range ss {
		out[i] = d.template(child(path, indexKey(i)), s)
	}
	return out
}

// vars decodes a table of string templates, such as env or headers.
func (d *decoder) vars(path []string, v any, valid *regexp.Regexp, what string) []Var {
	t, ok := d.table(path, v)
	if !ok {
		return nil
	}
	var out []Var
	for _, k := range d.sortedKeys(path, t) {
		p := child(path, k)
		if !valid.MatchString(k) {
			d.keyError(p, "%q is not a valid %s", k, what)
			continue
		}
		s, ok := t[k].(string)
		if !ok {
			hint := ""
			switch x := t[k].(type) {
			case int64, float64, bool:
				hint = fmt.Sprintf(" (write \"%v\")", x)
			}
			d.valueError(p, "%q must be a string, not %s%s", name(p), describe(t[k]), hint)
			continue
		}
		out = append(out, Var{Name: k, Value: d.template(p, s)})
	}
	return out
}

func (d *decoder) duration(path []string, v any) time.Duration {
	s, ok := v.(string)
	if !ok {
		if n, isInt := v.(int64); isInt {
			d.valueError(path, "%q must be a duration such as \"%ds\"", name(path), n)
		} else {
			d.valueError(path, "%q must be a duration such as \"30s\" or \"2m\", not %s", name(path), describe(v))
		}
		return 0
	}
	dur, err := time.ParseDuration(s)
	if err != nil || dur <= 0 {
		d.valueError(path, "%q: %q is not a positive duration (write \"30s\", \"1m30s\", \"500ms\")", name(path), s)
		return 0
	}
	return dur
}

func (d *decoder) unknownKey(path []string, known []string) {
	d.keyError(path, "unknown key %q%s", path[len(path)-1], suggest(path[len(path)-1], known))
}
