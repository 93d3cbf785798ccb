package manifest

import (
	"fmt"
	"slices"
	"strings"
)

// A Template is a string value of the manifest that may hold references to
// variables: ${VAR}, or ${VAR:-default} where the default applies when VAR is
// unset or empty. A "$" that does not start "${" is plain text; there is no
// escape, as in Claude Code's own expansion.
type Template []Segment

// A Segment is either literal text or one variable reference.
type Segment struct {
	Text string // literal text; empty for a reference

	Ref        string // the variable's name; empty for literal text
	Default    string // used when Ref is unset or empty, if HasDefault
	HasDefault bool
}

// ParseTemplate splits s into literal text and ${VAR} references.
func ParseTemplate(s string) (Template, error) {
	var t Template
	for s != "" {
		i := strings.Index(s, "${")
		if i < 0 {
			t = t.appendText(s)
			break
		}
		t = t.appendText(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return nil, fmt.Errorf("unterminated %q: close it with \"}\"", s[i:])
		}
		body := s[i+2 : i+end]
		name, def, hasDef := strings.Cut(body, ":-")
		if !varName.MatchString(name) {
			return nil, fmt.Errorf("%q is not a variable reference: write ${NAME} or ${NAME:-default}, NAME made of letters, digits and _", s[i:i+end+1])
		}
		t = append(t, Segment{Ref: name, Default: def, HasDefault: hasDef})
		s = s[i+end+1:]
	}
	return t, nil
}

func (t Template) appendText(s string) Template {
	if s == "" {
		return t
	}
	if n := len(t); n > 0 && t[n-1].Ref == "" {
		t[n-1].Text += s
		return t
	}
	return append(t, Segment{Text: s})
}

// String writes the template back in ${VAR} syntax.
func (t Template) String() string {
	var b strings.Builder
	for _, s := range t {
		if s.Ref == "" {
			b.WriteString(s.Text)
			continue
		}
		b.WriteString("${")
		b.WriteString(s.Ref)
		if s.HasDefault {
			b.WriteString(":-")
			b.WriteString(s.Default)
		}
		b.WriteString("}")
	}
	return b.String()
}

// IsLiteral reports whether t holds no reference.
func (t Template) IsLiteral() bool {
	for _, s := range t {
		if s.Ref != "" {
			return false
		}
	}
	return true
}

// Literal returns the text of a template without references.
func (t Template) Literal() (string, bool) {
	if !t.IsLiteral() {
		return "", false
	}
	return t.String(), true
}

// SingleRef returns the name of the variable when t is exactly one reference
// without a default ("${NAME}").
func (t Template) SingleRef() (string, bool) {
	if len(t) == 1 && t[0].Ref != "" && !t[0].HasDefault {
		return t[0].Ref, true
	}
	return "", false
}

// Refs returns the names t references, in order, without repeats.
func (t Template) Refs() []string {
	var names []string
	for _, s := range t {
		if s.Ref != "" && !slices.Contains(names, s.Ref) {
			names = append(names, s.Ref)
		}
	}
	return names
}

// A Lookup finds a variable's value; ok is false when it is unset.
type Lookup func(name string) (value string, ok bool)

// UnsetError says that a template refers to a variable that has no value and
// no default.
type UnsetError struct{ Name string }

func (e *UnsetError) Error() string {
	return fmt.Sprintf("${%s} is not set (set it, or give a default: ${%s:-value})", e.Name, e.Name)
}

// Expand resolves every reference with lookup.
func (t Template) Expand(lookup Lookup) (string, error) {
	var b strings.Builder
	for _, s := range t {
		if s.Ref == "" {
			b.WriteString(s.Text)
			continue
		}
		v, ok := lookup(s.Ref)
		switch {
		case ok && v != "":
			b.WriteString(v)
		case s.HasDefault:
			b.WriteString(s.Default)
		case ok:
			// set but empty, no default: empty
		default:
			return "", &UnsetError{Name: s.Ref}
		}
	}
	return b.String(), nil
}

// Substitute replaces the references that subst knows by the template it
// returns for them, and keeps the others as references. It is how emit
// writes the workspace context literally while secrets stay references.
func (t Template) Substitute(subst func(name string) (Template, bool)) Template {
	var out Template
	for _, s := range t {
		if s.Ref == "" {
			out = out.appendText(s.Text)
			continue
		}
		r, ok := subst(s.Ref)
		if !ok {
			out = append(out, s)
			continue
		}
		if lit, isLit := r.Literal(); isLit && lit == "" && s.HasDefault {
			out = out.appendText(s.Default)
			continue
		}
		if name, isRef := r.SingleRef(); isRef && s.HasDefault {
			// ${USER_ID:-x} where USER_ID stands for ${USER}: the default
			// still applies.
			out = append(out, Segment{Ref: name, Default: s.Default, HasDefault: true})
			continue
		}
		for _, rs := range r {
			if rs.Ref == "" {
				out = out.appendText(rs.Text)
			} else {
				out = append(out, rs)
			}
		}
	}
	return out
}
