//go:build unix

package files

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/mcp"
)

// mkfifo makes a named pipe at p and reports that it did.
func mkfifo(t *testing.T, p string) bool {
	t.Helper()
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	return true
}

// currentUmask returns the process's umask.
func currentUmask() int {
	umask := syscall.Umask(0o022)
	syscall.Umask(umask)
	return umask
}

// TestSwappedForPipe is the FIFO attack: between the moment a tool checks a
// path and the moment it opens it, the file or directory there is swapped
// for a named pipe. Opening a pipe to read blocks until a writer comes, so
// a tool that opens it blocking, or opens a path again after checking it,
// hangs (edit_file holding the write lock, so that every later write hangs
// too). The swap is made at each of the call's checkpoints in turn (the
// test hook), and every call must return, refusing or reporting the change,
// and leave the pipe alone.
func TestSwappedForPipe(t *testing.T) {
	const (
		notFile    = `path "f" is a named pipe, not a regular file`
		notDir     = `a component of it is a file, not a directory`
		changed    = `file "f" changed while edit_file was working on it`
		unreadable = "skipped 1 entry that could not be read"
	)
	calls := []struct {
		tool    string
		args    map[string]any
		target  string   // the path swapped for a pipe
		wantErr bool     // an isError result
		want    []string // one of these, by checkpoint
	}{
		{"read_file", map[string]any{"path": "f"}, "f", true, []string{notFile}},
		{"edit_file", map[string]any{"path": "f", "old_text": "e", "new_text": "E"}, "f", true, []string{notFile, changed, changed}},
		{"search_files", map[string]any{"pattern": "e", "path": "f"}, "f", false, []string{unreadable}},
		{"search_files", map[string]any{"pattern": "e"}, "f", false, []string{unreadable}},
		{"read_file", map[string]any{"path": "d/g"}, "d", true, []string{notDir}},
		{"edit_file", map[string]any{"path": "d/g", "old_text": "e", "new_text": "E"}, "d", true, []string{notDir}},
		{"write_file", map[string]any{"path": "d/new", "content": "x"}, "d", true, []string{notDir}},
		{"list_directory", map[string]any{"path": "d"}, "d", true, []string{notDir}},
		{"search_files", map[string]any{"pattern": "e", "path": "d"}, "d", true, []string{notDir}},
		{"search_files", map[string]any{"pattern": "e"}, "d", false, []string{unreadable}},
	}
	for _, call := range calls {
		for n := 1; ; n++ {
			w := workspaceWith(t, map[string]string{"f": "e\n", "d/g": "e\n"})
			c := connect(t, Options{Root: w.dir})
			target := filepath.Join(w.dir, call.target)
			hits := 0
			testHookChecked = func(p string) {
				if p != call.target {
					return
				}
				if hits++; hits != n {
					return
				}
				if err := os.Rename(target, target+".moved"); err != nil {
					t.Error(err)
				}
				if err := syscall.Mkfifo(target, 0o644); err != nil {
					t.Error(err)
				}
			}
			res := callOrFree(t, c, call.tool, call.args, target)
			testHookChecked = nil
			if hits < n {
				if n == 1 {
					t.Errorf("%s %v: the hook never saw %q", call.tool, call.args, call.target)
				}
				break // every checkpoint of this call has been tried
			}
			name := call.tool + " at checkpoint " + itoa(n)
			if res != nil {
				if text := resultText(res); res.IsError != call.wantErr || !strings.Contains(text, call.want[min(n, len(call.want))-1]) {
					t.Errorf("%s: got isError=%v %q, want isError=%v and %q", name, res.IsError, text, call.wantErr, call.want[min(n, len(call.want))-1])
				}
			}
			if fi, err := os.Lstat(target); err != nil || fi.Mode().Type() != os.ModeNamedPipe {
				t.Errorf("%s: the pipe was replaced: %v, %v", name, fi, err)
			}
		}
	}
}

// callOrFree calls a tool and returns its result. When the call hangs, it
// opens the pipe at fifo for writing, which frees a reader blocked on it,
// fails the test and returns nil.
func callOrFree(t *testing.T, c *mcp.Client, tool string, args map[string]any, fifo string) *mcp.CallToolResult {
	t.Helper()
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := c.CallTool(t.Context(), tool, args)
		done <- answer{res, err}
	}()
	select {
	case a := <-done:
		if a.err != nil {
			t.Errorf("%s %v: %v", tool, args, a.err)
		}
		return a.res
	case <-time.After(30 * time.Second):
		t.Errorf("%s %v hangs on the pipe swapped in at %s", tool, args, fifo)
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		<-done
		return nil
	}
}
