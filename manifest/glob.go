package manifest

import (
	"errors"
	"path"
	"strings"
)

// Globs are the patterns of a server's watch and protect lists: relative to
// the manifest's directory (or the workspace's), slash-separated, with
// path.Match syntax within each element and "**" as a whole element for any
// number of directories. The launcher's source watcher, `mcpgen build`'s
// up-to-date check and the files server all match them with the functions
// below, so that they agree on every path.
//
// A hidden directory (one whose name starts with a dot) is matched only by
// a pattern element that starts with a dot itself: neither "*" nor "**"
// reaches into .git, .cache or node_modules/.bin, while "src/*/.gen/*.go"
// and ".github/**" name theirs. A file's own name, the last element, is
// matched as path.Match does, hidden or not.

// CheckGlob reports what is wrong with the pattern g, if anything.
func CheckGlob(g string) error {
	if g == "" {
		return errors.New("empty pattern")
	}
	elems := strings.Split(g, "/")
	if strings.HasPrefix(g, "/") || elems[0] == ".." {
		return errors.New("patterns are relative to the manifest's directory and stay inside it")
	}
	for _, elem := range elems {
		switch elem {
		case "**":
			continue
		case "..":
			return errors.New("patterns stay inside the manifest's directory: remove the \"..\"")
		}
		if _, err := path.Match(elem, ""); err != nil {
			return errors.New("malformed pattern (use *, ?, [a-z] within a name and ** for any directories)")
		}
	}
	return nil
}

// MatchGlob reports whether the slash-separated relative path name matches
// the pattern g.
func MatchGlob(g, name string) bool {
	return matchElems(strings.Split(g, "/"), strings.Split(name, "/"), false)
}

// MatchGlobHidden is MatchGlob with hidden directories open to "*" and
// "**": for protect lists, where a path missed is a write let through, so
// "**/*.pem" must cover .ssh/id.pem too. Watching and building skip hidden
// directories to stay cheap; guarding must not.
func MatchGlobHidden(g, name string) bool {
	return matchElems(strings.Split(g, "/"), strings.Split(name, "/"), true)
}

// GlobMayHold reports whether the directory dir (slash-separated, relative;
// "" for the directory the patterns are relative to) may hold a path that
// g matches: whether a walk or a watch looking for matches must go in.
func GlobMayHold(g, dir string) bool {
	var elems []string
	if dir != "" {
		elems = strings.Split(dir, "/")
	}
	return mayHold(strings.Split(g, "/"), elems)
}

// matchElems matches split elements; hidden opens hidden directories to
// wildcards.
func matchElems(pat, name []string, hidden bool) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if matchElems(pat[1:], name[i:], hidden) {
					return true
				}
				if !hidden && i < len(name)-1 && isHidden(name[i]) {
					return false // "**" would walk into a hidden directory
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if !hidden && len(name) > 1 && isHidden(name[0]) && !isHidden(pat[0]) {
			return false // a hidden directory the pattern does not name
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// mayHold is GlobMayHold on split elements, dir's all directories.
func mayHold(pat, dir []string) bool {
	if len(dir) == 0 {
		return len(pat) > 0 // an element is left for the file
	}
	if len(pat) == 0 {
		return false
	}
	if pat[0] == "**" {
		return mayHold(pat[1:], dir) || (!isHidden(dir[0]) && mayHold(pat, dir[1:]))
	}
	if isHidden(dir[0]) && !isHidden(pat[0]) {
		return false
	}
	ok, _ := path.Match(pat[0], dir[0])
	return ok && mayHold(pat[1:], dir[1:])
}

func isHidden(name string) bool { return strings.HasPrefix(name, ".") }
