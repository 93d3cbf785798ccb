package gateway

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/launcher/internal/httpface"
	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/mcp"
)

// The HTTP face's hop, beside the least an HTTP-to-stdio hop can cost.

// forwarder is the benchmark's baseline: the least code that puts a stdio
// server behind HTTP. Each POST's body goes to the server as a line, and
// the next answer it writes comes back as the POST's JSON; one request at
// a time, no session, no bounds, no notifications.
type forwarder struct {
	mu sync.Mutex
	w  io.Writer
	r  *bufio.Reader
}

func (f *forwarder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.w.Write(append(body, '\n')); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if !bytes.Contains(body, []byte(`"id"`)) {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	for {
		line, err := f.r.ReadBytes('\n')
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		if bytes.Contains(line, []byte(`"result"`)) || bytes.Contains(line, []byte(`"error"`)) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(line)
			return
		}
	}
}

// httpClient is an agent over HTTP, one call at a time: what the
// benchmark and the tests send. A modern one sends stateless requests,
// with the revision's _meta and headers.
type httpClient struct {
	tb     testing.TB
	url    string
	sid    string
	modern bool
	client *http.Client
}

func newHTTPClient(tb testing.TB, url string) *httpClient {
	c := &httpClient{tb: tb, url: url, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}
	tb.Cleanup(c.client.CloseIdleConnections)
	return c
}

// post sends one message and returns the answer's body ("" for a
// notification).
func (c *httpClient) post(body string, headers ...string) (string, error) {
	req, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("%s: %s", resp.Status, b)
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		c.sid = sid
	}
	return string(b), nil
}

func (c *httpClient) initialize() {
	c.tb.Helper()
	if _, err := c.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`); err != nil {
		c.tb.Fatal(err)
	}
	if _, err := c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		c.tb.Fatal(err)
	}
}

// echo calls the test server's echo tool with text, and checks that the
// answer is its own.
func (c *httpClient) echo(id int, text string) error {
	var body string
	var err error
	if c.modern {
		body, err = c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":%q},"_meta":{%s}}}`, id, text, testserver.ModernMeta("bench", "")),
			"MCP-Protocol-Version", mcp.ModernVersion, "Mcp-Method", "tools/call", "Mcp-Name", "echo")
	} else {
		body, err = c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":%q}}}`, id, text))
	}
	if err != nil {
		return err
	}
	m, err := mcp.DecodeMessage(bytes.TrimSpace([]byte(body)))
	if err != nil {
		return fmt.Errorf("call %d: %v: %s", id, err, body)
	}
	if m.ID.String() != fmt.Sprint(id) || m.Error != nil || !bytes.Contains(m.Result, []byte(`"text":"`+text+`"`)) {
		return fmt.Errorf("call %d (%s): got %s", id, text, body)
	}
	return nil
}

// faceOver serves an HTTP face whose sessions serve is, for as many
// sessions as the benchmarks open, and returns its gateway URL.
func faceOver(tb testing.TB, serve httpface.Serve) (*httpface.Face, string) {
	f := httpface.New(context.Background(), httpface.Options{
		Endpoint:    func(string, string) (httpface.Serve, error) { return serve, nil },
		Loopback:    true,
		MaxSessions: 1 << 20,
	})
	srv := httptest.NewServer(f.Handler())
	tb.Cleanup(func() {
		f.Close()
		srv.Close()
	})
	return f, srv.URL + "/mcp"
}

// BenchmarkHTTPHop is a tools/call round trip over HTTP on loopback to one
// server process (the test binary), one call at a time, side by side in
// one run, in each era: a legacy agent (a session) to a legacy server, and
// a modern agent (stateless requests) to a modern server; through the
// minimal forwarder above (the baseline: its own process of the server),
// and through the launcher's HTTP face to the server's hub
// (/servers/NAME/mcp) and to the gateway (/mcp). The goal of issue 19: the
// face adds at most 0.25 ms to the forwarder's round trip, in both eras.
// cpu-µs/op is this process's CPU time per call.
//
//	go test -run '^$' -bench HTTPHop -benchtime 3000x ./launcher/internal/gateway/
func BenchmarkHTTPHop(b *testing.B) {
	w := newWorld(b)
	w.add("a", true, "MCPGEN_TESTSERVER_TOOLS=echo")
	w.addMode("m", "modern", "MCPGEN_TESTSERVER_TOOLS=echo")

	forward := func(mode string) string {
		p, err := proc.Start(testserver.Spec(b, mode, "MCPGEN_TESTSERVER_TOOLS=echo"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			p.Kill()
			<-p.Exited()
		})
		fwd := httptest.NewServer(&forwarder{w: p.Stdin(), r: bufio.NewReader(p.Stdout())})
		b.Cleanup(fwd.Close)
		return fwd.URL
	}
	gateway := func(server string) httpface.Serve {
		return func(ctx context.Context, rwc io.ReadWriteCloser) { w.g.Serve(ctx, rwc, []string{server}) }
	}
	_, hubURL := faceOver(b, w.servers["a"].hub.Serve)
	_, gwURL := faceOver(b, gateway("a"))
	_, modernHubURL := faceOver(b, w.servers["m"].hub.Serve)
	_, modernGwURL := faceOver(b, gateway("m"))
	for _, target := range []struct {
		name, url string
		modern    bool
	}{
		{"legacy/forwarder", forward("echo"), false},
		{"legacy/face-hub", hubURL, false},
		{"legacy/face-gateway", gwURL, false},
		{"modern/forwarder", forward("modern"), true},
		{"modern/face-hub", modernHubURL, true},
		{"modern/face-gateway", modernGwURL, true},
	} {
		b.Run(target.name, func(b *testing.B) {
			c := newHTTPClient(b, target.url)
			c.modern = target.modern
			if !c.modern {
				c.initialize()
			}
			for i := range 100 { // warm up
				if err := c.echo(i+1, "warm"); err != nil {
					b.Fatal(err)
				}
			}
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			for i := 0; b.Loop(); i++ {
				start := time.Now()
				if err := c.echo(1000+i, "hop"); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			cpu := processCPU() - cpu0
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
			if cpu > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/1e3, "cpu-µs/op")
			}
		})
	}
}

// BenchmarkHTTPIdleSession reports the memory an idle HTTP session of the
// gateway holds (initialized, no stream open): the heap and the goroutine
// stacks in use, after a collection, per session, over b.N sessions.
//
//	go test -run '^$' -bench HTTPIdleSession -benchtime 1000x ./launcher/internal/gateway/
func BenchmarkHTTPIdleSession(b *testing.B) {
	w := newWorld(b)
	w.add("a", true, "MCPGEN_TESTSERVER_TOOLS=echo")
	f, url := faceOver(b, func(ctx context.Context, rwc io.ReadWriteCloser) { w.g.Serve(ctx, rwc, nil) })
	c := newHTTPClient(b, url)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	goroutines := runtime.NumGoroutine()
	b.ResetTimer()
	for b.Loop() {
		c.sid = ""
		c.initialize()
	}
	b.StopTimer()
	c.client.CloseIdleConnections()
	runtime.GC()
	runtime.ReadMemStats(&after)
	if n := f.Sessions(); n != b.N {
		b.Fatalf("%d sessions open, want %d", n, b.N)
	}
	b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/float64(b.N), "heap-B/session")
	b.ReportMetric(float64(int64(after.StackInuse)-int64(before.StackInuse))/float64(b.N), "stack-B/session")
	b.ReportMetric(float64(runtime.NumGoroutine()-goroutines)/float64(b.N), "goroutines/session")
}

// TestHTTPConcurrentClients: 64 agents over HTTP, 500 calls each, through
// the gateway to one server process: no call fails, and every answer is
// the one its call asked for (the text each call sends is its own). In
// the legacy era each agent has its session; in the modern era their
// stateless requests share the face's connection, under the same ids.
func TestHTTPConcurrentClients(t *testing.T) {
	clients, calls := 64, 500
	if testing.Short() {
		calls = 50
	}
	w := newWorld(t)
	w.add("a", true, "MCPGEN_TESTSERVER_TOOLS=echo")
	_, url := faceOver(t, func(ctx context.Context, rwc io.ReadWriteCloser) { w.g.Serve(ctx, rwc, nil) })
	for _, modern := range []bool{false, true} {
		t.Run(map[bool]string{false: "legacy", true: "modern"}[modern], func(t *testing.T) {
			var wg sync.WaitGroup
			errs := make(chan error, clients)
			for n := range clients {
				c := newHTTPClient(t, url)
				c.modern = modern
				if !modern {
					c.initialize()
				}
				wg.Go(func() {
					for i := range calls {
						if err := c.echo(i+1, fmt.Sprintf("client %d call %d", n, i)); err != nil {
							errs <- fmt.Errorf("client %d: %v", n, err)
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}
