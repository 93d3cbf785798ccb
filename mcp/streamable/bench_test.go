package streamable

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/mcpgen/mcpgen/mcp"
)

// BenchmarkRoundTrip is one request and its answer over loopback, through
// the Transport (JSON and event-stream answers) and, as the floor, a bare
// net/http POST of the same bytes:
//
//	go test -run x -bench RoundTrip ./mcp/streamable/
func BenchmarkRoundTrip(b *testing.B) {
	answer := func(sse bool) func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) {
		return func(w http.ResponseWriter, r *http.Request, msg *mcp.Message) {
			body := `{"jsonrpc":"2.0","id":` + msg.ID.String() + `,"result":{"content":[{"type":"text","text":"hello"}]}}`
			if sse {
				startSSE(w)
				event(w, "id: 1", "data: "+body)
				return
			}
			writeJSON(w, body)
		}
	}
	for _, sse := range []bool{false, true} {
		name := map[bool]string{false: "transport-json", true: "transport-sse"}[sse]
		b.Run(name, func(b *testing.B) {
			f := newFake(b)
			f.call = answer(sse)
			tr, err := New(f.url(), Options{NoListen: true})
			if err != nil {
				b.Fatal(err)
			}
			defer tr.Close()
			r := mcp.NewReader(tr)
			w := mcp.NewWriter(tr)
			for i := 0; b.Loop(); i++ {
				line := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo"}}`, i)
				if err := w.WriteLine(line); err != nil {
					b.Fatal(err)
				}
				if m, err := r.Read(); err != nil || m.Error != nil {
					b.Fatalf("read: %v %v", err, m)
				}
			}
		})
	}
	b.Run("net/http", func(b *testing.B) {
		f := newFake(b)
		f.call = answer(false)
		client := &http.Client{}
		for i := 0; b.Loop(); i++ {
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
		}
	})
}
