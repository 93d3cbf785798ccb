package manifest

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// An Error is one problem in a manifest: where it is, which server and key it
// concerns, and what would be valid.
type Error struct {
	File   string
	Pos    Position
	Server string // empty when the problem is not inside a server
	Key    string // dotted key, relative to the server when Server is set
	// Path is the key's full dotted path from the top of the manifest,
	// such as servers.git.tools.log.run, for tools (validate --json).
	Path string
	Msg  string
	// Suggestion is what to write instead, when there is one clear fix:
	// a key's right name ("command"), a value (["git", "status"]). Msg
	// says it too; tools read it here.
	Suggestion string
	// Warning marks something valid that is likely a mistake or a risk:
	// the manifest loads, and Manifest.Warnings lists it.
	Warning bool
	// Hint marks a suggestion that validate makes about a valid manifest
	// (see SandboxHints): neither a problem nor a risk found in it.
	Hint bool
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d:%d: ", e.File, e.Pos.Line, e.Pos.Column)
	switch {
	case e.Warning:
		b.WriteString("warning: ")
	case e.Hint:
		b.WriteString("hint: ")
	}
	b.WriteString(e.Message())
	return b.String()
}

// Message is the problem without its place: what Error says after
// "file:line:col: ".
func (e *Error) Message() string {
	if e.Server != "" {
		return fmt.Sprintf("server %q: %s", e.Server, e.Msg)
	}
	return e.Msg
}

// Errors is every problem found in a manifest, in file order. Load reports
// them all at once so that one run shows everything to fix.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

func (es Errors) sort() {
	slices.SortStableFunc(es, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Pos.Line, b.Pos.Line), cmp.Compare(a.Pos.Column, b.Pos.Column))
	})
}

// suggest returns ` (did you mean "x"?)` when one of the candidates is close
// enough to word to be a likely typo, else "".
func suggest(word string, candidates []string) string {
	if c, ok := closest(word, candidates); ok {
		return fmt.Sprintf(" (did you mean %q?)", c)
	}
	return ""
}

// closestOr returns the candidate that suggest would name, or "".
func closestOr(word string, candidates []string) string {
	c, _ := closest(word, candidates)
	return c
}

// closest returns the candidate nearest to word when it is near enough to be
// a likely typo: about one edit per three letters, never a full rewrite. A
// candidate is also near when word is, or is near, a name people write for
// it (misnames: "environment" for "env").
func closest(word string, candidates []string) (string, bool) {
	lower := strings.ToLower(word)
	best, bestDist := "", 0
	for _, c := range candidates {
		if len(word) >= 3 && strings.HasPrefix(strings.ToLower(c), lower) {
			return c, true // an abbreviation: "int" for "integer"
		}
		d := editDistance(lower, strings.ToLower(c))
		for _, m := range misnamesOf(c) {
			d = min(d, editDistance(lower, m))
		}
		if best == "" || d < bestDist {
			best, bestDist = c, d
		}
	}
	if best == "" || bestDist > max(1, len(word)/3) || bestDist >= len(word) {
		return "", false
	}
	return best, true
}

// misnames are the names that people write for a name of the manifest, out
// of habit or from another tool's config, lower case: closest offers the
// manifest's name for them and for their misspellings. A table, not a map,
// which Go would build at the start of every mcpgen process; only a
// message reads it.
var misnames = []struct {
	name   string
	others []string
}{
	{"env", []string{"environment", "environ", "envs", "env_vars", "environment_variables"}},
	{"cwd", []string{"working_dir", "working_directory", "workdir", "workingdirectory"}},
	{"args", []string{"arguments", "argv"}},
	{"command", []string{"cmd", "exec", "executable", "program"}},
	{"run", []string{"command", "cmd", "exec", "argv"}},
	{"description", []string{"desc"}},
	{"headers", []string{"http_headers"}},
	{"bearer_token_env", []string{"bearer_token_env_var"}},
	{"startup_timeout", []string{"startup_timeout_sec"}},
	{"tool_timeout", []string{"tool_timeout_sec"}},
	{"number", []string{"float", "double"}},
}

// misnamesOf returns the misnames of name.
func misnamesOf(name string) []string {
	for _, m := range misnames {
		if m.name == name {
			return m.others
		}
	}
	return nil
}

// editDistance is the optimal string alignment distance between a and b,
// in bytes: the edits (insert, delete, substitute, or swap two neighbours)
// that make one the other. A swap counts once: "rnu" is one edit from
// "run", a slip of the fingers rather than two.
func editDistance(a, b string) int {
	// Three rows of the table: the one before the previous, for swaps.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
