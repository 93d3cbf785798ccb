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
// One hub, server and client make every call, the hooks set anew before
// each, the three in turn within each op (each first in its turn), so
// that the machine's load falls on all three alike; each reports its
// median (p50) round trip, and metrics/none their ratio.
//
//	go test -run '^$' -bench Hooks -benchtime 20000x -count 5 ./launcher/internal/hub/
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
	variants := []hub.Hooks{{}, counts, full}
	call, h := hub.BenchCaller(b)
	for range 300 { // warm up: the first calls start what later ones reuse
		if err := call(); err != nil {
			b.Fatal(err)
		}
	}
	took := make([][]time.Duration, len(variants))
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		for k := range variants {
			j := (i + k) % len(variants)
			h.SetHooks(variants[j])
			start := time.Now()
			if err := call(); err != nil {
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

// BenchmarkToolCallHook is the metrics' own cost of one tool call, what
// the hub's hot path adds: a counter and a histogram of a tool already
// met.
func BenchmarkToolCallHook(b *testing.B) {
	calls := metrics.New(func() metrics.Snapshot { return metrics.Snapshot{} }).Server("bench")
	calls.ToolCall("echo", hub.OutcomeOK, time.Millisecond)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			calls.ToolCall("echo", hub.OutcomeOK, time.Millisecond)
		}
	})
}
