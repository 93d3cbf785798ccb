package gateway

import (
	"context"
	"fmt"

	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/mcp"
)

// BenchmarkInputRoundTrip is a call that needs the agent's input, through
// the gateway over the agent's own stdio, beside two plain calls (the
// round trip costs two calls at least): a modern agent to a legacy server
// whose tool elicits (input_required, then the retry: two calls of the
// agent's), and a legacy agent to a modern server whose tool returns
// input_required (one call of the agent's, which the gateway's hub answers
// by asking the agent, then retries). Side by side in one run; the goal is
// the round trip within 2x of the two plain calls of its pairing.
//
//	go test -run '^$' -bench InputRoundTrip -benchtime 3000x ./launcher/internal/gateway/
func BenchmarkInputRoundTrip(b *testing.B) {
	w := newWorld(b)
	w.addMode("old", "echo", "MCPGEN_TESTSERVER_TOOLS=echo,elicit")
	w.addMode("new", "modern")
	run := func(b *testing.B, legacy bool, op func(a *benchAgent, i int)) {
		ours, theirs := stdioPair(b)
		go w.g.Serve(context.Background(), theirs, nil)
		defer ours.Close()
		a := &benchAgent{b: b, w: mcp.NewWriter(ours), r: mcp.NewReader(ours)}
		if legacy {
			a.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"bench","version":"1"}}}`)
			a.answer(0)
		}
		for i := range 50 { // warm up
			op(a, i+1)
		}
		lat := make([]time.Duration, 0, b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			start := time.Now()
			op(a, 1000+i)
			lat = append(lat, time.Since(start))
		}
		b.StopTimer()
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
	}
	meta := `,"_meta":{` + testserver.ModernMeta("bench", `{"elicitation":{}}`) + `}`
	modernCall := func(a *benchAgent, id int, tool, extra string) *mcp.Message {
		a.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"text":"x"}%s%s}}`, id, tool, extra, meta))
		return a.answer(id)
	}
	b.Run("modern-agent/two-calls", func(b *testing.B) {
		run(b, false, func(a *benchAgent, i int) {
			modernCall(a, 2*i, "old__echo", "")
			modernCall(a, 2*i+1, "old__echo", "")
		})
	})
	b.Run("modern-agent/input-required", func(b *testing.B) {
		run(b, false, func(a *benchAgent, i int) {
			m := modernCall(a, 2*i, "old__elicit", "")
			ir, err := mcp.ParseInputRequired(m.Result)
			if err != nil {
				b.Fatalf("got %s", m.AppendJSON(nil))
			}
			modernCall(a, 2*i+1, "old__elicit", `,"inputResponses":{"mcpgen":{"action":"accept"}},"requestState":"`+ir.RequestState+`"`)
		})
	})
	legacyCall := func(a *benchAgent, id int, tool string) {
		a.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"text":"x"}}}`, id, tool))
		a.answer(id)
	}
	b.Run("legacy-agent/two-calls", func(b *testing.B) {
		run(b, true, func(a *benchAgent, i int) {
			legacyCall(a, 2*i, "new__echo")
			legacyCall(a, 2*i+1, "new__echo")
		})
	})
	b.Run("legacy-agent/input-required", func(b *testing.B) {
		run(b, true, func(a *benchAgent, i int) { legacyCall(a, 2*i, "new__elicit") })
	})
}

// A benchAgent is an agent on the wire that answers every elicitation it
// is asked with accept.
type benchAgent struct {
	b *testing.B
	w *mcp.Writer
	r *mcp.Reader
}

func (a *benchAgent) send(line string) {
	if err := a.w.WriteLine([]byte(line)); err != nil {
		a.b.Fatal(err)
	}
}

// answer reads until the answer to id, answering the requests it is sent.
func (a *benchAgent) answer(id int) *mcp.Message {
	for {
		m, err := a.r.Read()
		if err != nil {
			a.b.Fatal(err)
		}
		switch {
		case m.IsRequest():
			a.send(`{"jsonrpc":"2.0","id":` + m.ID.String() + `,"result":{"action":"accept"}}`)
		case m.IsResponse():
			if m.ID.String() != strconv.Itoa(id) || m.Error != nil {
				a.b.Fatalf("call %d: got %s", id, m.AppendJSON(nil))
			}
			return m
		}
	}
}
