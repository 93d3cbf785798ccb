//go:build unix

package launcher

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/dirs"
	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/mcp"
)

// BenchmarkFirstCall compares the first call to an idle lazy server through
// its launcher with the same server started alone. Each iteration does
// both, one after the other (in alternating order, so that neither always
// runs on a machine warmed up by the other):
//
//   - alone: spawn the server, initialize it, list its tools (what the
//     launcher does before it calls it ready), call a tool; spawn to answer.
//   - launcher: a client connected to an idle lazy server (answered from its
//     catalog: nothing runs) calls the tool; call to answer. The server is
//     then stopped for idleness (idle_timeout), untimed.
//
// The metrics are milliseconds per call, the mean of each, and extra-ms,
// the launcher's mean minus the server's.
//
//	go test -run '^$' -bench FirstCall -benchtime 30x ./launcher
func BenchmarkFirstCall(b *testing.B) {
	rt, err := os.MkdirTemp("", "mcpgen-rt")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(rt) })
	b.Setenv(dirs.EnvRuntimeDir, rt)
	b.Setenv(dirs.EnvStateDir, b.TempDir())
	path := filepath.Join(b.TempDir(), "mcpgen.toml")
	writeFile(b, path, lazyTOML(b, "srv", true, "5ms", "MCPGEN_TESTSERVER_TOOLS=echo,pid"))
	s := NewSession(Options{
		Workspace: "bench",
		Load:      func() (*manifest.Manifest, error) { return manifest.Load(path) },
		Self:      self(b),
		Env:       append(os.Environ(), "GORACE=atexit_sleep_ms=0"),
		Context:   manifest.ContextOptions{Dir: b.TempDir()},
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
	<-s.Up()

	// A first start, untimed, keeps the catalog: from then on, clients are
	// answered from it while the server is idle.
	benchIdle(b, s)
	c := benchConnect(b)
	c.Call("0", "echo", `{"text":"warm"}`)
	testserver.ResultText(b, c.Next())
	c.Close()
	benchIdle(b, s)

	spec := testserver.Spec(b, "echo", "MCPGEN_TESTSERVER_TOOLS=echo,pid", "GORACE=atexit_sleep_ms=0")
	var alone, through []time.Duration
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			alone = append(alone, benchAlone(b, spec))
			through = append(through, benchThrough(b, s))
		} else {
			through = append(through, benchThrough(b, s))
			alone = append(alone, benchAlone(b, spec))
		}
	}
	b.StopTimer()
	ma, mt := mean(alone), mean(through)
	b.ReportMetric(ms(ma), "alone-ms")
	b.ReportMetric(ms(mt), "launcher-ms")
	b.ReportMetric(ms(mt-ma), "extra-ms")
	b.ReportMetric(ms(median(through)-median(alone)), "extra-median-ms")
}

// benchAlone starts the server alone and calls it once; spawn to answer.
func benchAlone(b *testing.B, spec *proc.Spec) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	sp := *spec
	start := time.Now()
	p, err := proc.Start(&sp)
	if err != nil {
		b.Fatal(err)
	}
	c := mcp.NewClient(ctx, p.Stdout(), p.Stdin(), mcp.ClientOptions{})
	if _, err := c.Initialize(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := c.ListTools(ctx); err != nil {
		b.Fatal(err)
	}
	r, err := c.CallTool(ctx, "echo", map[string]any{"text": "hi"})
	took := time.Since(start)
	if err != nil || len(r.Content) == 0 || r.Content[0].Text != "hi" {
		b.Fatalf("the call: got %+v, %v", r, err)
	}
	c.Close()
	_ = p.Stop(ctx)
	return took
}

// benchThrough calls the idle server through the launcher once; call to
// answer. It returns once the server is idle again.
func benchThrough(b *testing.B, s *Session) time.Duration {
	b.Helper()
	c := benchConnect(b)
	if st := s.Status(); st.Servers[0].State != ctl.Idle {
		b.Fatalf("got %s, want idle", st.Servers[0].State)
	}
	start := time.Now()
	c.Call("1", "echo", `{"text":"hi"}`)
	text := testserver.ResultText(b, c.Next())
	took := time.Since(start)
	if text != "hi" {
		b.Fatalf("got %q, want hi", text)
	}
	c.Close()
	benchIdle(b, s)
	return took
}

func benchConnect(b *testing.B) *testserver.Client {
	b.Helper()
	conn, err := connect("bench", "srv")
	if err != nil {
		b.Fatal(err)
	}
	return testserver.NewClient(b, conn, "bench", "")
}

// benchIdle waits until the session's server is idle.
func benchIdle(b *testing.B, s *Session) {
	b.Helper()
	deadline := time.Now().Add(waitLong)
	for time.Now().Before(deadline) {
		if st := s.Status(); len(st.Servers) == 1 && st.Servers[0].State == ctl.Idle {
			return
		}
		time.Sleep(time.Millisecond)
	}
	b.Fatalf("not idle within %s: %s", waitLong, dumpStatus(s.Status()))
}

func mean(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(max(len(ds), 1))
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
