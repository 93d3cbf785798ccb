package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/internal/hub"
	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/mcp"
)

// A fakeServer is a server of the world played by the test, in process:
// the test reads what its hub writes it (in) and writes its output.
type fakeServer struct {
	t      *testing.T
	stdout *io.PipeWriter
	in     chan *mcp.Message
}

// addFake adds a ready server whose only tool is tool, played by the
// test; its hub logs to log.
func (w *world) addFake(name, tool string, log *slog.Logger) (*fakeServer, *hub.Hub) {
	t := w.t.(*testing.T)
	t.Helper()
	b := &backend{name: name, hub: hub.New(name, t.TempDir(), log), state: State{State: "ready"}}
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	s := &fakeServer{t: t, stdout: stdoutW, in: make(chan *mcp.Message, 1000)}
	up := b.hub.NewUpstream(stdoutR, stdinW)
	go up.Run() // ends when stdout is closed, below
	go func() { // ends when the upstream closes stdin, at its end
		r := mcp.NewReader(stdinR)
		for {
			m, err := r.Read()
			if err != nil {
				return
			}
			s.in <- m
		}
	}()
	t.Cleanup(func() {
		stdoutW.Close() // the server exits
		<-up.Done()
		stdinR.Close()
	})
	b.up = up
	init := &mcp.InitializeResult{
		ProtocolVersion: mcp.LatestVersion,
		ServerInfo:      mcp.Implementation{Name: name, Version: "1"},
		Raw:             json.RawMessage(`{"protocolVersion":"` + mcp.LatestVersion + `","capabilities":{"tools":{},"logging":{}},"serverInfo":{"name":"` + name + `","version":"1"}}`),
	}
	b.hub.Attach(up, init, []*mcp.Tool{{Name: tool, InputSchema: json.RawMessage(`{"type":"object"}`)}})
	w.servers[name] = b
	w.order = append(w.order, name)
	w.set()
	return s, b.hub
}

// recv returns the next message the hub sent the server that is not
// logging/setLevel.
func (s *fakeServer) recv() *mcp.Message {
	s.t.Helper()
	for {
		select {
		case m := <-s.in:
			if m.Method == "logging/setLevel" {
				continue
			}
			return m
		case <-time.After(waitLong):
			s.t.Fatal("the server got nothing from the hub")
			return nil
		}
	}
}

// TestGatewayNotificationFlood (hardening issue: a notification flood
// disconnects a gateway agent that reads): a server sends some 12,000 log
// messages, at about 10,000 a second, to an agent that reads at a normal
// pace, slower than that, and nothing at all for the first 3,000. The
// agent stays connected, gets the answer to every call and the newest
// progress of each, and another server's tools answer it after; what it
// lost is counted on the noisy server's hub, and logged.
func TestGatewayNotificationFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("a flood test: run without -short")
	}
	w := newWorld(t)
	logs := &testserver.Logs{}
	srv, noisy := w.addFake("noisy", "shout", logs.Logger())
	w.add("a", true, "MCPGEN_TESTSERVER_TOOLS=echo")

	ours, theirs := net.Pipe()
	served := make(chan struct{})
	go func() { defer close(served); w.g.Serve(context.Background(), theirs, nil) }()
	t.Cleanup(func() { ours.Close(); <-served })
	r := bufio.NewReader(ours)
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(ours, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"reader","version":"1"}}}`)
	if line, err := r.ReadString('\n'); err != nil || !strings.Contains(line, `"result"`) {
		t.Fatalf("initialize: %q, %v", line, err)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	const calls = 10
	var ids []mcp.ID
	var tokens []string
	for i := range calls {
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"c%d","method":"tools/call","params":{"name":"shout","arguments":{},"_meta":{"progressToken":"p%d"}}}`, i, i))
		m := srv.recv()
		var p struct {
			Meta struct {
				Token json.RawMessage `json:"progressToken"`
			} `json:"_meta"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil || m.Method != "tools/call" || len(p.Meta.Token) == 0 {
			t.Fatalf("the server got %s, want a call with a progress token", m.AppendJSON(nil))
		}
		ids = append(ids, m.ID)
		tokens = append(tokens, string(p.Meta.Token))
	}
	first, rest, sent := testserver.FloodScript(ids, tokens)
	if err := testserver.Paced(srv.stdout, first); err != nil { // the agent reads nothing yet
		t.Fatal(err)
	}
	wrote := make(chan error, 1)
	go func() { wrote <- testserver.Paced(srv.stdout, rest) }() // ends with the script, or the test (the output closes)
	seen := testserver.ReadFlood(t, r)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	sent.CheckAnswers(t, seen)

	send(`{"jsonrpc":"2.0","id":"after","method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}`)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("the other server's call after the flood: %v", err)
		}
		if strings.Contains(line, `"id":"after"`) {
			if !strings.Contains(line, "still here") {
				t.Errorf("the other server's call after the flood: got %s", line)
			}
			break
		}
	}
	shed := noisy.Shed()
	t.Logf("sent %d log messages and %d progress; the agent read %d and %d; %d dropped, %d coalesced",
		sent.Logs, sent.Progress, seen.Logs, seen.Progress, shed.Dropped, shed.Coalesced)
	if shed.Dropped == 0 {
		t.Errorf("nothing dropped for an agent that read nothing of 3,000 log messages")
	}
	if got, want := int64(seen.Logs+seen.Progress)+shed.Dropped+shed.Coalesced, int64(sent.Logs+sent.Progress); got != want {
		t.Errorf("read (%d, %d) and lost (%+v): %d notifications, want the %d sent", seen.Logs, seen.Progress, shed, got, want)
	}
	for i := range sent.Calls {
		if got := seen.Last[fmt.Sprintf(`"p%d"`, i)]; got != sent.Last[i] {
			t.Errorf("the last progress of c%d: got %d, want %d (the newest)", i, got, sent.Last[i])
		}
	}
	recs := logs.Records("client reads the server's notifications too slowly: its log messages are dropped and its progress coalesced")
	if len(recs) == 0 || recs[0]["server"] != "noisy" || recs[0]["client"] != "reader 1" {
		t.Errorf("logged: %v, want the losses of reader 1 for noisy", recs)
	}
}

// TestGatewayFloodUnreadAgent: an agent that reads nothing at all is still
// disconnected in a flood of log messages, which it would not be for its
// queue (they are shed): once it has lost maxUnread in a row. What it left
// in flight is cancelled at the server.
func TestGatewayFloodUnreadAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("a flood test: run without -short")
	}
	w := newWorld(t)
	srv, noisy := w.addFake("noisy", "shout", slog.New(slog.DiscardHandler))
	ours, theirs := net.Pipe()
	served := make(chan struct{})
	go func() { defer close(served); w.g.Serve(context.Background(), theirs, nil) }()
	t.Cleanup(func() { ours.Close(); <-served })
	if _, err := io.WriteString(ours, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sleeper","version":"1"}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shout","arguments":{}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	call := srv.recv()
	// It reads nothing, not even the answer to initialize.
	const most = 2 * (sessionQueue + maxUnread)
	var lines []string
	for i := range most {
		lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"line %d"}}`, i))
	}
	wrote := make(chan error, 1)
	go func() { // ends when the lines are written, or the test ends (the output closes)
		_, err := io.WriteString(srv.stdout, strings.Join(lines, "\n")+"\n")
		wrote <- err
	}()
	select {
	case <-served:
	case <-time.After(waitLong):
		t.Fatalf("an agent that reads nothing of %d log messages is still connected", most)
	}
	m := srv.recv()
	var p struct {
		RequestID mcp.ID `json:"requestId"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil || m.Method != "notifications/cancelled" || p.RequestID != call.ID {
		t.Errorf("the server got %s, want the cancellation of %s", m.AppendJSON(nil), call.ID)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if shed := noisy.Shed(); shed.Dropped <= maxUnread || shed.Dropped > most {
		t.Errorf("dropped %d, want more than %d", shed.Dropped, maxUnread)
	}
}
