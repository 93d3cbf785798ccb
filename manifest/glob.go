package manifest

import (
	"errors"
	"path"
	"strings"
)

// checkGlob validates a watch pattern: path.Match syntax per element, plus
// "**" as a whole element for any number of directories.
func checkGlob(g string) error {
	if g == "" {
		return errors.New("empty pattern")
	}
	if strings.HasPrefix(g, "/") || g == ".." || strings.HasPrefix(g, "../") {
		return errors.New("patterns are relative to the manifest's directory and stay inside it")
	}
	for _, elem := range strings.Split(g, "/") {
		if elem == "**" {
			continue
		}
		if _, err := path.Match(elem, ""); err != nil {
			return errors.New("malformed pattern (use *, ?, [a-z] within a name and ** for any directories)")
		}
	}
	return nil
}

// MatchGlob reports whether the slash-separated relative path name matches
// the watch pattern g.
func MatchGlob(g, name string) bool {
	return matchElems(strings.Split(g, "/"), strings.Split(name, "/"))
}

func matchElems(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if matchElems(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}
