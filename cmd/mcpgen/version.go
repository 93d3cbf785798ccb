package main

import (
	"cmp"
	"runtime/debug"
	"strings"

	"github.com/mcpgen/mcpgen/internal/lazyregexp"
)

// pseudo matches a pseudo-version's end: a timestamp and 12 hex digits.
var pseudo = lazyregexp.New(`[-.]\d{14}-[0-9a-f]{12}$`)

// version is set at link time (-ldflags "-X main.version=v1.2.3"); it wins
// over the module version that `go install` records.
var version = ""

// versionString is what --version prints after "mcpgen ": the version, the
// commit it was built from and whether the tree had changes, and the Go
// version, as far as the build recorded them.
func versionString() string {
	bi, _ := debug.ReadBuildInfo()
	return describeBuild(version, bi)
}

// describeBuild says what is known of a build: "v1.2.3 (commit abc1234)
// go1.26.8", or "devel (commit abc1234, modified) go1.26.8" from a
// checkout. `go run` and builds with -buildvcs=false (CI) record no commit;
// `go install module@version` records the version but no commit. bi is nil
// when the binary has no build info.
func describeBuild(linked string, bi *debug.BuildInfo) string {
	if bi == nil {
		return cmp.Or(linked, "devel")
	}
	var commit string
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	v := bi.Main.Version
	if commit != "" {
		// Since Go 1.24 a build in a checkout gets a version from it: a
		// tag, or a pseudo-version that only repeats the commit; "+dirty"
		// repeats "modified".
		v = strings.TrimSuffix(v, "+dirty")
		if pseudo.MatchString(v) && strings.HasSuffix(v, commit[:min(12, len(commit))]) {
			v = ""
		}
	}
	if v == "(devel)" {
		v = ""
	}
	v = cmp.Or(linked, v, "devel")
	var details []string
	if commit != "" {
		details = append(details, "commit "+commit[:min(7, len(commit))])
	}
	if modified {
		details = append(details, "modified")
	}
	if len(details) > 0 {
		v += " (" + strings.Join(details, ", ") + ")"
	}
	if bi.GoVersion != "" {
		v += " " + bi.GoVersion
	}
	return v
}
