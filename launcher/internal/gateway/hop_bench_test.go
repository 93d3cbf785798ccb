package gateway

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/mcp"
)

// BenchmarkHop is a tools/call round trip to one server process (the test
// binary in echo mode) through its hub, as connect NAME makes it, and
// through the gateway, which is a member of that hub: side by side in one
// run, one call at a time. The gateway's hop should stay within 20% of the
// hub's (issue 11); e2e/testdata/share/bench.sh measures the same with the
// TypeScript SDK's client over real stdio.
//
// Each is measured over in-process pipes (net.Pipe: hub, gateway) and over
// the agent's own stdio, two pipes, as connect hands them to the launcher
// (hub-stdio, gateway-stdio): only there does the hub write an answer
// straight to the agent from the server's read loop (see the outbox of
// agent.Conn), which a net.Pipe never allows, and so only there does the
// Go benchmark see what the TypeScript client sees. cpu-µs/op is this
// process's CPU time per call, the steadier figure on a busy machine.
//
//	go test -run '^$' -bench Hop -benchtime 5000x ./launcher/internal/gateway/
func BenchmarkHop(b *testing.B) {
	w := newWorld(b)
	w.add("a", true, "MCPGEN_TESTSERVER_TOOLS=echo")
	for _, kind := range []struct {
		name string
		pair func(b *testing.B) (ours, theirs io.ReadWriteCloser)
	}{
		{"", func(*testing.B) (io.ReadWriteCloser, io.ReadWriteCloser) { a, c := net.Pipe(); return a, c }},
		{"-stdio", stdioPair},
	} {
		for _, era := range []string{"", "-modern"} {
			b.Run("hub"+kind.name+era, func(b *testing.B) {
				ours, theirs := kind.pair(b)
				go w.servers["a"].hub.Serve(context.Background(), theirs)
				defer ours.Close()
				benchHop(b, ours, "echo", era != "")
			})
			b.Run("gateway"+kind.name+era, func(b *testing.B) {
				ours, theirs := kind.pair(b)
				go w.g.Serve(context.Background(), theirs, nil)
				defer ours.Close()
				benchHop(b, ours, "echo", era != "")
			})
		}
	}
}

// BenchmarkDiscover is server/discover, answered by mcpgen from the
// catalog (never the server), through the hub and through the gateway,
// over in-process pipes: the round trip of a modern agent's probe.
//
//	go test -run '^$' -bench Discover ./launcher/internal/gateway/
func BenchmarkDiscover(b *testing.B) {
	w := newWorld(b)
	w.add("a", true, "MCPGEN_TESTSERVER_TOOLS=echo")
	for _, face := range []string{"hub", "gateway"} {
		b.Run(face, func(b *testing.B) {
			ours, theirs := net.Pipe()
			if face == "hub" {
				go w.servers["a"].hub.Serve(context.Background(), theirs)
			} else {
				go w.g.Serve(context.Background(), theirs, nil)
			}
			defer ours.Close()
			wr, r := mcp.NewWriter(ours), mcp.NewReader(ours)
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				start := time.Now()
				line := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"server/discover","params":{"_meta":{%s}}}`, i, modernMeta)
				if err := wr.WriteLine(line); err != nil {
					b.Fatal(err)
				}
				m, err := r.Read()
				if err != nil || m.Error != nil || m.ID.String() != strconv.Itoa(i) {
					b.Fatalf("server/discover: %v %v", m, err)
				}
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
		})
	}
}

// modernMeta is the _meta members of the benchmarks' modern requests.
const modernMeta = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}`

// stdioConn is two pipes as one connection, as the launcher holds an
// agent's stdin and stdout after the stdio hand-off: non-blocking, with a
// descriptor to write on.
type stdioConn struct{ r, w *os.File }

func (c *stdioConn) Read(p []byte) (int, error)         { return c.r.Read(p) }
func (c *stdioConn) Write(p []byte) (int, error)        { return c.w.Write(p) }
func (c *stdioConn) SetReadDeadline(t time.Time) error  { return c.r.SetReadDeadline(t) }
func (c *stdioConn) SetWriteDeadline(t time.Time) error { return c.w.SetWriteDeadline(t) }
func (c *stdioConn) SyscallConn() (syscall.RawConn, error) {
	return c.w.SyscallConn()
}
func (c *stdioConn) Close() error {
	c.r.Close()
	return c.w.Close()
}

func stdioPair(b *testing.B) (io.ReadWriteCloser, io.ReadWriteCloser) {
	inR, inW, err := os.Pipe() // the agent's stdin: the launcher reads it
	if err != nil {
		b.Fatal(err)
	}
	outR, outW, err := os.Pipe() // the agent's stdout: the launcher writes it
	if err != nil {
		b.Fatal(err)
	}
	ours, theirs := &stdioConn{r: outR, w: inW}, &stdioConn{r: inR, w: outW}
	b.Cleanup(func() { ours.Close(); theirs.Close() })
	return ours, theirs
}

// benchHop measures tools/call round trips on conn: a legacy session's,
// or (modern) stateless requests of the modern revision, without a
// session.
func benchHop(b *testing.B, conn io.ReadWriter, tool string, modern bool) {
	wr, r := mcp.NewWriter(conn), mcp.NewReader(conn)
	call := func(id int) {
		line := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"text":"hop %d"}}}`, id, tool, id)
		if modern {
			line = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"text":"hop %d"},"_meta":{%s}}}`, id, tool, id, modernMeta)
		}
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
	if !modern {
		if err := wr.WriteLine([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)); err != nil {
			b.Fatal(err)
		}
		if _, err := r.Read(); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 100 { // warm up
		call(i + 1)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		call(1000 + i)
		lat = append(lat, time.Since(start))
	}
	cpu := processCPU() - cpu0
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
	if cpu > 0 {
		// This process's CPU time per call (the caller's and the launcher's
		// part, not the server's): steadier than the round trip on a busy
		// machine, and what the gateway costs beside the hub.
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/1e3, "cpu-µs/op")
	}
}
