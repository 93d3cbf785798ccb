package manifest

import (
	"fmt"
	"strconv"
)

// A pattern is the form of a string, or of the keys of a table: it
// matches, and it writes itself as a regular expression, for the schema.
type pattern interface {
	MatchString(s string) bool
	String() string
}

// A nameForm is the form of a name: a variable's, a server's, a header's;
// a first character of the class first, the others of rest, max of them at
// most (0: any number). A class is written as in a regular expression,
// letters and ASCII ranges (A-Z), a '-' of its own last. The form matches
// by hand and writes itself, from the same fields, as the regular
// expression that the schema shows: compiled, ^[A-Za-z0-9_-]{1,64}$ takes
// some 860 allocations (the repetition is unrolled), and every mcpgen
// serve and connect checks names (TestNameForms holds the two to agree).
type nameForm struct {
	first, rest string
	max         int
}

func (f *nameForm) MatchString(s string) bool {
	if len(s) == 0 || f.max > 0 && len(s) > f.max || !inClass(f.first, s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !inClass(f.rest, s[i]) {
			return false
		}
	}
	return true
}

// inClass reports whether c is in class (see nameForm).
func inClass(class string, c byte) bool {
	for i := 0; i < len(class); i++ {
		if i+2 < len(class) && class[i+1] == '-' {
			if class[i] <= c && c <= class[i+2] {
				return true
			}
			i += 2
		} else if class[i] == c {
			return true
		}
	}
	return false
}

func (f *nameForm) String() string {
	switch {
	case f.first == f.rest && f.max == 0:
		return "^[" + f.rest + "]+$"
	case f.first == f.rest:
		return "^[" + f.rest + "]{1," + strconv.Itoa(f.max) + "}$"
	case f.max == 0:
		return "^[" + f.first + "][" + f.rest + "]*$"
	}
	return "^[" + f.first + "][" + f.rest + "]{0," + strconv.Itoa(f.max-1) + "}$"
}

var (
	varName     = &nameForm{first: "A-Za-z_", rest: "A-Za-z0-9_"}
	serverName  = &nameForm{first: "A-Za-z0-9_-", rest: "A-Za-z0-9_-", max: 64}
	ownerName   = &nameForm{first: "A-Za-z0-9", rest: "A-Za-z0-9._-", max: 64}
	prefixName  = &nameForm{first: "A-Za-z0-9_-", rest: "A-Za-z0-9_-", max: 32}
	toolName    = &nameForm{first: "A-Za-z0-9_-", rest: "A-Za-z0-9_-", max: 64}
	workspaceID = &nameForm{first: "A-Za-z0-9", rest: "A-Za-z0-9._-", max: 64}
	headerName  = &nameForm{first: "A-Za-z0-9!#$%&'*+.^_`|~-", rest: "A-Za-z0-9!#$%&'*+.^_`|~-"}
)

// CheckServerName reports why name cannot name a server, or nil.
func CheckServerName(name string) error {
	if !serverName.MatchString(name) {
		return fmt.Errorf("server name %q is not valid: use 1 to 64 letters, digits, _ or -", name)
	}
	return nil
}

// CheckVarName reports why name cannot name an environment variable, or
// nil.
func CheckVarName(name string) error {
	if !varName.MatchString(name) {
		return fmt.Errorf("%q is not a variable name: use letters, digits and _, not starting with a digit", name)
	}
	return nil
}
