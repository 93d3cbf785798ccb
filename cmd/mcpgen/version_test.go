package main

import (
	"bytes"
	"regexp"
	"runtime/debug"
	"testing"
)

func TestDescribeBuild(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		s := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: "2026-11-24T09:00:00Z"}}
		if modified != "" {
			s = append(s, debug.BuildSetting{Key: "vcs.modified", Value: modified})
		}
		return s
	}
	tests := []struct {
		name   string
		linked string
		bi     *debug.BuildInfo
		want   string
	}{
		{"a checkout with changes", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("abc1234def5678", "true")}, "devel (commit abc1234, modified) go1.26.8"},
		{"a clean checkout", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("abc1234def5678", "false")}, "devel (commit abc1234) go1.26.8"},
		{"go install module@version", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3 go1.26.8"},
		{"go run, or -buildvcs=false", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "devel go1.26.8"},
		{"-ldflags -X main.version wins", "v9.9.9", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}, Settings: vcs("abc1234def5678", "")}, "v9.9.9 (commit abc1234) go1.26.8"},
		{"a short revision", "", &debug.BuildInfo{Settings: vcs("abc", "")}, "devel (commit abc)"},
		// Go 1.24 and later take a version from the checkout.
		{"a checkout's pseudo-version", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261124094210-abc1234def56+dirty"}, Settings: vcs("abc1234def5678", "true")}, "devel (commit abc1234, modified) go1.26.8"},
		{"a checkout after a tag", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.4-0.20261124094210-abc1234def56"}, Settings: vcs("abc1234def5678", "false")}, "devel (commit abc1234) go1.26.8"},
		{"a tagged checkout", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3+dirty"}, Settings: vcs("abc1234def5678", "true")}, "v1.2.3 (commit abc1234, modified) go1.26.8"},
		{"go install of a pseudo-version", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261124094210-abc1234def56"}}, "v0.0.0-20261124094210-abc1234def56 go1.26.8"},
		{"no build info", "", nil, "devel"},
		{"no build info, linked", "v1.0.0", nil, "v1.0.0"},
	}
	for _, tc := range tests {
		if got := describeBuild(tc.linked, tc.bi); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestVersionFlag runs mcpgen --version in this test binary, whose build
// info has the Go version at least.
func TestVersionFlag(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--version"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("mcpgen --version: exit %d: %s", code, stderr.String())
	}
	want := regexp.MustCompile(`^mcpgen (devel|v\S+)( \(commit [0-9a-f]{1,7}(, modified)?\))? go1\.\d+\S*\n$`)
	if !want.Match(stdout.Bytes()) {
		t.Errorf("mcpgen --version printed %q, want it to match %s", stdout.String(), want)
	}
}
