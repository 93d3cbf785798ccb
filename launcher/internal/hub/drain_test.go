package hub

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/mcp"
)

// closeInput ends what a client writes, as an agent that closes its stdin
// does; it reads on.
func closeInput(t *testing.T, ours io.ReadWriteCloser) {
	t.Helper()
	switch c := ours.(type) {
	case *net.UnixConn:
		if err := c.CloseWrite(); err != nil {
			t.Fatal(err)
		}
	case *pipeConn:
		if err := c.w.Close(); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("cannot half-close a %T", ours)
	}
}

// readAll reads the lines the hub writes to a client until it closes the
// connection, within waitLong.
func readAll(t *testing.T, ours io.Reader) []*mcp.Message {
	t.Helper()
	type result struct {
		msgs []*mcp.Message
		err  error
	}
	done := make(chan result, 1)
	go func() { // ends at the connection's end, which the test waits for
		var msgs []*mcp.Message
		r := bufio.NewReader(ours)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				m, derr := mcp.DecodeMessage(line[:len(line)-1])
				if derr != nil {
					done <- result{msgs, derr}
					return
				}
				msgs = append(msgs, m)
			}
			if err != nil {
				if err == io.EOF {
					err = nil
				}
				done <- result{msgs, err}
				return
			}
		}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.msgs
	case <-time.After(waitLong):
		t.Fatal("the hub did not close the connection of a client that closed its input")
		return nil
	}
}

// TestHubEOFAnswers: a client that writes its requests and closes its
// input at once (printf '...' | mcpgen connect NAME) gets the answer to
// each, then the hub closes the connection: a call that takes its time, a
// call that waits for an idle server to start, initialize and tools/list
// from the catalog of an idle server. Over a unix socket (connect's
// bridge, which half-closes) and the agent's own pipes (the stdio
// hand-off).
func TestHubEOFAnswers(t *testing.T) {
	init := `{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"printf","version":"1"}}}`
	tests := []struct {
		name   string
		idle   bool // an idle server, with a catalog
		starts bool // ... that a request starts
		lines  []string
		want   map[string]string // id -> what the answer holds
	}{
		{"a slow call", false, false, []string{init, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"ms":300}}}`},
			map[string]string{`"i"`: `"serverInfo"`, "1": `"slept"`}},
		{"lists of an idle server", true, false, []string{init, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`},
			map[string]string{`"i"`: `"serverInfo"`, "2": `"name":"pid"`}},
		{"a call that starts an idle server", true, true, []string{init, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"late"}}}`},
			map[string]string{`"i"`: `"serverInfo"`, "3": `"late"`}},
	}
	for _, kind := range connKinds[1:] { // net.Pipe cannot half-close
		for _, tt := range tests {
			t.Run(kind.name+"/"+tt.name, func(t *testing.T) {
				var th *testHub
				var demand <-chan struct{}
				if tt.idle {
					ih := newIdleHub(t, true)
					th, demand = ih.testHub, ih.demand
				} else {
					th = newTestHub(t, "echo")
				}
				ours, theirs := kind.pair(t)
				served := serve(t, th.hub, theirs)
				for _, line := range tt.lines {
					writeLine(t, ours, line)
				}
				closeInput(t, ours)
				if tt.starts {
					select {
					case <-demand: // the supervisor's part
						th.start("echo", "MCPGEN_TESTSERVER_TOOLS=echo,pid")
					case <-time.After(waitLong):
						t.Fatal("the call did not start the idle server")
					}
				}
				msgs := readAll(t, ours)
				got := map[string]string{}
				for _, m := range msgs {
					if m.IsResponse() {
						got[m.ID.String()] = string(m.AppendJSON(nil))
					}
				}
				for id, want := range tt.want {
					if !strings.Contains(got[id], want) {
						t.Errorf("the answer to %s: got %q, want it to hold %s (every line: %d)", id, got[id], want, len(msgs))
					}
				}
				waitClosed(t, served, "Serve, after the answers")
			})
		}
	}
}

// TestHubEOFClose: a client that closed its input and waits for an answer
// that does not come (the server holds the call) is closed when the hub
// closes (the server left the workspace, the session ends), without
// waiting for the answer's bound.
func TestHubEOFClose(t *testing.T) {
	h, srv := newFakeHub(t)
	ours, theirs := pipePair(t)
	served := serve(t, h, theirs)
	r := initializeOnly(t, ours, "printf")
	writeLine(t, ours, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
	if m := srv.recv(); m.Method != "tools/call" {
		t.Fatalf("the server got %s, want the call", m.AppendJSON(nil))
	}
	closeInput(t, ours)
	h.Close()
	waitClosed(t, served, "Serve, after the hub closed")
	if line, err := r.ReadString('\n'); err != io.EOF {
		t.Errorf("after the hub closed: got %q, %v; want the connection's end", line, err)
	}
}

// TestHubAnswerBound: a request waits for the server to be ready 30 s, or
// its startup_timeout and a margin when longer, then its tool_timeout.
func TestHubAnswerBound(t *testing.T) {
	tests := []struct {
		startup, tool time.Duration
		want          time.Duration
	}{
		{0, 0, 30*time.Second + time.Minute},
		{10 * time.Second, time.Second, 31 * time.Second},
		{60 * time.Second, 2 * time.Minute, 65*time.Second + 2*time.Minute},
	}
	for _, tt := range tests {
		h := New("test", t.TempDir(), nil)
		h.SetTimeouts(tt.startup, tt.tool)
		if got := h.AnswerBound(); got != tt.want {
			t.Errorf("startup %s, tool %s: got %s, want %s", tt.startup, tt.tool, got, tt.want)
		}
	}
}
