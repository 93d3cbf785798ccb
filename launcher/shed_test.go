//go:build unix

package launcher

import (
	"bufio"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/mcp"
)

// TestSessionShedStatus (hardening issue: a notification flood disconnects
// a client that reads): a client of connect NAME that reads nothing while
// its server sends 8,000 log messages loses some of them rather than its
// connection; status counts them under the server, and the client gets
// its answer.
func TestSessionShedStatus(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, testServerTOML(t, "noisy", "echo", "MCPGEN_TESTSERVER_TOOLS=echo,flood"))
	ts := startSession(t, path, Options{})
	ts.wait("ready", allReady("noisy"))

	conn, err := connect(ts.ws, "noisy")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"busy","version":"1"}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"flood","arguments":{"steps":8000}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	// It reads nothing until status shows the losses.
	st := ts.wait("the losses counted", func(st *ctl.Status) bool { return server(st, "noisy").Shed != nil })
	var table strings.Builder
	st.WriteTable(&table, time.Now(), false)
	if !strings.Contains(table.String(), "\nnoisy: clients that read too slowly lost ") {
		t.Errorf("the table does not show the losses:\n%s", table.String())
	}

	r := bufio.NewReader(conn)
	logs := 0
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("after %d log messages: %v", logs, err)
		}
		m, err := mcp.DecodeMessage(line)
		if err != nil {
			t.Fatalf("got %q: %v", line, err)
		}
		if m.Method == "notifications/message" {
			logs++
			continue
		}
		if m.ID.String() == "1" {
			if !strings.Contains(string(m.Result), "flooded") {
				t.Errorf("the flood's answer: got %s", line)
			}
			break
		}
	}
	shed := server(ts.status(), "noisy").Shed
	if got := int64(logs) + shed.Dropped; got != 8000 {
		t.Errorf("read %d log messages and %d dropped: %d, want 8000 (every one read or counted)", logs, shed.Dropped, got)
	}
	if ts.events.has("client dropped") {
		t.Errorf("the client was dropped:\n%s", ts.events)
	}
}
