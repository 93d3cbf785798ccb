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
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d:%d: ", e.File, e.Pos.Line, e.Pos.Column)
	if e.Warning {
		b.WriteString("warning: ")
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
// a likely typo: about one edit per three letters, never a full rewrite.
func closest(word string, candidates []string) (string, bool) {
	best, bestDist := "", 0
	for _, c := range candidates {
		if len(word) >= 3 && strings.HasPrefix(strings.ToLower(c), strings.ToLower(word)) {
			return c, true // an abbreviation: "int" for "integer"
		}
		d := editDistance(strings.ToLower(word), strings.ToLower(c))
		if best == "" || d < bestDist {
			best, bestDist = c, d
		}
	}
	if best == "" || bestDist > max(1, len(word)/3) || bestDist >= len(word) {
		return "", false
	}
	return best, true
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
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
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
