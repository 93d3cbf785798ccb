//go:build unix

package gateway

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/internal/hub"
	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/mcp"
)

// addDeaf adds a ready server whose only tool is tool and which reads
// nothing of its input (it hangs): its stdin is a pipe, as a process's
// is, that nobody reads. Its tool_timeout is tool.
func (w *world) addDeaf(name, tool string, timeout time.Duration) {
	t := w.t.(*testing.T)
	t.Helper()
	b := &backend{name: name, hub: hub.New(name, t.TempDir(), slog.New(slog.DiscardHandler)), state: State{State: "ready"}}
	b.hub.SetTimeouts(0, timeout)
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdoutR, stdoutW := io.Pipe()
	up := b.hub.NewUpstream(stdoutR, stdinW)
	go up.Run() // ends when stdout is closed, below
	t.Cleanup(func() {
		stdoutW.Close() // the server exits
		stdinR.Close()  // which ends a write to it still under way
		<-up.Done()
		stdinW.Close()
	})
	b.up = up
	init := &mcp.InitializeResult{
		ProtocolVersion: mcp.LatestVersion,
		ServerInfo:      mcp.Implementation{Name: name, Version: "1"},
		Raw:             json.RawMessage(`{"protocolVersion":"` + mcp.LatestVersion + `","capabilities":{"tools":{}},"serverInfo":{"name":"` + name + `","version":"1"}}`),
	}
	b.hub.Attach(up, init, []*mcp.Tool{{Name: tool, InputSchema: json.RawMessage(`{"type":"object"}`)}})
	w.servers[name] = b
	w.order = append(w.order, name)
	w.set()
}

// TestGatewayDeafServer: a server that reads nothing of its input (it
// hangs) holds up no agent, nor the agent's other servers: the calls that
// its input cannot take wait elsewhere than the agent's read loop, which
// goes on reading (another server's tool answers, a cancellation is read),
// and each ends at the server's tool_timeout at the latest, though it
// never reached the server.
func TestGatewayDeafServer(t *testing.T) {
	w := newWorld(t)
	w.add("a", true, "MCPGEN_TESTSERVER_TOOLS=echo")
	w.addDeaf("deaf", "hang", 500*time.Millisecond)
	c := w.client("agent", "")

	// More than a pipe holds (64 KiB here): the last ones cannot be written.
	text := strings.Repeat("x", 16<<10)
	const calls = 12
	var lines strings.Builder
	for i := range calls {
		fmt.Fprintf(&lines, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"hang","arguments":{"text":%q}}}`+"\n", i, text)
	}
	lines.WriteString(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0}}` + "\n")
	lines.WriteString(`{"jsonrpc":"2.0","id":"echo","method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}` + "\n")
	wrote := make(chan error, 1)
	go func() { // ends once the gateway has read it all, or the test ends (the pipe closes)
		wrote <- c.SendLines(lines.String())
	}()
	answered := map[string]bool{}
	for len(answered) < calls { // 1 to 11 and echo: 0 was cancelled
		m := c.Next()
		if !m.IsResponse() {
			continue
		}
		id := m.ID.String()
		if id == "0" || answered[id] {
			t.Fatalf("got %s: an answer to a cancelled request, or a second one", m.AppendJSON(nil))
		}
		answered[id] = true
		if id == `"echo"` {
			if got := testserver.ResultText(t, m); got != "still here" {
				t.Errorf("the other server's call: got %q", got)
			}
			continue
		}
		var res mcp.CallToolResult
		if err := json.Unmarshal(m.Result, &res); err != nil || !res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].Text, "tool_timeout") {
			t.Errorf("call %s: got %.300s, want an error result that names tool_timeout", id, m.AppendJSON(nil))
		}
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
}
