//go:build unix

package e2e

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPinnedCheck: clients/pinned.mjs, which stands for npm ci where
// install.sh has to use npm install (the linux-x64 lockfile), refuses an
// install that is not the lockfile's: a package it does not list, another
// version or tarball, a required package missing. Another platform's
// optional package, absent, is fine.
func TestPinnedCheck(t *testing.T) {
	sb := newSandbox(t)
	pinned, err := filepath.Abs(filepath.Join("clients", "pinned.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	type pkg = map[string]any
	locked := map[string]pkg{
		"":                                  {"name": "root"},
		"node_modules/app":                  {"version": "1.0.0", "integrity": "sha512-app"},
		"node_modules/app-linux":            {"version": "1.0.0", "integrity": "sha512-linux", "optional": true},
		"node_modules/app-darwin":           {"version": "1.0.0", "integrity": "sha512-darwin", "optional": true},
		"node_modules/app/node_modules/dep": {"version": "2.0.0", "integrity": "sha512-dep"},
	}
	same := map[string]pkg{}
	for path, p := range locked {
		if path != "" && path != "node_modules/app-darwin" {
			same[path] = p
		}
	}
	with := func(path string, p pkg) map[string]pkg {
		m := map[string]pkg{}
		for k, v := range same {
			m[k] = v
		}
		if p == nil {
			delete(m, path)
		} else {
			m[path] = p
		}
		return m
	}
	for _, tc := range []struct {
		name      string
		installed map[string]pkg // nil: no record of an install
		wantErr   string         // in stderr; "" when it must pass
	}{
		{name: "the lockfile's", installed: same},
		{name: "an optional package absent", installed: with("node_modules/app-linux", nil)},
		{name: "a package the lockfile lacks", installed: with("node_modules/other", pkg{"version": "1.0.0", "integrity": "sha512-other"}), wantErr: "node_modules/other@1.0.0: installed, but not in the lockfile"},
		{name: "another version", installed: with("node_modules/app/node_modules/dep", pkg{"version": "2.0.1", "integrity": "sha512-dep"}), wantErr: "node_modules/app/node_modules/dep: installed 2.0.1"},
		{name: "another tarball", installed: with("node_modules/app", pkg{"version": "1.0.0", "integrity": "sha512-forged"}), wantErr: "node_modules/app: installed 1.0.0 (sha512-forged)"},
		{name: "a required package missing", installed: with("node_modules/app/node_modules/dep", nil), wantErr: "node_modules/app/node_modules/dep@2.0.0: in the lockfile, but not installed"},
		{name: "nothing installed", wantErr: ".package-lock.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := sb.path(strings.ReplaceAll(tc.name, " ", "-"))
			lockfile := sb.write(filepath.Join(dir, "package-lock.json"), mustJSON(t, map[string]any{"lockfileVersion": 3, "packages": locked}))
			if tc.installed != nil {
				sb.write(filepath.Join(dir, "node_modules", ".package-lock.json"), mustJSON(t, map[string]any{"lockfileVersion": 3, "packages": tc.installed}))
			}
			res := sb.try(run{args: []string{node, pinned, lockfile, dir}})
			if tc.wantErr == "" {
				if res.err != nil {
					t.Fatalf("pinned.mjs refused the install: %s", res)
				}
				return
			}
			var exit *exec.ExitError
			if !errors.As(res.err, &exit) || exit.ExitCode() != 1 || !strings.Contains(res.stderr, tc.wantErr) {
				t.Errorf("pinned.mjs: %v, want exit 1 saying %q\n%s", res.err, tc.wantErr, res.stderr)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
