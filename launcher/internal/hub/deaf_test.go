//go:build unix

package hub

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/mcp"
)

// newDeafHub returns a hub whose server reads nothing of its input (it
// hangs): its stdin is a pipe, as a process's is, that nobody reads.
func newDeafHub(t *testing.T, tool time.Duration) *Hub {
	t.Helper()
	h := New("deaf", t.TempDir(), slog.New(slog.DiscardHandler))
	h.SetTimeouts(0, tool)
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdoutR, stdoutW := io.Pipe()
	up := h.NewUpstream(stdoutR, stdinW)
	go up.Run() // ends when stdout is closed, below
	init := &mcp.InitializeResult{
		ProtocolVersion: mcp.LatestVersion,
		ServerInfo:      mcp.Implementation{Name: "deaf", Version: "1"},
		Raw:             json.RawMessage(`{"protocolVersion":"` + mcp.LatestVersion + `","capabilities":{"tools":{}},"serverInfo":{"name":"deaf","version":"1"}}`),
	}
	h.Attach(up, init, []*mcp.Tool{{Name: "echo"}})
	t.Cleanup(func() {
		h.Close()
		stdoutW.Close() // the server exits
		stdinR.Close()  // which ends a write to it still under way
		<-up.Done()
		stdinW.Close()
	})
	return h
}

// TestHubDeafServer: a server that reads nothing of its input (it hangs)
// holds up no client. Its client's requests that its input cannot take
// wait elsewhere than the client's read loop, which goes on reading: a
// ping is answered, a cancellation read. And every request ends, at the
// server's tool_timeout at the latest, though it never reached the server:
// tool_timeout bounds every forwarded request.
func TestHubDeafServer(t *testing.T) {
	h := newDeafHub(t, 500*time.Millisecond)
	ours, theirs := pipePair(t)
	serve(t, h, theirs)
	c := testserver.NewClient(t, ours, "a", "")
	// More than a pipe holds (64 KiB here): the last ones cannot be written.
	text := strings.Repeat("x", 16<<10)
	const calls = 12
	var lines strings.Builder
	for i := range calls {
		fmt.Fprintf(&lines, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":%q}}}`+"\n", i, text)
	}
	lines.WriteString(`{"jsonrpc":"2.0","id":"ping","method":"ping"}` + "\n")
	lines.WriteString(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0}}` + "\n")
	wrote := make(chan error, 1)
	go func() { // ends once the hub has read it all, or the test ends (the pipe closes)
		_, err := io.WriteString(ours, lines.String())
		wrote <- err
	}()
	answered := map[string]bool{}
	for len(answered) < calls { // 1 to 11 and the ping: 0 was cancelled
		m := c.Next()
		if !m.IsResponse() {
			continue
		}
		id := m.ID.String()
		if id == "0" || answered[id] {
			t.Fatalf("got %s: an answer to a cancelled request, or a second one", m.AppendJSON(nil))
		}
		answered[id] = true
		if id == `"ping"` {
			continue
		}
		var res mcp.CallToolResult
		if err := json.Unmarshal(m.Result, &res); err != nil || !res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].Text, "tool_timeout") {
			t.Errorf("call %s: got %.300s, want an error result that names tool_timeout", id, m.AppendJSON(nil))
		}
	}
	if !answered[`"ping"`] {
		t.Error("the ping was not answered")
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
}
