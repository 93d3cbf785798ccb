package files

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcpgen/mcpgen/mcp"
)

// serveEnv, when set, makes the test binary a files server on its stdin and
// stdout for the workspace it names, so that tests can run several real
// server processes on one workspace, as two agents do.
const serveEnv = "MCPGEN_FILES_TEST_SERVE"

func TestMain(m *testing.M) {
	if dir := os.Getenv(serveEnv); dir != "" {
		s, err := New(Options{Root: dir, Version: "test"})
		if err == nil {
			err = s.Serve(context.Background(), os.Stdin, os.Stdout)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serverProcess starts the test binary as a files server on dir and returns
// a client of it. Cleanup closes its stdin, which ends it, and waits for it.
func serverProcess(t *testing.T, dir string) *mcp.Client {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), serveEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := mcp.NewClient(ctx, stdout, stdin, mcp.ClientOptions{Timeout: -1})
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("server process %d: %v", cmd.Process.Pid, err)
		}
		cancel()
		<-c.Done()
	})
	if _, err := c.Initialize(ctx); err != nil {
		cmd.Process.Kill()
		t.Fatal(err)
	}
	return c
}

// TestEditsAcrossProcesses is the two-agents attack: two server processes
// on one workspace, with no launcher between them, edit one file from many
// concurrent calls. Every edit answered OK must be in the file; an edit may
// only fail by saying that the file changed and must be read again.
func TestEditsAcrossProcesses(t *testing.T) {
	const edits = 200
	var content strings.Builder
	for i := range edits {
		fmt.Fprintf(&content, "slot %03d\n", i)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "shared.txt")
	if err := os.WriteFile(file, []byte(content.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	servers := []*mcp.Client{serverProcess(t, dir), serverProcess(t, dir)}

	ok := make([]bool, edits)
	var wg sync.WaitGroup
	for i := range edits {
		wg.Go(func() {
			res, err := servers[i%2].CallTool(context.Background(), "edit_file", map[string]any{
				"path": "shared.txt", "old_text": fmt.Sprintf("slot %03d", i), "new_text": fmt.Sprintf("done %03d", i),
			})
			switch {
			case err != nil:
				t.Errorf("edit %d: %v", i, err)
			case !res.IsError:
				ok[i] = true
			case !strings.Contains(resultText(res), "changed while edit_file"):
				t.Errorf("edit %d failed for another reason than a concurrent change: %s", i, resultText(res))
			}
		})
	}
	wg.Wait()

	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var lost, failed []int
	for i := range edits {
		switch {
		case !ok[i]:
			failed = append(failed, i)
		case !strings.Contains(string(data), fmt.Sprintf("done %03d\n", i)):
			lost = append(lost, i)
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d of %d edits answered OK are not in the file: %v", len(lost), edits-len(failed), lost)
	}
	// With the lock, no edit has to fail: a failure here means that the
	// servers did not wait for each other.
	if len(failed) > 0 {
		t.Errorf("%d edits failed, want none: %v", len(failed), failed)
	}
}
