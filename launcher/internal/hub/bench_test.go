package hub

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/mcp"
)

// The hub's hot path: a tools/call round trip through the hub compared
// with the same call made straight to the same server process (the test
// binary in echo mode), with one client and with eight at once; and what
// an idle client costs the launcher.
//
//	go test -run '^$' -bench . -benchmem ./launcher/internal/hub/
//
// ns/op is the time per call: for one client, the round trip; for eight,
// the inverse of the aggregate throughput (calls/s is reported too).
// cpu-ns/op is this process's CPU time per call, where it can be read.

func BenchmarkRoundTrip(b *testing.B) {
	b.Run("direct", func(b *testing.B) {
		c := benchDirect(b)
		benchCalls(b, []*benchConn{c}, 1)
	})
	b.Run("hub-pipe", func(b *testing.B) {
		h := benchHub(b)
		benchCalls(b, []*benchConn{h.pipeClient(b)}, 1)
	})
	b.Run("hub-unix", func(b *testing.B) {
		h := benchHub(b)
		benchCalls(b, []*benchConn{h.unixClient(b)}, 1)
	})
	// Eight callers: straight to the server they share its one stdio
	// (a multiplexing client, as one agent with eight calls in flight);
	// through the hub each is a client of its own, as eight agents are.
	b.Run("direct-8", func(b *testing.B) {
		c := benchDirect(b)
		benchCalls(b, []*benchConn{c}, 8)
	})
	b.Run("hub-unix-8", func(b *testing.B) {
		h := benchHub(b)
		var cs []*benchConn
		for range 8 {
			cs = append(cs, h.unixClient(b))
		}
		benchCalls(b, cs, 1)
	})
}

// benchCalls makes b.N echo calls, spread over perConn callers on each
// connection, and checks every answer.
func benchCalls(b *testing.B, conns []*benchConn, perConn int) {
	b.ReportAllocs()
	var left atomic.Int64
	left.Store(int64(b.N))
	var wg sync.WaitGroup
	var failed atomic.Value
	b.ResetTimer()
	cpu0 := processCPU()
	start := time.Now()
	for _, c := range conns {
		for range perConn {
			wg.Go(func() {
				var buf []byte
				reply := make(chan *mcp.Message, 1)
				for left.Add(-1) >= 0 {
					var err error
					if buf, err = c.echo(buf, reply); err != nil {
						failed.Store(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := processCPU() - cpu0
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	if cpu > 0 {
		// The CPU time of this process (the callers and the hub, not the
		// server) per call: steadier than the round trip on a busy
		// machine, and what the hub costs beside the direct case.
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// benchConn is a client that may have many calls in flight: its read
// loop hands each response to the caller waiting for its id.
type benchConn struct {
	w       io.Writer
	wmu     sync.Mutex
	next    atomic.Int64
	mu      sync.Mutex
	waiting map[int64]chan *mcp.Message
	err     error // why the read loop ended; set before done is closed
	done    chan struct{}
}

func newBenchConn(r io.Reader, w io.Writer) *benchConn {
	c := &benchConn{w: w, waiting: map[int64]chan *mcp.Message{}, done: make(chan struct{})}
	go c.read(r)
	return c
}

// read ends when the connection does.
func (c *benchConn) read(r io.Reader) {
	mr := mcp.NewReader(r)
	for {
		msg, err := mr.Read()
		if err != nil {
			c.err = err
			close(c.done)
			return
		}
		if !msg.IsResponse() {
			continue
		}
		id, _ := strconv.ParseInt(msg.ID.String(), 10, 64)
		c.mu.Lock()
		ch := c.waiting[id]
		delete(c.waiting, id)
		c.mu.Unlock()
		if ch != nil {
			ch <- msg
		}
	}
}

// roundTrip sends the request in line (without its id: prefix, id, suffix)
// and waits for the response.
func (c *benchConn) roundTrip(buf []byte, prefix, suffix string, reply chan *mcp.Message) ([]byte, *mcp.Message, error) {
	id := c.next.Add(1)
	buf = append(buf[:0], prefix...)
	buf = strconv.AppendInt(buf, id, 10)
	buf = append(buf, suffix...)
	buf = append(buf, '\n')
	c.mu.Lock()
	c.waiting[id] = reply
	c.mu.Unlock()
	c.wmu.Lock()
	_, err := c.w.Write(buf)
	c.wmu.Unlock()
	if err != nil {
		return buf, nil, err
	}
	select {
	case msg := <-reply:
		return buf, msg, nil
	case <-c.done:
		return buf, nil, fmt.Errorf("connection ended: %v", c.err)
	}
}

const benchText = "hello, shared server"

func (c *benchConn) echo(buf []byte, reply chan *mcp.Message) ([]byte, error) {
	buf, msg, err := c.roundTrip(buf, `{"jsonrpc":"2.0","id":`,
		`,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`+benchText+`"}}}`, reply)
	if err != nil {
		return buf, err
	}
	if msg.Error != nil || !strings.Contains(string(msg.Result), benchText) {
		return buf, fmt.Errorf("echo: got %s", msg.AppendJSON(nil))
	}
	return buf, nil
}

// initialize makes the client's handshake, as an agent would.
func (c *benchConn) initialize(tb testing.TB) {
	tb.Helper()
	_, msg, err := c.roundTrip(nil, `{"jsonrpc":"2.0","id":`,
		`,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`,
		make(chan *mcp.Message, 1))
	if err != nil || msg.Error != nil {
		tb.Fatalf("initialize: %v %v", err, msg)
	}
	c.wmu.Lock()
	_, err = io.WriteString(c.w, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	c.wmu.Unlock()
	if err != nil {
		tb.Fatal(err)
	}
}

// benchServer starts the test server in echo mode and ends it with the
// benchmark.
func benchServer(tb testing.TB) *proc.Process {
	tb.Helper()
	p, err := proc.Start(testserver.Spec(tb, "echo"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Kill)
	return p
}

// benchDirect is a client of its own test server, over its stdio.
func benchDirect(tb testing.TB) *benchConn {
	tb.Helper()
	p := benchServer(tb)
	c := newBenchConn(p.Stdout(), p.Stdin())
	c.initialize(tb)
	return c
}

type benchHubT struct {
	hub *Hub
	ln  net.Listener
}

// benchHub is a hub with a test server behind it, and a unix socket whose
// connections it serves, as the control socket does after a connect.
func benchHub(tb testing.TB) *benchHubT {
	tb.Helper()
	p := benchServer(tb)
	h := New("bench", tb.TempDir(), slog.New(slog.DiscardHandler))
	up := h.NewUpstream(p.Stdout(), p.Stdin())
	go up.Run()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	init, tools, err := up.Initialize(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	h.Attach(up, init, tools)

	dir, err := os.MkdirTemp("", "mcpgen-bench-") // short: a socket path has a limit
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "hub.sock"))
	if err != nil {
		tb.Fatal(err)
	}
	var served sync.WaitGroup
	served.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			served.Go(func() { h.Serve(context.Background(), conn) })
		}
	})
	tb.Cleanup(func() {
		ln.Close()
		h.Close()
		served.Wait()
		os.RemoveAll(dir)
	})
	return &benchHubT{hub: h, ln: ln}
}

func (h *benchHubT) pipeClient(tb testing.TB) *benchConn {
	tb.Helper()
	ours, theirs := net.Pipe()
	go h.hub.Serve(context.Background(), theirs)
	tb.Cleanup(func() { ours.Close() })
	c := newBenchConn(ours, ours)
	c.initialize(tb)
	return c
}

func (h *benchHubT) unixClient(tb testing.TB) *benchConn {
	tb.Helper()
	conn, err := net.Dial("unix", h.ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	c := newBenchConn(conn, conn)
	c.initialize(tb)
	return c
}

// BenchmarkIdleClients measures what a connected, initialized, idle client
// costs the launcher: the hub's goroutines, buffers and queue for it. The
// client ends are plain sockets with no goroutine or buffer of their own,
// so nearly all of the difference is the hub's. Reported per client: the
// Go heap and stacks in use, the goroutines, and the process's resident
// memory. Resident memory is measured in the first round only (later rounds
// reuse what the one before freed), and means something only in a fresh
// process: -bench IdleClients -benchtime 1x.
func BenchmarkIdleClients(b *testing.B) {
	const n = 1000
	h := benchHub(b)
	var heap, goroutines, rss float64
	first := true
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		rss0, g0 := residentBytes(b), runtime.NumGoroutine()

		conns := make([]net.Conn, n)
		for i := range conns {
			conns[i] = idleClient(b, h.ln.Addr().String())
		}
		deadline := time.Now().Add(waitLong)
		for len(h.hub.Clients()) < n || slices.Contains(h.hub.Clients(), "(initializing)") {
			if time.Now().After(deadline) {
				b.Fatalf("%d clients connected, want %d", len(h.hub.Clients()), n)
			}
			time.Sleep(time.Millisecond)
		}

		runtime.GC()
		runtime.ReadMemStats(&after)
		heap += float64(after.HeapInuse+after.StackInuse) - float64(before.HeapInuse+before.StackInuse)
		goroutines += float64(runtime.NumGoroutine() - g0)
		if first {
			rss, first = float64(residentBytes(b)-rss0), false
		}

		for _, c := range conns {
			c.Close()
		}
		for len(h.hub.Clients()) > 0 {
			if time.Now().After(deadline) {
				b.Fatalf("%d clients still connected after they closed", len(h.hub.Clients()))
			}
			time.Sleep(time.Millisecond)
		}
	}
	b.ReportMetric(heap/float64(b.N)/n, "heap+stack-B/client")
	b.ReportMetric(goroutines/float64(b.N)/n, "goroutines/client")
	b.ReportMetric(rss/n, "rss-B/client")
}

// idleClient connects and initializes, then holds nothing but the socket.
func idleClient(tb testing.TB, addr string) net.Conn {
	tb.Helper()
	conn, err := net.Dial("unix", addr)
	if err != nil {
		tb.Fatal(err)
	}
	_, err = io.WriteString(conn, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"idle","version":"1"}}}`+"\n")
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := bufio.NewReaderSize(conn, 16).ReadString('\n'); err != nil {
		tb.Fatal(err)
	}
	if _, err := io.WriteString(conn, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		tb.Fatal(err)
	}
	return conn
}

// residentBytes is the process's resident set size.
func residentBytes(tb testing.TB) int64 {
	tb.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		tb.Skip("no /proc/self/statm")
	}
	f := strings.Fields(string(b))
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// BenchmarkUnreadFlood measures what a client that floods requests and
// reads none of the answers costs the launcher (issue 8 item 4): it writes
// 200,000 requests (pings, which the hub answers, and echo calls, which
// the server does) over a unix socket, until they are all written or the
// hub stops reading it (a write makes no progress for a second). Reported:
// the requests the hub took in (written), the Go heap and stacks and the
// goroutines it holds then, over an idle hub, and what the server was
// asked (calls). Run it alone, in a fresh process: -bench UnreadFlood
// -benchtime 1x.
func BenchmarkUnreadFlood(b *testing.B) {
	const n = 200000
	var written, heap, goroutines float64
	for b.Loop() {
		h := benchHub(b)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()

		conn, err := net.Dial("unix", h.ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		w := 0
		var line []byte
		for i := 1; i <= n; i++ {
			line = line[:0]
			if i%2 == 0 {
				line = fmt.Appendf(line, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", i)
			} else {
				line = fmt.Appendf(line, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"%d"}}}`+"\n", i, i)
			}
			_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
			if _, err := conn.Write(line); err != nil {
				break // the hub stopped reading
			}
			w++
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		written += float64(w)
		heap += float64(after.HeapInuse+after.StackInuse) - float64(before.HeapInuse+before.StackInuse)
		goroutines += float64(runtime.NumGoroutine() - g0)
		conn.Close()
	}
	b.ReportMetric(written/float64(b.N), "requests-taken")
	b.ReportMetric(heap/float64(b.N), "heap+stack-B")
	b.ReportMetric(goroutines/float64(b.N), "goroutines")
}
