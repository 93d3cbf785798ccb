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
	"time"
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

// stampRE matches the stamp of a line, and masked replaces each with "T".
var stampRE = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d)`)

func masked(s string) string { return stampRE.ReplaceAllString(s, "T") }

// TestStream writes one process's output in chunks, with the launcher's
// marks and other streams in between: every line is stamped once, a
// partial line is written at once and finished by its stream, and a line
// that another writer interrupted goes on in a line of its own.
func TestStream(t *testing.T) {
	long := strings.Repeat("x", MaxLine)
	// op: "a:TEXT" and "b:TEXT" write through two streams, "h:TEXT"
	// through a held one that "begin:TEXT" begins, "mark:TEXT" is a Mark,
	// "raw:TEXT" a plain Write.
	tests := []struct {
		name   string
		before string // the file's content before Open
		ops    []string
		want   string // with stamps masked as T
	}{
		{"whole lines", "", []string{"a:one\ntwo\n"}, "T one\nT two\n"},
		{"a line in pieces", "", []string{"a:on", "a:e\ntw", "a:o\n"}, "T one\nT two\n"},
		{"blank lines", "", []string{"a:\n\nx\n"}, "T \nT \nT x\n"},
		{"half a line, then a mark", "", []string{"a:Listening on", "mark:stopped pid 1"}, "T Listening on\n--- stopped pid 1 at T ---\n"},
		{"a mark between the halves", "", []string{"a:half", "mark:m", "a: rest\n"}, "T half\n--- m at T ---\nT  rest\n"},
		{"two streams", "", []string{"a:from a", "b:from b\n", "a: again\n"}, "T from a\nT from b\nT  again\n"},
		{"a stream after a raw write", "", []string{"raw:raw", "a:x\n"}, "raw\nT x\n"},
		{"what a dead launcher left", "half a line", []string{"a:x\n"}, "half a line\nT x\n"},
		{"a long line is cut", "", []string{"a:" + long + "yz\n"}, "T " + long + "\nT yz\n"},
		{"a line of exactly the bound", "", []string{"a:" + long + "\n"}, "T " + long + "\n"},
		{"a long line in pieces", "", []string{"a:" + long[:10], "a:" + long[10:], "a:yz\n"}, "T " + long + "\nT yz\n"},
		{"no newline ever", "", []string{"a:" + long, "a:" + long, "a:z"}, "T " + long + "\nT " + long + "\nT z"},
		{"carriage returns stay", "", []string{"a:10%\r20%\r", "a:done\n"}, "T 10%\r20%\rdone\n"},
		{"a mark of several lines", "", []string{"mark:a\nb\n"}, "--- a; b at T ---\n"},
		{"held until Begin", "", []string{"h:banner\nhal", "a:other\n", "begin:started pid 7", "h:f\n"}, "T other\n--- started pid 7 at T ---\nT banner\nT half\n"},
		{"Begin with nothing held", "", []string{"begin:started pid 7", "h:x\n"}, "--- started pid 7 at T ---\nT x\n"},
		{"too much held", "", []string{"h:" + strings.Repeat(long+"\n", 4), "h:y\n", "begin:late"}, strings.Repeat("T "+long+"\n", 4) + "T y\n--- late at T ---\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "server.log")
			if tt.before != "" {
				if err := os.WriteFile(path, []byte(tt.before), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			l, err := Open(path, DefaultMaxBytes, DefaultKeep)
			if err != nil {
				t.Fatal(err)
			}
			streams := map[string]*Stream{"a": l.Stream(), "b": l.Stream(), "h": l.HeldStream()}
			for _, op := range tt.ops {
				kind, text, _ := strings.Cut(op, ":")
				switch kind {
				case "begin":
					streams["h"].Begin("%s", text)
				case "a", "b", "h":
					s := streams[kind]
					if n, err := s.Write([]byte(text)); n != len(text) || err != nil {
						t.Fatalf("Write(%q) = %d, %v", text, n, err)
					}
				case "mark":
					l.Mark("%s", text)
				case "raw":
					l.Write([]byte(text))
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if got := masked(fileText(t, path)); got != tt.want {
				t.Errorf("log holds\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// TestStreamRotation: a stream's line that a rotation interrupts starts
// the new file with a stamp, and no file passes the cap.
func TestStreamRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.log")
	const max = 100
	l, err := Open(path, max, 2)
	if err != nil {
		t.Fatal(err)
	}
	s := l.Stream()
	s.Write([]byte(strings.Repeat("a", 50)))
	s.Write([]byte(strings.Repeat("b", 50) + "\n"))
	l.Close()
	for _, suffix := range []string{"", ".1"} {
		text := fileText(t, path+suffix)
		if len(text) > max {
			t.Errorf("server.log%s: %d bytes, over the cap of %d", suffix, len(text), max)
		}
		if !stampRE.MatchString(text) || stampRE.FindStringIndex(text)[0] != 0 {
			t.Errorf("server.log%s does not start with a stamp: %q", suffix, text)
		}
	}
	if got, want := masked(fileText(t, path)), "T "+strings.Repeat("b", 50)+"\n"; got != want {
		t.Errorf("server.log holds %q, want %q", got, want)
	}
}

// TestStreamClosed: a stream into a closed log drops what it is given, and
// says it wrote it, so that the pipe it copies from drains on.
func TestStreamClosed(t *testing.T) {
	l, err := Open(filepath.Join(t.TempDir(), "server.log"), DefaultMaxBytes, DefaultKeep)
	if err != nil {
		t.Fatal(err)
	}
	s := l.Stream()
	l.Close()
	if n, err := s.Write([]byte("late\n")); n != 5 || err != nil {
		t.Errorf("Write after Close = %d, %v; want 5, nil", n, err)
	}
}

func TestLineTime(t *testing.T) {
	at := time.Date(2025, 6, 1, 10, 20, 30, 456e6, time.FixedZone("", 2*3600))
	stamp := at.Format(TimeFormat)
	tests := []struct {
		line string
		want time.Time
		ok   bool
	}{
		{stamp + " hello", at, true},
		{stamp + " ", at, true},
		{"--- started pid 12 (restart 3) at " + stamp + " ---", at, true},
		{"--- started pid 12 at " + stamp + " ---\n", at, true},
		{"--- at at " + stamp + " ---", at, true},
		{"hello", time.Time{}, false},
		{"2025 was a year", time.Time{}, false},
		{"--- no time ---", time.Time{}, false},
		{"--- started at " + stamp, time.Time{}, false},
		{"", time.Time{}, false},
	}
	for _, tt := range tests {
		got, ok := LineTime([]byte(tt.line))
		if ok != tt.ok || !got.Equal(tt.want) {
			t.Errorf("LineTime(%q) = %v, %v; want %v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
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
	if got, want := masked(fileText(t, path)), "T to stderr\nT from a grandchild\n"; got != want {
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

// BenchmarkStreamWrite is the same path with each line stamped: what the
// launcher does with a server's stderr.
func BenchmarkStreamWrite(b *testing.B) {
	l, err := Open(filepath.Join(b.TempDir(), "server.log"), 1<<20, 2)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	s := l.Stream()
	line := []byte(strings.Repeat("x", 99) + "\n")
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		s.Write(line)
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
