package logfile

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestLogRotate(t *testing.T) {
	tests := []struct {
		name   string
		max    int64
		keep   int
		before string // the file's content before OpenLog
		writes []string
		want   map[string]string // by suffix ("" is the log itself)
		absent []string          // suffixes that must not exist
	}{
		{
			name:   "under the cap",
			max:    10,
			keep:   2,
			writes: []string{"aaaa\n", "bbbb\n"},
			want:   map[string]string{"": "aaaa\nbbbb\n"},
			absent: []string{".1"},
		},
		{
			name:   "the oldest is dropped",
			max:    10,
			keep:   2,
			writes: []string{"aaaa\n", "bbbb\n", "cccc\n", "dddd\n", "eeee\n", "ffff\n", "gggg\n"},
			want:   map[string]string{"": "gggg\n", ".1": "eeee\nffff\n", ".2": "cccc\ndddd\n"},
			absent: []string{".3"},
		},
		{
			name:   "a write over the cap is not split",
			max:    10,
			keep:   2,
			writes: []string{"gggg\n", "0123456789ABCDEF\n", "h\n"},
			want:   map[string]string{"": "h\n", ".1": "0123456789ABCDEF\n", ".2": "gggg\n"},
		},
		{
			name:   "an existing file counts",
			max:    10,
			keep:   1,
			before: "old-old\n",
			writes: []string{"new\n"},
			want:   map[string]string{"": "new\n", ".1": "old-old\n"},
			absent: []string{".2"},
		},
		{
			name:   "keep 0",
			max:    10,
			keep:   0,
			writes: []string{"aaaa\n", "bbbb\n", "cccc\n"},
			want:   map[string]string{"": "cccc\n"},
			absent: []string{".1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "server.log")
			if tt.before != "" {
				if err := os.WriteFile(path, []byte(tt.before), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			l, err := Open(path, tt.max, tt.keep)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.writes {
				if n, err := l.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			for suffix, want := range tt.want {
				if got := fileText(t, path+suffix); got != want {
					t.Errorf("server.log%s holds %q, want %q", suffix, got, want)
				}
				fi, err := os.Stat(path + suffix)
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != 0o600 {
					t.Errorf("server.log%s: mode %v, want 0600", suffix, fi.Mode().Perm())
				}
			}
			for _, suffix := range tt.absent {
				if _, err := os.Stat(path + suffix); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("server.log%s: %v, want it absent", suffix, err)
				}
			}
		})
	}
}

// TestLogConcurrent writes lines from many goroutines through rotations:
// every line arrives whole, once, and no file passes the cap.
func TestLogConcurrent(t *testing.T) {
	const writers, lines = 8, 200
	path := filepath.Join(t.TempDir(), "server.log")
	const max = 1000
	l, err := Open(path, max, 100) // keeps everything
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	var wg sync.WaitGroup
	for w := range writers {
		for i := range lines {
			want = append(want, fmt.Sprintf("writer %d line %03d", w, i))
		}
		wg.Go(func() {
			for i := range lines {
				l.Write(fmt.Appendf(nil, "writer %d line %03d\n", w, i))
			}
		})
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	var got []string
	files, err := filepath.Glob(path + "*")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Errorf("%d files, want rotations: %v", len(files), files)
	}
	for _, f := range files {
		text := fileText(t, f)
		if len(text) > max {
			t.Errorf("%s: %d bytes, over the cap of %d", f, len(text), max)
		}
		got = append(got, strings.Split(strings.TrimSuffix(text, "\n"), "\n")...)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("got %d lines, want %d; first differences:\n%s", len(got), len(want), firstDiffs(got, want))
	}
}

func firstDiffs(got, want []string) string {
	var b strings.Builder
	for i := 0; i < max(len(got), len(want)) && b.Len() < 500; i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			fmt.Fprintf(&b, "-%q\n+%q\n", w, g)
		}
	}
	return b.String()
}

var stamped = `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d) mcpgen: `

func TestLogf(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.log")
	// A launcher that died left half a line.
	if err := os.WriteFile(path, []byte("half a line"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Open(path, DefaultMaxBytes, DefaultKeep)
	if err != nil {
		t.Fatal(err)
	}
	l.Logf("starting %s (attempt %d)", "git", 1)
	l.Write([]byte("a server line\nand half"))
	l.Logf("stopped\n")
	l.Write([]byte("whole\n"))
	l.Logf("done")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`^half a line\n` +
		stamped + `starting git \(attempt 1\)\n` +
		`a server line\nand half\n` +
		stamped + `stopped\n` +
		`whole\n` +
		stamped + `done\n$`)
	if got := fileText(t, path); !want.MatchString(got) {
		t.Errorf("log holds\n%s\nwant it to match\n%s", got, want)
	}
}

func TestLogPipe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.log")
	l, err := Open(path, DefaultMaxBytes, DefaultKeep)
	if err != nil {
		t.Fatal(err)
	}
	w, err := l.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `echo "to stderr" >&2; echo "from a grandchild" | cat >&2`)
	cmd.Stderr = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	// Close waits for the copy to reach the end of the pipe: the child is
	// gone, so it does, well within the drain.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := fileText(t, path), "to stderr\nfrom a grandchild\n"; got != want {
		t.Errorf("log holds %q, want %q", got, want)
	}
	if _, err := l.Write([]byte("late\n")); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Write after Close: %v, want os.ErrClosed", err)
	}
	if w, err := l.Pipe(); !errors.Is(err, os.ErrClosed) {
		if w != nil {
			w.Close()
		}
		t.Errorf("Pipe after Close: %v, want os.ErrClosed", err)
	}
}

// BenchmarkLogWrite is the path of every chunk a server writes to stderr,
// rotations included.
func BenchmarkLogWrite(b *testing.B) {
	l, err := Open(filepath.Join(b.TempDir(), "server.log"), 1<<20, 2)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	line := []byte(strings.Repeat("x", 99) + "\n")
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if _, err := l.Write(line); err != nil {
			b.Fatal(err)
		}
	}
}

func fileText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
