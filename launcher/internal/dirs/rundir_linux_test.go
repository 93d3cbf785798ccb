package dirs

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// These tests run RuntimeDir and StateDir with Linux's defaults; dirs_test.go
// checks every platform's rules.

func TestRuntimeDir(t *testing.T) {
	uid := strconv.Itoa(os.Getuid())
	tests := []struct {
		name string
		env  map[string]string // values relative to a fresh temp dir when they start with "@"
		want string            // relative to that temp dir
		made []string          // directories RuntimeDir must create, 0700
	}{
		{
			name: "MCPGEN_RUNTIME_DIR",
			env:  map[string]string{EnvRuntimeDir: "@/run/a", "XDG_RUNTIME_DIR": "@/xdg"},
			want: "run/a/ws",
			made: []string{"run", "run/a", "run/a/ws"},
		},
		{
			name: "XDG_RUNTIME_DIR",
			env:  map[string]string{"XDG_RUNTIME_DIR": "@/xdg", "TMPDIR": "@/tmp"},
			want: "xdg/mcpgen/ws",
			made: []string{"xdg", "xdg/mcpgen", "xdg/mcpgen/ws"},
		},
		{
			name: "relative XDG_RUNTIME_DIR is ignored",
			env:  map[string]string{"XDG_RUNTIME_DIR": "xdg", "TMPDIR": "@/tmp"},
			want: "tmp/mcpgen-" + uid + "/ws",
			made: []string{"tmp/mcpgen-" + uid, "tmp/mcpgen-" + uid + "/ws"},
		},
		{
			name: "temp dir",
			env:  map[string]string{"TMPDIR": "@/tmp"},
			want: "tmp/mcpgen-" + uid + "/ws",
			made: []string{"tmp/mcpgen-" + uid, "tmp/mcpgen-" + uid + "/ws"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearDirEnv(t)
			root := t.TempDir()
			if err := os.Mkdir(filepath.Join(root, "tmp"), 0o777); err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.env {
				if rest, ok := strings.CutPrefix(v, "@"); ok {
					v = root + rest
				}
				t.Setenv(k, v)
			}
			got, err := RuntimeDir("ws")
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(root, tt.want); got != want {
				t.Errorf("RuntimeDir = %q, want %q", got, want)
			}
			for _, d := range tt.made {
				fi, err := os.Stat(filepath.Join(root, d))
				if err != nil {
					t.Fatal(err)
				}
				if !fi.IsDir() || fi.Mode().Perm() != 0o700 {
					t.Errorf("%s: mode %v, want a directory with mode 0700", d, fi.Mode())
				}
			}
			// A second call finds everything in place.
			if again, err := RuntimeDir("ws"); err != nil || again != got {
				t.Errorf("second RuntimeDir = %q, %v; want %q, nil", again, err, got)
			}
		})
	}
}

func TestRuntimeDirRefuses(t *testing.T) {
	uid := strconv.Itoa(os.Getuid())
	tests := []struct {
		name    string
		prepare func(t *testing.T, tmp string) // tmp is the temp dir
		want    string                         // in the error
	}{
		{
			name: "group and world access to the per-user dir",
			prepare: func(t *testing.T, tmp string) {
				mkdirMode(t, filepath.Join(tmp, "mcpgen-"+uid), 0o755)
			},
			want: "mode 0755 lets other users in: run chmod 700 ",
		},
		{
			name: "group access to the workspace dir",
			prepare: func(t *testing.T, tmp string) {
				mkdirMode(t, filepath.Join(tmp, "mcpgen-"+uid), 0o700)
				mkdirMode(t, filepath.Join(tmp, "mcpgen-"+uid, "ws"), 0o750)
			},
			want: "mode 0750 lets other users in",
		},
		{
			name: "a symlink planted as the per-user dir",
			prepare: func(t *testing.T, tmp string) {
				elsewhere := filepath.Join(tmp, "elsewhere")
				mkdirMode(t, elsewhere, 0o700)
				if err := os.Symlink(elsewhere, filepath.Join(tmp, "mcpgen-"+uid)); err != nil {
					t.Fatal(err)
				}
			},
			want: "a symbolic link, not a directory",
		},
		{
			name: "a file planted as the workspace dir",
			prepare: func(t *testing.T, tmp string) {
				mkdirMode(t, filepath.Join(tmp, "mcpgen-"+uid), 0o700)
				if err := os.WriteFile(filepath.Join(tmp, "mcpgen-"+uid, "ws"), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			},
			want: "not a directory",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearDirEnv(t)
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			tt.prepare(t, tmp)
			got, err := RuntimeDir("ws")
			if err == nil {
				t.Fatalf("RuntimeDir = %q, want an error containing %q", got, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), EnvRuntimeDir) {
				t.Errorf("error %q\nwant it to contain %q and %s", err, tt.want, EnvRuntimeDir)
			}
		})
	}
}

func TestStateDir(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string // "@" stands for a fresh temp dir
		want string
	}{
		{"MCPGEN_STATE_DIR", map[string]string{EnvStateDir: "@/state", "XDG_STATE_HOME": "@/xdg", "HOME": "@/home"}, "state/ws"},
		{"XDG_STATE_HOME", map[string]string{"XDG_STATE_HOME": "@/xdg", "HOME": "@/home"}, "xdg/mcpgen/ws"},
		{"relative XDG_STATE_HOME is ignored", map[string]string{"XDG_STATE_HOME": "xdg", "HOME": "@/home"}, "home/.local/state/mcpgen/ws"},
		{"home", map[string]string{"HOME": "@/home"}, "home/.local/state/mcpgen/ws"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearDirEnv(t)
			root := t.TempDir()
			for k, v := range tt.env {
				t.Setenv(k, strings.Replace(v, "@", root, 1))
			}
			got, err := StateDir("ws")
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(root, tt.want); got != want {
				t.Errorf("StateDir = %q, want %q", got, want)
			}
			fi, err := os.Stat(got)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o700 {
				t.Errorf("%s: mode %v, want 0700", got, fi.Mode().Perm())
			}
		})
	}
}
