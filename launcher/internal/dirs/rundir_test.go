package dirs

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// clearDirEnv unsets every variable that moves mcpgen's directories, so
// that a test sees only what it sets.
func clearDirEnv(t *testing.T) {
	for _, v := range []string{EnvRuntimeDir, "XDG_RUNTIME_DIR", EnvStateDir, "XDG_STATE_HOME"} {
		t.Setenv(v, "")
	}
}

func TestRuntimeDirRelativeOverride(t *testing.T) {
	clearDirEnv(t)
	t.Setenv(EnvRuntimeDir, "run")
	_, err := RuntimeDir("ws")
	want := `MCPGEN_RUNTIME_DIR="run": not an absolute path: set it to one`
	if err == nil || err.Error() != want {
		t.Errorf("RuntimeDir: %v, want %q", err, want)
	}
}

func TestWorkspaceIDRefused(t *testing.T) {
	clearDirEnv(t)
	root := t.TempDir()
	t.Setenv(EnvRuntimeDir, root)
	t.Setenv(EnvStateDir, root)
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
// kernel's: the longest path SocketPath allows binds, and one byte more
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

	p, err := SocketPath(dirFor(hostDirs.maxSocketPath), "s")
	if err != nil {
		t.Fatalf("socketPath at %d bytes: %v", hostDirs.maxSocketPath, err)
	}
	if len(p) != hostDirs.maxSocketPath {
		t.Fatalf("len(%q) = %d, want %d", p, len(p), hostDirs.maxSocketPath)
	}
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Fatalf("listen at the longest path socketPath allows: %v", err)
	}
	l.Close()

	long := dirFor(hostDirs.maxSocketPath + 1)
	if p, err := SocketPath(long, "s"); err == nil {
		t.Errorf("socketPath at %d bytes = %q, want an error", hostDirs.maxSocketPath+1, p)
	} else if want := "set MCPGEN_RUNTIME_DIR to a shorter directory"; !strings.HasSuffix(err.Error(), want) {
		t.Errorf("error %q, want it to end with %q", err, want)
	}
	if l, err := net.Listen("unix", filepath.Join(long, "s.sock")); err == nil {
		l.Close()
		t.Errorf("listen at %d bytes worked: the limit is too strict", hostDirs.maxSocketPath+1)
	}

	for _, name := range []string{"", ".", "..", "a/b"} {
		if p, err := SocketPath(base, name); err == nil {
			t.Errorf("socketPath(%q) = %q, want an error", name, p)
		}
	}
}
