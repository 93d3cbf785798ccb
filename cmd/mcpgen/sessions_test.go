package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDrawFrame: the live table is drawn over the last frame, from the top
// left, each line clearing the rest of the one it replaces, then the rest
// of the screen; never a full clear, which flickers, and never more lines
// or columns than the terminal has, which would scroll it.
func TestDrawFrame(t *testing.T) {
	lines := []string{"SERVER  STATE", "files   ready", "git     ready", "", "Ctrl-C stops"}
	tests := []struct {
		name       string
		lines      []string
		cols, rows int
		want       string
	}{
		{"fits", lines, 80, 24,
			"\x1b[HSERVER  STATE\x1b[K\r\nfiles   ready\x1b[K\r\ngit     ready\x1b[K\r\n\x1b[K\r\nCtrl-C stops\x1b[K\x1b[J"},
		{"unknown size", lines[:2], 0, 0,
			"\x1b[HSERVER  STATE\x1b[K\r\nfiles   ready\x1b[K\x1b[J"},
		{"too many lines", lines, 80, 3,
			"\x1b[HSERVER  STATE\x1b[K\r\nfiles   ready\x1b[K\r\n... 3 more lines: see mcpgen status\x1b[K\x1b[J"},
		{"exactly the height", lines[:3], 80, 3,
			"\x1b[HSERVER  STATE\x1b[K\r\nfiles   ready\x1b[K\r\ngit     ready\x1b[K\x1b[J"},
		{"too wide", lines[:2], 6, 24,
			"\x1b[HSERVER\x1b[K\r\nfiles \x1b[K\x1b[J"},
		{"wide, not ASCII", []string{"dir /tmp/été/x"}, 11, 24,
			"\x1b[Hdir /tmp/ét\x1b[K\x1b[J"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(drawFrame(nil, tt.lines, tt.cols, tt.rows))
			if got != tt.want {
				t.Errorf("drawFrame:\ngot  %q\nwant %q", got, tt.want)
			}
			if strings.Contains(got, "\x1b[2J") {
				t.Errorf("drawFrame clears the whole screen: %q", got)
			}
		})
	}
}

// stamp is how the launcher stamps a line of a server's log, at minute m
// of a fixed hour.
func stamp(m int) string {
	return time.Date(2025, 6, 1, 10, m, 0, 0, time.UTC).Format("2006-01-02T15:04:05.000Z07:00")
}

// TestMergeLogs: the logs of every server as one, line by line in the order
// of their times, each line with its server's name; a line without a stamp
// (an older log) goes with the line before it, and a last line that has no
// newline yet is printed too.
func TestMergeLogs(t *testing.T) {
	dir := t.TempDir()
	logs := map[string]string{
		"files":  filepath.Join(dir, "files.log"),
		"memory": filepath.Join(dir, "memory.log"),
		"empty":  filepath.Join(dir, "empty.log"),
	}
	writeTestFile(t, logs["files"], "--- started pid 1 at "+stamp(1)+" ---\n"+stamp(3)+" files three\nno stamp\n"+stamp(5)+" files five, half")
	writeTestFile(t, logs["memory"], "old, before stamps\n"+stamp(2)+" memory two\n"+stamp(4)+" memory four\n--- pid 2: killed by SIGKILL at "+stamp(6)+" ---\n")
	writeTestFile(t, logs["empty"], "")
	var out bytes.Buffer
	if err := mergeLogs(context.Background(), &out, logs, nil, false, false); err != nil {
		t.Fatal(err)
	}
	want := "memory | old, before stamps\n" +
		"files  | --- started pid 1 at " + stamp(1) + " ---\n" +
		"memory | " + stamp(2) + " memory two\n" +
		"files  | " + stamp(3) + " files three\n" +
		"files  | no stamp\n" +
		"memory | " + stamp(4) + " memory four\n" +
		"files  | " + stamp(5) + " files five, half\n" +
		"memory | --- pid 2: killed by SIGKILL at " + stamp(6) + " ---\n"
	if out.String() != want {
		t.Errorf("merged:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestMergeLogsFollow: with follow, what the servers write later is
// printed as it comes, the end of a line written in two parts once it is
// whole, the log of a server that appears included, and a rotated log
// followed into its new file.
func TestMergeLogsFollow(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.log")
	writeTestFile(t, a, stamp(1)+" a one\n")
	logs := map[string]string{"a": a}
	var mu sync.Mutex
	listed := map[string]string{"a": a}
	list := func() (map[string]string, error) {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]string{}
		for k, v := range listed {
			out[k] = v
		}
		return out, nil
	}
	out := &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mergeLogs(ctx, out, logs, list, true, false) }() // ends with cancel
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("mergeLogs: %v", err)
		}
	}()
	waitFor(t, out, "a | "+stamp(1)+" a one\n")

	appendTestFile(t, a, stamp(2)+" a two, in ")
	appendTestFile(t, a, "two parts\n")
	waitFor(t, out, "a | "+stamp(2)+" a two, in two parts\n")

	b := filepath.Join(dir, "b.log")
	writeTestFile(t, b, stamp(3)+" b three\n")
	mu.Lock()
	listed["b"] = b
	mu.Unlock()
	waitFor(t, out, "b | "+stamp(3)+" b three\n")

	// Rotated: a.log becomes a.log.1, and a new a.log begins.
	appendTestFile(t, a, stamp(4)+" a four, the last of the old file\n")
	if err := os.Rename(a, a+".1"); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, a, stamp(5)+" a five, in the new file\n")
	waitFor(t, out, "a | "+stamp(5)+" a five, in the new file\n")
	if !strings.Contains(out.String(), "a | "+stamp(4)+" a four, the last of the old file\n") {
		t.Errorf("the end of the rotated file is lost:\n%s", out.String())
	}
	if strings.Count(out.String(), "a one") != 1 {
		t.Errorf("a line printed twice:\n%s", out.String())
	}
}

// TestCompleteServe: server names complete from the manifest when no
// session runs, through cobra's own __complete.
func TestCompleteServe(t *testing.T) {
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "mcpgen.toml"), "[servers.files]\nbuiltin = \"files\"\n\n[servers.memory]\ncommand = \"npx\"\n")
	t.Setenv("MCPGEN_RUNTIME_DIR", filepath.Join(dir, "run"))
	t.Setenv("MCPGEN_STATE_DIR", filepath.Join(dir, "state"))
	t.Setenv("MCPGEN_WORKSPACE", "")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"__complete", "serve", ""}, "files\tbuiltin\nmemory\tcommand\n:4\n"},
		{[]string{"__complete", "connect", "--workspace", "ws", ""}, "files\tbuiltin\nmemory\tcommand\n:4\n"},
		{[]string{"__complete", "restart", ""}, "files\tbuiltin\nmemory\tcommand\n:4\n"},
		{[]string{"__complete", "logs", "--workspace", "ws", ""}, "files\tbuiltin\nmemory\tcommand\n:4\n"},
		{[]string{"__complete", "status", "--workspace", ""}, ":4\n"},
		{[]string{"__complete", "launch", "--log-format", ""}, "text\njson\n:4\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[1:], " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			t.Chdir(dir) // the manifest is ./mcpgen.toml
			run(tt.args, strings.NewReader(""), &stdout, &stderr)
			if stdout.String() != tt.want {
				t.Errorf("mcpgen %s:\ngot  %q\nwant %q\nstderr: %s", strings.Join(tt.args, " "), stdout.String(), tt.want, stderr.String())
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "run")); !os.IsNotExist(err) {
		t.Errorf("completion created the runtime dir: %v", err)
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func appendTestFile(t *testing.T, path, content string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
}

// lockedBuffer is a buffer that a goroutine writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor waits until out ends with want: a hang guard, not a timing check.
func waitFor(t *testing.T, out *lockedBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.HasSuffix(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("waited for %q; got:\n%s", want, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
