package launcher

import (
	"context"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/internal/sandbox"
	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/mcp"
)

// BenchmarkSandbox measures what the sandbox costs a server, side by side
// in one run: spawn to ready (the handshake and tools/list answered) and
// a tool call's round trip, without a sandbox, in one with no network
// (Landlock, and PID, mount and network namespaces where the kernel
// allows), and in one with a host allowlist (its egress proxy too). The
// servers: the legacy test server, and the reference server-everything
// (Node) when $SERVER_EVERYTHING names it. Each sandboxed way is measured
// cold (its setup step started with it) and warm (a spare setup step,
// started ahead as a launcher keeps one). Each iteration starts every
// server each way once, in an order that rotates; the metrics are the
// mean spawn to ready and the median call, in milliseconds.
//
//	go test -run '^$' -bench Sandbox -benchtime 20x ./launcher
func BenchmarkSandbox(b *testing.B) {
	if r := sandbox.Inspect(&sandbox.Policy{Network: sandbox.Network{Mode: sandbox.NetNone}}); len(r.NotEnforced) > 0 {
		b.Logf("the sandbox here does not enforce everything:\n%s", r)
	}
	ws := b.TempDir()
	self := testserver.Self(b)
	policies := []struct {
		name   string
		policy *sandbox.Policy
	}{
		{"off", nil},
		{"none", &sandbox.Policy{System: []string{self}, Write: []string{ws}, Network: sandbox.Network{Mode: sandbox.NetNone}}},
		{"hosts", &sandbox.Policy{System: []string{self}, Write: []string{ws}, Network: sandbox.Network{Mode: sandbox.NetHosts, Hosts: []string{"api.example.com:443"}}}},
	}
	type server struct {
		name string
		spec func() *proc.Spec
		tool string
		args any
	}
	servers := []server{{"test", func() *proc.Spec {
		s := testserver.Spec(b, "echo", "GORACE=atexit_sleep_ms=0")
		s.Dir = ws
		return s
	}, "echo", map[string]string{"text": "hi"}}}
	if everything := os.Getenv("SERVER_EVERYTHING"); everything != "" {
		node, err := exec.LookPath("node")
		if err != nil {
			b.Fatalf("$SERVER_EVERYTHING is set, but node: %v", err)
		}
		for i := range policies[1:] {
			p := *policies[i+1].policy
			p.System = append(slices.Clone(p.System), node, everything, nodeModules(everything))
			policies[i+1].policy = &p
		}
		servers = append(servers, server{"everything", func() *proc.Spec {
			return &proc.Spec{Path: node, Args: []string{everything, "stdio"}, Dir: ws, Env: os.Environ()}
		}, "echo", map[string]string{"message": "hi"}})
	}
	type way struct {
		name   string
		server server
		policy *sandbox.Policy
		spares *sandbox.Spares // the setup step started ahead (warm)
	}
	spares := sandbox.NewSpares(nil)
	defer spares.Close()
	var ways []way
	for _, s := range servers {
		for _, p := range policies {
			ways = append(ways, way{s.name + "-" + p.name, s, p.policy, nil})
			if p.policy != nil {
				ways = append(ways, way{s.name + "-" + p.name + "-warm", s, p.policy, spares})
			}
		}
	}
	ready := make([][]time.Duration, len(ways))
	calls := make([][]time.Duration, len(ways))
	b.ResetTimer()
	for i := range b.N {
		for j := range ways {
			k := (i + j) % len(ways)
			w := ways[k]
			spec := w.server.spec()
			spec.Sandbox, spec.Spares = w.policy, w.spares
			if w.spares != nil {
				// As a launcher has one once a server of its kind has
				// started: outside the time measured.
				ctx, cancel := context.WithTimeout(context.Background(), waitLong)
				err := w.spares.Ready(ctx, w.policy)
				cancel()
				if err != nil {
					b.Fatal(err)
				}
			}
			r, c := sandboxedServer(b, spec, w.server.tool, w.server.args)
			ready[k] = append(ready[k], r)
			calls[k] = append(calls[k], c...)
		}
	}
	b.StopTimer()
	for k, w := range ways {
		b.ReportMetric(ms(mean(ready[k])), w.name+"-ready-ms")
		b.ReportMetric(ms(median(calls[k])), w.name+"-call-ms")
	}
}

// sandboxedServer starts the server of spec, opens it, calls tool a few
// times, stops it, and returns the spawn (from before the sandbox is
// prepared) to ready and each call's round trip.
func sandboxedServer(b *testing.B, spec *proc.Spec, tool string, args any) (time.Duration, []time.Duration) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	spec.Stderr = io.Discard
	start := time.Now()
	p, err := proc.Start(spec)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Stop(ctx)
	c := mcp.NewClient(ctx, p.Stdout(), p.Stdin(), mcp.ClientOptions{Info: mcp.Implementation{Name: "bench", Version: "1"}})
	defer c.Close()
	if _, err := c.Open(ctx, mcp.OpenOptions{Known: mcp.EraLegacy}); err != nil {
		b.Fatal(err)
	}
	if tools, err := c.ListTools(ctx); err != nil || len(tools) == 0 {
		b.Fatalf("tools/list: %d tools, %v", len(tools), err)
	}
	ready := time.Since(start)
	var calls []time.Duration
	for range 20 {
		t := time.Now()
		res, err := c.CallTool(ctx, tool, args)
		if err != nil || res.IsError {
			b.Fatalf("%s: %+v, %v", tool, res, err)
		}
		calls = append(calls, time.Since(t))
	}
	return ready, calls
}

// nodeModules is the node_modules tree a script sits in, or the script.
func nodeModules(script string) string {
	if i := strings.Index(script, "/node_modules/"); i >= 0 {
		return script[:i+len("/node_modules")]
	}
	return script
}
