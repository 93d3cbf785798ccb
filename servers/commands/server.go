// Package commands serves the tools a manifest declares: each tool runs a
// command, never through a shell, with its arguments checked against the
// declaration and substituted into the argv.
package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/mcp"
)

// Options say where and how the tools of one declared server run.
type Options struct {
	Dir     string   // the working directory: the server's cwd
	Env     []string // the whole environment of the tools, "K=V"
	Version string   // reported in serverInfo
	// Containment holds each tool run, with everything it starts, in a
	// container of its own (required).
	Containment *proc.Containment
}

// progressEvery is how often a long call tells a client that asked for
// progress that it is still running.
const progressEvery = 5 * time.Second

// New returns the server of a declared server of m.
func New(m *manifest.Manifest, s *manifest.Server, o Options) (*mcp.Server, error) {
	if s.Kind != manifest.KindDeclared {
		return nil, fmt.Errorf("server %q declares no tools", s.Name)
	}
	if o.Containment == nil {
		return nil, fmt.Errorf("server %q: no containment for its tools' runs", s.Name)
	}
	// An argument inside the code of sh -c or python -c is code that the
	// model writes; validate warns, and here it does not run at all.
	if errs := m.ShellErrors(s); len(errs) > 0 {
		return nil, errs
	}
	srv := mcp.NewServer(mcp.Implementation{Name: s.Name, Version: o.Version}, &mcp.ServerOptions{Instructions: s.Description})
	lookup := manifest.EnvLookup(o.Env)
	for _, t := range s.Tools {
		t := t
		timeout := t.Timeout
		if timeout == 0 {
			timeout = s.ToolCall()
		}
		tool := &mcp.Tool{
			Name:        t.Name,
			Description: describeTool(t, timeout),
			InputSchema: Schema(t),
			Handler: func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return call(ctx, m, t, req, o, lookup, timeout)
			},
		}
		if err := srv.AddTool(tool); err != nil {
			return nil, fmt.Errorf("server %q: tool %q: %w", s.Name, t.Name, err)
		}
	}
	return srv, nil
}

// roughly writes how long a run took as people say it: "2.1s", "350ms".
func roughly(d time.Duration) string {
	if d >= time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

func describeTool(t *manifest.Tool, timeout time.Duration) string {
	d := t.Description
	if d != "" && !strings.HasSuffix(d, ".") {
		d += "."
	}
	if d != "" {
		d += " "
	}
	return d + fmt.Sprintf("Runs for at most %s; output beyond %d KiB is cut.", timeout, MaxOutput>>10)
}

func call(ctx context.Context, m *manifest.Manifest, t *manifest.Tool, req *mcp.CallToolRequest, o Options, lookup manifest.Lookup, timeout time.Duration) (*mcp.CallToolResult, error) {
	values, err := Values(t, req.Arguments)
	if err != nil {
		return nil, err // an isError result: the model can fix its call
	}
	argv, err := Argv(t, values, lookup)
	var argErr *ArgError
	switch {
	case errors.As(err, &argErr):
		return nil, err // the model can fix its call
	case err != nil:
		return nil, fmt.Errorf("tool %q cannot run: %v", t.Name, err)
	}
	argv[0] = m.ResolvePath(argv[0])

	stop := reportProgress(ctx, req)
	res := Run(ctx, o.Containment, t.Name, argv, o.Dir, o.Env, timeout)
	stop()
	return result(t, res, timeout), nil
}

// reportProgress sends a progress notification every few seconds while a
// call runs, if the client asked for progress; the returned func stops it.
func reportProgress(ctx context.Context, req *mcp.CallToolRequest) func() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		start := time.Now()
		for n := 1; ; n++ {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				elapsed := time.Since(start).Round(time.Second)
				_ = req.Progress(ctx, float64(n), 0, fmt.Sprintf("still running after %s", elapsed))
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// result turns a run into what the model reads: stdout on success; on
// failure, why, with the tail of stderr.
func result(t *manifest.Tool, r *Result, timeout time.Duration) *mcp.CallToolResult {
	var b strings.Builder
	failed := r.Err != nil || r.Cancelled != nil || r.TimedOut || r.Exit != 0
	switch {
	case r.Err != nil:
		fmt.Fprintf(&b, "tool %q did not run: %v\n", t.Name, r.Err)
	case errors.Is(r.Cancelled, context.Canceled):
		// It ran: "did not run" would tell the model to try again.
		fmt.Fprintf(&b, "tool %q was cancelled after %s; its processes were killed\n", t.Name, roughly(r.Elapsed))
	case r.Cancelled != nil:
		fmt.Fprintf(&b, "tool %q was stopped after %s (%v); its processes were killed\n", t.Name, roughly(r.Elapsed), r.Cancelled)
	case r.TimedOut:
		fmt.Fprintf(&b, "tool %q timed out after %s; its processes were killed\n", t.Name, timeout)
	case r.Exit < 0:
		fmt.Fprintf(&b, "tool %q was killed by a signal\n", t.Name)
	case r.Exit > 0:
		fmt.Fprintf(&b, "tool %q failed: exit status %d\n", t.Name, r.Exit)
	}
	if failed {
		if len(r.Stderr) > 0 {
			if r.StderrLen > int64(len(r.Stderr)) {
				fmt.Fprintf(&b, "stderr (last %d of %d bytes):\n", len(r.Stderr), r.StderrLen)
			} else {
				b.WriteString("stderr:\n")
			}
			b.Write(r.Stderr)
			if !strings.HasSuffix(b.String(), "\n") {
				b.WriteByte('\n')
			}
		}
		if len(r.Stdout) > 0 {
			b.WriteString("stdout:\n")
		}
	}
	b.Write(r.Stdout)
	if r.StdoutLen > int64(len(r.Stdout)) {
		fmt.Fprintf(&b, "\n[output cut: %d of %d bytes shown]", len(r.Stdout), r.StdoutLen)
	}
	if r.Held {
		b.WriteString("\n[a process that the tool started kept its output open after the tool ended and could not be stopped; what it wrote later is not shown]")
	}
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(b.String())}, IsError: failed}
}
