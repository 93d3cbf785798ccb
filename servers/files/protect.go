package files

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/mcpgen/mcpgen/manifest"
)

// The writing tools refuse the paths that the server's protect list covers
// (by default .git and everything in it): a model that can write
// .git/config can set core.fsmonitor or an alias, and the next git command
// that a declared tool runs executes it.
//
// A pattern is matched against the path that the write would change, once
// resolved: relative to the workspace root, with "..", "." and the
// symlinks of the existing part gone, so that no spelling of the path gets
// around it. Two more aliases are closed:
//
//   - Case. On a case-insensitive file system (macOS and Windows by
//     default, ext4 directories with casefold) .GIT/config is .git/config,
//     and git reads it. Patterns are matched case-insensitively everywhere:
//     on a case-sensitive system that also refuses .GIT, which costs
//     nothing worth having.
//   - Other names for the same directory (Windows short names such as
//     GIT~1, a bind mount). The literal start of each pattern (.git for
//     .git/**) is looked up, and a write below any directory that is the
//     same file is matched against the rest of the pattern.

// protected returns the pattern of w.protect that covers p, a path that
// follow returned, or "" when none does.
func (w *workspace) protected(p string) string {
	if len(w.protect) == 0 {
		return ""
	}
	folded := fold(p)
	for _, g := range w.protect {
		if manifest.MatchGlobHidden(fold(g), folded) {
			return g
		}
	}
	parts := split(p)
	var dirs []fs.FileInfo // of the existing prefixes of p, looked up once
	for i := range parts {
		fi, err := w.root.Stat(strings.Join(parts[:i+1], "/"))
		if err != nil {
			break
		}
		dirs = append(dirs, fi)
	}
	for _, g := range w.protect {
		anchor, rest := literalStart(g)
		if anchor == "" {
			continue
		}
		a, err := w.root.Stat(anchor)
		if err != nil {
			continue
		}
		for i, d := range dirs {
			if os.SameFile(a, d) && manifest.MatchGlobHidden(fold(rest), fold(strings.Join(parts[i+1:], "/"))) {
				return g
			}
		}
	}
	return ""
}

// refuseProtected is the error of a write to p, which name led to, when the
// protect list covers it.
func (w *workspace) refuseProtected(name, p string) error {
	g := w.protected(p)
	if g == "" {
		return nil
	}
	where := shown(name)
	if p != name {
		where += " (" + shown(p) + " in the workspace)"
	}
	return fmt.Errorf("path %s is protected: %q in the files server's protect list keeps the writing tools out of it (reading it still works); the manifest's author can change \"protect\" if this file must be written", where, g)
}

// checkProtect reports a malformed protect pattern.
func checkProtect(g string) error {
	if g == "" || strings.HasPrefix(g, "/") {
		return fmt.Errorf("give a pattern relative to the workspace, such as \".git/**\"")
	}
	for _, elem := range strings.Split(g, "/") {
		if _, err := path.Match(elem, ""); err != nil {
			return fmt.Errorf("malformed (use *, ?, [a-z] within a name and ** for any directories)")
		}
	}
	return nil
}

// literalStart splits a pattern into its leading components that hold no
// wildcard, and the rest.
func literalStart(g string) (anchor, rest string) {
	parts := strings.Split(g, "/")
	n := 0
	for n < len(parts) && !strings.ContainsAny(parts[n], `*?[\`) {
		n++
	}
	return strings.Join(parts[:n], "/"), strings.Join(parts[n:], "/")
}

// fold writes a slash-separated path as a case-insensitive file system sees
// it, for matching: lower case, each name as the platform stores it.
func fold(p string) string {
	parts := strings.Split(strings.ToLower(p), "/")
	for i, c := range parts {
		parts[i] = storedName(c)
	}
	return strings.Join(parts, "/")
}
