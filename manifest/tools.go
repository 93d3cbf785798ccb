package manifest

import (
	"fmt"
	"slices"
	"strings"
)

func (d *decoder) tools(path []string, v any) []*Tool {
	t, ok := d.table(path, v)
	if !ok {
		return nil
	}
	if len(t) == 0 {
		d.valueError(path, "\"tools\" is empty: declare at least one tool, [servers.%s.tools.NAME] with run = [...]", path[1])
	}
	var tools []*Tool
	for _, n := range d.sortedKeys(path, t) {
		if tool := d.tool(child(path, n), t[n]); tool != nil {
			tools = append(tools, tool)
		}
	}
	return tools
}

func (d *decoder) tool(path []string, v any) *Tool {
	n := path[len(path)-1]
	if !toolName.MatchString(n) {
		d.keyError(path, "tool name %q is not valid: use 1 to 64 letters, digits, _ or -", n)
		return nil
	}
	t, ok := d.table(path, v)
	if !ok {
		return nil
	}
	tool := &Tool{Name: n, Pos: d.pos.key(path)}
	decodeKeys(d, toolKeys, path, t, tool)
	rv, ok := t["run"]
	if !ok {
		// A misspelt run ("rnu") has its error, which names run: a second
		// one that run is missing would say the same thing again.
		if !misspelt(t, toolKeys.names(), "run") {
			d.keyError(path, "tool %q has no \"run\": give the command to run as an argv", n)
		}
		return tool
	}
	// run last: the fix for a command line written as one string passes
	// the arguments to its shell as positional parameters.
	if tool.Run = d.run(child(path, "run"), rv, tool.Args); tool.Run == nil {
		return tool // the error says what to write; "not used" would be false
	}
	d.checkRefs(path, tool, t["args"])
	for _, a := range tool.Args {
		if !usesArg(tool.Run, a.Name) {
			d.keyError(child(child(path, "args"), a.Name), "argument %q is not used: put {%s} in an element of \"run\"", a.Name, a.Name)
		}
	}
	d.checkProgram(path, tool)
	for _, u := range tool.ShellUses() {
		d.valueWarning(child(child(path, "run"), indexKey(u.Elem)), "%s", u.Message(n)).Suggestion = u.Fix
	}
	return tool
}

// checkRefs reports each {name} in run that names no argument of the
// tool: a typo, or an argument not declared, which would otherwise reach
// the command as the text "{name}". Braces around anything but a name
// ({}, { a }, {.Name}) are text. args is the tool's args table as written:
// an argument declared wrong has its own error.
func (d *decoder) checkRefs(path []string, tool *Tool, args any) {
	var declared []string
	if t, ok := args.(map[string]any); ok {
		for name := range t {
			declared = append(declared, name)
		}
		slices.Sort(declared) // the suggestion does not depend on map order
	}
	for i, elem := range tool.Run {
		for _, seg := range elem {
			if seg.Ref != "" {
				continue // ${VAR}
			}
			for _, ref := range ArgRefs(seg.Text) {
				if slices.Contains(declared, ref) {
					continue
				}
				p := child(child(path, "run"), indexKey(i))
				hint := ""
				if c, ok := closest(ref, declared); ok {
					hint = fmt.Sprintf(" (did you mean {%s}?)", c)
				}
				d.valueError(p, "%q: {%s} names no argument of tool %q%s: declare args.%s, or write {{%s}} to pass the text {%s}",
					name(p), ref, tool.Name, hint, ref, ref, ref)
			}
		}
	}
}

// ArgRefs returns the names of the arguments that {name} refers to in
// text, a literal part of an element of a tool's run, in order (see
// ArgAt). Other braces are text.
func ArgRefs(text string) []string {
	var refs []string
	for i := 0; i < len(text); i++ {
		if text[i] != '{' {
			continue
		}
		if name, n, literal := ArgAt(text, i); n > 0 {
			if !literal {
				refs = append(refs, name)
			}
			i += n - 1
		}
	}
	return refs
}

// ArgAt reads what starts at text[i], a "{", in an element of a tool's
// run: {name}, a reference to the argument name (whose form is that of
// an argument's name); {{name}}, the literal text {name} (for a command
// that needs the braces itself: git's @{{u}}, awk's {{print}}); or
// neither (n is 0), and the brace is text, as are braces around anything
// but a name ({}, { a }, {{.Names}}).
func ArgAt(text string, i int) (name string, n int, literal bool) {
	rest := text[i:]
	if strings.HasPrefix(rest, "{{") {
		if j := strings.Index(rest, "}}"); j > 2 && IsArgName(rest[2:j]) {
			return rest[2:j], j + 2, true
		}
	}
	if j := strings.IndexByte(rest, '}'); j > 1 && IsArgName(rest[1:j]) {
		return rest[1:j], j + 1, false
	}
	return "", 0, false
}

// IsArgName reports whether s has the form of an argument's name: letters,
// digits and _, not starting with a digit.
func IsArgName(s string) bool { return varName.MatchString(s) }

// checkProgram warns when the model chooses the program a tool runs: an
// argument in run[0] without an enum that names the programs allowed.
func (d *decoder) checkProgram(path []string, tool *Tool) {
	if len(tool.Run) == 0 {
		return
	}
	for _, a := range tool.Args {
		if a.Enum == nil && usesArg(tool.Run[:1], a.Name) {
			d.valueWarning(child(child(path, "run"), indexKey(0)), "tool %q: the program to run is {%s}, so the model chooses it: name the program in run[0], or give %q an enum of the programs allowed", tool.Name, a.Name, a.Name)
		}
	}
}

// usesArg reports whether {name} appears in one of the argv's elements.
func usesArg(run []Template, name string) bool {
	for _, t := range run {
		for _, seg := range t {
			if seg.Ref == "" && slices.Contains(ArgRefs(seg.Text), name) {
				return true
			}
		}
	}
	return false
}

func (d *decoder) args(path []string, v any) []*Arg {
	t, ok := d.table(path, v)
	if !ok {
		return nil
	}
	var args []*Arg
	for _, n := range d.sortedKeys(path, t) {
		p := child(path, n)
		if !varName.MatchString(n) {
			d.keyError(p, "argument name %q is not valid: use letters, digits and _, not starting with a digit", n)
			continue
		}
		if a := d.arg(p, t[n]); a != nil {
			args = append(args, a)
		}
	}
	return args
}

func (d *decoder) arg(path []string, v any) *Arg {
	t, ok := d.table(path, v)
	if !ok {
		return nil
	}
	a := &Arg{Name: path[len(path)-1], Type: TypeString}
	if tv, ok := t["type"]; ok {
		p := child(path, "type")
		if s, ok := d.str(p, tv); ok {
			if !slices.Contains(argTypes, s) {
				d.valueError(p, "unknown type %q%s; use %s", s, suggest(s, argTypes), strings.Join(argTypes, ", ")).Suggestion = closestOr(s, argTypes)
				return nil
			}
			a.Type = s
		}
	}
	decodeKeys(d, argKeys, path, t, a)
	required, hasRequired := true, false
	if rv, ok := t["required"]; ok {
		required, _ = d.boolean(child(path, "required"), rv)
		hasRequired = true
	}
	a.Required = required && a.Default == nil
	if hasRequired && required && a.Default != nil {
		d.keyError(child(path, "required"), "required = true contradicts the default: remove one of them")
	}
	if a.Default != nil && a.Enum != nil && !slices.Contains(a.Enum, a.Default) {
		d.valueError(child(path, "default"), "the default %v is not one of \"enum\"", a.Default)
	}
	return a
}

// argValue checks that a default or enum value has the argument's type and
// returns it as a string, int64, float64 or bool.
func (d *decoder) argValue(path []string, typ string, v any) (any, bool) {
	switch x := v.(type) {
	case string:
		if typ == TypeString {
			return x, true
		}
	case int64:
		switch typ {
		case TypeInteger:
			return x, true
		case TypeNumber:
			return float64(x), true
		}
	case float64:
		if typ == TypeNumber {
			return x, true
		}
	case bool:
		if typ == TypeBoolean {
			return x, true
		}
	}
	d.valueError(path, "%v is %s, but the argument's type is %s", v, describe(v), typ)
	return nil, false
}

func withArticle(typ string) string {
	if typ == TypeInteger {
		return "an integer"
	}
	return "a " + typ
}
