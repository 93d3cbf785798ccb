package mcp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"
)

// hangGuard bounds anything that could hang; tests never rely on it for
// their outcome.
const hangGuard = 30 * time.Second

// testServer returns a Server with the tools that the transcripts use:
//
//	echo      returns its "text"; a missing text is the tool's own failure
//	slow      sleeps "ms" milliseconds, or until cancelled
//	progress  reports "steps" steps of progress, then returns
//	fail      fails as "mode" says: error, wire, panic
//	noop      takes no arguments and returns nothing
func testServer(t testing.TB, opts *ServerOptions) *Server {
	if opts == nil {
		opts = &ServerOptions{PageSize: 2}
	}
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	s := NewServer(Implementation{Name: "test-server", Version: "1.0.0"}, opts)
	for _, tool := range testTools() {
		if err := s.AddTool(tool); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func testTools() []*Tool {
	return []*Tool{
		{
			Name:        "echo",
			Description: "Returns its text.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
			Handler: func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
				var args struct {
					Text *string `json:"text"`
				}
				if err := json.Unmarshal(req.Arguments, &args); err != nil {
					return ErrorResult("bad arguments: %v", err), nil
				}
				if args.Text == nil {
					return ErrorResult(`missing "text"`), nil
				}
				return &CallToolResult{Content: []Content{TextContent(*args.Text)}}, nil
			},
		},
		{
			Name:        "slow",
			Description: "Sleeps.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer"}}}`),
			Handler: func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
				var args struct {
					MS int `json:"ms"`
				}
				if err := json.Unmarshal(req.Arguments, &args); err != nil {
					return nil, err
				}
				select {
				case <-time.After(time.Duration(args.MS) * time.Millisecond):
					return &CallToolResult{Content: []Content{TextContent("done")}}, nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			},
		},
		{
			Name:        "progress",
			Description: "Reports progress.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"steps":{"type":"integer"}}}`),
			Handler: func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
				var args struct {
					Steps int `json:"steps"`
				}
				if err := json.Unmarshal(req.Arguments, &args); err != nil {
					return nil, err
				}
				for i := 1; i <= args.Steps; i++ {
					msg := ""
					if i == args.Steps {
						msg = "last step"
					}
					if err := req.Progress(ctx, float64(i), float64(args.Steps), msg); err != nil {
						return nil, err
					}
				}
				return &CallToolResult{Content: []Content{TextContent("finished")}, StructuredContent: map[string]int{"steps": args.Steps}}, nil
			},
		},
		{
			Name:        "fail",
			Description: "Fails.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"mode":{"enum":["error","wire","panic"]}}}`),
			Annotations: &ToolAnnotations{ReadOnlyHint: ptr(true)},
			Handler: func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
				var args struct {
					Mode string `json:"mode"`
				}
				_ = json.Unmarshal(req.Arguments, &args)
				switch args.Mode {
				case "wire":
					return nil, NewError(CodeInvalidParams, "fail: wire error")
				case "panic":
					panic("fail: panic")
				default:
					return nil, errors.New("fail: the disk is on fire")
				}
			},
		},
		{
			Name:    "noop",
			Title:   "No-op",
			Handler: func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) { return nil, nil },
		},
	}
}

func ptr[T any](v T) *T { return &v }

// testLogger logs to the test's log, while the test runs.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// checkGoroutines fails the test if goroutines started during it are still
// running at its end (after a grace period, since ending takes a moment).
func checkGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(hangGuard)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Errorf("%d goroutines leaked:\n%s", runtime.NumGoroutine()-before, buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// pipes connects a client and a server in memory.
type pipes struct {
	clientR, serverR *io.PipeReader
	clientW, serverW *io.PipeWriter
}

func newPipes() *pipes {
	p := &pipes{}
	p.serverR, p.clientW = io.Pipe()
	p.clientR, p.serverW = io.Pipe()
	return p
}

// serve runs s on the server end of the pipes until the client closes its
// end; the returned channel yields Serve's result.
func serve(ctx context.Context, s *Server, p *pipes) <-chan error {
	done := make(chan error, 1)
	go func() {
		err := s.Serve(ctx, p.serverR, p.serverW)
		p.serverW.Close() // the "process" exits: the client sees EOF
		done <- err
	}()
	return done
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
