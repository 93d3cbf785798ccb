package templates

import (
	"path"
	"regexp"
	"strings"
	"testing"
)

// TestScaffoldGitignore: the scaffold's .gitignore covers what its
// manifest entry builds (the -o of its build), and nothing of the sources.
func TestScaffoldGitignore(t *testing.T) {
	for _, name := range []string{"greeter", "acme-tools"} {
		d := ScaffoldData{Name: name, Dir: name, Module: "example.com/" + name}
		files, err := Scaffold(d)
		if err != nil {
			t.Fatal(err)
		}
		ignore, ok := files[".gitignore"]
		if !ok {
			t.Fatalf("%s: no .gitignore among %v", name, keys(files))
		}
		entry, err := Entry(d)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`"-o", "([^"]+)"`).FindSubmatch(entry)
		if m == nil {
			t.Fatalf("%s: no -o in the entry's build:\n%s", name, entry)
		}
		out := string(m[1]) // relative to the server's directory (go -C)
		var patterns []string
		for _, line := range strings.Split(string(ignore), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				patterns = append(patterns, line)
			}
		}
		if !ignored(patterns, out) {
			t.Errorf("%s: .gitignore %q does not cover the build output %s", name, patterns, out)
		}
		for file := range files {
			if ignored(patterns, file) {
				t.Errorf("%s: .gitignore %q covers the scaffold's own %s", name, patterns, file)
			}
		}
	}
}

// ignored reports whether a pattern of the form "/dir/" (the only form the
// scaffold uses) covers file, a path relative to the .gitignore.
func ignored(patterns []string, file string) bool {
	for _, p := range patterns {
		if dir, ok := strings.CutSuffix(strings.TrimPrefix(p, "/"), "/"); ok && strings.HasPrefix(path.Clean(file), dir+"/") {
			return true
		}
	}
	return false
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
