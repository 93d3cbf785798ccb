package files

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// sparseFile makes name in w a file of size bytes that starts with text and
// holds nothing (a hole) after it, or skips the test where the file system
// refuses so large a file.
func sparseFile(t *testing.T, w *workspace, name, text string, size int64) {
	t.Helper()
	f, err := os.Create(filepath.Join(w.dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Skipf("the file system refuses a sparse file of %s: %v", sizeText(size), err)
	}
}

// headLines is the text at the start of the sparse files: text lines past
// the 8 KB that read_file checks for NUL bytes, so that the file is taken
// for text and its hole is one line of a trillion NUL bytes.
var headLines = strings.Repeat("line\n", 1800)

// TestReadSparse is the sparse-file attack: read_file at a line offset deep
// into a 1 TiB file that is one huge line after its start. It must stop at
// the scan budget with a result that says what can be read, not read on
// for minutes.
func TestReadSparse(t *testing.T) {
	w := workspaceWith(t, nil)
	sparseFile(t, w, "huge", headLines, 1<<40)
	c := connect(t, Options{Root: w.dir})
	tests := []struct {
		offset  int
		wantErr bool
		want    string
	}{
		{1_000_000, true, `file "huge" (1.0 TiB): read_file reads at most 64.0 MiB of a file per call, and line 1801 goes on past that, so line 1000000 cannot be reached; read from offset 1801 or before`},
		{1802, true, "so line 1802 cannot be reached; read from offset 1801 or before"},
		{1801, false, "[line 1801 goes on past the 64.0 MiB that read_file reads per call; only its start is shown, and read_file cannot reach the lines after it]"},
		{1795, false, `[lines 1795-1800 of "huge" (1.0 TiB) shown; read_file stopped at the 64.0 MiB it reads per call: read_file with offset 1801 reads on]`},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.offset), func(t *testing.T) {
			res, err := c.CallTool(t.Context(), "read_file", map[string]any{"path": "huge", "offset": tt.offset})
			if err != nil {
				t.Fatal(err)
			}
			if got := resultText(res); res.IsError != tt.wantErr || !strings.Contains(got, tt.want) {
				t.Errorf("read_file at offset %d: got isError=%v %.300q, want isError=%v and %q", tt.offset, res.IsError, got, tt.wantErr, tt.want)
			}
		})
	}
}

// countdown is a context that is cancelled by the n-th look at Err, so that
// a test can tell that a loop looks at its context as it goes, not only
// before it starts.
type countdown struct {
	context.Context
	cancel context.CancelFunc
	left   atomic.Int64
}

func newCountdown(t *testing.T, n int64) *countdown {
	ctx, cancel := context.WithCancel(t.Context())
	c := &countdown{Context: ctx, cancel: cancel}
	c.left.Store(n)
	return c
}

func (c *countdown) Err() error {
	if c.left.Add(-1) < 0 {
		c.cancel()
	}
	return c.Context.Err()
}

// TestReadCancelled checks that a read deep into a huge file, with no
// budget to stop it, ends when its call is cancelled.
func TestReadCancelled(t *testing.T) {
	w := workspaceWith(t, nil)
	sparseFile(t, w, "huge", headLines, 1<<40)
	w.scanBudget = math.MaxInt64
	ctx := newCountdown(t, 100)
	_, err := w.read(ctx, "huge", 1_000_000, 10)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("read of a cancelled call: got %v, want %v", err, context.Canceled)
	}
}

// TestSearchBudget checks that a search stops once it has read its budget
// of file contents, over the whole walk, and says so; that it skips a huge
// sparse file without reading it; and that it ends when cancelled.
func TestSearchBudget(t *testing.T) {
	files := map[string]string{}
	for i := range 20 {
		files[fmt.Sprintf("f%02d.txt", i)] = strings.Repeat("text line\n", 1000) // 10,000 bytes
	}
	w := workspaceWith(t, files)
	sparseFile(t, w, "huge.txt", headLines, 1<<40)
	q := query{re: mustCompile(t, "nothing like this"), base: ".", contents: true}

	f, err := w.search(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	if f.files != 20 || f.large != 1 || f.spent {
		t.Errorf("search with the whole budget: %d files searched, %d large, spent %v; want 20, 1 and not spent", f.files, f.large, f.spent)
	}

	w.scanBudget = 55_000
	f, err = w.search(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	if f.files != 5 || !f.spent {
		t.Errorf("search with a budget of 5.5 files: %d files searched, spent %v; want 5 and spent", f.files, f.spent)
	}
	want := "[stopped after reading 53.7 KiB of file contents, the most one search reads; search a smaller directory or give a glob to cover the rest]"
	if out := formatFound("nothing like this", f); !strings.Contains(out, want) {
		t.Errorf("result:\n%s\nwant it to contain %q", out, want)
	}

	w.scanBudget = math.MaxInt64
	if _, err := w.search(newCountdown(t, 3), q); !errors.Is(err, context.Canceled) {
		t.Errorf("search of a cancelled call: got %v, want %v", err, context.Canceled)
	}
}
