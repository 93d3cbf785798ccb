//go:build unix

package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLoadRefusesPipe: a named pipe where the manifest should be is
// refused at once, with what it is, instead of blocking the reader (emit,
// a launcher's reload) until some writer comes, for good. A link to a
// regular file is still a manifest, as a ConfigMap's is.
func TestLoadRefusesPipe(t *testing.T) {
	dir := t.TempDir()
	pipe := filepath.Join(dir, "mcpgen.toml")
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Load(pipe)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "is a named pipe, not a regular file") {
			t.Errorf("Load of a named pipe: got %v, want it refused as a named pipe", err)
		}
	case <-time.After(30 * time.Second): // a hang guard, not a timing check
		// Free the blocked open, so that the test ends.
		if f, err := os.OpenFile(pipe, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("Load of a named pipe blocked")
	}

	real := filepath.Join(dir, "real.toml")
	if err := os.WriteFile(real, []byte("[servers.files]\nbuiltin = \"files\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.toml")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(link); err != nil {
		t.Errorf("Load of a link to a manifest: %v", err)
	}
}

// TestLoadBounded: a file beyond MaxFileSize is refused, read no further.
func TestLoadBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxFileSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("Load of a file beyond MaxFileSize: got %v", err)
	}
}
