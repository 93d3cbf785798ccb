//go:build unix

package launcher

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/launcher/internal/hub"
	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/mcp"
)

// BenchmarkSpawnToReady measures what the era probe costs a server's
// start: spawn to ready, as the launcher defines ready (the opening of the
// server's era, then every page of tools/list), for each server opened
// with its era not known (probe: server/discover first) and known (as a
// catalog tells it: a legacy server gets initialize at once, which is all
// the launcher did before it knew of eras; a modern one server/discover,
// without the grace). The servers: the legacy test server ("echo", which
// answers -32601 to server/discover), the modern-only test server, and
// the reference server-everything (Node, legacy-only, -32601) when
// $SERVER_EVERYTHING names it. Each iteration starts every server in each
// way once, in an order that rotates, so that none always runs on a
// machine warmed up by another. The metrics are the mean milliseconds of
// each.
//
//	go test -run '^$' -bench SpawnToReady -benchtime 20x ./launcher
func BenchmarkSpawnToReady(b *testing.B) {
	type way struct {
		name string
		spec func() *proc.Spec
		opts mcp.OpenOptions
		era  mcp.Era
	}
	legacy := func() *proc.Spec { return testserver.Spec(b, "echo", "GORACE=atexit_sleep_ms=0") }
	modern := func() *proc.Spec { return testserver.Spec(b, "modern", "GORACE=atexit_sleep_ms=0") }
	ways := []way{
		{"legacy-probe", legacy, mcp.OpenOptions{}, mcp.EraLegacy},
		{"legacy-known", legacy, mcp.OpenOptions{Known: mcp.EraLegacy}, mcp.EraLegacy},
		{"modern-probe", modern, mcp.OpenOptions{}, mcp.EraModern},
		{"modern-known", modern, mcp.OpenOptions{Known: mcp.EraModern}, mcp.EraModern},
	}
	if everything := os.Getenv("SERVER_EVERYTHING"); everything != "" {
		node, err := exec.LookPath("node")
		if err != nil {
			b.Fatalf("$SERVER_EVERYTHING is set, but node: %v", err)
		}
		spec := func() *proc.Spec {
			return &proc.Spec{Path: node, Args: []string{everything, "stdio"}, Dir: b.TempDir()}
		}
		ways = append(ways,
			way{"everything-probe", spec, mcp.OpenOptions{}, mcp.EraLegacy},
			way{"everything-known", spec, mcp.OpenOptions{Known: mcp.EraLegacy}, mcp.EraLegacy})
	}
	took := make([][]time.Duration, len(ways))
	b.ResetTimer()
	for i := range b.N {
		for j := range ways {
			k := (i + j) % len(ways)
			w := ways[k]
			took[k] = append(took[k], spawnToReady(b, w.spec(), w.opts, w.era))
		}
	}
	b.StopTimer()
	for k, w := range ways {
		b.ReportMetric(ms(mean(took[k])), w.name+"-ms")
	}
}

// spawnToReady starts the server of spec, opens it as opts say and lists
// its tools, checks its era, stops it, and returns the spawn to ready.
func spawnToReady(b *testing.B, spec *proc.Spec, opts mcp.OpenOptions, era mcp.Era) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	spec.Stderr = io.Discard
	p, err := proc.Start(spec)
	if err != nil {
		b.Fatal(err)
	}
	up := hub.New("bench", spec.Dir, slog.New(slog.DiscardHandler)).NewUpstream(p.Stdout(), p.Stdin())
	go up.Run() // ends when the process exits
	_, tools, err := up.Open(ctx, opts)
	took := time.Since(p.Started)
	if err != nil || len(tools) == 0 || up.Era() != era {
		b.Fatalf("got %d tools, era %v, %v; want tools, era %v", len(tools), up.Era(), err, era)
	}
	_ = p.Stop(ctx)
	<-up.Done()
	return took
}
