package manifest

import (
	"fmt"
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
	// varNames are the names of [workspace.vars], known before the
	// servers are decoded: a server's context may name them.
	varNames []string
}

// errorAt records a problem and returns it, for the caller to add a
// suggestion to.
func (d *decoder) errorAt(at Position, path []string, format string, args ...any) *Error {
	e := d.newError(at, path, format, args...)
	d.errs = append(d.errs, e)
	return e
}

func (d *decoder) newError(at Position, path []string, format string, args ...any) *Error {
	e := &Error{File: d.file, Pos: at, Path: dotted(path), Msg: fmt.Sprintf(format, args...)}
	if len(path) >= 2 && path[0] == "servers" {
		e.Server, e.Key = path[1], dotted(path[2:])
	} else {
		e.Key = dotted(path)
	}
	return e
}

// valueWarning notes something valid but likely dangerous about a value.
func (d *decoder) valueWarning(path []string, format string, args ...any) *Error {
	w := d.newError(d.pos.value(path), path, format, args...)
	w.Warning = true
	d.warnings = append(d.warnings, w)
	return w
}

// keyError reports a problem with a key itself (unknown, not allowed here).
func (d *decoder) keyError(path []string, format string, args ...any) *Error {
	return d.errorAt(d.pos.key(path), path, format, args...)
}

// valueError reports a problem with a key's value.
func (d *decoder) valueError(path []string, format string, args ...any) *Error {
	return d.errorAt(d.pos.value(path), path, format, args...)
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
			fix := TOMLArray([]string{s})
			d.valueError(path, "%q must be an array of strings: write %s", name(path), fix).Suggestion = fix
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

// vars decodes a table of string templates, such as env or headers.
func (d *decoder) vars(path []string, v any, valid pattern, what string) []Var {
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
			fix := ""
			switch x := t[k].(type) {
			case int64, float64, bool:
				fix = fmt.Sprintf("\"%v\"", x)
			}
			hint := ""
			if fix != "" {
				hint = " (write " + fix + ")"
			}
			d.valueError(p, "%q must be a string, not %s%s", name(p), describe(t[k]), hint).Suggestion = fix
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
			fix := fmt.Sprintf("\"%ds\"", n)
			d.valueError(path, "%q must be a duration such as %s", name(path), fix).Suggestion = fix
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

func (d *decoder) unknownKey(path []string, known []string) *Error {
	k := path[len(path)-1]
	e := d.keyError(path, "unknown key %q%s", k, suggest(k, known))
	e.Suggestion = closestOr(k, known)
	return e
}

// misspelt reports whether a key of t that known does not list is taken
// for want (as unknownKey suggests it): its error says that want is
// missing already.
func misspelt(t map[string]any, known []string, want string) bool {
	for k := range t {
		if !slices.Contains(known, k) && closestOr(k, known) == want {
			return true
		}
	}
	return false
}

// decodeKeys decodes every key of the table t, written at path, into x
// through table: a key that the table does not list is unknown. A key
// without a decode function is the caller's.
func decodeKeys[T any](d *decoder, table keyTable[T], path []string, t map[string]any, x T) {
	for _, k := range d.sortedKeys(path, t) {
		p := child(path, k)
		spec, ok := table.find(k)
		switch {
		case !ok:
			d.unknownKey(p, table.names())
		case spec.decode != nil:
			spec.decode(d, p, t[k], x)
		}
	}
	checkRequires(d, table, path, t)
}

// argvStrings decodes an argv: a command and its arguments, one element
// each. Written as one string ("git status"), the suggestion splits it as
// a shell would, or runs it through one when it uses what only a shell
// does (a pipe, a redirection); command says that the first element is the
// program (run, build), so that a shell is the fix. args are a tool's
// arguments: the shell's fix passes them to the script as positional
// parameters ("$1"), never inside it, where a value would be code.
func (d *decoder) argvStrings(path []string, v any, command bool, args []*Arg) ([]string, bool) {
	if s, isStr := v.(string); isStr {
		words, simple := splitCommand(s)
		var msg, fix string
		switch {
		case !simple && command:
			fix = TOMLArray(shellFix(s, args))
			msg = "%q must be an array of strings, run without a shell: to use one, write %s"
		case len(words) > 1:
			fix = TOMLArray(words)
			msg = "%q must be an array of strings, one per argument (no shell splits them): write %s"
		default:
			fix = TOMLArray([]string{s})
			msg = "%q must be an array of strings: write %s"
		}
		d.valueError(path, msg, name(path), fix).Suggestion = fix
		return nil, false
	}
	return d.strs(path, v)
}

// shellFix is the argv that runs the command line s through sh, with the
// string arguments that s uses passed as positional parameters (see
// ShellUses): ["sh", "-c", "grep \"$1\" .", "sh", "{pattern}"].
func shellFix(s string, args []*Arg) []string {
	run := []Template{{{Text: "sh"}}, {{Text: "-c"}}, {{Text: s}}}
	t := &Tool{Run: run, Args: args}
	if uses := t.ShellUses(); len(uses) > 0 {
		var moved []*Arg
		for _, u := range uses {
			moved = append(moved, u.Arg)
		}
		if out, ok := positional(run, 2, moved); ok {
			return out
		}
	}
	return []string{"sh", "-c", s}
}

// argv decodes an argv whose elements may hold ${VAR}. nonEmpty: it names
// a program, so it needs one.
func (d *decoder) argv(path []string, v any, nonEmpty bool) []Template {
	return d.argvOf(path, v, nonEmpty, nil)
}

// run decodes a declared tool's run, whose arguments are args.
func (d *decoder) run(path []string, v any, args []*Arg) []Template {
	return d.argvOf(path, v, true, args)
}

func (d *decoder) argvOf(path []string, v any, nonEmpty bool, args []*Arg) []Template {
	ss, ok := d.argvStrings(path, v, nonEmpty, args)
	if !ok {
		return nil
	}
	if nonEmpty && (len(ss) == 0 || strings.TrimSpace(ss[0]) == "") {
		d.valueError(path, "%q is empty: give the command as an argv, e.g. [\"git\", \"status\"]", name(path))
	}
	out := make([]Template, len(ss))
	for i, s := range ss {
		out[i] = d.template(child(path, indexKey(i)), s)
	}
	return out
}

// command checks a server's command: one program, not a command line.
func (d *decoder) command(path []string, s string) {
	if strings.TrimSpace(s) == "" {
		d.valueError(path, "\"command\" is empty: name the program to run")
		return
	}
	if !strings.ContainsAny(s, " \t\n") {
		return // the common case, and cheap: one word
	}
	words, _ := splitCommand(s)
	if len(words) < 2 || strings.ContainsAny(words[0], `/\`) || strings.Contains(s, "${") {
		return // a path may hold spaces
	}
	fix := fmt.Sprintf("command = %s, args = %s", TOMLString(words[0]), TOMLArray(words[1:]))
	d.valueError(path, "\"command\" names one program, run without a shell, not a command line: write command = %s and put %s at the start of args", TOMLString(words[0]), TOMLArray(words[1:])).Suggestion = fix
}

// splitCommand splits a command line at blanks, as a shell splits a
// simple one: with '...' and "..." quoting and \ escapes. simple is false
// when the line uses what only a shell does: a pipe, a list, a
// redirection, a substitution, a $VARIABLE or a glob outside quotes.
func splitCommand(s string) (words []string, simple bool) {
	simple = true
	var cur strings.Builder
	inWord := false
	var quote rune
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else if r == '\\' && quote == '"' && i+1 < len(rs) {
				i++
				cur.WriteRune(rs[i])
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == '\\' && i+1 < len(rs):
			i++
			cur.WriteRune(rs[i])
			inWord = true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			if strings.ContainsRune("|&;<>`*?()", r) || r == '$' && (i+1 >= len(rs) || rs[i+1] != '{') {
				simple = false
			}
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		simple = false
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, simple
}
