package manifest

import (
	"strings"
	"testing"
)

func TestCheckGlob(t *testing.T) {
	tests := []struct {
		glob string
		want string // a part of the error; "" for none
	}{
		{"*.go", ""},
		{"cmd/x/**/*.go", ""},
		{".github/**", ""},
		{"**", ""},
		{"", "empty pattern"},
		{"/abs/*.go", "relative to the manifest's directory"},
		{"../up/*.go", "relative to the manifest's directory"},
		{"..", "relative to the manifest's directory"},
		{"src/../../etc/passwd", `remove the ".."`},
		{"cmd/[x", "malformed pattern"},
	}
	for _, tt := range tests {
		err := CheckGlob(tt.glob)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckGlob(%q) = %v, want nil", tt.glob, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("CheckGlob(%q) = %v, want an error saying %q", tt.glob, err, tt.want)
		}
	}
}

func TestMatchGlob(t *testing.T) {
	tests := []struct {
		glob, name string
		want       bool
	}{
		{"*.go", "main.go", true},
		{"*.go", "sub/main.go", false},
		{"*.go", ".hidden.go", true}, // a file's own name: as path.Match
		{"go.mod", "go.mod", true},
		{"cmd/x/**/*.go", "cmd/x/main.go", true},
		{"cmd/x/**/*.go", "cmd/x/a/b/c.go", true},
		{"cmd/x/**/*.go", "cmd/y/main.go", false},
		{"cmd/x/**/*.go", "cmd/x/.cache/z.go", false},
		{"**/*.go", "a/b/c.go", true},
		{"**/*.go", ".git/x.go", false},
		{"**/*.go", "a/.git/x.go", false},
		{"**", "a/b", true},
		{"**", ".git/config", false},
		{"**", ".env", true},
		{".git/**", ".git/config", true},
		{".git/**", ".git/hooks/pre-commit", true},
		{".github/**/*.yml", ".github/workflows/ci.yml", true},
		{"src/*/.gen/*.go", "src/a/.gen/x.go", true},
		{"src/*/.gen/*.go", "src/.a/.gen/x.go", false},
		{"src/*/main.go", "src/.x/main.go", false},
		{"src/.*/main.go", "src/.x/main.go", true},
		{"**/.gen/*.go", ".gen/x.go", true},
		{"**/.gen/*.go", "a/b/.gen/x.go", true},
		{"**/.gen/*.go", "a/.b/.gen/x.go", false},
		{"web/dist/**", "web/dist/css/a.css", true},
		{"a/b.go", "a/b.go", true},
		{"a/b.go", "a/b.go/c", false},
	}
	for _, tt := range tests {
		if got := MatchGlob(tt.glob, tt.name); got != tt.want {
			t.Errorf("MatchGlob(%q, %q) = %v, want %v", tt.glob, tt.name, got, tt.want)
		}
	}
}

// MatchGlobHidden differs from MatchGlob only where a wildcard meets a
// hidden directory: there it matches.
func TestMatchGlobHidden(t *testing.T) {
	tests := []struct {
		glob, name string
		want       bool
	}{
		{"**/*.pem", ".ssh/id.pem", true},
		{"**", ".git/config", true},
		{"src/*/main.go", "src/.x/main.go", true},
		{"**/.git/**", "a/.b/.git/config", true},
		{"**/.git/**", "sub/.git", true},
		{".git/**", ".git", true},
		{"*.go", "sub/main.go", false},
		{"secrets/*.env", "secrets/sub/b.env", false},
		{".git/**", ".github/x", false},
	}
	for _, tt := range tests {
		if got := MatchGlobHidden(tt.glob, tt.name); got != tt.want {
			t.Errorf("MatchGlobHidden(%q, %q) = %v, want %v", tt.glob, tt.name, got, tt.want)
		}
	}
}

func TestGlobMayHold(t *testing.T) {
	tests := []struct {
		glob, dir string
		want      bool
	}{
		{"*.go", "", true},
		{"*.go", "sub", false},
		{"go.mod", "", true},
		{"cmd/x/**/*.go", "", true},
		{"cmd/x/**/*.go", "cmd", true},
		{"cmd/x/**/*.go", "cmd/x", true},
		{"cmd/x/**/*.go", "cmd/x/a/b", true},
		{"cmd/x/**/*.go", "cmd/y", false},
		{"cmd/x/**/*.go", "bin", false},
		{"cmd/x/**/*.go", "cmd/x/.git", false},
		{"cmd/*/main.go", "cmd/x", true},
		{"cmd/*/main.go", "cmd/x/a", false},
		{"cmd/*/main.go", "cmd/.x", false},
		{"**/*.go", "a/b/c", true},
		{"**/*.go", "a/.git", false},
		{"**/.github/*.yml", "a/.github", true},
		{".github/**", ".github/workflows", true},
		{".github/**", ".git", false},
		{"src/*/.gen/*.go", "src/a/.gen", true},
		{"src/*/.gen/*.go", "src/.a", false},
		{"a/b.go", "a/b.go", false},
	}
	for _, tt := range tests {
		if got := GlobMayHold(tt.glob, tt.dir); got != tt.want {
			t.Errorf("GlobMayHold(%q, %q) = %v, want %v", tt.glob, tt.dir, got, tt.want)
		}
	}
}

// TestGlobMayHoldAgrees: a directory holds a match only where GlobMayHold
// says it may, for every directory on the way to it.
func TestGlobMayHoldAgrees(t *testing.T) {
	globs := []string{"*.go", "cmd/x/**/*.go", "**/*.go", "**", ".git/**", "src/*/.gen/*.go", "**/.gen/*.go", "web/dist/**", "src/.*/main.go"}
	names := []string{"main.go", ".x.go", "cmd/x/a/b.go", "cmd/x/.c/d.go", ".git/config", "a/.git/x.go", "src/a/.gen/x.go",
		"src/.a/.gen/x.go", "a/b/.gen/x.go", "a/.b/.gen/x.go", "web/dist/css/a.css", "src/.x/main.go", "a/b/c/d/e.go"}
	for _, g := range globs {
		for _, n := range names {
			if !MatchGlob(g, n) {
				continue
			}
			elems := strings.Split(n, "/")
			for i := range len(elems) {
				dir := strings.Join(elems[:i], "/")
				if !GlobMayHold(g, dir) {
					t.Errorf("MatchGlob(%q, %q) but not GlobMayHold(%q, %q)", g, n, g, dir)
				}
			}
		}
	}
}
