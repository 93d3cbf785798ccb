package manifest

import (
	"strconv"
	"strings"
)

// A pattern is the form of a string, or of the keys of a table: it
// matches, and it writes itself as a regular expression, for the schema.
type pattern interface {
	MatchString(s string) bool
	String() string
}

// A nameForm is the form of a name that becomes part of a path, a config
// key or a tool name: 1 to max ASCII letters, digits and characters of
// punct, the first a letter or digit if alnumFirst. It matches by hand, and
// writes itself from the same fields as the regular expression that the
// schema shows: compiled, ^[A-Za-z0-9_-]{1,64}$ takes some 860 allocations
// (the repetition is unrolled), and every mcpgen serve and connect checks
// a name (TestNameForms holds the two to agree).
type nameForm struct {
	punct      string // ends with '-', if it holds one, as a regexp class needs
	alnumFirst bool
	max        int
}

func (f *nameForm) MatchString(s string) bool {
	if len(s) == 0 || len(s) > f.max {
		return false
	}
	for i := range len(s) {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case i == 0 && f.alnumFirst, strings.IndexByte(f.punct, c) < 0:
			return false
		}
	}
	return true
}

func (f *nameForm) String() string {
	class := "[A-Za-z0-9" + f.punct + "]"
	if f.alnumFirst {
		return "^[A-Za-z0-9]" + class + "{0," + strconv.Itoa(f.max-1) + "}$"
	}
	return "^" + class + "{1," + strconv.Itoa(f.max) + "}$"
}

var (
	serverName  = &nameForm{punct: "_-", max: 64}
	ownerName   = &nameForm{punct: "._-", alnumFirst: true, max: 64}
	prefixName  = &nameForm{punct: "_-", max: 32}
	toolName    = &nameForm{punct: "_-", max: 64}
	workspaceID = &nameForm{punct: "._-", alnumFirst: true, max: 64}
)
