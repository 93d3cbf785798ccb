//go:build unix

package launcher

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/internal/sandbox"
	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/dirs"
	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/manifest"
)

// The Session tests run whole sessions in-process, with the test binary as
// their servers (see TestMain). Every process a test starts carries a
// token of its own in its environment (tokenVar), inherited by whatever it
// starts in turn, so that a test can find every process it left behind,
// whichever way it escaped.

const tokenVar = "MCPGEN_TEST_TOKEN"

// testEnv points the runtime and state dirs at directories of the test's
// own, and returns a token that marks the test's processes. The runtime dir
// is short: a unix socket path is limited to 107 bytes.
func testEnv(t *testing.T) (token string) {
	t.Helper()
	rt, err := os.MkdirTemp("", "mcpgen-rt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rt) })
	t.Setenv(dirs.EnvRuntimeDir, rt)
	t.Setenv(dirs.EnvStateDir, t.TempDir())
	return fmt.Sprintf("%s-%d-%d", t.Name(), os.Getpid(), rand.Int64())
}

// self is the test binary, which serves with testserver.EnvMode set.
func self(t testing.TB) string { return testserver.Self(t) }

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	b, _ := json.Marshal(s) // JSON's escapes are TOML's
	return string(b)
}

// testServerTOML is a [servers.NAME] table that runs the test binary in a
// mode; env adds variables ("K=V").
func testServerTOML(t testing.TB, name, mode string, env ...string) string {
	t.Helper()
	vars := []string{testserver.EnvMode + " = " + tomlString(mode)}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars = append(vars, k+" = "+tomlString(v))
	}
	return fmt.Sprintf("[servers.%s]\ncommand = %s\nargs = [\"-test.run=^$\"]\nenv = { %s }\n\n",
		name, tomlString(self(t)), strings.Join(vars, ", "))
}

// A testSession is a Session running in the background, stopped (and
// checked for leftovers) when the test ends.
type testSession struct {
	t      *testing.T
	s      *Session
	ws     string
	token  string
	events *eventLog
	stop   context.CancelFunc // the first signal; the second is s.Hurry
	done   chan error         // Run's result
	ended  bool

	mu   sync.Mutex
	pids map[int]bool // every server pid status showed
}

// startSession runs a session of the manifest at path (which must exist);
// opts may set anything else. Timings are short unless opts says otherwise.
func startSession(t *testing.T, path string, opts Options) *testSession {
	t.Helper()
	token := testEnv(t)
	if opts.Workspace == "" {
		opts.Workspace = "ws"
	}
	if opts.Load == nil {
		opts.Load = func() (*manifest.Manifest, error) { return manifest.Load(path) }
	}
	if opts.Self == "" {
		opts.Self = self(t)
	}
	if opts.Env == nil {
		// A race-enabled test binary sleeps a second at exit unless told
		// not to: the servers are told.
		opts.Env = append(os.Environ(), tokenVar+"="+token, "GORACE=atexit_sleep_ms=0")
	}
	if opts.Context.Dir == "" {
		opts.Context.Dir = t.TempDir()
	}
	if opts.Debounce == 0 {
		opts.Debounce = 20 * time.Millisecond
	}
	events := &eventLog{}
	opts.Log = slog.New(events)
	if opts.Timing.BackoffBase == 0 {
		opts.Timing.BackoffBase = 10 * time.Millisecond
	}
	if opts.Timing.BackoffMax == 0 {
		opts.Timing.BackoffMax = 50 * time.Millisecond
	}
	ts := &testSession{t: t, s: NewSession(opts), ws: opts.Workspace, token: token, events: events, done: make(chan error, 1), pids: map[int]bool{}}
	ctx, stop := context.WithCancel(context.Background())
	ts.stop = stop
	go func() { ts.done <- ts.s.Run(ctx) }()
	t.Cleanup(func() {
		if !ts.ended {
			if err := ts.end(); err != nil {
				t.Errorf("Run: %v", err)
			}
		}
		checkNoLeaks(t, token)
	})
	return ts
}

// end stops the session as SIGINT does and returns Run's result. A session
// that does not end is hurried (a second signal), and the test fails.
func (ts *testSession) end() error {
	ts.t.Helper()
	ts.ended = true
	ts.stop()
	select {
	case err := <-ts.done:
		return err
	case <-time.After(waitLong):
	}
	ts.t.Errorf("the session did not stop within %s: hurrying it", waitLong)
	ts.s.Hurry()
	select {
	case err := <-ts.done:
		return err
	case <-time.After(waitLong):
		ts.t.Fatalf("the session did not stop, even hurried")
	}
	return nil
}

// wait polls the session's status until cond holds; a hang guard, not a
// timing check.
func (ts *testSession) wait(what string, cond func(*ctl.Status) bool) *ctl.Status {
	ts.t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		st := ts.status()
		if cond(st) {
			return st
		}
		select {
		case err := <-ts.done:
			ts.ended = true
			ts.t.Fatalf("waiting for %s: the session ended: %v", what, err)
		default:
		}
		if time.Now().After(deadline) {
			ts.t.Fatalf("waiting for %s: still not there after %s; status:\n%s\nevents:\n%s", what, waitLong, dumpStatus(st), ts.events)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// status returns the session's status, noting the pids it shows.
func (ts *testSession) status() *ctl.Status {
	st := ts.s.Status()
	ts.mu.Lock()
	for _, srv := range st.Servers {
		if srv.Pid != 0 {
			ts.pids[srv.Pid] = true
		}
	}
	ts.mu.Unlock()
	return st
}

// server returns the status of one server; its zero value if there is none.
func server(st *ctl.Status, name string) ctl.ServerStatus {
	for _, s := range st.Servers {
		if s.Name == name {
			return s
		}
	}
	return ctl.ServerStatus{}
}

// serverIs is a wait condition: the server is in state.
func serverIs(name string, state ctl.State) func(*ctl.Status) bool {
	return func(st *ctl.Status) bool { return server(st, name).State == state }
}

// allReady is a wait condition: exactly these servers, every one ready.
func allReady(names ...string) func(*ctl.Status) bool {
	return func(st *ctl.Status) bool {
		if len(st.Servers) != len(names) {
			return false
		}
		for _, s := range st.Servers {
			if !slices.Contains(names, s.Name) || s.State != ctl.Ready {
				return false
			}
		}
		return true
	}
}

func dumpStatus(st *ctl.Status) string {
	b, _ := json.MarshalIndent(st, "", "  ")
	return string(b)
}

// connect opens an MCP connection to a server of workspace, through its
// launcher's hub.
func connect(workspace, server string) (net.Conn, error) {
	conn, _, err := ctl.Connect(context.Background(), workspace, server, nil, nil)
	return conn, err
}

// connect opens an MCP connection to a server through the session's
// control socket, as mcpgen connect does, and initializes it.
func (ts *testSession) connect(server, name string) *testserver.Client {
	ts.t.Helper()
	conn, err := connect(ts.ws, server)
	if err != nil {
		ts.t.Fatal(err)
	}
	return testserver.NewClient(ts.t, conn, name, "")
}

// disconnected waits until the hub closes c's connection; what arrives
// before is ignored.
func disconnected(t *testing.T, c *testserver.Client) {
	t.Helper()
	if _, closed := c.Closed(); !closed {
		t.Fatal("the client is still connected")
	}
}

// An eventLog is a slog.Handler that keeps the session's records, to tell
// which states a server went through.
type eventLog struct {
	mu      sync.Mutex
	records []eventRecord
}

type eventRecord struct {
	msg   string
	attrs map[string]string
}

func (l *eventLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *eventLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *eventLog) WithGroup(string) slog.Handler            { return l }

func (l *eventLog) Handle(_ context.Context, r slog.Record) error {
	rec := eventRecord{msg: r.Message, attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.String()
		return true
	})
	l.mu.Lock()
	l.records = append(l.records, rec)
	l.mu.Unlock()
	return nil
}

// states returns the states a server went through, in order.
func (l *eventLog) states(server string) []ctl.State {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []ctl.State
	for _, r := range l.records {
		if r.attrs["server"] == server && r.attrs["state"] != "" {
			out = append(out, ctl.State(r.attrs["state"]))
		}
	}
	return out
}

// has reports whether a record with msg (and these attributes) was logged.
func (l *eventLog) has(msg string, attrs ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.records {
		if r.msg != msg {
			continue
		}
		ok := true
		for i := 0; i+1 < len(attrs); i += 2 {
			if !strings.Contains(r.attrs[attrs[i]], attrs[i+1]) {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func (l *eventLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, r := range l.records {
		fmt.Fprintf(&b, "  %s %v\n", r.msg, r.attrs)
	}
	return b.String()
}

// tokenProcs returns the live processes (zombies are dead) whose
// environment holds the token.
func tokenProcs(token string) []proc.Proc {
	procs, err := proc.Procs()
	if err != nil {
		return nil
	}
	needle := []byte(tokenVar + "=" + token + "\x00")
	var out []proc.Proc
	for _, p := range procs {
		if p.Dead() || p.Pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + strconv.Itoa(p.Pid) + "/environ")
		if err == nil && bytes.Contains(append(env, 0), needle) {
			out = append(out, p)
		}
	}
	return out
}

// checkNoLeaks fails the test if a process of the test's outlives it: it
// waits for them to go (a SIGKILLed process takes a moment to die), then
// kills what is left so that one test's leak does not spill into others.
func checkNoLeaks(t *testing.T, token string) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		left := tokenProcs(token)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range left {
				t.Errorf("leaked process %d (%s), group %d, parent %d", p.Pid, cmdline(p.Pid), p.Pgid, p.PPid)
				_ = syscall.Kill(p.Pid, syscall.SIGKILL)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cmdline is what process pid runs, for messages.
func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
}

// exited reports whether pid has exited (a zombie has).
func exited(pid int) bool {
	p, err := proc.ReadProc(pid)
	return err != nil || p.Dead()
}

// waitGone waits until every pid has exited.
func waitGone(t *testing.T, what string, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for _, pid := range pids {
		for !exited(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: process %d still runs", what, pid)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// signalOf returns the signal that ended a process, or 0.
func signalOf(err error) syscall.Signal {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return ws.Signal()
		}
	}
	return 0
}

func readPidFile(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		b, err := os.ReadFile(path)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil && pid > 0 {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ---------------------------------------------------------------------------

// TestSessionReady: the servers start in parallel and become ready with
// their tools, each through starting then ready. The two servers here each
// wait, before they exec the test server, until the other has been spawned:
// a launcher that made one ready before it spawned the next could make
// neither ready.
func TestSessionReady(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpgen.toml")
	rendezvous := func(name, me, other string) string {
		script := `touch "$ME"; while [ ! -e "$OTHER" ]; do sleep 0.01; done; exec "$0" -test.run='^$'`
		return fmt.Sprintf("[servers.%s]\ncommand = \"sh\"\nargs = [\"-c\", %s, %s]\nstartup_timeout = \"60s\"\nenv = { MCPGEN_TESTSERVER = \"echo\", ME = %s, OTHER = %s }\n\n",
			name, tomlString(script), tomlString(self(t)), tomlString(filepath.Join(dir, me)), tomlString(filepath.Join(dir, other)))
	}
	writeFile(t, path, rendezvous("a", "a.up", "b.up")+rendezvous("b", "b.up", "a.up")+
		testServerTOML(t, "c", "echo", "MCPGEN_TESTSERVER_TOOLS=echo,pid,add"))
	ts := startSession(t, path, Options{})
	st := ts.wait("every server ready", allReady("a", "b", "c"))

	all := "[echo slow progress crash pid sample roots add]" // listed over four pages
	for _, want := range []struct{ name, tools string }{{"a", all}, {"b", all}, {"c", "[echo pid add]"}} {
		s := server(st, want.name)
		if got := fmt.Sprint(s.Tools); got != want.tools {
			t.Errorf("%s: tools %s, want %s", want.name, got, want.tools)
		}
		if s.Pid == 0 || s.StartedAt == nil || s.Restarts != 0 || s.LastError != "" || s.Kind != "command" {
			t.Errorf("%s: got %+v", want.name, s)
		}
		if got := fmt.Sprint(ts.events.states(want.name)); got != "[starting ready]" {
			t.Errorf("%s: states %s, want [starting ready]", want.name, got)
		}
		if s.Log != filepath.Join(os.Getenv(dirs.EnvStateDir), "ws", want.name+".log") {
			t.Errorf("%s: log %s", want.name, s.Log)
		}
	}
	// Status over the control socket says the same.
	q, err := ctl.QueryStatus(context.Background(), "ws")
	if err != nil {
		t.Fatal(err)
	}
	if q.Pid != os.Getpid() || q.Workspace != "ws" || q.Manifest != path || len(q.Servers) != 3 || q.Servers[0].Name != "a" || q.Servers[2].Pid != server(st, "c").Pid {
		t.Errorf("QueryStatus: got %s", dumpStatus(q))
	}
	// A tool call through the hub reaches the server's process.
	c := ts.connect("c", "tester")
	if pid := c.CallPid("1"); pid != server(st, "c").Pid {
		t.Errorf("pid through the hub: got %d, want %d", pid, server(st, "c").Pid)
	}
	if st := ts.status(); fmt.Sprint(server(st, "c").Clients.Names) != "[tester 1.0]" {
		t.Errorf("clients: got %+v", server(st, "c").Clients)
	}
	pids := []int{server(st, "a").Pid, server(st, "b").Pid, server(st, "c").Pid}
	if err := ts.end(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "after the session", pids...)
	disconnected(t, c)
	for _, name := range []string{"a", "b", "c"} {
		if got := ts.events.states(name); got[len(got)-1] != ctl.Stopped {
			t.Errorf("%s: states %v, want the last stopped", name, got)
		}
	}
	if _, err := ctl.QueryStatus(context.Background(), "ws"); !errors.As(err, new(*ctl.NotRunningError)) {
		t.Errorf("status after the session: got %v, want NotRunningError", err)
	}
}

// TestSessionLocked: a second session of the workspace fails, naming the
// first one's pid, and disturbs nothing.
func TestSessionLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, testServerTOML(t, "a", "echo"))
	ts := startSession(t, path, Options{})
	st := ts.wait("ready", allReady("a"))

	loaded := false
	second := NewSession(Options{Workspace: "ws", Self: self(t), Load: func() (*manifest.Manifest, error) {
		loaded = true
		return manifest.Load(path)
	}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // were it to run, it should end at once
	err := second.Run(ctx)
	var le *dirs.LockedError
	if !errors.As(err, &le) || le.Pid != os.Getpid() || le.Workspace != "ws" {
		t.Fatalf("second session: got %v, want a lockedError with pid %d", err, os.Getpid())
	}
	if want := fmt.Sprintf("(pid %d)", os.Getpid()); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %s", err, want)
	}
	if loaded {
		t.Error("the second session read the manifest")
	}
	if got := server(ts.status(), "a"); got.Pid != server(st, "a").Pid || got.State != ctl.Ready {
		t.Errorf("first session after the second: got %+v", got)
	}
}

// memManifest is a manifest held in memory, for tests that reload when
// they choose: a session of it has no file to watch.
type memManifest struct {
	mu   sync.Mutex
	dir  string
	data string
}

func (mm *memManifest) set(data string) {
	mm.mu.Lock()
	mm.data = data
	mm.mu.Unlock()
}

func (mm *memManifest) load() (*manifest.Manifest, error) {
	mm.mu.Lock()
	data := mm.data
	mm.mu.Unlock()
	return manifest.Parse([]byte(data), "mcpgen.toml", mm.dir)
}

// TestSessionReload: an invalid manifest changes nothing; a valid one
// stops removed servers (disconnecting their clients), starts added ones,
// restarts changed ones and leaves the others alone, a description
// included.
func TestSessionReload(t *testing.T) {
	mm := &memManifest{dir: t.TempDir()}
	mm.set(testServerTOML(t, "keep", "echo") +
		testServerTOML(t, "change", "echo", "X=1") +
		testServerTOML(t, "gone", "echo") +
		testServerTOML(t, "desc", "echo") + "description = \"one\"\n")
	ts := startSession(t, "", Options{Load: mm.load})
	st := ts.wait("ready", allReady("keep", "change", "gone", "desc"))
	pids := map[string]int{}
	for _, s := range st.Servers {
		pids[s.Name] = s.Pid
	}
	keepClient, goneClient := ts.connect("keep", "k"), ts.connect("gone", "g")

	// Invalid: nothing changes, and status says why (the control socket's
	// reload answers with the error too).
	mm.set("[servers.keep]\ncomand = \"x\"\n")
	st, err := ctl.Reload(context.Background(), "ws")
	if err == nil || !strings.Contains(err.Error(), `mcpgen.toml:2:1: server "keep": unknown key "comand"`) {
		t.Errorf("reload of an invalid manifest: got %v", err)
	}
	if st == nil || st.Reload.OK || st.Reload.At == nil || !strings.Contains(st.Reload.Error, `unknown key "comand"`) {
		t.Fatalf("status after an invalid reload: %s", dumpStatus(st))
	}
	var table strings.Builder
	st.WriteTable(&table, time.Now(), false)
	if !strings.Contains(table.String(), "last reload: FAILED") {
		t.Errorf("the table does not show the failed reload:\n%s", table.String())
	}
	for _, s := range st.Servers {
		if s.Pid != pids[s.Name] || s.State != ctl.Ready || s.Restarts != 0 {
			t.Errorf("after an invalid reload: %+v, want pid %d, ready", s, pids[s.Name])
		}
	}
	if len(st.Servers) != 4 {
		t.Errorf("servers after an invalid reload: %s", dumpStatus(st))
	}

	// Valid: gone goes, add comes, change restarts, the others stay.
	mm.set(testServerTOML(t, "keep", "echo") +
		testServerTOML(t, "change", "echo", "X=2") +
		testServerTOML(t, "desc", "echo") + "description = \"two\"\n" +
		testServerTOML(t, "add", "echo"))
	ts.s.reloadNow(false, nil) // returns once removed and changed servers have stopped
	if exited := exited(pids["gone"]) && exited(pids["change"]); !exited {
		t.Errorf("after the reload returned, the removed or the changed server still runs")
	}
	disconnected(t, goneClient)
	st = ts.wait("ready after the reload", allReady("keep", "change", "desc", "add"))
	if !st.Reload.OK || st.Reload.Error != "" {
		t.Errorf("reload status: %+v", st.Reload)
	}
	for _, name := range []string{"keep", "desc"} {
		if s := server(st, name); s.Pid != pids[name] || s.Restarts != 0 {
			t.Errorf("%s: got pid %d, %d restarts; want pid %d, no restart", name, s.Pid, s.Restarts, pids[name])
		}
	}
	if s := server(st, "change"); s.Pid == pids["change"] || s.Restarts != 1 {
		t.Errorf("change: got pid %d, %d restarts; want a new pid", s.Pid, s.Restarts)
	}
	if pid := keepClient.CallPid("1"); pid != pids["keep"] {
		t.Errorf("keep's client: pid %d, want %d", pid, pids["keep"])
	}
	if _, err := connect("ws", "gone"); err == nil || !strings.Contains(err.Error(), `has no server "gone"; it has: add, change, desc, keep`) {
		t.Errorf("connect to a removed server: got %v", err)
	}
	if !ts.events.has("server removed", "server", "gone") {
		t.Errorf("no record of the removal:\n%s", ts.events)
	}
}

// TestSessionReloadRetriesFailed: a reload that changes nothing leaves a
// failed server failed; Reload (SIGHUP) retries it.
func TestSessionReloadRetriesFailed(t *testing.T) {
	dir := t.TempDir()
	path, script := filepath.Join(dir, "mcpgen.toml"), filepath.Join(dir, "late.sh")
	writeFile(t, path, "[servers.late]\ncommand = \"./late.sh\"\n")
	ts := startSession(t, path, Options{})
	ts.wait("failed", serverIs("late", ctl.Failed))

	// The server can start now, but the manifest says the same.
	writeFile(t, script, "#!/bin/sh\nMCPGEN_TESTSERVER=echo exec '"+self(t)+"' -test.run='^$'\n")
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	ts.s.reloadNow(false, nil)
	if s := server(ts.status(), "late"); s.State != ctl.Failed {
		t.Errorf("after a reload without changes: got %+v, want failed", s)
	}
	if got := fmt.Sprint(ts.events.states("late")); got != "[starting failed]" {
		t.Errorf("states: got %s", got)
	}

	ts.s.Reload()
	st := ts.wait("ready after SIGHUP", allReady("late"))
	if s := server(st, "late"); s.LastError != "" || len(s.Tools) == 0 {
		t.Errorf("after SIGHUP: got %+v", s)
	}
}

// TestSessionHotReload: 50 rapid rewrites of the manifest, valid and not,
// end in exactly the last one's servers, with its configuration, and no
// process of the ones in between is left.
func TestSessionHotReload(t *testing.T) {
	for _, how := range []string{"files", "configmap"} {
		t.Run(how, func(t *testing.T) { testHotReload(t, how) })
	}
}

func testHotReload(t *testing.T, how string) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpgen.toml")
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("seed %d", seed)

	// generation returns manifest number i: some of a, b, c, each with the
	// generation in its tool list (so that status shows which one runs),
	// or, if not valid, an invalid one of three kinds.
	type running struct{ name, tools string }
	generation := func(i int, valid bool) (string, []running) {
		if !valid {
			return []string{
				fmt.Sprintf("# %d\n[servers.a\ncommand = \"x\"\n", i),
				fmt.Sprintf("# %d\n[servers.a]\ncommand = \"x\"\nbuiltin = \"files\"\n", i),
				fmt.Sprintf("# %d\nversion = 99\n", i),
			}[i%3], nil
		}
		var servers []running
		var b strings.Builder
		fmt.Fprintf(&b, "# generation %d\n", i)
		for _, name := range []string{"a", "b", "c"} {
			if rng.IntN(3) == 0 && !(name == "c" && len(servers) == 0) {
				continue
			}
			// Every generation changes every server: a state from an
			// earlier generation can never pass for the last one's.
			tools := fmt.Sprintf("echo,%s%d", name, i)
			servers = append(servers, running{name, tools})
			b.WriteString(testServerTOML(t, name, "echo", "MCPGEN_TESTSERVER_TOOLS="+tools))
		}
		return b.String(), servers
	}

	// How the manifest is rewritten.
	var write func(i int, data string)
	switch how {
	case "files":
		write = func(i int, data string) {
			if i%2 == 0 { // an editor's save: a new file renamed over the old
				tmp := filepath.Join(dir, fmt.Sprintf(".mcpgen.toml.%d.tmp", i))
				writeFile(t, tmp, data)
				if err := os.Rename(tmp, path); err != nil {
					t.Fatal(err)
				}
			} else {
				writeFile(t, path, data) // in place: truncated, then written
			}
		}
	case "configmap":
		// A Kubernetes ConfigMap volume: mcpgen.toml -> ..data/mcpgen.toml,
		// ..data -> ..N; an update writes ..N+1, renames a new ..data link
		// over the old one, and removes ..N.
		write = func(i int, data string) {
			ts := fmt.Sprintf("..%d", i)
			writeFile(t, filepath.Join(dir, ts, "mcpgen.toml"), data)
			tmp := filepath.Join(dir, "..data_tmp")
			if err := os.Symlink(ts, tmp); err != nil {
				t.Fatal(err)
			}
			old, _ := os.Readlink(filepath.Join(dir, "..data"))
			if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
				t.Fatal(err)
			}
			if old != "" {
				os.RemoveAll(filepath.Join(dir, old))
			}
		}
		if err := os.Symlink("..data/mcpgen.toml", path); err != nil {
			t.Fatal(err)
		}
	}

	data, _ := generation(0, true)
	write(0, data)
	ts := startSession(t, path, Options{})
	ts.wait("the first generation", func(st *ctl.Status) bool {
		for _, s := range st.Servers {
			if s.State != ctl.Ready {
				return false
			}
		}
		return len(st.Servers) > 0
	})

	// Note every pid while the manifest changes.
	sampling, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-sampling:
				return
			case <-time.After(2 * time.Millisecond):
				ts.status()
			}
		}
	}()
	var final []running
	const n = 50
	for i := 1; i <= n; i++ {
		valid := i == n || i%3 != 0
		data, servers := generation(i, valid)
		write(i, data)
		final = servers
		time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond) // some changes settle, some do not
	}
	close(sampling)
	<-sampled

	var names []string
	for _, s := range final {
		names = append(names, s.name)
	}
	st := ts.wait("the last generation: "+fmt.Sprint(final), func(st *ctl.Status) bool {
		if !allReady(names...)(st) || !st.Reload.OK {
			return false
		}
		for _, want := range final {
			if got := strings.Join(server(st, want.name).Tools, ","); got != want.tools {
				return false
			}
		}
		return true
	})
	finalPids := map[int]bool{}
	for _, s := range st.Servers {
		finalPids[s.Pid] = true
	}

	// Every process of the test is a final server's, or on its way out.
	deadline := time.Now().Add(waitLong)
	for {
		var strays []proc.Proc
		for _, p := range tokenProcs(ts.token) {
			if !finalPids[p.Pgid] {
				strays = append(strays, p)
			}
		}
		if len(strays) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of earlier generations left: %+v", strays)
		}
		time.Sleep(10 * time.Millisecond)
	}
	ts.mu.Lock()
	seen := len(ts.pids)
	for pid := range ts.pids {
		if !finalPids[pid] && !exited(pid) {
			t.Errorf("pid %d of an earlier generation still runs", pid)
		}
	}
	ts.mu.Unlock()
	t.Logf("%d server processes seen; final %v", seen, final)

	// Nothing moves any more: the same processes a while later.
	time.Sleep(waitQuiet)
	st = ts.status()
	for _, s := range st.Servers {
		if !finalPids[s.Pid] || s.State != ctl.Ready {
			t.Errorf("after the last generation settled: %+v", s)
		}
	}
}

// TestSessionBuildWatch: a server with a build step and watched sources is
// rebuilt and restarted when they change; a failed build keeps the running
// process and says why; a change during a build is not lost.
func TestSessionBuildWatch(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpgen.toml")
	sq := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	// The build writes bin/srv, a script that runs the test server with
	// the tools that src/tools.txt lists. It fails while src/broken.txt
	// exists, and waits while ./hold does (after reading the tools).
	build := `tools=$(cat src/tools.txt)
if [ -e src/broken.txt ]; then echo "src/broken.txt:1: syntax error" >&2; exit 1; fi
touch building
while [ -e hold ]; do sleep 0.01; done
mkdir -p bin
printf '#!/bin/sh\nMCPGEN_TESTSERVER=echo MCPGEN_TESTSERVER_TOOLS=%s exec %s -test.run=^$\n' "$tools" ` + sq(sq(self(t))) + ` > bin/srv.tmp
chmod +x bin/srv.tmp
mv bin/srv.tmp bin/srv
`
	writeFile(t, path, fmt.Sprintf("[servers.srv]\nbuild = [\"sh\", \"-c\", %s]\ncommand = \"./bin/srv\"\nwatch = [\"src/*.txt\"]\n", tomlString(build)))
	tools := filepath.Join(dir, "src", "tools.txt")
	writeFile(t, tools, "echo,v1")
	ts := startSession(t, path, Options{})
	ready := func(what, tools string, not int) ctl.ServerStatus {
		t.Helper()
		return server(ts.wait(what, func(st *ctl.Status) bool {
			s := server(st, "srv")
			return s.State == ctl.Ready && s.Pid != not && strings.Join(s.Tools, ",") == tools
		}), "srv")
	}
	first := ready("the first build", "echo,v1", 0)

	// A change: rebuilt, restarted.
	writeFile(t, tools, "echo,v2")
	second := ready("the rebuild", "echo,v2", first.Pid)
	waitGone(t, "the process before the rebuild", first.Pid)
	if !ts.events.has("rebuilt", "server", "srv") {
		t.Errorf("no record of the rebuild:\n%s", ts.events)
	}

	// A failed build: the process stays, the error shows.
	writeFile(t, filepath.Join(dir, "src", "broken.txt"), "oops")
	st := ts.wait("the failed build", func(st *ctl.Status) bool {
		return strings.Contains(server(st, "srv").LastError, "build failed")
	})
	s := server(st, "srv")
	if s.Pid != second.Pid || s.State != ctl.Ready || !strings.Contains(s.LastError, "src/broken.txt:1: syntax error") {
		t.Errorf("after a failed build: got %+v, want pid %d, ready, and the build's output", s, second.Pid)
	}
	if err := os.Remove(filepath.Join(dir, "src", "broken.txt")); err != nil {
		t.Fatal(err)
	}
	third := ready("the build after the fix", "echo,v2", second.Pid)
	if third.LastError != "" {
		t.Errorf("after a good build: last error %q", third.LastError)
	}

	// A change while a build runs (held after it read the sources): one
	// more build follows, with the last change.
	hold, building := filepath.Join(dir, "hold"), filepath.Join(dir, "building")
	writeFile(t, hold, "")
	os.Remove(building)
	writeFile(t, tools, "echo,v3")
	for deadline := time.Now().Add(waitLong); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(building); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the build did not start")
		}
	}
	writeFile(t, tools, "echo,v4")
	time.Sleep(waitQuiet) // the change reaches the session while the build is held
	os.Remove(hold)
	ready("the build after the build", "echo,v4", third.Pid)
}

// syncBuffer is a bytes.Buffer that a child's output and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// buildMcpgen builds the mcpgen command into dir, with the race detector
// when this test has it (which also shares the build cache with it).
func buildMcpgen(t *testing.T, dir string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build mcpgen with: %v", err)
	}
	bin := filepath.Join(dir, "mcpgen")
	args := []string{"build", "-o", bin}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" && s.Value == "true" {
				args = append(args, "-race")
			}
		}
	}
	cmd := exec.Command(goTool, append(args, "../cmd/mcpgen")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build mcpgen: %v\n%s", err, out)
	}
	return bin
}

// TestSessionKilledLauncher: a launcher killed with SIGKILL leaves its
// servers running; the next launch of the workspace ends them (a server
// that ignores SIGTERM, and a grandchild whose server is gone) before it
// starts its own. This needs real launcher processes: the mcpgen command.
func TestSessionKilledLauncher(t *testing.T) {
	if testing.Short() {
		t.Skip("builds mcpgen")
	}
	token := testEnv(t)
	dir := t.TempDir()
	bin := buildMcpgen(t, dir)
	path, gcFile := filepath.Join(dir, "mcpgen.toml"), filepath.Join(dir, "gc.pid")
	writeFile(t, path, testServerTOML(t, "stubborn", "noterm")+
		testServerTOML(t, "parent", "grandchild", "MCPGEN_TESTSERVER_PIDFILE="+gcFile)+
		testServerTOML(t, "plain", "echo"))

	type launcher struct {
		cmd    *exec.Cmd
		out    *syncBuffer
		err    error         // how it exited, once exited is closed
		exited chan struct{} // closed once waited for
	}
	launch := func() *launcher {
		t.Helper()
		cmd := exec.Command(bin, "launch", "--workspace", "ws", "--manifest", path, "--dir", dir, "--log-format", "json")
		cmd.Env = append(os.Environ(), tokenVar+"="+token, "GORACE=atexit_sleep_ms=0")
		out := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		l := &launcher{cmd: cmd, out: out, exited: make(chan struct{})}
		go func() { l.err = cmd.Wait(); close(l.exited) }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-l.exited
		})
		return l
	}
	wait := func(l *launcher) error {
		t.Helper()
		select {
		case <-l.exited:
			return l.err
		case <-time.After(waitLong):
			t.Fatalf("the launcher did not exit:\n%s", l.out)
		}
		return nil
	}
	waitReady := func(out *syncBuffer) *ctl.Status {
		t.Helper()
		deadline := time.Now().Add(waitLong)
		for {
			st, err := ctl.QueryStatus(context.Background(), "ws")
			if err == nil && allReady("stubborn", "parent", "plain")(st) {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("the launcher is not ready: %v\n%s\nits output:\n%s", err, dumpStatus(st), out)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	first := launch()
	st := waitReady(first.out)
	stubborn, parent := server(st, "stubborn").Pid, server(st, "parent").Pid
	sleeper := readPidFile(t, gcFile)
	if st.Pid != first.cmd.Process.Pid {
		t.Fatalf("status pid %d, want the launcher's %d", st.Pid, first.cmd.Process.Pid)
	}

	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := wait(first); signalOf(err) != syscall.SIGKILL {
		t.Fatalf("the first launcher: got %v, want killed", err)
	}
	if _, err := ctl.QueryStatus(context.Background(), "ws"); !errors.As(err, new(*ctl.NotRunningError)) {
		t.Errorf("status with the launcher dead: got %v, want NotRunningError", err)
	}
	// What it left: the stubborn server, and the parent's grandchild (the
	// parent itself left at its stdin's EOF).
	if exited(stubborn) || exited(sleeper) {
		t.Fatalf("after kill -9: stubborn server %d exited: %v, grandchild %d exited: %v; want both running",
			stubborn, exited(stubborn), sleeper, exited(sleeper))
	}

	waitGone(t, "the parent server, at its stdin's EOF", parent)
	os.Remove(gcFile)
	second := launch()
	st = waitReady(second.out)
	waitGone(t, "what the killed launcher left", stubborn, sleeper)
	for _, s := range st.Servers {
		if s.Pid == stubborn || s.Pid == parent {
			t.Errorf("%s: pid %d is the killed launcher's", s.Name, s.Pid)
		}
	}
	if next := readPidFile(t, gcFile); exited(next) {
		t.Errorf("the new grandchild %d is not running", next)
	}
	// The parent left at its stdin's EOF: what was left running is the
	// stubborn server and the parent's grandchild.
	if want := fmt.Sprintf(`"msg":"ended processes an earlier launcher left behind","workspace":"ws","pids":[%d,%d]`, min(stubborn, sleeper), max(stubborn, sleeper)); !strings.Contains(second.out.String(), want) {
		t.Errorf("the second launcher's log lacks %s:\n%s", want, second.out)
	}

	// SIGINT, then a second one, which skips the stubborn server's graces:
	// exit 0, and nothing left.
	if err := second.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(waitLong); !strings.Contains(second.out.String(), `"msg":"stopping: a second signal skips the grace periods"`); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the launcher did not begin to stop:\n%s", second.out)
		}
	}
	if err := second.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := wait(second); err != nil || !strings.Contains(second.out.String(), `"msg":"session stopped"`) {
		t.Errorf("the second launcher: got %v, want exit 0 and a clean stop:\n%s", err, second.out)
	}
	checkNoLeaks(t, token)
}

// TestSessionThirdParty runs the reference servers (server-everything,
// -filesystem, -memory) under a session: they become ready with their
// tools, answer through the hub, and stop cleanly with nothing left.
//
// They come from e2e/clients/install.sh, which sets SERVER_*;
// without those the test is skipped, unless MCPGEN_E2E=1 says it must
// run (CI's e2e step), in which case their absence fails it.
func TestSessionThirdParty(t *testing.T) {
	vars := map[string]string{}
	var missing []string
	for _, name := range []string{"SERVER_EVERYTHING", "SERVER_FILESYSTEM", "SERVER_MEMORY"} {
		if vars[name] = os.Getenv(name); vars[name] == "" {
			missing = append(missing, name)
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing = append(missing, "node on PATH")
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("third-party servers: %s missing (eval \"$(e2e/clients/install.sh)\" from the repository)", strings.Join(missing, ", "))
		if os.Getenv("MCPGEN_E2E") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	t.Run("plain", func(t *testing.T) { testThirdParty(t, node, vars, "") })
	// In a default sandbox (the workspace, no network), as the manifest's
	// [sandbox] gives every server, they still work: their programs
	// (node, the script and its node_modules) are their own.
	t.Run("sandboxed", func(t *testing.T) {
		r := sandbox.Inspect(&sandbox.Policy{Network: sandbox.Network{Mode: sandbox.NetNone}})
		if len(r.NotEnforced) > 0 {
			t.Logf("the sandbox here: %s", r)
		}
		testThirdParty(t, node, vars, "[sandbox]\nenabled = true\n")
	})
}

func testThirdParty(t *testing.T, node string, vars map[string]string, top string) {
	dir := t.TempDir()
	files := filepath.Join(dir, "files")
	writeFile(t, filepath.Join(files, "hello.txt"), "hello from the workspace\n")
	path := filepath.Join(dir, "mcpgen.toml")
	writeFile(t, path, top+fmt.Sprintf(`
[servers.everything]
command = %[1]s
args = [%[2]s, "stdio"]
startup_timeout = "60s"

[servers.filesystem]
command = %[1]s
args = [%[3]s, %[4]s]
startup_timeout = "60s"

[servers.memory]
command = %[1]s
args = [%[5]s]
env = { MEMORY_FILE_PATH = "${WORKSPACE_DIR}/memory.jsonl" }
startup_timeout = "60s"
`, tomlString(node), tomlString(vars["SERVER_EVERYTHING"]), tomlString(vars["SERVER_FILESYSTEM"]), tomlString(files), tomlString(vars["SERVER_MEMORY"])))
	ts := startSession(t, path, Options{Context: manifest.ContextOptions{Dir: dir}})
	st := ts.wait("the third-party servers ready", allReady("everything", "filesystem", "memory"))
	for name, tool := range map[string]string{"everything": "echo", "filesystem": "read_text_file", "memory": "create_entities"} {
		if s := server(st, name); !slices.Contains(s.Tools, tool) {
			t.Errorf("%s: tools %v, want %s among them", name, s.Tools, tool)
		}
	}

	c := ts.connect("everything", "e2e")
	c.Call("1", "echo", `{"message":"through the hub"}`)
	if got := testserver.ResultText(t, c.Next()); !strings.Contains(got, "through the hub") {
		t.Errorf("everything echo: got %q", got)
	}
	fs := ts.connect("filesystem", "e2e")
	fs.Call("1", "read_text_file", fmt.Sprintf(`{"path":%s}`, tomlString(filepath.Join(files, "hello.txt"))))
	if got := testserver.ResultText(t, fs.Next()); !strings.Contains(got, "hello from the workspace") {
		t.Errorf("filesystem read_text_file: got %q", got)
	}
	mem := ts.connect("memory", "e2e")
	mem.Call("1", "create_entities", `{"entities":[{"name":"Alice","entityType":"person","observations":["prefers tea"]}]}`)
	if got := testserver.ResultText(t, mem.Next()); !strings.Contains(got, "Alice") {
		t.Errorf("memory create_entities: got %q", got)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "memory.jsonl")); err != nil || !strings.Contains(string(b), "prefers tea") {
		t.Errorf("memory's file in the workspace: %q, %v", b, err)
	}

	var pids []int
	for _, s := range st.Servers {
		pids = append(pids, s.Pid)
	}
	if err := ts.end(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "the third-party servers", pids...)
	for _, name := range []string{"everything", "filesystem", "memory"} {
		if got := ts.events.states(name); got[len(got)-1] != ctl.Stopped {
			t.Errorf("%s: states %v", name, got)
		}
	}
}
