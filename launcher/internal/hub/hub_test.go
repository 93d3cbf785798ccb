package hub

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/mcp"
)

// The test binary doubles as the servers the tests run (testserver.Main).
func TestMain(m *testing.M) {
	testserver.Main()
	os.Exit(m.Run())
}

const waitLong = testserver.WaitLong

// testHub is a hub with a test server process behind it.
type testHub struct {
	t    *testing.T
	hub  *Hub
	proc *proc.Process
	up   *Upstream
	root string
	// The last handshake, for an upstream of the test's own to attach.
	init  *mcp.InitializeResult
	tools []*mcp.Tool
}

func newTestHub(t *testing.T, mode string, extra ...string) *testHub {
	t.Helper()
	root := t.TempDir()
	th := &testHub{t: t, hub: New("test", root, slog.New(slog.DiscardHandler)), root: root}
	th.start(mode, extra...)
	t.Cleanup(func() {
		th.hub.Close()
		th.proc.Kill()
	})
	return th
}

// start runs a server process and makes it the hub's.
func (th *testHub) start(mode string, extra ...string) {
	th.t.Helper()
	p, err := proc.Start(testserver.Spec(th.t, mode, extra...))
	if err != nil {
		th.t.Fatal(err)
	}
	up := th.hub.NewUpstream(p.Stdout(), p.Stdin())
	go up.Run()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	init, tools, err := up.Initialize(ctx)
	if err != nil {
		th.t.Fatal(err)
	}
	th.proc, th.up, th.init, th.tools = p, up, init, tools
	th.hub.Attach(up, init, tools)
}

// crash kills the server as a crash would, and detaches it.
func (th *testHub) crash() {
	th.proc.Kill()
	<-th.up.done
	th.hub.Detach(th.up)
}

// client connects a client to the hub, as the control socket does, and
// initializes it with the capabilities caps.
func (th *testHub) client(name string, caps string) *testserver.Client {
	th.t.Helper()
	ours, theirs := net.Pipe()
	served := make(chan struct{})
	go func() { defer close(served); th.hub.Serve(context.Background(), theirs) }()
	// At the test's end the hub closes, as at a session's end: a client
	// that left a request unanswered is not drained for its whole bound.
	th.t.Cleanup(func() { ours.Close(); th.hub.Close(); <-served })
	return testserver.NewClient(th.t, ours, name, caps)
}

func TestHubInitialize(t *testing.T) {
	th := newTestHub(t, "echo")
	c := th.client("a", "")
	_ = c
	// A second client asking a version the server does not speak gets the
	// server's; listChanged is advertised whatever the server said.
	ours, theirs := net.Pipe()
	go th.hub.Serve(context.Background(), theirs)
	defer ours.Close()
	w, r := mcp.NewWriter(ours), mcp.NewReader(ours)
	_ = w.WriteLine([]byte(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2099-01-01","capabilities":{},"clientInfo":{"name":"b","version":"2"}}}`))
	m, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Tools struct {
				ListChanged bool `json:"listChanged"`
			} `json:"tools"`
		} `json:"capabilities"`
		ServerInfo mcp.Implementation `json:"serverInfo"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatal(err)
	}
	if m.ID.String() != `"init"` || res.ProtocolVersion != mcp.LatestVersion || !res.Capabilities.Tools.ListChanged || res.ServerInfo.Name != "testserver" {
		t.Errorf("got id %s, %+v", m.ID, res)
	}
	if got := th.hub.Clients(); len(got) != 2 || got[0] != "a 1.0" || got[1] != "b 2" {
		t.Errorf("clients: got %v", got)
	}
}

// TestHubIDs: clients using the same ids, of both types, each get their
// own answers, under their ids exactly as sent.
func TestHubIDs(t *testing.T) {
	th := newTestHub(t, "echo")
	a, b := th.client("a", ""), th.client("b", "")
	for i, id := range []string{`1`, `"1"`, `-5`, `"x y"`, `9007199254740993`} {
		a.Call(id, "echo", fmt.Sprintf(`{"text":"a%d"}`, i))
		b.Call(id, "echo", fmt.Sprintf(`{"text":"b%d"}`, i))
		for _, c := range []*testserver.Client{a, b} {
			m := c.Next()
			who := map[*testserver.Client]string{a: "a", b: "b"}[c]
			if m.ID.String() != id || testserver.ResultText(t, m) != fmt.Sprint(who, i) {
				t.Errorf("client %s, id %s: got id %s, %s", who, id, m.ID, m.AppendJSON(nil))
			}
		}
	}
}

// TestHubConcurrentClients: 8 clients with many requests in flight each get
// exactly their own answers.
func TestHubConcurrentClients(t *testing.T) {
	th := newTestHub(t, "echo")
	const clients, calls = 8, 200
	var wg sync.WaitGroup
	for i := range clients {
		c := th.client(fmt.Sprint("c", i), "")
		wg.Go(func() {
			for n := range calls {
				c.Call(fmt.Sprint(n), "echo", fmt.Sprintf(`{"text":"%d-%d"}`, i, n))
			}
			seen := map[string]bool{}
			for range calls {
				m := c.Next()
				want := fmt.Sprintf("%d-%s", i, m.ID)
				if got := testserver.ResultText(t, m); got != want {
					t.Errorf("client %d: id %s answered %q", i, m.ID, got)
				}
				seen[m.ID.String()] = true
			}
			if len(seen) != calls {
				t.Errorf("client %d: %d distinct answers, want %d", i, len(seen), calls)
			}
		})
	}
	wg.Wait()
}

// TestHubCancel: two clients with the same id; one cancels, and only its
// request stops.
func TestHubCancel(t *testing.T) {
	th := newTestHub(t, "echo")
	a, b := th.client("a", ""), th.client("b", "")
	a.Call("7", "slow", `{"ms":20000}`)
	b.Call("7", "slow", `{"ms":200}`)
	a.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"no longer needed"}}`)
	if m := b.Next(); m.ID.String() != "7" || testserver.ResultText(t, m) != "slept" {
		t.Errorf("b: got %s", m.AppendJSON(nil))
	}
	a.Quiet() // a cancelled request gets no response
	a.Call("8", "echo", `{"text":"still here"}`)
	if m := a.Next(); testserver.ResultText(t, m) != "still here" {
		t.Errorf("a after cancel: got %s", m.AppendJSON(nil))
	}
}

// TestHubProgress: two clients with the same progress token each get their
// own progress, under their own token exactly as they wrote it, whatever
// its type or spelling.
func TestHubProgress(t *testing.T) {
	th := newTestHub(t, "echo")
	a, b := th.client("a", ""), th.client("b", "")
	for _, token := range []string{`"tok"`, `7`, `"a\u0062"`} {
		for _, c := range []*testserver.Client{a, b} {
			c.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","arguments":{"steps":3},"_meta":{"progressToken":` + token + `}}}`)
		}
		for _, c := range []*testserver.Client{a, b} {
			var progress []float64
			for {
				m := c.Next()
				if m.IsResponse() {
					if testserver.ResultText(t, m) != "done" {
						t.Errorf("token %s: result %s", token, m.AppendJSON(nil))
					}
					break
				}
				var p struct {
					Token    json.RawMessage `json:"progressToken"`
					Progress float64         `json:"progress"`
				}
				if err := json.Unmarshal(m.Params, &p); err != nil || m.Method != "notifications/progress" || string(p.Token) != token {
					t.Fatalf("token %s: got %s", token, m.AppendJSON(nil))
				}
				progress = append(progress, p.Progress)
			}
			if fmt.Sprint(progress) != "[1 2 3]" {
				t.Errorf("token %s: progress %v", token, progress)
			}
		}
	}
}

// TestHubServerRequests: the hub answers ping and roots/list itself, routes
// sampling to the client whose call asks it, and rejects what nobody can:
// a client is never asked what another's call needs.
func TestHubServerRequests(t *testing.T) {
	th := newTestHub(t, "echo")
	plain := th.client("plain", "")
	plain.Call("1", "roots", `{}`)
	if got := testserver.ResultText(t, plain.Next()); !strings.Contains(got, `"uri":"file://`+th.root+`"`) {
		t.Errorf("roots: got %s", got)
	}
	plain.Call("2", "sample", `{}`)
	if got := testserver.ResultText(t, plain.Next()); !strings.HasPrefix(got, "error -32601: no client") {
		t.Errorf("sampling without a capable client: got %s", got)
	}

	sampler := th.client("sampler", `{"sampling":{}}`)
	plain.Call("3", "sample", `{}`)
	if got := testserver.ResultText(t, plain.Next()); !strings.HasPrefix(got, "error -32601: no client") {
		t.Errorf("sampling for a client that cannot answer, another that can connected: got %s", got)
	}
	sampler.Quiet() // not asked what plain's call needs
	sampler.Call("1", "sample", `{}`)
	req := sampler.Next()
	if req.Method != "sampling/createMessage" || !req.ID.IsValid() {
		t.Fatalf("sampler got %s", req.AppendJSON(nil))
	}
	sampler.Send(`{"jsonrpc":"2.0","id":` + req.ID.String() + `,"result":{"role":"assistant","content":{"type":"text","text":"from the sampler"}}}`)
	if got := testserver.ResultText(t, sampler.Next()); !strings.Contains(got, "from the sampler") {
		t.Errorf("sampling answered by the client that called: got %s", got)
	}
}

// TestHubRestart: a crash answers the requests in flight with an error, the
// clients stay, and they learn that the new process has other tools.
func TestHubRestart(t *testing.T) {
	th := newTestHub(t, "echo")
	c := th.client("a", "")
	c.Call("1", "slow", `{"ms":20000}`)
	time.Sleep(50 * time.Millisecond) // let it reach the server; not a timing assertion
	th.crash()
	m := c.Next()
	if m.ID.String() != "1" || m.Error == nil || m.Error.Code != CodeUnavailable {
		t.Fatalf("in flight at the crash: got %s", m.AppendJSON(nil))
	}

	// Same tools: no list_changed. Other tools: list_changed.
	th.start("echo")
	c.Call("2", "echo", `{"text":"back"}`)
	if m := c.Next(); testserver.ResultText(t, m) != "back" {
		t.Errorf("after restart: got %s", m.AppendJSON(nil))
	}
	th.crash()
	th.start("echo", "MCPGEN_TESTSERVER_TOOLS=echo")
	if m := c.Next(); m.Method != "notifications/tools/list_changed" {
		t.Errorf("after a restart with other tools: got %s", m.AppendJSON(nil))
	}
	if got := th.hub.Tools(); fmt.Sprint(got) != "[echo]" {
		t.Errorf("tools: got %v", got)
	}
}

// TestHubWaitsForRestart: a request made while the server is down waits for
// the next one.
func TestHubWaitsForRestart(t *testing.T) {
	th := newTestHub(t, "echo")
	c := th.client("a", "")
	th.crash()
	c.Call("1", "echo", `{"text":"waited"}`)
	time.Sleep(50 * time.Millisecond)
	th.start("echo")
	if m := c.Next(); testserver.ResultText(t, m) != "waited" {
		t.Errorf("got %s", m.AppendJSON(nil))
	}

	th.crash()
	th.hub.Fail(fmt.Errorf("server %q failed: test", "test"))
	c.Call("2", "echo", `{"text":"x"}`)
	if m := c.Next(); m.Error == nil || !strings.Contains(m.Error.Message, "failed: test") {
		t.Errorf("while failed: got %s", m.AppendJSON(nil))
	}
}

// TestHubDeadServerNotUsed: a request that comes after the server died,
// before anyone detached it, waits for the next process instead of failing.
func TestHubDeadServerNotUsed(t *testing.T) {
	th := newTestHub(t, "echo")
	c := th.client("a", "")
	th.proc.Kill()
	<-th.up.done // the process is gone; its supervisor has not noticed yet
	th.hub.mu.Lock()
	dropped := th.hub.up == nil
	th.hub.mu.Unlock()
	if !dropped {
		t.Fatal("the hub still offers the dead process to requests")
	}
	c.Call("1", "echo", `{"text":"next process"}`)
	th.start("echo")
	if m := c.Next(); testserver.ResultText(t, m) != "next process" {
		t.Errorf("got %s", m.AppendJSON(nil))
	}
}

// TestHubListChanged: the server's list_changed is re-listed and passed on.
func TestHubListChanged(t *testing.T) {
	th := newTestHub(t, "echo")
	a, b := th.client("a", ""), th.client("b", "")
	a.Call("1", "add", `{}`)
	var sawResult, sawChange bool
	for !(sawResult && sawChange) {
		m := a.Next()
		sawResult = sawResult || m.IsResponse()
		sawChange = sawChange || m.Method == "notifications/tools/list_changed"
	}
	if m := b.Next(); m.Method != "notifications/tools/list_changed" {
		t.Errorf("b: got %s", m.AppendJSON(nil))
	}
	if got := th.hub.Tools(); !strings.Contains(fmt.Sprint(got), "extra") {
		t.Errorf("tools after list_changed: %v", got)
	}
}

// TestHubListChangedWhileListing: a list_changed that comes while the
// hub re-lists the tools after the last one (whose answer was made before
// this change) has it list once more: the change is not lost.
func TestHubListChangedWhileListing(t *testing.T) {
	menv, methods := methodsLog(t)
	th := newTestHub(t, "echo", "MCPGEN_TESTSERVER_LIST_DELAY_MS=300", menv)
	a := th.client("a", "")
	add := func(id string) {
		a.Call(id, "add", `{}`)
		for m := a.Next(); !m.IsResponse(); m = a.Next() {
		}
	}
	add("1")
	// The re-list is asked (and answered 300 ms later, as the tools were):
	// the second change comes meanwhile.
	relisting := func() []string {
		lines := methods()
		if i := slices.Index(lines, "tools/call - -"); i >= 0 {
			return lines[i:]
		}
		return nil
	}
	waitFor(t, relisting, "the re-list", func(l string) bool { return strings.HasPrefix(l, "tools/list ") })
	add("2")
	extras := func() []string {
		return slices.DeleteFunc(th.hub.Tools(), func(name string) bool { return name != "extra" })
	}
	for deadline := time.Now().Add(waitLong); len(extras()) != 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("tools after two changes: %v, want two extra; the server read:\n%s", th.hub.Tools(), strings.Join(methods(), "\n"))
		}
	}
}

// TestHubClose: removing the server disconnects its clients.
func TestHubClose(t *testing.T) {
	th := newTestHub(t, "echo")
	c := th.client("a", "")
	th.hub.Close()
	before, closed := c.Closed()
	if !closed {
		t.Fatal("the client was not disconnected")
	}
	if before > 0 {
		t.Errorf("%d messages after Close, want none", before)
	}
}

// A brokenStdin is the stdin of a server that is going away: every write
// fails, as a write to a closed pipe does. wrote is closed at the first.
type brokenStdin struct {
	mu     sync.Mutex
	writes int
	wrote  chan struct{}
}

func (w *brokenStdin) Write([]byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.writes++; w.writes == 1 {
		close(w.wrote)
	}
	return 0, &os.PathError{Op: "write", Path: "|1", Err: os.ErrClosed}
}

func (w *brokenStdin) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes
}

// waitDetached waits until the hub no longer offers up to requests.
func (th *testHub) waitDetached(up *Upstream) {
	th.t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		th.hub.mu.Lock()
		offered := th.hub.up == up
		th.hub.mu.Unlock()
		if !offered {
			return
		}
		if time.Now().After(deadline) {
			th.t.Fatal("the hub still offers a server it cannot write to")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestHubUnwritableServer: a request whose write to the server fails never
// reached it, so it goes to the next process instead of failing, and the
// hub stops offering the server it cannot write to (no request spins on
// it).
func TestHubUnwritableServer(t *testing.T) {
	th := newTestHub(t, "echo")
	c := th.client("a", "")
	th.crash()
	stdin := &brokenStdin{wrote: make(chan struct{})}
	stdout, silent := io.Pipe() // the server never answers: it is going away
	defer silent.Close()
	bad := th.hub.NewUpstream(stdout, stdin)
	go bad.Run() // ends when silent is closed
	th.hub.Attach(bad, th.init, th.tools)

	c.Call("1", "echo", `{"text":"next process"}`)
	select {
	case <-stdin.wrote:
	case <-time.After(waitLong):
		t.Fatal("the request never reached the server's stdin")
	}
	th.waitDetached(bad)
	th.start("echo")
	if m := c.Next(); m.ID.String() != "1" || testserver.ResultText(t, m) != "next process" {
		t.Errorf("got %s, want the next process's answer", m.AppendJSON(nil))
	}
	if n := stdin.count(); n != 1 {
		t.Errorf("%d writes to the broken stdin, want 1", n)
	}
}

// TestHubStoppingServer reproduces a race seen in CI (TestShare/
// ReloadAndCrash): a client's request takes the hub's server, then the
// supervisor detaches that server and closes its stdin to stop it, then the
// request is sent. It must go to the next process, not fail with "file
// already closed". The interleaving is played step by step: the request as
// the client's read loop forwards it, with the server it took before.
func TestHubStoppingServer(t *testing.T) {
	th := newTestHub(t, "echo")
	// The request, as the client's read loop forwards it, takes the
	// hub's server; then, before it is sent, the supervisor stops the
	// process: detach, then close its stdin.
	var once sync.Once
	var taken *Upstream
	stopped := make(chan struct{})
	th.hub.forwarding = func(up *Upstream) {
		once.Do(func() {
			taken = up
			th.hub.Detach(up)
			if err := th.proc.Stdin().Close(); err != nil {
				t.Error(err)
			}
			close(stopped)
		})
	}
	c := th.client("a", "")
	c.Call("1", "echo", `{"text":"next process"}`)
	select {
	case <-stopped:
	case <-time.After(waitLong):
		t.Fatal("the request never took the server")
	}

	th.proc.Kill()
	<-taken.Done()
	th.start("echo")
	if m := c.Next(); m.ID.String() != "1" || testserver.ResultText(t, m) != "next process" {
		t.Errorf("got %s, want the next process's answer", m.AppendJSON(nil))
	}
}
