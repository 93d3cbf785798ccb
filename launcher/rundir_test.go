package launcher

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// clearDirEnv unsets every variable that moves mcpgen's directories, so
// that a test sees only what it sets.
func clearDirEnv(t *testing.T) {
	for _, v := range []string{envRuntimeDir, "XDG_RUNTIME_DIR", envStateDir, "XDG_STATE_HOME"} {
		t.Setenv(v, "")
	}
}

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
			env:  map[string]string{envRuntimeDir: "@/run/a", "XDG_RUNTIME_DIR": "@/xdg"},
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
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), envRuntimeDir) {
				t.Errorf("error %q\nwant it to contain %q and %s", err, tt.want, envRuntimeDir)
			}
		})
	}
}

// TestPrivateDirOtherOwner plays another user: a directory that uid does
// not own is refused, whatever its mode.
func TestPrivateDirOtherOwner(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := privateDir(dir, os.Getuid()); err != nil {
		t.Fatalf("privateDir of our own dir: %v", err)
	}
	other := os.Getuid() + 1
	err := privateDir(dir, other)
	want := "owned by uid " + strconv.Itoa(os.Getuid()) + ", not by you (uid " + strconv.Itoa(other) + ")"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("privateDir as uid %d: %v, want an error containing %q", other, err, want)
	}
}

func TestRuntimeDirRelativeOverride(t *testing.T) {
	clearDirEnv(t)
	t.Setenv(envRuntimeDir, "run")
	_, err := RuntimeDir("ws")
	want := `MCPGEN_RUNTIME_DIR="run": not an absolute path: set it to one`
	if err == nil || err.Error() != want {
		t.Errorf("RuntimeDir: %v, want %q", err, want)
	}
}

func TestStateDir(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string // "@" stands for a fresh temp dir
		want string
	}{
		{"MCPGEN_STATE_DIR", map[string]string{envStateDir: "@/state", "XDG_STATE_HOME": "@/xdg", "HOME": "@/home"}, "state/ws"},
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

func TestWorkspaceIDRefused(t *testing.T) {
	clearDirEnv(t)
	root := t.TempDir()
	t.Setenv(envRuntimeDir, root)
	t.Setenv(envStateDir, root)
	for _, id := range []string{"", ".", "..", "a/b", "../up", "a..b", "/abs", "nul\x00"} {
		if got, err := RuntimeDir(id); err == nil {
			t.Errorf("RuntimeDir(%q) = %q, want an error", id, got)
		}
		if got, err := StateDir(id); err == nil {
			t.Errorf("StateDir(%q) = %q, want an error", id, got)
		}
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("refused ids created %d entries in %s, want none", len(entries), root)
	}
}

// TestSocketPath binds sockets at the limit to show that it is the
// kernel's: the longest path socketPath allows binds, and one byte more
// would not.
func TestSocketPath(t *testing.T) {
	base := t.TempDir()
	// A directory whose socket "s.sock" makes a path of exactly n bytes.
	dirFor := func(n int) string {
		pad := n - len(base) - len("/") - len("/s.sock")
		if pad < 1 || pad > 255 {
			t.Skipf("temp dir %s is too long to test with", base)
		}
		d := filepath.Join(base, strings.Repeat("d", pad))
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		return d
	}

	p, err := socketPath(dirFor(maxSocketPath), "s")
	if err != nil {
		t.Fatalf("socketPath at %d bytes: %v", maxSocketPath, err)
	}
	if len(p) != maxSocketPath {
		t.Fatalf("len(%q) = %d, want %d", p, len(p), maxSocketPath)
	}
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Fatalf("listen at the longest path socketPath allows: %v", err)
	}
	l.Close()

	long := dirFor(maxSocketPath + 1)
	if p, err := socketPath(long, "s"); err == nil {
		t.Errorf("socketPath at %d bytes = %q, want an error", maxSocketPath+1, p)
	} else if want := "set MCPGEN_RUNTIME_DIR to a shorter directory"; !strings.HasSuffix(err.Error(), want) {
		t.Errorf("error %q, want it to end with %q", err, want)
	}
	if l, err := net.Listen("unix", filepath.Join(long, "s.sock")); err == nil {
		l.Close()
		t.Errorf("listen at %d bytes worked: the limit is too strict", maxSocketPath+1)
	}

	for _, name := range []string{"", ".", "..", "a/b"} {
		if p, err := socketPath(base, name); err == nil {
			t.Errorf("socketPath(%q) = %q, want an error", name, p)
		}
	}
}

func mkdirMode(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}
