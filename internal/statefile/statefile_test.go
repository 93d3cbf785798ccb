package statefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenRegular: a regular file opens, to read, append or write; one
// that is not there is created with O_CREATE, with perm (on Unix).
func TestOpenRegular(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	f, err := OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("one\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	f, err = OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("two\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got, err := ReadFile(path, 8)
	if err != nil || string(got) != "one\ntwo\n" {
		t.Errorf("ReadFile: got %q, %v; want %q", got, err, "one\ntwo\n")
	}
	if _, err := ReadFile(path, 7); err == nil || !strings.Contains(err.Error(), "more than 7 bytes") {
		t.Errorf("ReadFile beyond its bound: got %v, want an error that says so", err)
	}
	if _, err := Open(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open of nothing: got %v, want fs.ErrNotExist", err)
	}
	if _, err := OpenFile(path, os.O_RDWR|os.O_TRUNC, 0); err == nil {
		t.Error("OpenFile with O_TRUNC: got no error, want one (not supported)")
	}
}

// TestOpenRefused: what is not a regular file is refused, by type, for
// every way of opening it.
func TestOpenRefused(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	tests := []struct {
		name, path, kind string
	}{
		{"a link to a regular file", link, "a symlink"},
		{"a directory", dir, "a directory"},
	}
	for _, tt := range tests {
		for _, flag := range []int{os.O_RDONLY, os.O_RDWR | os.O_CREATE, os.O_WRONLY | os.O_APPEND | os.O_CREATE} {
			f, err := OpenFile(tt.path, flag, 0o600)
			var ke *KindError
			if !errors.As(err, &ke) || !strings.Contains(err.Error(), tt.kind) {
				if f != nil {
					f.Close()
				}
				t.Errorf("%s, flag %#x: got %v, want a *KindError that says %q", tt.name, flag, err, tt.kind)
			}
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "x" {
		t.Errorf("the link's target: got %q, want it untouched", b)
	}
}
