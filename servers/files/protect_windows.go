package files

import "strings"

// storedName is the name Windows stores for c: it drops trailing dots and
// spaces (".git." is ".git"), and "name:stream" names a stream of name
// (".git::$INDEX_ALLOCATION" is the directory .git).
func storedName(c string) string {
	if c == "." || c == ".." {
		return c
	}
	if i := strings.IndexByte(c, ':'); i >= 0 {
		c = c[:i]
	}
	return strings.TrimRight(c, ". ")
}
