//go:build unix

package statefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOpenFIFO: a named pipe is refused at once, for every way of opening
// it, rather than block until a writer (or a reader) comes.
func TestOpenFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalog.json")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []int{os.O_RDONLY, os.O_RDWR | os.O_CREATE, os.O_WRONLY | os.O_APPEND | os.O_CREATE} {
		done := make(chan error, 1)
		go func() {
			f, err := OpenFile(path, flag, 0o600)
			if err == nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			var ke *KindError
			if !errors.As(err, &ke) || !strings.Contains(err.Error(), "a named pipe, not a regular file") {
				t.Errorf("flag %#x: got %v, want a *KindError that names the pipe", flag, err)
			}
		case <-time.After(20 * time.Second): // a hang guard
			// Let the blocked open go, so that the test ends.
			if f, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
				f.Close()
			}
			t.Fatalf("flag %#x: the open of a named pipe blocked", flag)
		}
	}
	if _, err := ReadFile(path, 1<<20); err == nil {
		t.Error("ReadFile of a named pipe: got no error, want one")
	}
}
