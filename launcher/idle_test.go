//go:build unix

package launcher

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/dirs"
	"github.com/mcpgen/mcpgen/launcher/internal/hub"
	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/mcp"
)

// lazyTOML is a test server's table with start and idle_timeout.
func lazyTOML(t testing.TB, name string, lazy bool, idle string, env ...string) string {
	s := testServerTOML(t, name, "echo", env...)
	if lazy {
		s += "start = \"lazy\"\n"
	}
	if idle != "" {
		s += "idle_timeout = \"" + idle + "\"\n"
	}
	return s + "\n"
}

// listTools lists a server's tools through c, with request id id.
func listTools(t *testing.T, c *testserver.Client, id int) []string {
	t.Helper()
	c.Send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/list"}`)
	m := c.Next()
	if m.Error != nil {
		t.Fatalf("tools/list: %v", m.Error)
	}
	var r struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		NextCursor string `json:"nextCursor"`
	}
	if err := json.Unmarshal(m.Result, &r); err != nil {
		t.Fatal(err)
	}
	if r.NextCursor != "" {
		t.Fatalf("tools/list: a next page, %q; want every tool at once (ask with paging)", r.NextCursor)
	}
	var names []string
	for _, tool := range r.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// waitStates waits until the server's states, as logged, are want: a
// state is logged just after status shows it. A hang guard, not a timing
// check.
func (ts *testSession) waitStates(name string, want []ctl.State) {
	ts.t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		got := ts.events.states(name)
		if slices.Equal(got, want) {
			return
		}
		if len(got) > len(want) || time.Now().After(deadline) {
			ts.t.Errorf("server %s: got states %v, want %v", name, got, want)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// noProcess fails if the session's server runs a process.
func noProcess(t *testing.T, ts *testSession, name string) {
	t.Helper()
	st := ts.status()
	if s := server(st, name); s.State != ctl.Idle || s.Pid != 0 {
		t.Fatalf("server %s: got %s, pid %d; want idle, no process:\n%s", name, s.State, s.Pid, dumpStatus(st))
	}
	if procs := tokenProcs(ts.token); len(procs) > 0 {
		t.Fatalf("server %s is idle, but processes run: %+v", name, procs)
	}
}

// TestSessionLazy: a lazy server goes idle -> starting -> ready -> idle ->
// starting -> ready: idle at launch, started by its first client (which has
// no catalog yet to be answered from), stopped once idle for its
// idle_timeout, then answered from its catalog without starting until a
// call starts it again.
func TestSessionLazy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, lazyTOML(t, "srv", true, "100ms", "MCPGEN_TESTSERVER_TOOLS=echo,pid"))
	ts := startSession(t, path, Options{})
	ts.wait("idle", serverIs("srv", ctl.Idle))
	noProcess(t, ts, "srv")
	if st := server(ts.status(), "srv"); st.Start != "lazy" || st.IdleTimeout != "100ms" || len(st.Tools) != 0 {
		t.Errorf("got start %q, idle timeout %q, tools %q; want lazy, 100ms, none known", st.Start, st.IdleTimeout, st.Tools)
	}

	// No catalog yet: initialize starts it.
	c := ts.connect("srv", "a")
	st := ts.wait("ready", serverIs("srv", ctl.Ready))
	pid := server(st, "srv").Pid
	if got := c.CallPid("1"); got != pid {
		t.Errorf("the call was answered by pid %d, want %d", got, pid)
	}
	stateDir, err := StateDir("ws")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(catalogPath(stateDir, "srv")); err != nil {
		t.Errorf("no catalog kept after the handshake: %v", err)
	}
	if st := server(ts.status(), "srv"); st.IdleStopAt != nil {
		t.Errorf("a client is connected: got an idle stop at %v, want none", st.IdleStopAt)
	}

	// The client leaves: stopped once idle.
	c.Close()
	ts.wait("idle again", serverIs("srv", ctl.Idle))
	waitGone(t, "stopped for idleness", pid)
	noProcess(t, ts, "srv")

	// Initialize and tools/list come from the catalog; a call starts it.
	c = ts.connect("srv", "b")
	if got := listTools(t, c, 2); !slices.Equal(got, []string{"echo", "pid"}) {
		t.Errorf("tools/list while idle: got %q, want the catalog's [echo pid]", got)
	}
	noProcess(t, ts, "srv")
	pid2 := c.CallPid("3")
	if pid2 == pid || pid2 == 0 {
		t.Errorf("the call after the idle stop was answered by pid %d, want a new process (not %d)", pid2, pid)
	}
	ts.wait("ready", serverIs("srv", ctl.Ready))
	ts.waitStates("srv", []ctl.State{ctl.Idle, ctl.Starting, ctl.Ready, ctl.Idle, ctl.Starting, ctl.Ready})
	c.Close()
	ts.wait("idle at last", serverIs("srv", ctl.Idle))
}

// TestSessionEagerIdle: an eager server with an idle_timeout starts at
// launch, is stopped once nobody used it for that long, and then behaves
// as a lazy one. status shows when the stop will come.
func TestSessionEagerIdle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, lazyTOML(t, "srv", false, "150ms"))
	ts := startSession(t, path, Options{})
	st := ts.wait("ready", serverIs("srv", ctl.Ready))
	if s := server(st, "srv"); s.Start != "eager" {
		t.Errorf("got start %q, want eager", s.Start)
	}
	ts.wait("idle", serverIs("srv", ctl.Idle))
	noProcess(t, ts, "srv")
	c := ts.connect("srv", "a") // from the catalog of its run
	noProcess(t, ts, "srv")
	c.CallPid("1")
	ts.wait("ready after a call", serverIs("srv", ctl.Ready))
	ts.waitStates("srv", []ctl.State{ctl.Starting, ctl.Ready, ctl.Idle, ctl.Starting, ctl.Ready})
}

// TestSessionIdleStopCancelled: a client that connects as the idle timer
// fires, before the stop is decided, keeps the process.
func TestSessionIdleStopCancelled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, lazyTOML(t, "srv", false, "50ms"))
	fired, resume := make(chan struct{}, 1), make(chan struct{})
	first := true
	opts := Options{}
	opts.hooks.idleStop = func(string) { // the supervisor's goroutine
		if first {
			first = false
			fired <- struct{}{}
			<-resume
		}
	}
	ts := startSession(t, path, opts)
	pid := server(ts.wait("ready", serverIs("srv", ctl.Ready)), "srv").Pid
	select {
	case <-fired:
	case <-time.After(waitLong):
		t.Fatal("the idle timer did not fire")
	}
	c := ts.connect("srv", "late")
	close(resume)
	if got := c.CallPid("1"); got != pid {
		t.Errorf("the call was answered by pid %d, want the process that ran, %d", got, pid)
	}
	time.Sleep(waitQuiet) // well past the idle timeout: the client holds it
	if s := server(ts.status(), "srv"); s.State != ctl.Ready || s.Pid != pid {
		t.Errorf("with a client connected: got %s, pid %d; want ready, pid %d", s.State, s.Pid, pid)
	}
	if got := ts.events.states("srv"); slices.Contains(got, ctl.Idle) {
		t.Errorf("got states %v, want no idle", got)
	}
	c.Close()
	ts.wait("idle once the client left", serverIs("srv", ctl.Idle))
}

// TestSessionIdleStopRace: a client that comes while the process is being
// stopped for idleness (its stdin closed, not exited yet) gets a new
// process, which its call waits for: never an error.
func TestSessionIdleStopRace(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "eof")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	notes, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer notes.Close()
	release := filepath.Join(dir, "exit")
	path := filepath.Join(dir, "mcpgen.toml")
	writeFile(t, path, lazyTOML(t, "srv", false, "50ms", "MCPGEN_TESTSERVER_EOF_NOTE="+fifo, "MCPGEN_TESTSERVER_EXIT_AFTER="+release))
	ts := startSession(t, path, Options{Timing: Timing{StdinGrace: waitLong}})
	pid := server(ts.wait("ready", serverIs("srv", ctl.Ready)), "srv").Pid

	// Stopped for idleness: its stdin is closed, and it waits.
	_ = notes.SetReadDeadline(time.Now().Add(waitLong))
	line, err := bufio.NewReader(notes).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != strconv.Itoa(pid) {
		t.Fatalf("the stop for idleness: got %q, %v; want pid %d told to stop", line, err, pid)
	}
	c := ts.connect("srv", "late") // answered from the catalog
	c.Call("1", "pid", `{}`)
	writeFile(t, release, "") // the old process may exit now
	got, err := strconv.Atoi(testserver.ResultText(t, c.Next()))
	if err != nil || got == pid {
		t.Errorf("the call: got pid %d (%v), want a new process, not %d", got, err, pid)
	}
	ts.wait("ready", serverIs("srv", ctl.Ready))
	ts.waitStates("srv", []ctl.State{ctl.Starting, ctl.Ready, ctl.Idle, ctl.Starting, ctl.Ready})
}

// TestSessionLazyStartFails: a lazy server that fails to start answers
// the request that started it with why, and is idle again; the next request
// tries again. After too many failures the launcher gives up on it; a
// reload (SIGHUP) makes it idle again, not running.
func TestSessionLazyStartFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, testServerTOML(t, "srv", "exit")+"start = \"lazy\"\n")
	ts := startSession(t, path, Options{Timing: Timing{FailureLimit: 3}})
	ts.wait("idle", serverIs("srv", ctl.Idle))
	conn, err := connect(ts.ws, "srv")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	w, r := mcp.NewWriter(conn), mcp.NewReader(conn)
	for i := range 2 {
		if err := w.WriteLine([]byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"a","version":"1"}}}`)); err != nil {
			t.Fatal(err)
		}
		m, err := r.Read()
		if err != nil {
			t.Fatal(err)
		}
		if m.Error == nil || !strings.Contains(m.Error.Message, `server "srv" did not start: `) || !strings.Contains(m.Error.Message, "boom: cannot start") {
			t.Errorf("start %d: got %s, want why the start failed, with its stderr", i+1, m.AppendJSON(nil))
		}
		ts.wait("idle again", serverIs("srv", ctl.Idle))
	}
	if s := server(ts.status(), "srv"); !strings.Contains(s.LastError, "exited with status 1") {
		t.Errorf("got last error %q, want the exit", s.LastError)
	}

	// The third failure gives up: failed, and requests say so at once.
	_ = w.WriteLine([]byte(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`))
	if m, err := r.Read(); err != nil || m.Error == nil {
		t.Fatalf("the third start: got %v, %v; want an error", m, err)
	}
	ts.wait("failed", serverIs("srv", ctl.Failed))
	_ = w.WriteLine([]byte(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`))
	if m, err := r.Read(); err != nil || m.Error == nil || !strings.Contains(m.Error.Message, "giving up") {
		t.Errorf("once failed: got %v, %v; want the failure", m, err)
	}
	ts.s.Reload()
	ts.wait("idle after a reload", serverIs("srv", ctl.Idle))
	noProcess(t, ts, "srv")
}

// TestSessionCatalogCache: a lazy server's catalog is kept under a key of
// what the manifest makes of its process, and answers for it while it is
// idle, across its supervisors; once its command changes, the old catalog
// never answers: tools/list starts the server.
func TestSessionCatalogCache(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "server")
	if err := os.Symlink(self(t), link); err != nil {
		t.Fatal(err)
	}
	mm := &memManifest{dir: dir}
	table := lazyTOML(t, "srv", true, "", "MCPGEN_TESTSERVER_TOOLS=echo,pid")
	mm.set(table)
	ts := startSession(t, "", Options{Load: mm.load})
	ts.wait("idle", serverIs("srv", ctl.Idle))
	c := ts.connect("srv", "a") // no catalog: starts it
	ts.wait("ready", serverIs("srv", ctl.Ready))
	c.Close()

	// Removed, then back: a new supervisor, idle, with the kept catalog.
	mm.set("version = 1\n")
	ts.s.reloadNow(false, nil)
	mm.set(table)
	ts.s.reloadNow(false, nil)
	ts.wait("idle", serverIs("srv", ctl.Idle))
	c = ts.connect("srv", "b")
	if got := listTools(t, c, 1); !slices.Equal(got, []string{"echo", "pid"}) {
		t.Errorf("tools/list from the kept catalog: got %q, want [echo pid]", got)
	}
	noProcess(t, ts, "srv")
	if s := server(ts.status(), "srv"); !slices.Equal(s.Tools, []string{"echo", "pid"}) {
		t.Errorf("status of the idle server: got tools %q, want the catalog's", s.Tools)
	}

	// The same server through another command: the client that saw the
	// old catalog is told it changed, and tools/list starts the server.
	mm.set(strings.Replace(table, tomlString(self(t)), tomlString(link), 1))
	ts.s.reloadNow(false, nil)
	if m := c.Next(); m.Method != "notifications/tools/list_changed" {
		t.Errorf("the command changed: got %s, want tools/list_changed", m.AppendJSON(nil))
	}
	if s := server(ts.status(), "srv"); s.State != ctl.Idle || len(s.Tools) != 0 {
		t.Errorf("the command changed: got %s with tools %q, want idle with none known", s.State, s.Tools)
	}
	if got := listTools(t, c, 2); !slices.Equal(got, []string{"echo", "pid"}) {
		t.Errorf("tools/list after the change: got %q, want the new process's [echo pid]", got)
	}
	if s := server(ts.status(), "srv"); s.Pid == 0 {
		t.Errorf("tools/list with no catalog for the new command: got %s, pid %d; want it started", s.State, s.Pid)
	}
	ts.wait("ready", serverIs("srv", ctl.Ready))
}

// TestCatalogKey: what changes a server's process changes its catalog's
// key; what changes only how it is shown, when it runs, or the
// environment the launcher inherits, does not.
func TestCatalogKey(t *testing.T) {
	base := `[workspace]
dir = "/ws"
user = "u"

[servers.s]
command = "/bin/srv"
args = ["--a"]
env = { K = "v" }
`
	tests := []struct {
		name     string
		toml     string
		env      []string
		sameAsBy bool // same key as base's
	}{
		{"same", base, nil, true},
		{"description", base + "description = \"d\"\n", nil, true},
		{"lazy and idle timeout", base + "start = \"lazy\"\nidle_timeout = \"1m\"\n", nil, true},
		{"tool filter", base + "disabled_tools = [\"x\"]\n", nil, true},
		{"inherited environment", base, []string{"PATH=/elsewhere", "HOME=/h"}, true},
		{"command", strings.Replace(base, "/bin/srv", "/bin/other", 1), nil, false},
		{"args", strings.Replace(base, "--a", "--b", 1), nil, false},
		{"env", strings.Replace(base, `"v"`, `"w"`, 1), nil, false},
		{"cwd", base + "cwd = \"/tmp\"\n", nil, false},
		{"workspace dir", strings.Replace(base, `"/ws"`, `"/ws2"`, 1), nil, false},
		{"a variable it reads", strings.Replace(base, `"v"`, `"${V}"`, 1), []string{"V=v2"}, false},
	}
	key := func(data string, env []string) string {
		m, err := manifest.Parse([]byte(data), "mcpgen.toml", "/m")
		if err != nil {
			t.Fatal(err)
		}
		c, err := m.Context(manifest.ContextOptions{WorkspaceID: "ws"})
		if err != nil {
			t.Fatal(err)
		}
		srv := m.Servers[0]
		env = append([]string{"PATH=/usr/bin"}, env...)
		spec, err := serverSpec(m, srv, c, "/bin/mcpgen", env)
		return catalogKey(m, srv, c, spec, env, err)
	}
	want := key(base, nil)
	for _, tt := range tests {
		if got := key(tt.toml, tt.env); (got == want) != tt.sameAsBy {
			t.Errorf("%s: got key %s, base's %s; want the same: %v", tt.name, got, want, tt.sameAsBy)
		}
	}
}

// TestCatalogFile: a catalog is kept privately and read back under its key
// only; a file that is not one is an error, not a catalog.
func TestCatalogFile(t *testing.T) {
	dir := t.TempDir()
	init := &mcp.InitializeResult{Raw: json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}`)}
	tools := []*mcp.Tool{{Raw: json.RawMessage(`{"name":"a","inputSchema":{"type":"object"},"x-extra":1}`)}}
	// Prompts known, resources known and empty, templates not known.
	lists := hub.Lists{Prompts: []json.RawMessage{json.RawMessage(`{"name":"greet"}`)}, Resources: []json.RawMessage{}}
	if err := saveCatalog(dir, "s", "k1", &catalog{init, tools, lists}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(catalogPath(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		text string
		want bool
	}{{`"prompts":[{"name":"greet"}]`, true}, {`"resources":[]`, true}, {`"resource_templates"`, false}} {
		if got := strings.Contains(string(data), tt.text); got != tt.want {
			t.Errorf("the file holds %s: got %v, want %v:\n%s", tt.text, got, tt.want, data)
		}
	}
	fi, err := os.Stat(catalogPath(dir, "s"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("got %v, %v; want a file of mode 0600", fi, err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, catalogDir))
	if len(entries) != 1 {
		t.Errorf("got %d files in the catalog dir, want 1 (no temporary file left)", len(entries))
	}
	cat, err := loadCatalog(dir, "s", "k1")
	if err != nil || cat == nil {
		t.Fatalf("got %v, %v; want the catalog", cat, err)
	}
	if string(cat.init.Raw) != string(init.Raw) || cat.init.ServerInfo.Name != "s" || len(cat.tools) != 1 || cat.tools[0].Name != "a" || string(cat.tools[0].Raw) != string(tools[0].Raw) {
		t.Errorf("read back: got %s, %+v; want what was kept, as it was", cat.init.Raw, cat.tools)
	}
	if got := cat.lists; len(got.Prompts) != 1 || string(got.Prompts[0]) != `{"name":"greet"}` || got.Resources == nil || len(got.Resources) != 0 || got.Templates != nil {
		t.Errorf("read back lists: got prompts %s, resources %q (nil %v), templates %q; want [greet], known and empty, not known",
			got.Prompts, got.Resources, got.Resources == nil, got.Templates)
	}
	tests := []struct {
		name, server, key string
		file              string // written over the catalog first, when set
		wantErr           bool
	}{
		{"another key", "s", "k2", "", false},
		{"another server", "t", "k1", "", false},
		{"not JSON", "s", "k1", "{", true},
		{"another version", "s", "k1", `{"version":2,"server":"s","key":"k1"}`, false},
		{"too big", "s", "k1", strings.Repeat(" ", maxCatalog+1), true},
	}
	for _, tt := range tests {
		if tt.file != "" {
			if err := os.WriteFile(catalogPath(dir, "s"), []byte(tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		cat, err := loadCatalog(dir, tt.server, tt.key)
		if cat != nil || (err != nil) != tt.wantErr {
			t.Errorf("%s: got %v, %v; want no catalog, error %v", tt.name, cat, err, tt.wantErr)
		}
	}
}

// TestSessionIdleExit: a launcher with no client and no running server
// exits once its idle_exit has passed, removing its socket and releasing
// its lock; a connect as the timer fires, before the exit is decided,
// cancels it; one after is refused with what tells connect to start a new
// launcher.
func TestSessionIdleExit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, lazyTOML(t, "srv", true, "50ms"))
	fired, resume := make(chan struct{}, 1), make(chan struct{})
	decided := make(chan error, 1)
	exits := 0
	opts := Options{IdleExit: 100 * time.Millisecond}
	opts.hooks.idleExit = func() { // the timer's goroutine
		exits++
		if exits == 1 {
			fired <- struct{}{}
			<-resume
		}
	}
	opts.hooks.exiting = func() {
		_, _, err := ctl.Connect(context.Background(), "ws", "srv", nil, nil)
		decided <- err
	}
	ts := startSession(t, path, opts)
	ts.wait("idle", serverIs("srv", ctl.Idle))
	if st := ts.status(); st.IdleExit != "100ms" {
		t.Errorf("got idle exit %q, want 100ms", st.IdleExit)
	}
	select {
	case <-fired:
	case <-time.After(waitLong):
		t.Fatal("the idle-exit timer did not fire")
	}
	c := ts.connect("srv", "late")
	close(resume)
	c.CallPid("1") // starts the lazy server
	time.Sleep(waitQuiet)
	select {
	case err := <-ts.done:
		ts.ended = true
		t.Fatalf("the launcher exited with a client connected: %v", err)
	default:
	}
	if st := ts.status(); st.IdleExitAt != nil {
		t.Errorf("with a client: got an idle exit at %v, want none", st.IdleExitAt)
	}

	c.Close() // the server idles, then the launcher exits
	select {
	case err := <-ts.done:
		ts.ended = true
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(waitLong):
		t.Fatalf("the launcher did not exit once idle:\n%s", dumpStatus(ts.status()))
	}
	var nr *ctl.NotRunningError
	if err := <-decided; !errors.As(err, &nr) || !nr.Exiting {
		t.Errorf("a connect once the exit was decided: got %v, want a launcher that is exiting", err)
	}
	if _, running, err := ctl.IsRunning("ws"); running || err != nil {
		t.Errorf("after the idle exit: got running %v, %v; want the lock released", running, err)
	}
	rt, _ := RuntimeDir("ws")
	if sock, err := dirs.SocketPath(rt, dirs.ControlSocket); err == nil {
		if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after the idle exit: the socket is there: %v", err)
		}
	}
	if !ts.events.has("idle: no client and no running server: exiting") {
		t.Errorf("no idle exit logged:\n%s", ts.events)
	}
}
