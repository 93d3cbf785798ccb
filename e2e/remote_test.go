//go:build unix

package e2e

// The remote tests reach the reference server-everything, started in its
// streamableHttp mode on a loopback port, with mcpgen tools ls and
// mcpgen tools call --url: the Streamable HTTP client against a real server
// (the official TypeScript SDK's server transport), with sessions, event
// stream answers, the GET stream and the server's requests to the client.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
	"github.com/mcpgen/mcpgen/mcp/streamable"
)

func TestRemoteTools(t *testing.T) {
	sb := newSandbox(t)
	srv := startEverythingHTTP(t)
	url := srv.url

	tests := []struct {
		name     string
		args     []string
		wantCode int
		// want and wantErr must appear in stdout and stderr.
		want, wantErr []string
	}{
		{name: "ls", args: []string{"tools", "ls", "--url", url},
			want: []string{"NAME", "echo", "Echo Tool", "get-sum", "get-roots-list"}},
		{name: "call echo", args: []string{"tools", "call", "--url", url, "echo", "message=hi"},
			want: []string{"Echo: hi\n"}},
		{name: "typed arguments", args: []string{"tools", "call", "--url", url, "get-sum", "a=2", "b=3.5"},
			want: []string{"The sum of 2 and 3.5 is 5.5."}},
		{name: "arguments as JSON", args: []string{"tools", "call", "--url", url, "echo", "--args", `{"message":"from json"}`},
			want: []string{"Echo: from json"}},
		// The server asks for the client's roots on the GET stream (its
		// tool waits for the answer): the current directory.
		{name: "roots", args: []string{"tools", "call", "--url", url, "get-roots-list"},
			want: []string{"file://" + sb.dir}},
		{name: "image summarized", args: []string{"tools", "call", "--url", url, "get-tiny-image"},
			want: []string{"[image: image/png,"}},
		// The form's required field has no default: cancelled, and said.
		{name: "elicitation", args: []string{"tools", "call", "--url", url, "trigger-elicitation-request"},
			want: []string{"cancel"}, wantErr: []string{"the server asked for input", "has no default"}},
		{name: "error result", args: []string{"tools", "call", "--url", url, "get-annotated-message", "messageType=nonsense"},
			wantCode: 1, wantErr: []string{"Invalid"}},
		{name: "bad value for the schema", args: []string{"tools", "call", "--url", url, "get-sum", "a=two", "b=1"},
			wantCode: 2, wantErr: []string{`"two" is not a number`}},
		{name: "wrong path", args: []string{"tools", "ls", "--url", strings.TrimSuffix(url, "/mcp") + "/nope"},
			wantCode: 1, wantErr: []string{"404 Not Found", "check the URL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := sb.try(run{args: append([]string{mcpgen}, tt.args...)})
			code := 0
			if ee, ok := res.err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if res.err != nil {
				t.Fatalf("%s", res)
			}
			if code != tt.wantCode {
				t.Errorf("exit code: got %d, want %d\n%s", code, tt.wantCode, res)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.stdout, w) {
					t.Errorf("stdout lacks %q\n%s", w, res)
				}
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(res.stderr, w) {
					t.Errorf("stderr lacks %q\n%s", w, res)
				}
			}
		})
	}

	t.Run("ls --json", func(t *testing.T) {
		res := sb.must(run{args: []string{mcpgen, "tools", "ls", "--url", url, "--json"}})
		var tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if err := json.Unmarshal([]byte(res.stdout), &tools); err != nil {
			t.Fatalf("not a JSON array of tools: %v\n%s", err, res)
		}
		found := false
		for _, tool := range tools {
			found = found || (tool.Name == "echo" && len(tool.InputSchema) > 0)
		}
		if !found {
			t.Errorf("no echo tool with its schema in %s", res.stdout)
		}
	})

	// Every command ended its session: the server logs each DELETE.
	sessions := strings.Count(srv.stdout(), "Session initialized with ID")
	deleted := strings.Count(srv.stdout(), "Received session termination request")
	if sessions == 0 || deleted != sessions {
		t.Errorf("sessions: %d initialized, %d deleted; want every one deleted\n%s", sessions, deleted, srv.stdout())
	}
	srv.stop(t)
}

// everythingHTTP is server-everything in streamableHttp mode, started by a
// test.
type everythingHTTP struct {
	url  string
	cmd  *exec.Cmd
	out  *shareBuffer
	done chan struct{}
}

// startEverythingHTTP starts server-everything's streamableHttp mode on a
// free loopback port: testdata/loopback.cjs keeps its listener on
// 127.0.0.1 (it would listen on every interface) and says which port PORT=0
// got.
func startEverythingHTTP(t testing.TB) *everythingHTTP {
	t.Helper()
	preload, err := filepath.Abs(filepath.Join("testdata", "loopback.cjs"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "--require", preload, os.Getenv("SERVER_EVERYTHING"), "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT=0")
	s := &everythingHTTP{cmd: cmd, out: &shareBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		// The one Wait of the server; ends when it exits.
		_ = cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() { s.stop(t) })

	const listening = "loopback.cjs: listening on "
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := s.out.String()
		if _, rest, ok := strings.Cut(out, listening); ok {
			if addr, _, ok := strings.Cut(rest, "\n"); ok {
				if !strings.HasPrefix(addr, "127.0.0.1:") {
					t.Fatalf("server-everything listens on %s, want loopback", addr)
				}
				s.url = "http://" + addr + "/mcp"
				return s
			}
		}
		select {
		case <-s.done:
			t.Fatalf("server-everything exited before listening:\n%s", out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything did not listen within 30s:\n%s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *everythingHTTP) stdout() string { return s.out.String() }

// stop ends the server by its PID (SIGTERM, then SIGKILL) and checks that
// it is gone.
func (s *everythingHTTP) stop(t testing.TB) {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	if err := syscall.Kill(s.cmd.Process.Pid, 0); err == nil {
		t.Errorf("server-everything (pid %d) is still running", s.cmd.Process.Pid)
	}
}

// BenchmarkRemoteEcho measures a tools/call round trip to server-everything
// over Streamable HTTP on loopback, with mcpgen's transport (mcp.Client over
// streamable.Transport) and, as the reference, the official TypeScript
// SDK's client (testdata/http-bench.mjs), side by side in one run. Compare
// the p50s within a run:
//
//	MCPGEN_E2E=1 go test -run x -bench RemoteEcho -benchtime 2000x ./e2e/
func BenchmarkRemoteEcho(b *testing.B) {
	if !enabled {
		b.Skip(howToRun)
	}
	srv := startEverythingHTTP(b)
	defer srv.stop(b)

	b.Run("mcpgen", func(b *testing.B) {
		tr, err := streamable.New(srv.url, streamable.Options{})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		c := mcp.NewClient(ctx, tr, tr, mcp.ClientOptions{})
		defer c.Close()
		if _, err := c.Initialize(ctx); err != nil {
			b.Fatal(err)
		}
		call := func(i int) {
			res, err := c.CallTool(ctx, "echo", map[string]string{"message": fmt.Sprintf("hello %d", i)})
			if err != nil || res.IsError {
				b.Fatalf("echo: %v %+v", err, res)
			}
		}
		for i := range 50 {
			call(i)
		}
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			start := time.Now()
			call(i)
			lat = append(lat, time.Since(start))
		}
		b.StopTimer()
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds())/1000, "p99-ms")
	})
	b.Run("ts-sdk", func(b *testing.B) {
		script, err := filepath.Abs(filepath.Join("testdata", "http-bench.mjs"))
		if err != nil {
			b.Fatal(err)
		}
		// The script times its own calls: ns/op here counts node's start.
		out, err := exec.Command(node, script, srv.url, strconv.Itoa(max(b.N, 100))).Output()
		if err != nil {
			b.Fatalf("http-bench.mjs: %v\n%s", err, out)
		}
		var r struct {
			P50 float64 `json:"p50_ms"`
			P99 float64 `json:"p99_ms"`
		}
		if err := json.Unmarshal(out, &r); err != nil {
			b.Fatalf("http-bench.mjs: %v\n%s", err, out)
		}
		b.ReportMetric(r.P50, "p50-ms")
		b.ReportMetric(r.P99, "p99-ms")
	})
}
