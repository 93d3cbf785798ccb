//go:build unix

package dirs

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

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

func mkdirMode(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}
