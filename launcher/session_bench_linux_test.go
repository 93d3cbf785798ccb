package launcher

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/dirs"
	"github.com/mcpgen/mcpgen/manifest"
)

// BenchmarkSessionServers is a session's start and stop of its servers in
// each containment mode: the session sets up its containment and record,
// starts 8 test servers, waits until every one is ready, then stops them
// all and closes what it holds. ns/server is the cost of one server's life
// in it, without the time it takes to answer.
func BenchmarkSessionServers(b *testing.B) {
	const n = 8
	for _, mode := range []proc.Mode{proc.ModeGroups, proc.ModeSubreaper, proc.ModeCgroup} {
		b.Run(mode.String(), func(b *testing.B) {
			c, err := proc.Setup(context.Background(), proc.Options{Name: "probe", Mode: mode})
			if err != nil {
				b.Skipf("%s containment unavailable: %v", mode, err)
			}
			c.Close(context.Background())
			rt, err := os.MkdirTemp("", "mcpgen-rt")
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { os.RemoveAll(rt) })
			b.Setenv(dirs.EnvRuntimeDir, rt)
			b.Setenv(dirs.EnvStateDir, b.TempDir())
			var m strings.Builder
			for i := range n {
				m.WriteString(testServerTOML(b, "s"+string(rune('a'+i)), "echo"))
			}
			path := filepath.Join(b.TempDir(), "mcpgen.toml")
			if err := os.WriteFile(path, []byte(m.String()), 0o644); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				s := NewSession(Options{
					Workspace:   "bench",
					Load:        func() (*manifest.Manifest, error) { return manifest.Load(path) },
					Self:        self(b),
					Env:         append(os.Environ(), "GORACE=atexit_sleep_ms=0"),
					Containment: mode,
				})
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- s.Run(ctx) }() // ends at cancel
				for deadline := time.Now().Add(waitLong); ; time.Sleep(time.Millisecond) {
					ready := 0
					for _, srv := range s.Status().Servers {
						if srv.State == ctl.Ready {
							ready++
						}
					}
					if ready == n {
						break
					}
					if time.Now().After(deadline) {
						b.Fatalf("%d of %d servers ready", ready, n)
					}
				}
				cancel()
				if err := <-done; err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/server")
		})
	}
}
