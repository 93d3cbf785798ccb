package hub

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/mcp"
)

// The hub's bounds against clients that ask without reading, and against
// clients too slow for what the server sends them (issue 8, items 4 and
// 11), on each kind of connection a client comes in by.

// A fakeServer is a server process played by the test: it reads what the
// hub writes to its stdin, and writes to the hub what the test says.
type fakeServer struct {
	t      *testing.T
	up     *Upstream
	stdout *io.PipeWriter
	in     chan *mcp.Message
}

// newFakeHub returns a hub whose server the test plays.
func newFakeHub(t *testing.T) (*Hub, *fakeServer) {
	t.Helper()
	return newFakeHubLog(t, slog.New(slog.DiscardHandler))
}

// newFakeHubLog is newFakeHub with the hub's log.
func newFakeHubLog(t *testing.T, log *slog.Logger) (*Hub, *fakeServer) {
	t.Helper()
	h := New("fake", t.TempDir(), log)
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	s := &fakeServer{t: t, stdout: stdoutW, in: make(chan *mcp.Message, 10000)}
	s.up = h.NewUpstream(stdoutR, stdinW)
	go s.up.Run() // ends when stdout is closed, below
	go func() {   // ends when the upstream closes stdin, at its end
		r := mcp.NewReader(stdinR)
		for {
			m, err := r.Read()
			if err != nil {
				return
			}
			s.in <- m
		}
	}()
	init := &mcp.InitializeResult{
		ProtocolVersion: mcp.LatestVersion,
		ServerInfo:      mcp.Implementation{Name: "fake", Version: "1"},
		Raw:             json.RawMessage(`{"protocolVersion":"` + mcp.LatestVersion + `","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}`),
	}
	h.Attach(s.up, init, []*mcp.Tool{{Name: "echo"}})
	t.Cleanup(func() {
		stdoutW.Close() // the server exits
		<-s.up.Done()
		h.Close()
		stdinR.Close()
	})
	return h, s
}

func (s *fakeServer) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.stdout, line+"\n"); err != nil {
		s.t.Fatalf("the server's output: %v", err)
	}
}

// recv returns the next message the hub sent the server.
func (s *fakeServer) recv() *mcp.Message {
	s.t.Helper()
	select {
	case m := <-s.in:
		return m
	case <-time.After(waitLong):
		s.t.Fatal("the server got nothing from the hub")
		return nil
	}
}

// A connKind is a kind of connection that a client comes in by.
type connKind struct {
	name string
	// pair returns the client's end and the hub's.
	pair func(t *testing.T) (ours, theirs io.ReadWriteCloser)
}

var connKinds = []connKind{
	{"net.Pipe", func(t *testing.T) (io.ReadWriteCloser, io.ReadWriteCloser) {
		a, b := net.Pipe()
		return a, b
	}},
	{"unix socket", unixPair},
	{"stdio pipes", pipePair},
}

// unixPair connects over a unix socket, as mcpgen connect does when it
// bridges.
func unixPair(t *testing.T) (io.ReadWriteCloser, io.ReadWriteCloser) {
	t.Helper()
	dir, err := os.MkdirTemp("", "hub") // short: a socket path has a limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ln, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	ours, err := net.Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	theirs := <-accepted
	if theirs == nil {
		t.Fatal("accept failed")
	}
	// Small buffers, so that the hub's writes to a client that does not
	// read block soon, whatever the system's defaults.
	_ = theirs.(*net.UnixConn).SetWriteBuffer(8 << 10)
	_ = ours.(*net.UnixConn).SetReadBuffer(8 << 10)
	t.Cleanup(func() { ours.Close(); theirs.Close() })
	return ours, theirs
}

// pipeConn is two pipes as one connection, as the launcher's stdioConn
// holds an agent's stdin and stdout after the stdio hand-off: what the hub
// needs of it (deadlines, a non-blocking descriptor to write on) is what
// the launcher's TestStdioConn checks stdioConn has.
type pipeConn struct{ r, w *os.File }

func (c *pipeConn) Read(p []byte) (int, error)         { return c.r.Read(p) }
func (c *pipeConn) Write(p []byte) (int, error)        { return c.w.Write(p) }
func (c *pipeConn) SetReadDeadline(t time.Time) error  { return c.r.SetReadDeadline(t) }
func (c *pipeConn) SetWriteDeadline(t time.Time) error { return c.w.SetWriteDeadline(t) }
func (c *pipeConn) SyscallConn() (syscall.RawConn, error) {
	return c.w.SyscallConn()
}
func (c *pipeConn) Close() error {
	c.r.Close()
	return c.w.Close()
}

func pipePair(t *testing.T) (io.ReadWriteCloser, io.ReadWriteCloser) {
	t.Helper()
	inR, inW, err := os.Pipe() // the agent's stdin: the hub reads it
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe() // the agent's stdout: the hub writes it
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := &pipeConn{r: outR, w: inW}, &pipeConn{r: inR, w: outW}
	t.Cleanup(func() { ours.Close(); theirs.Close() })
	return ours, theirs
}

// serve serves conn until the test ends; the channel closes when Serve
// returns.
func serve(t *testing.T, h *Hub, conn io.ReadWriteCloser) <-chan struct{} {
	served := make(chan struct{})
	go func() { defer close(served); h.Serve(context.Background(), conn) }()
	// At the test's end the hub closes, as at a session's end: a client
	// that left a request unanswered is not drained for its whole bound.
	t.Cleanup(func() { conn.Close(); h.Close(); <-served })
	return served
}

// initializeOnly makes a client's handshake and returns what reads the
// rest of its input, which the test may never read.
func initializeOnly(t *testing.T, conn io.ReadWriter, name string) *bufio.Reader {
	t.Helper()
	writeLine(t, conn, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"`+name+`","version":"1"}}}`)
	r := bufio.NewReader(conn)
	if line, err := r.ReadString('\n'); err != nil || !strings.Contains(line, `"result"`) {
		t.Fatalf("initialize: %q, %v", line, err)
	}
	writeLine(t, conn, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r
}

func writeLine(t *testing.T, w io.Writer, line string) {
	t.Helper()
	if _, err := io.WriteString(w, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func waitClosed(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(waitLong):
		t.Fatalf("%s: still running", what)
	}
}

// TestHubDropsSlowClient (issue 8 item 11): a client that reads nothing
// while the server sends it more than the hub may hold is dropped: the
// server's requests of its in flight are cancelled under the server's
// ids, and its connection is closed though the hub's writes to it block.
// Meanwhile the server's output is read without a pause: a client that
// sleeps does not hold up the server's other clients.
func TestHubDropsSlowClient(t *testing.T) {
	if testing.Short() {
		t.Skip("an attack test: a client that does not read: run without -short")
	}
	for _, kind := range connKinds {
		t.Run(kind.name, func(t *testing.T) {
			h, srv := newFakeHub(t)
			ours, theirs := kind.pair(t)
			served := serve(t, h, theirs)
			initializeOnly(t, ours, "sleeper")

			for i := range 3 {
				writeLine(t, ours, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{}}}`, i))
			}
			upIDs := map[mcp.ID]bool{}
			for range 3 {
				m := srv.recv()
				upIDs[m.ID] = true
			}

			// Notifications of 4 KiB, until the client is dropped: more
			// than its connection buffers, and more than the hub holds for
			// it. Every send returns: the hub reads the server while the
			// client sleeps.
			note := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + strings.Repeat("x", 4<<10) + `"}}` + "\n"
			stop := make(chan struct{})
			sent := make(chan error, 1)
			go func() { // ends when the test has seen the drop, or after 64 MiB
				for range (maxQueued >> 12) + maxNotes {
					select {
					case <-stop:
						sent <- nil
						return
					default:
					}
					if _, err := io.WriteString(srv.stdout, note); err != nil {
						sent <- err
						return
					}
				}
				sent <- fmt.Errorf("%d notifications sent, and the client is still there", (maxQueued>>12)+maxNotes)
			}()

			for len(upIDs) > 0 {
				m := srv.recv()
				if m.Method != "notifications/cancelled" {
					t.Fatalf("the server got %s, want the cancellations of the dropped client's requests", m.AppendJSON(nil))
				}
				var p struct {
					RequestID mcp.ID `json:"requestId"`
				}
				if err := json.Unmarshal(m.Params, &p); err != nil || !upIDs[p.RequestID] {
					t.Fatalf("cancelled %s; want one of the server's ids %v", m.Params, upIDs)
				}
				delete(upIDs, p.RequestID)
			}
			close(stop)
			if err := <-sent; err != nil {
				t.Fatalf("the server's output: %v", err)
			}
			waitClosed(t, served, "Serve of a dropped client that never reads")
			if got := h.Clients(); len(got) != 0 {
				t.Errorf("clients after the drop: %v", got)
			}
		})
	}
}

// TestHubCloseUnreadClient (issue 8 item 11): Close ends a client whose
// connection takes nothing more, within the write deadline, instead of
// blocking on a write for ever.
func TestHubCloseUnreadClient(t *testing.T) {
	if testing.Short() {
		t.Skip("an attack test: a client that does not read: run without -short")
	}
	for _, kind := range connKinds {
		t.Run(kind.name, func(t *testing.T) {
			h, srv := newFakeHub(t)
			ours, theirs := kind.pair(t)
			served := serve(t, h, theirs)
			initializeOnly(t, ours, "sleeper")
			// Enough to fill what the connection buffers, not enough to
			// be dropped for it.
			note := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + strings.Repeat("x", 4<<10) + `"}}`
			for range maxNotes / 2 {
				srv.send(note)
			}
			h.Close()
			waitClosed(t, served, "Serve after Close, of a client that never reads")
		})
	}
}

// TestHubUnreadFlood (issue 8 item 4): a client that floods requests and
// reads none of the answers makes the hub stop reading it once its bounds
// are reached, rather than hold more; another client's calls meanwhile
// answer as usual; and once the flooder reads, every request of its is
// answered exactly once.
func TestHubUnreadFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("an attack test: a flood of requests: run without -short")
	}
	for _, kind := range connKinds {
		t.Run(kind.name, func(t *testing.T) {
			th := newTestHub(t, "echo")
			stalled := make(chan struct{}, 1)
			th.hub.roomWaits = func() {
				select {
				case stalled <- struct{}{}:
				default:
				}
			}
			ours, theirs := kind.pair(t)
			serve(t, th.hub, theirs)
			r := initializeOnly(t, ours, "flooder")

			// Pings (answered by the hub) and calls (by the server).
			const n = 20000
			wrote := make(chan error, 1)
			go func() { // ends when every request is written: once the test reads
				w := bufio.NewWriter(ours)
				for i := 1; i <= n; i++ {
					if i%2 == 0 {
						fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", i)
					} else {
						fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"%d"}}}`+"\n", i, i)
					}
				}
				wrote <- w.Flush()
			}()
			select {
			case <-stalled:
			case <-time.After(waitLong):
				t.Fatal("the hub never stopped reading the flooder")
			}
			th.hub.mu.Lock()
			var fl *client
			for c := range th.hub.clients {
				fl = c
			}
			th.hub.mu.Unlock()
			st := fl.conn.Stats()
			slots, waiting, held := st.Slots, st.Waiting, st.Held
			if slots > maxInFlight || waiting > maxWaiting || held > maxHeldBytes {
				t.Errorf("held for the flooder: %d requests under way, %d waiting, %d bytes held; want at most %d, %d, %d",
					slots, waiting, held, maxInFlight, maxWaiting, maxHeldBytes)
			}
			if q := st.Queued; q > softQueued+maxInFlight*256 {
				t.Errorf("%d bytes queued for the flooder, want at most %d", q, softQueued+maxInFlight*256)
			}

			other := th.client("other", "")
			for i := range 50 {
				other.Call(strconv.Itoa(i), "echo", fmt.Sprintf(`{"text":"o%d"}`, i))
				if m := other.Next(); testserver.ResultText(t, m) != fmt.Sprint("o", i) {
					t.Fatalf("the other client, call %d: got %s", i, m.AppendJSON(nil))
				}
			}

			seen := make(map[int]bool, n)
			for len(seen) < n {
				line, err := r.ReadBytes('\n')
				if err != nil {
					t.Fatalf("after %d answers: %v", len(seen), err)
				}
				m, err := mcp.DecodeMessage(line)
				if err != nil || !m.IsResponse() || m.Error != nil {
					t.Fatalf("the flooder got %q (%v)", line, err)
				}
				id, _ := strconv.Atoi(m.ID.String())
				if seen[id] {
					t.Fatalf("id %d answered twice", id)
				}
				seen[id] = true
			}
			if err := <-wrote; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestHubNotJSON (issue 8 item 15): the hub is its clients' server, so a
// line that is not JSON gets -32700 with a null id, and a request it
// cannot read gets an error under its id (read from the start of the line
// when the rest is not JSON); a broken response gets nothing.
func TestHubNotJSON(t *testing.T) {
	tests := []struct {
		line     string
		wantCode int64 // 0: no answer
		wantID   string
	}{
		{`hello, is this the server?`, mcp.CodeParseError, "null"},
		// The start of a request shows its id: it is answered under it.
		{`{"jsonrpc":"2.0","id":1,"method":`, mcp.CodeParseError, "1"},
		{`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo","arguments":{"deep":` + strings.Repeat("[", jsonwire.MaxDepth+1) + strings.Repeat("]", jsonwire.MaxDepth+1) + `}}}`, mcp.CodeParseError, "6"},
		{"\ufeff" + `{"jsonrpc":"2.0","id":2,"method":"ping"}`, mcp.CodeParseError, "2"},
		{`{"jsonrpc":"2.0","id":3}`, mcp.CodeInvalidRequest, "3"},
		{`[{"jsonrpc":"2.0","id":4,"method":"ping"}]`, mcp.CodeInvalidRequest, "null"},
		{`{"jsonrpc":"2.0","id":5,"result":{},"error":{"code":1,"message":"m"}}`, 0, ""},
	}
	th := newTestHub(t, "echo")
	c := th.client("a", "")
	for _, tt := range tests {
		c.Send(tt.line)
		c.Send(`{"jsonrpc":"2.0","id":"after","method":"ping"}`) // every line is answered in order
		m := c.Next()
		if tt.wantCode == 0 {
			if m.ID.String() != `"after"` {
				t.Errorf("%q: got %s, want no answer", tt.line, m.AppendJSON(nil))
			}
			continue
		}
		if m.Error == nil || m.Error.Code != tt.wantCode || m.ID.String() != tt.wantID {
			t.Errorf("%q: got %s, want error %d with id %s", tt.line, m.AppendJSON(nil), tt.wantCode, tt.wantID)
		}
		if m := c.Next(); m.ID.String() != `"after"` {
			t.Errorf("%q: then got %s, want the answer to the next ping", tt.line, m.AppendJSON(nil))
		}
	}
}

// TestHubServerCancels: a server's request that a client answers, then
// one that the server cancels: the client is told under the id it saw,
// and its late answer goes nowhere.
func TestHubServerCancels(t *testing.T) {
	h, srv := newFakeHub(t)
	ours, theirs := net.Pipe()
	serve(t, h, theirs)
	c := testserver.NewClient(t, ours, "sampler", `{"sampling":{}}`)

	srv.send(`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[ ],"maxTokens":1}}`)
	req := c.Next()
	if req.Method != "sampling/createMessage" || string(req.Params) != `{"messages":[ ],"maxTokens":1}` {
		t.Fatalf("the client got %s, want the server's request, params as sent", req.AppendJSON(nil))
	}
	c.Send(`{"jsonrpc":"2.0","id":` + req.ID.String() + `,"result":{"role":"assistant", "content":{"type":"text","text":"<hi>"}}}`)
	if m := srv.recv(); m.ID.String() != `"s1"` || string(m.Result) != `{"role":"assistant", "content":{"type":"text","text":"<hi>"}}` {
		t.Errorf("the server got %s, want the client's answer under its id, as written", m.AppendJSON(nil))
	}

	srv.send(`{"jsonrpc":"2.0","id":"s2","method":"sampling/createMessage","params":{}}`)
	req = c.Next()
	srv.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s2","reason":"no longer needed"}}`)
	m := c.Next()
	var p struct {
		RequestID mcp.ID `json:"requestId"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil || m.Method != "notifications/cancelled" || p.RequestID != req.ID {
		t.Fatalf("the client got %s, want notifications/cancelled for %s", m.AppendJSON(nil), req.ID)
	}
	c.Send(`{"jsonrpc":"2.0","id":` + req.ID.String() + `,"result":{"role":"assistant","content":{"type":"text","text":"late"}}}`)
	// The next call coming first shows that the late answer was not
	// passed on: the hub reads a client in order.
	c.Send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
	if m := srv.recv(); m.Method != "tools/call" {
		t.Errorf("the server got %s after it cancelled, want the next call", m.AppendJSON(nil))
	}
}

// TestHubHoldsBoundedWhileServerDown (issue 8 item 4): requests that wait
// for a server that is restarting are held as copies of their params, of
// bounded size in all; beyond, the hub stops reading the client, and once
// the server is back every request is answered.
func TestHubHoldsBoundedWhileServerDown(t *testing.T) {
	if testing.Short() {
		t.Skip("an attack test: a flood while the server restarts: run without -short")
	}
	th := newTestHub(t, "echo")
	stalled := make(chan struct{}, 1)
	th.hub.roomWaits = func() {
		select {
		case stalled <- struct{}{}:
		default:
		}
	}
	ours, theirs := unixPair(t)
	serve(t, th.hub, theirs)
	r := initializeOnly(t, ours, "big")
	th.crash()

	const n, size = 24, 1 << 20 // 24 MiB of params, more than the hub holds
	text := strings.Repeat("x", size)
	wrote := make(chan error, 1)
	go func() { // ends when every request is written: once the server is back
		for i := 1; i <= n; i++ {
			if _, err := fmt.Fprintf(ours, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"%s"}}}`+"\n", i, text); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	select {
	case <-stalled:
	case <-time.After(waitLong):
		t.Fatal("the hub never stopped reading a client whose requests wait for the server")
	}
	th.hub.mu.Lock()
	var c *client
	for k := range th.hub.clients {
		c = k
	}
	th.hub.mu.Unlock()
	held := c.conn.Stats().Held
	if limit := maxHeldBytes + 2*(size+100); held > limit {
		t.Errorf("%d bytes held while the server is down, want at most %d", held, limit)
	}

	th.start("echo")
	seen := map[string]bool{}
	for len(seen) < n {
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("after %d answers: %v", len(seen), err)
		}
		m, err := mcp.DecodeMessage(line)
		if err != nil || m.Error != nil || seen[m.ID.String()] {
			t.Fatalf("answer %d: %.200s (%v)", len(seen)+1, line, err)
		}
		seen[m.ID.String()] = true
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
}

// TestHubServerAnswerTooLong: an answer longer than a line may be fails
// the client's request at once, instead of leaving it waiting for ever.
func TestHubServerAnswerTooLong(t *testing.T) {
	h, srv := newFakeHub(t)
	ours, theirs := net.Pipe()
	serve(t, h, theirs)
	c := testserver.NewClient(t, ours, "a", "")
	c.Call("1", "echo", `{}`)
	req := srv.recv()
	long := `{"jsonrpc":"2.0","id":` + req.ID.String() + `,"result":{"text":"` + strings.Repeat("x", mcp.MaxLineSize) + `"}}` + "\n"
	go io.WriteString(srv.stdout, long) // ends when read, or at the test's end (the server's output closes)
	if m := c.Next(); m.ID.String() != "1" || m.Error == nil || m.Error.Code != mcp.CodeInternalError || !strings.Contains(m.Error.Message, "longer than") {
		t.Errorf("got %.300s, want error %d saying the answer was too long", m.AppendJSON(nil), mcp.CodeInternalError)
	}
}
