package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goldenCases are the emitted files that the golden tests pin, and that the
// end-to-end tests give to the real Codex and Claude Code. Each runs mcpgen
// emit on testdata/golden/mcpgen.toml; with existing set, it merges into a
// copy of that file.
var goldenCases = []struct {
	golden   string
	args     []string
	existing string
}{
	{"codex.toml", []string{"--provider", "codex"}, ""},
	{"codex-workspace.toml", []string{"--provider", "codex", "--workspace", "ws-42", "--user", "alice"}, ""},
	{"codex-merged.toml", []string{"--provider", "codex"}, "existing-codex.toml"},
	{"claude.json", []string{"--provider", "claude"}, ""},
	{"claude-workspace.json", []string{"--provider", "claude", "--workspace", "ws-42", "--user", "alice"}, ""},
	{"claude-merged.json", []string{"--provider", "claude"}, "existing-claude.json"},
	{"claude-desktop-workspace.json", []string{"--provider", "claude-desktop", "--workspace", "ws-42", "--user", "alice"}, ""},
	// Without --user, USER_ID comes from $USER: it stays a reference, or
	// goes through mcpgen serve, which resolves it when the server starts.
	{"codex-workspace-env.toml", []string{"--provider", "codex", "--workspace", "ws-42"}, ""},
	{"claude-workspace-env.json", []string{"--provider", "claude", "--workspace", "ws-42"}, ""},
	{"claude-desktop-workspace-env.json", []string{"--provider", "claude-desktop", "--workspace", "ws-42"}, ""},
	// One entry for the workspace: the gateway.
	{"codex-gateway.toml", []string{"--provider", "codex", "--gateway"}, ""},
	{"codex-gateway-workspace.toml", []string{"--provider", "codex", "--gateway", "--workspace", "ws-42", "--user", "alice"}, ""},
	{"claude-gateway.json", []string{"--provider", "claude", "--gateway", "--gateway-name", "workspace-tools"}, ""},
	{"claude-desktop-gateway.json", []string{"--provider", "claude-desktop", "--gateway", "--workspace", "ws-42", "--user", "alice"}, ""},
}

// goldenDirToken stands for the absolute path of testdata/golden in golden
// files, so that they do not depend on where the repository is.
const goldenDirToken = "$GOLDEN_DIR"

// fingerprintRE matches the fingerprints of managed entries. They hash an
// entry's content, absolute paths included, so they depend on where the
// repository is checked out: golden files compare them masked, and
// checkUpToDate makes sure that emit recognises its own entries instead (a
// wrong fingerprint makes an entry look edited by hand).
var fingerprintRE = regexp.MustCompile(`sha256:[0-9a-f]{12}`)

func maskFingerprints(b []byte) []byte {
	return fingerprintRE.ReplaceAll(b, []byte("sha256:<fingerprint>"))
}

// checkUpToDate runs the same emit with --check on a file holding what it
// produced: it must find the file up to date.
func checkUpToDate(t *testing.T, dir string, args []string, out []byte) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "emitted")
	if err := os.WriteFile(file, out, 0o600); err != nil {
		t.Fatal(err)
	}
	args = append([]string{"emit", "--manifest", filepath.Join(dir, "mcpgen.toml"), "--mcpgen-path", "/usr/local/bin/mcpgen", "-o", file, "--check"}, args...)
	var o, e bytes.Buffer
	if code := run(args, strings.NewReader(""), &o, &e); code != 0 {
		t.Errorf("mcpgen %s: exit %d, want 0: emit does not recognise its own output\n%s%s", strings.Join(args, " "), code, o.String(), e.String())
	}
}

func TestGolden(t *testing.T) {
	dir, err := filepath.Abs("testdata/golden")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("USER", "tester")
	for _, tc := range goldenCases {
		t.Run(tc.golden, func(t *testing.T) {
			raw, stderr := emitGolden(t, dir, tc.args, tc.existing)
			checkUpToDate(t, dir, tc.args, raw)
			got := bytes.ReplaceAll(raw, []byte(dir), []byte(goldenDirToken))
			path := filepath.Join("testdata/golden/want", tc.golden)
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGolden -update)", err)
			}
			if !bytes.Equal(maskFingerprints(got), maskFingerprints(want)) {
				t.Errorf("emit %s differs from %s (-want +got):\n%s\nstderr: %s", strings.Join(tc.args, " "), path, unifiedDiff(path, want, got), stderr)
			}
		})
	}
}

// emitGolden runs mcpgen emit for a golden case and returns the file it
// produced (stdout, or the merged copy of existing).
func emitGolden(t *testing.T, dir string, args []string, existing string) (out []byte, stderr string) {
	t.Helper()
	args = append([]string{"emit", "--manifest", filepath.Join(dir, "mcpgen.toml"), "--mcpgen-path", "/usr/local/bin/mcpgen"}, args...)
	var target string
	if existing != "" {
		data, err := os.ReadFile(filepath.Join(dir, existing))
		if err != nil {
			t.Fatal(err)
		}
		target = filepath.Join(t.TempDir(), existing)
		if err := os.WriteFile(target, data, 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-o", target)
	}
	var o, e bytes.Buffer
	if code := run(args, strings.NewReader(""), &o, &e); code != 0 {
		t.Fatalf("mcpgen %s: exit %d\n%s", strings.Join(args, " "), code, e.String())
	}
	if target == "" {
		return o.Bytes(), e.String()
	}
	data, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	return data, e.String()
}
