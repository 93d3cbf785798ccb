package streamable

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/mcp"
)

// BenchmarkRoundTrip is one request and its answer over loopback, through
// the Transport (JSON and event-stream answers) in each era, and, as the
// floor, a bare net/http POST of the same bytes. Each reports its median
// round trip (p50-ns) besides the mean:
//
//	go test -run x -bench RoundTrip ./mcp/streamable/
//
// The legacy request is a tools/call in a session; the modern one carries
// the revision's _meta and goes with its headers, among them an
// Mcp-Param header that the tool's x-mcp-header annotation asks for.
func BenchmarkRoundTrip(b *testing.B) {
	answer := func(sse bool) func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) {
		return func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) {
			body := `{"jsonrpc":"2.0","id":` + msg.ID.String() + `,"result":{"content":[{"type":"text","text":"hello"}]}}`
			if msg.Method == "tools/list" {
				body = `{"jsonrpc":"2.0","id":` + msg.ID.String() + `,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"text":{"type":"string"}}}}]}}`
			}
			if sse {
				startSSE(w)
				event(w, "id: 1", "data: "+body)
				return
			}
			writeJSON(w, body)
		}
	}
	const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}`
	for _, era := range []string{"legacy", "modern"} {
		for _, sse := range []bool{false, true} {
			name := map[bool]string{false: "transport-json-", true: "transport-sse-"}[sse] + era
			b.Run(name, func(b *testing.B) {
				f := newFake(b)
				f.call = answer(sse)
				opts := Options{NoListen: true}
				if era == "modern" {
					opts.Protocol = mcp.ModernVersion
				}
				tr, err := New(f.url(), opts)
				if err != nil {
					b.Fatal(err)
				}
				defer tr.Close()
				r := mcp.NewReader(tr)
				w := mcp.NewWriter(tr)
				roundTrip := func(line []byte) {
					if err := w.WriteLine(line); err != nil {
						b.Fatal(err)
					}
					if m, err := r.Read(); err != nil || m.Error != nil {
						b.Fatalf("read: %v %v", err, m)
					}
				}
				line := func(i int) []byte {
					if era == "modern" {
						return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"region":"eu","text":"hi"},%s}}`, i, modernMeta)
					}
					return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"region":"eu","text":"hi"}}}`, i)
				}
				if era == "modern" {
					// The tool's annotations known, as after an agent's list.
					roundTrip([]byte(`{"jsonrpc":"2.0","id":-1,"method":"tools/list","params":{` + modernMeta + `}}`))
				} else {
					roundTrip([]byte(`{"jsonrpc":"2.0","id":-1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`))
				}
				p := newPercentiles(b)
				for i := 0; b.Loop(); i++ {
					start := time.Now()
					roundTrip(line(i))
					p.add(time.Since(start))
				}
				p.report()
			})
		}
	}
	b.Run("net/http", func(b *testing.B) {
		f := newFake(b)
		f.call = answer(false)
		client := &http.Client{}
		p := newPercentiles(b)
		for i := 0; b.Loop(); i++ {
			start := time.Now()
			line := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo"}}`, i)
			resp, err := client.Post(f.url(), "application/json", bytes.NewReader(line))
			if err != nil {
				b.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if _, err := mcp.DecodeMessage(body); err != nil {
				b.Fatal(err)
			}
			p.add(time.Since(start))
		}
		p.report()
	})
}

// percentiles keeps a benchmark's round trips, to report their median.
type percentiles struct {
	b *testing.B
	d []time.Duration
}

func newPercentiles(b *testing.B) *percentiles { return &percentiles{b: b} }

func (p *percentiles) add(d time.Duration) { p.d = append(p.d, d) }

func (p *percentiles) report() {
	if len(p.d) == 0 {
		return
	}
	slices.Sort(p.d)
	p.b.ReportMetric(float64(p.d[len(p.d)/2].Nanoseconds()), "p50-ns")
}
