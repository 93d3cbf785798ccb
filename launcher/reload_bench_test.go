//go:build unix

package launcher

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/dirs"
	"github.com/mcpgen/mcpgen/manifest"
)

// BenchmarkReload measures how long a change of the manifest takes to reach
// the server it changes: from the save to the moment the launcher tells the
// server's old process to stop (closes its stdin, which the test server
// notes in a FIFO). Each save changes the server's environment, so each
// restarts it; the wait for the new process to be ready is not timed.
//
// rename (an editor's save) and configmap (a Kubernetes ConfigMap update)
// replace the manifest whole and are applied at once; inplace (the file
// rewritten in place, which may be read half written) waits for the
// debounce, 200 ms, as every change did before: the reference.
//
//	go test -run '^$' -bench Reload -benchtime 20x ./launcher
func BenchmarkReload(b *testing.B) {
	saves := []struct {
		name string
		save func(b *testing.B, path, data string, i int)
	}{
		{"rename", benchRename},
		{"configmap", benchConfigMap},
		{"inplace", func(b *testing.B, path, data string, _ int) {
			if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
				b.Fatal(err)
			}
		}},
	}
	for _, tt := range saves {
		b.Run(tt.name, func(b *testing.B) {
			rt, err := os.MkdirTemp("", "mcpgen-rt")
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { os.RemoveAll(rt) })
			b.Setenv(dirs.EnvRuntimeDir, rt)
			b.Setenv(dirs.EnvStateDir, b.TempDir())

			// The servers note the end of their stdin here; opened for
			// reading and writing, so that neither side's open waits.
			fifo := filepath.Join(b.TempDir(), "eof")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				b.Fatal(err)
			}
			notes, err := os.OpenFile(fifo, os.O_RDWR, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer notes.Close()
			eof := bufio.NewReader(notes)

			dir := b.TempDir()
			path := filepath.Join(dir, "mcpgen.toml")
			if tt.name == "configmap" {
				benchConfigMap(b, path, "", -1)
			}
			manifestText := func(i int) string {
				return testServerTOML(b, "srv", "echo", "X="+strconv.Itoa(i), "MCPGEN_TESTSERVER_EOF_NOTE="+fifo)
			}
			tt.save(b, path, manifestText(0), 0)
			s := NewSession(Options{
				Workspace: "bench",
				Load:      func() (*manifest.Manifest, error) { return manifest.Load(path) },
				Self:      self(b),
				Env:       append(os.Environ(), "GORACE=atexit_sleep_ms=0"),
				Context:   manifest.ContextOptions{Dir: b.TempDir()},
				Debounce:  200 * time.Millisecond,
			})
			ctx, stop := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- s.Run(ctx) }()
			defer func() {
				stop()
				if err := <-done; err != nil {
					b.Error(err)
				}
			}()

			pid := benchReadyPid(b, s, 0)
			var worst time.Duration
			b.ResetTimer()
			for i := 1; i <= b.N; i++ {
				start := time.Now()
				tt.save(b, path, manifestText(i), i)
				_ = notes.SetReadDeadline(time.Now().Add(waitLong))
				line, err := eof.ReadString('\n')
				took := time.Since(start)
				if err != nil {
					b.Fatalf("save %d: the old process was not told to stop: %v", i, err)
				}
				worst = max(worst, took)
				b.StopTimer()
				if got := strings.TrimSpace(line); got != strconv.Itoa(pid) {
					b.Fatalf("save %d: pid %s was told to stop, want %d", i, got, pid)
				}
				pid = benchReadyPid(b, s, pid)
				b.StartTimer()
			}
			b.ReportMetric(float64(worst.Microseconds())/1000, "max-ms")
		})
	}
}

// benchReadyPid waits until the session's one server is ready in a process
// other than old, and returns its pid.
func benchReadyPid(b *testing.B, s *Session, old int) int {
	b.Helper()
	deadline := time.Now().Add(waitLong)
	for time.Now().Before(deadline) {
		select {
		case <-s.Up():
			if st := s.Status(); len(st.Servers) == 1 && st.Servers[0].State == ctl.Ready && st.Servers[0].Pid != old {
				return st.Servers[0].Pid
			}
		default:
		}
		time.Sleep(time.Millisecond)
	}
	b.Fatalf("the server was not ready in a new process within %s: %s", waitLong, dumpStatus(s.Status()))
	return 0
}

// benchRename saves as editors do: a new file renamed over the manifest.
func benchRename(b *testing.B, path, data string, i int) {
	tmp := fmt.Sprintf("%s.%d.tmp", path, i)
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		b.Fatal(err)
	}
}

// benchConfigMap saves as the kubelet updates a ConfigMap volume: path ->
// ..data/NAME, ..data -> ..N; a new ..N+1, a link to it renamed over
// ..data, the old directory removed. i < 0 makes path the link.
func benchConfigMap(b *testing.B, path, data string, i int) {
	dir, name := filepath.Split(path)
	if i < 0 {
		if err := os.Symlink(filepath.Join("..data", name), path); err != nil {
			b.Fatal(err)
		}
		return
	}
	ts := fmt.Sprintf("..%d", i)
	if err := os.MkdirAll(filepath.Join(dir, ts), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ts, name), []byte(data), 0o644); err != nil {
		b.Fatal(err)
	}
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(ts, tmp); err != nil {
		b.Fatal(err)
	}
	old, _ := os.Readlink(filepath.Join(dir, "..data"))
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		b.Fatal(err)
	}
	if old != "" {
		os.RemoveAll(filepath.Join(dir, old))
	}
}
