package gateway

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/mcp"
)

// BenchmarkHop is a tools/call round trip to one server process (the test
// binary in echo mode) through its hub, as connect NAME makes it, and
// through the gateway, which is a member of that hub: side by side in one
// run, one call at a time, over in-process pipes. The gateway's hop should
// stay within 20% of the hub's (issue 11); e2e/testdata/share/bench.sh
// measures the same with the TypeScript SDK's client over real stdio.
//
//	go test -run '^$' -bench Hop -benchtime 5000x ./launcher/internal/gateway/
func BenchmarkHop(b *testing.B) {
	w := newWorld(b)
	w.add("a", true, "MCPGEN_TESTSERVER_TOOLS=echo")
	b.Run("hub", func(b *testing.B) {
		ours, theirs := net.Pipe()
		go w.servers["a"].hub.Serve(context.Background(), theirs)
		defer ours.Close()
		benchHop(b, ours, "echo")
	})
	b.Run("gateway", func(b *testing.B) {
		ours, theirs := net.Pipe()
		go w.g.Serve(context.Background(), theirs, nil)
		defer ours.Close()
		benchHop(b, ours, "echo")
	})
}

func benchHop(b *testing.B, conn net.Conn, tool string) {
	wr, r := mcp.NewWriter(conn), mcp.NewReader(conn)
	call := func(id int) {
		line := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"text":"hop %d"}}}`, id, tool, id)
		if err := wr.WriteLine(line); err != nil {
			b.Fatal(err)
		}
		for {
			m, err := r.Read()
			if err != nil {
				b.Fatal(err)
			}
			if m.IsResponse() {
				if m.ID.String() != strconv.Itoa(id) || m.Error != nil {
					b.Fatalf("call %d: got %s", id, m.AppendJSON(nil))
				}
				return
			}
		}
	}
	if err := wr.WriteLine([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)); err != nil {
		b.Fatal(err)
	}
	if _, err := r.Read(); err != nil {
		b.Fatal(err)
	}
	for i := range 100 { // warm up
		call(i + 1)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		call(1000 + i)
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
}
