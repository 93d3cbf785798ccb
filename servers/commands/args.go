package commands

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/manifest"
)

// Schema returns the JSON Schema of a declared tool's arguments: the
// inputSchema that clients show the model and that calls are checked
// against.
func Schema(t *manifest.Tool) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"type":"object","properties":{`)
	var required []string
	for i, a := range t.Args {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSON(&b, a.Name)
		b.WriteString(`:{"type":`)
		writeJSON(&b, a.Type)
		if a.Description != "" {
			b.WriteString(`,"description":`)
			writeJSON(&b, a.Description)
		}
		if a.Default != nil {
			b.WriteString(`,"default":`)
			writeJSON(&b, a.Default)
		}
		if a.Enum != nil {
			b.WriteString(`,"enum":`)
			writeJSON(&b, a.Enum)
		}
		b.WriteByte('}')
		if a.Required {
			required = append(required, a.Name)
		}
	}
	b.WriteString(`}`)
	if len(required) > 0 {
		b.WriteString(`,"required":`)
		writeJSON(&b, required)
	}
	b.WriteString(`,"additionalProperties":false}`)
	return b.Bytes()
}

func writeJSON(b *bytes.Buffer, v any) {
	data, err := json.MarshalWithOption(v, json.DisableHTMLEscape())
	if err != nil {
		panic(err) // strings, numbers, booleans and slices of them always encode
	}
	b.Write(data)
}

// ArgError is a call whose arguments do not fit the tool. Its text is for the
// model: it says what is wrong and what the tool takes.
type ArgError struct{ msg string }

func (e *ArgError) Error() string { return e.msg }

func argErrorf(format string, args ...any) *ArgError {
	return &ArgError{fmt.Sprintf(format, args...)}
}

// Values checks a call's arguments against the tool's declaration and
// returns each argument's value as text for the argv, defaults applied.
// Arguments that are absent and have no default are absent from the map.
func Values(t *manifest.Tool, raw json.RawMessage) (map[string]string, error) {
	given := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(raw)) > 0 && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if err := json.Unmarshal(raw, &given); err != nil {
			return nil, argErrorf("arguments must be a JSON object%s", takes(t))
		}
	}
	var unknown []string
	for name := range given {
		if !slices.ContainsFunc(t.Args, func(a *manifest.Arg) bool { return a.Name == name }) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, argErrorf("unknown argument%s %s%s", plural(len(unknown)), quoteAll(unknown), takes(t))
	}
	values := map[string]string{}
	for _, a := range t.Args {
		v, ok := given[a.Name]
		if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			switch {
			case a.Default != nil:
				values[a.Name] = format(a.Default)
			case a.Required:
				return nil, argErrorf("missing required argument %q (%s)%s", a.Name, a.Type, takes(t))
			}
			continue
		}
		x, err := decodeArg(a, v)
		if err != nil {
			return nil, err
		}
		if a.Enum != nil && !slices.Contains(a.Enum, x) {
			allowed := make([]string, len(a.Enum))
			for i, e := range a.Enum {
				allowed[i] = format(e)
			}
			return nil, argErrorf("argument %q must be one of %s, not %s", a.Name, strings.Join(allowed, ", "), format(x))
		}
		values[a.Name] = format(x)
	}
	return values, nil
}

// decodeArg decodes one argument's JSON value into the Go type of its
// declared type: string, int64, float64 or bool.
func decodeArg(a *manifest.Arg, v json.RawMessage) (any, error) {
	var x any
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	if err := dec.Decode(&x); err != nil {
		return nil, argErrorf("argument %q is not valid JSON", a.Name)
	}
	wrong := func() error {
		return argErrorf("argument %q must be %s, not %s", a.Name, article(a.Type), describe(x))
	}
	switch a.Type {
	case manifest.TypeString:
		if s, ok := x.(string); ok {
			return s, nil
		}
	case manifest.TypeBoolean:
		if b, ok := x.(bool); ok {
			return b, nil
		}
	case manifest.TypeInteger:
		if n, ok := x.(json.Number); ok {
			if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
				return i, nil
			}
			if f, err := n.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
				return int64(f), nil // 10.0 is an integer too
			}
		}
	case manifest.TypeNumber:
		if n, ok := x.(json.Number); ok {
			if f, err := n.Float64(); err == nil && !math.IsInf(f, 0) {
				return f, nil
			}
		}
	}
	return nil, wrong()
}

// format writes an argument value as it goes into the argv.
func format(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	}
	return fmt.Sprint(v)
}

func describe(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("the string %q", v)
	case json.Number:
		return "the number " + string(v)
	case bool:
		return fmt.Sprintf("%v", v)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "null"
}

func article(typ string) string {
	if typ == manifest.TypeInteger {
		return "an integer"
	}
	return "a " + typ
}

// takes describes the tool's arguments, for messages about a bad call.
func takes(t *manifest.Tool) string {
	if len(t.Args) == 0 {
		return "; the tool takes no arguments"
	}
	parts := make([]string, len(t.Args))
	for i, a := range t.Args {
		parts[i] = a.Name + " (" + a.Type
		if !a.Required {
			parts[i] += ", optional"
		}
		parts[i] += ")"
	}
	return "; the tool takes " + strings.Join(parts, ", ")
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Argv builds the command line of a call: in each element of run, {name}
// becomes the argument's value and ${VAR} the variable's, from lookup. An
// element that uses an absent argument is dropped. Values are substituted
// once and never expanded again, so an argument cannot smuggle in a ${VAR}
// (a secret) or another {name}.
//
// An element whose first character comes from a string argument may not
// start with "-" (see checkDash): the command would read the value as an
// option, such as git's --output=FILE. The command itself is never dropped:
// the next element would become the program to run.
func Argv(t *manifest.Tool, values map[string]string, lookup manifest.Lookup) ([]string, error) {
	argv := make([]string, 0, len(t.Run))
	optionsEnded := false
elements:
	for i, elem := range t.Run {
		var e element
		for _, seg := range elem {
			if seg.Ref != "" {
				v, err := manifest.Template{seg}.Expand(lookup)
				if err != nil {
					return nil, err
				}
				e.write(nil, v)
				continue
			}
			present, err := e.substitute(t, seg.Text, values)
			if err != nil {
				return nil, err
			}
			if !present {
				if i == 0 {
					return nil, argErrorf("tool %q cannot run without the argument that names its command%s", t.Name, takes(t))
				}
				continue elements
			}
		}
		if !optionsEnded {
			if err := checkDash(t, e.lead, e.b.String(), values); err != nil {
				return nil, err
			}
		}
		if e.lead == nil && (e.b.String() == "--" || e.b.String() == "--end-of-options") {
			optionsEnded = true
		}
		argv = append(argv, e.b.String())
	}
	return argv, nil
}

// An element is one argv element being built. It remembers which argument,
// if any, wrote its first character.
type element struct {
	b       strings.Builder
	lead    *manifest.Arg // the argument whose value starts the element; nil for the manifest's text
	started bool
}

// write appends s, which the argument a wrote (nil: the manifest).
func (e *element) write(a *manifest.Arg, s string) {
	if !e.started && s != "" {
		e.lead, e.started = a, true
	}
	e.b.WriteString(s)
}

// substitute appends text, of t's run, with {name} replaced for each
// declared argument. present is false when text uses an argument that has
// no value. A {name} that names no argument is an error (the manifest
// refuses it; a tool made otherwise must not run with the text in its
// argv); {{name}} is the text {name}, and braces around anything but a
// name are text, as manifest.ArgAt reads them.
func (e *element) substitute(t *manifest.Tool, text string, values map[string]string) (present bool, err error) {
	for {
		i := strings.IndexByte(text, '{')
		if i < 0 {
			e.write(nil, text)
			return true, nil
		}
		e.write(nil, text[:i])
		name, n, literal := manifest.ArgAt(text, i)
		switch {
		case n == 0:
			e.write(nil, "{") // other braces are text
			n = 1
		case literal:
			e.write(nil, "{"+name+"}")
		default:
			k := slices.IndexFunc(t.Args, func(a *manifest.Arg) bool { return a.Name == name })
			if k < 0 {
				return false, fmt.Errorf("tool %q: {%s} in its run names no argument", t.Name, name)
			}
			v, ok := values[name]
			if !ok {
				return false, nil
			}
			e.write(t.Args[k], v)
		}
		text = text[i+n:]
	}
}

// checkDash refuses an argv element that a string argument, lead, starts
// with "-": substituted at the start of an element, "--output=/x" is an
// option to the command, not a value, and can make it write anywhere. A
// value that the manifest's author wrote (an enum member, the default) is
// theirs, as is an argument declared with allow_dash. Only the start of an
// element counts: in "--rev={rev}" the value cannot become an option.
// After a literal "--" or "--end-of-options" element, commands read no
// more options, so nothing is checked (see Argv).
func checkDash(t *manifest.Tool, lead *manifest.Arg, elem string, values map[string]string) error {
	if lead == nil || lead.AllowDash || lead.Type != manifest.TypeString || !strings.HasPrefix(elem, "-") {
		return nil
	}
	v := values[lead.Name]
	if slices.Contains(lead.Enum, any(v)) || lead.Default == any(v) {
		return nil
	}
	shown := v
	if len(shown) > 60 {
		shown = shown[:60] + "..."
	}
	return argErrorf("argument %q is %q, which starts with \"-\": the command would take it for an option, not a value, so it is refused; give a value that does not start with \"-\" "+
		"(if tool %q must accept such values, the manifest's author can set allow_dash = true on its argument %q)", lead.Name, shown, t.Name, lead.Name)
}
