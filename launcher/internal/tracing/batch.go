package tracing

import (
	"context"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Bounds of the batcher: how many ended spans wait at most (more are
// dropped, and counted), and how many make it export at once rather than
// at its next tick.
const (
	maxQueued  = 2048
	batchSize  = 512
	batchEvery = time.Second
)

// batcher is the tracer's span processor: ended spans wait in a slice
// under a mutex, and one goroutine exports them every second, or as soon
// as batchSize wait. The SDK's own batch processor hands each span to its
// goroutine over a channel, waking it for every span: on a tool call's
// path that wake-up cost more than the span itself.
type batcher struct {
	exp sdktrace.SpanExporter

	mu      sync.Mutex
	spans   []sdktrace.ReadOnlySpan
	dropped int

	full chan struct{} // a batch waits: export now
	stop chan struct{} // closed by Shutdown
	done chan struct{} // closed once run has exported the last spans
}

func newBatcher(exp sdktrace.SpanExporter) *batcher {
	b := &batcher{exp: exp, full: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go b.run()
	return b
}

// run exports what waits at each tick, when a batch is full, and once
// more at the stop; it ends with Shutdown.
func (b *batcher) run() {
	defer close(b.done)
	t := time.NewTicker(batchEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-b.full:
		case <-b.stop:
			b.export(context.Background())
			return
		}
		b.export(context.Background())
	}
}

// export sends what waits, in batches, each within a bound.
func (b *batcher) export(ctx context.Context) {
	b.mu.Lock()
	spans := b.spans
	b.spans = nil
	b.mu.Unlock()
	for len(spans) > 0 {
		n := min(len(spans), batchSize)
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		_ = b.exp.ExportSpans(c, spans[:n]) // the exporter logs what failed
		cancel()
		spans = spans[n:]
	}
}

func (b *batcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd keeps an ended span for the next export.
func (b *batcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	b.mu.Lock()
	if len(b.spans) >= maxQueued {
		b.dropped++
		b.mu.Unlock()
		return
	}
	b.spans = append(b.spans, s)
	n := len(b.spans)
	b.mu.Unlock()
	if n == batchSize {
		select {
		case b.full <- struct{}{}:
		default:
		}
	}
}

// Shutdown exports what waits, within ctx, and stops.
func (b *batcher) Shutdown(ctx context.Context) error {
	select {
	case <-b.stop:
	default:
		close(b.stop)
	}
	select {
	case <-b.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return b.exp.Shutdown(ctx)
}

// ForceFlush exports what waits now.
func (b *batcher) ForceFlush(ctx context.Context) error {
	b.export(ctx)
	return nil
}
