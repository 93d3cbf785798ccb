package hub_test

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/launcher/internal/hub"
	"github.com/mcpgen/mcpgen/launcher/internal/metrics"
)

// BenchmarkHooks measures what the hooks cost a tool call: the round trip
// of an echo call through a hub without hooks ("none", the code before
// them), with the counts a drain needs ("counts", every session) and with
// the Prometheus metrics besides ("metrics", a session that serves HTTP).
// The three hubs, each with its own server, are called in turn within
// each op, so that the machine's load falls on all three alike; each
// reports its median (p50) round trip, and metrics/none their ratio.
//
//	go test -run '^$' -bench Hooks -count 5 ./launcher/internal/hub/
func BenchmarkHooks(b *testing.B) {
	var calls atomic.Int64
	counts := hub.Hooks{
		Begin: func() bool { calls.Add(1); return true },
		End:   func() { calls.Add(-1) },
	}
	set := metrics.New(func() metrics.Snapshot { return metrics.Snapshot{} })
	full := counts
	full.ToolCall = set.Server("bench").ToolCall
	names := []string{"none", "counts", "metrics"}
	callers := []func() error{
		hub.BenchCaller(b, hub.Hooks{}),
		hub.BenchCaller(b, counts),
		hub.BenchCaller(b, full),
	}
	for _, call := range callers { // warm up: the first calls start what later ones reuse
		for range 100 {
			if err := call(); err != nil {
				b.Fatal(err)
			}
		}
	}
	took := make([][]time.Duration, len(callers))
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		for k := range callers {
			j := (i + k) % len(callers) // each goes first in turn
			start := time.Now()
			if err := callers[j](); err != nil {
				b.Fatal(err)
			}
			took[j] = append(took[j], time.Since(start))
		}
	}
	b.StopTimer()
	p50 := make([]float64, len(took))
	for j, d := range took {
		slices.Sort(d)
		p50[j] = float64(d[len(d)/2].Nanoseconds())
		b.ReportMetric(p50[j], "p50-"+names[j]+"-ns")
	}
	b.ReportMetric(p50[2]/p50[0], "metrics/none")
	if calls.Load() != 0 {
		b.Errorf("%d calls counted under way after every answer, want 0", calls.Load())
	}
}
