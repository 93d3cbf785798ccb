package e2e

// The share tests run the real mcpgen binary as a workspace launcher and
// drive it with real clients: the official TypeScript SDK client (through
// testdata/share/agents.mjs), raw JSON-RPC lines over `mcpgen connect`, and
// the real Codex and Claude Code through configs from `emit --launcher`.
// They check the issue "share one server process among every agent of a
// workspace": one process per server whatever the number of clients, every
// answer to its own caller, ids, progress tokens and cancellations remapped,
// crashes and reloads survived by the clients, and nothing left behind.
//
// They run only with MCPGEN_E2E=1, after the clients' install script:
//
//	eval "$(e2e/clients/install.sh)"
//	MCPGEN_E2E=1 go test -count=1 -v -run Share ./e2e/
//
// Nothing here asserts a timing: every wait is a generous guard against a
// hang, and the benchmarks live in testdata/share/bench.sh.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Hang guards, never timing assertions.
const (
	shareWait  = 30 * time.Second
	shareQuiet = 500 * time.Millisecond // how long "nothing more arrives" is watched
)

func TestShare(t *testing.T) {
	if os.Getenv("MCPGEN_E2E") != "1" {
		t.Skip("end-to-end: set MCPGEN_E2E=1 (after eval \"$(e2e/clients/install.sh)\")")
	}
	for _, v := range []string{"MCP_NODE_MODULES", "SERVER_EVERYTHING"} {
		if os.Getenv(v) == "" {
			t.Fatalf("%s is not set: run eval \"$(e2e/clients/install.sh)\" first", v)
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node: %v", err)
	}
	bin := shareBinary(t)

	t.Run("EightClients", func(t *testing.T) { shareEightClients(t, bin) })
	t.Run("Crash", func(t *testing.T) { shareCrash(t, bin) })
	t.Run("CancelProgressRaw", func(t *testing.T) { shareCancelProgressRaw(t, bin) })
	t.Run("CancelProgressSDK", func(t *testing.T) { shareCancelProgressSDK(t, bin) })
	t.Run("Everything", func(t *testing.T) { shareEverything(t, bin) })
	t.Run("ReloadAndCrash", func(t *testing.T) { shareReloadAndCrash(t, bin) })
	t.Run("Agents", func(t *testing.T) { shareAgentsCodexClaude(t, bin) })
}

// shareBinary builds mcpgen for the share tests, with the race detector
// when the tests have it, so that the launcher's races surface too.
func shareBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mcpgen")
	args := []string{"build", "-o", bin}
	if shareRace() {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "../cmd/mcpgen")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(cmd.Args[1:], " "), err, out)
	}
	return bin
}

func shareRace() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" && s.Value == "true" {
			return true
		}
	}
	return false
}

// shareTestdata returns the absolute path of a file of testdata/share.
func shareTestdata(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "share", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A shareWorld is one workspace with directories of its own: runtime,
// state, HOME, the workspace dir, and the manifest.
type shareWorld struct {
	t        *testing.T
	bin      string
	ws       string // the workspace id, unique: it marks every process of the test
	dir      string
	wsDir    string
	manifest string
	env      []string
}

func newShareWorld(t *testing.T, bin string) *shareWorld {
	t.Helper()
	// A short base: the control socket's path must fit in 107 bytes.
	dir, err := os.MkdirTemp("", "mcpgen-share-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	w := &shareWorld{
		t:        t,
		bin:      bin,
		ws:       fmt.Sprintf("share-%08x", rand.Uint32()),
		dir:      dir,
		wsDir:    filepath.Join(dir, "ws"),
		manifest: filepath.Join(dir, "mcpgen.toml"),
	}
	for _, d := range []string{"ws", "home", "run", "state"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	drop := []string{"HOME", "MCPGEN_WORKSPACE", "MCPGEN_RUNTIME_DIR", "MCPGEN_STATE_DIR", "XDG_RUNTIME_DIR",
		"XDG_STATE_HOME", "XDG_CONFIG_HOME", "CODEX_HOME", "CLAUDE_CONFIG_DIR"}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !slices.Contains(drop, k) {
			w.env = append(w.env, kv)
		}
	}
	w.env = append(w.env,
		"HOME="+filepath.Join(dir, "home"),
		"MCPGEN_RUNTIME_DIR="+filepath.Join(dir, "run"),
		"MCPGEN_STATE_DIR="+filepath.Join(dir, "state"),
	)
	// Whatever a failed test leaves running goes, the launcher first so
	// that it stops its servers itself.
	t.Cleanup(w.reap)
	return w
}

// writeManifest writes the manifest: body holds the servers.
func (w *shareWorld) writeManifest(body string) {
	w.t.Helper()
	text := fmt.Sprintf("version = 1\n\n[workspace]\ndir = %q\n\n%s", w.wsDir, body)
	// Atomically, as editors do: the launcher must never read half a file.
	tmp := w.manifest + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		w.t.Fatal(err)
	}
	if err := os.Rename(tmp, w.manifest); err != nil {
		w.t.Fatal(err)
	}
}

// echoServer is the manifest table of a test server: testdata/share/server.mjs,
// marked with the workspace id and its name so that its processes can be
// counted.
func (w *shareWorld) echoServer(name string, env map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[servers.%s]\ncommand = \"node\"\nargs = [%q, \"--instance\", %q]\n", name, shareTestdata(w.t, "server.mjs"), w.marker(name))
	if len(env) > 0 {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(env)) {
			kv = append(kv, fmt.Sprintf("%s = %q", k, env[k]))
		}
		fmt.Fprintf(&b, "env = { %s }\n", strings.Join(kv, ", "))
	}
	return b.String() + "\n"
}

// marker marks the processes of a server in their command line.
func (w *shareWorld) marker(server string) string { return w.ws + "-" + server }

// run runs mcpgen to completion in the world's environment.
func (w *shareWorld) run(args ...string) ([]byte, error) {
	cmd := exec.Command(w.bin, args...)
	cmd.Env = w.env
	cmd.Dir = w.dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("mcpgen %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

// connectCmd is the command an agent runs to reach server.
func (w *shareWorld) connectCmd(server string) []string {
	return []string{w.bin, "connect", "--workspace", w.ws, "--manifest", w.manifest, server}
}

// shareStatus is what `mcpgen status --json` says, as far as the tests look.
type shareStatus struct {
	Pid     int `json:"pid"`
	Servers []struct {
		Name      string   `json:"name"`
		State     string   `json:"state"`
		Pid       int      `json:"pid"`
		Restarts  int      `json:"restarts"`
		Tools     []string `json:"tools"`
		LastError string   `json:"last_error"`
		Clients   struct {
			Count int      `json:"count"`
			Names []string `json:"names"`
		} `json:"clients"`
	} `json:"servers"`
	Reload struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	} `json:"reload"`
}

func (w *shareWorld) status() (*shareStatus, error) {
	out, err := w.run("status", "--workspace", w.ws, "--json")
	if err != nil {
		return nil, err
	}
	var st shareStatus
	if err := json.Unmarshal(out, &st); err != nil {
		return nil, fmt.Errorf("status --json: %v\n%s", err, out)
	}
	return &st, nil
}

// server returns the status of one server; it fails the test when there is
// no launcher or no such server.
func (w *shareWorld) server(name string) (st *shareStatus, i int) {
	w.t.Helper()
	st, err := w.status()
	if err != nil {
		w.t.Fatal(err)
	}
	for i := range st.Servers {
		if st.Servers[i].Name == name {
			return st, i
		}
	}
	w.t.Fatalf("status shows no server %q", name)
	return nil, 0
}

// waitStatus polls the status until ok holds.
func (w *shareWorld) waitStatus(what string, ok func(*shareStatus) bool) *shareStatus {
	w.t.Helper()
	deadline := time.Now().Add(shareWait)
	var last *shareStatus
	var lastErr error
	for time.Now().Before(deadline) {
		st, err := w.status()
		if err == nil && ok(st) {
			return st
		}
		last, lastErr = st, err
		time.Sleep(50 * time.Millisecond)
	}
	b, _ := json.MarshalIndent(last, "", "  ")
	w.t.Fatalf("waiting for %s: status %s, error %v", what, b, lastErr)
	return nil
}

// readyPid waits until server is ready and returns its pid.
func (w *shareWorld) readyPid(name string) int {
	w.t.Helper()
	var pid int
	w.waitStatus(name+" ready", func(st *shareStatus) bool {
		for _, s := range st.Servers {
			if s.Name == name && s.State == "ready" {
				pid = s.Pid
				return true
			}
		}
		return false
	})
	return pid
}

// clientCount waits until status shows n clients of server.
func (w *shareWorld) clientCount(name string, n int) {
	w.t.Helper()
	w.waitStatus(fmt.Sprintf("%d clients of %s", n, name), func(st *shareStatus) bool {
		for _, s := range st.Servers {
			if s.Name == name {
				return s.Clients.Count == n
			}
		}
		return false
	})
}

// pids returns the processes whose command line holds an argument that
// contains marker (zombies have none).
func sharePids(marker string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, arg := range bytes.Split(b, []byte{0}) {
			if bytes.Contains(arg, []byte(marker)) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// serverPids returns the processes of a server of this world.
func (w *shareWorld) serverPids(name string) []int { return sharePids(w.marker(name)) }

// gone waits until no process holds marker in its command line.
func (w *shareWorld) gone(marker string) {
	w.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := sharePids(marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			w.t.Errorf("processes left behind (marker %s): %s", marker, describePids(left))
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// nothingLeft requires that no process of the world remains: none holds
// the workspace id (servers, connects, launchers) or the world's directory
// (the manifest: launchers, `mcpgen serve`, connects of portable configs)
// in its command line.
func (w *shareWorld) nothingLeft() {
	w.t.Helper()
	w.gone(w.ws)
	w.gone(w.dir)
}

func describePids(pids []int) string {
	var out []string
	for _, pid := range pids {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		out = append(out, fmt.Sprintf("%d: %s", pid, bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
	}
	return strings.Join(out, "; ")
}

// reap ends what a failed test left: a launcher of the world (gracefully
// first, so that it stops its servers), then anything marked with the
// workspace id.
func (w *shareWorld) reap() {
	if st, err := w.status(); err == nil && st.Pid > 0 {
		_ = syscall.Kill(st.Pid, syscall.SIGTERM)
		waitProcessGone(st.Pid, 20*time.Second)
	}
	for _, pid := range sharePids(w.ws) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// waitProcessGone waits for a process that is not our child to end: gone
// from /proc, or a zombie that its new parent has yet to reap.
func waitProcessGone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		// pid (comm) STATE ...: comm may hold spaces and parentheses.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'Z' {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// shareLaunch is a launcher that the test started.
type shareLaunch struct {
	w    *shareWorld
	cmd  *exec.Cmd
	log  *shareBuffer
	done chan struct{}
	err  error
}

// launch starts `mcpgen launch` for the world, with short backoffs so that
// crashed servers come back quickly.
func (w *shareWorld) launch() *shareLaunch {
	w.t.Helper()
	cmd := exec.Command(w.bin, "launch", "--workspace", w.ws, "--manifest", w.manifest,
		"--log-format", "text", "--backoff", "100ms", "--debounce", "50ms")
	cmd.Env = w.env
	cmd.Dir = w.dir
	l := &shareLaunch{w: w, cmd: cmd, log: &shareBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = l.log, l.log
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	go func() { l.err = cmd.Wait(); close(l.done) }()
	w.t.Cleanup(func() {
		select {
		case <-l.done:
		default:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-l.done:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				<-l.done
			}
		}
		if w.t.Failed() {
			w.t.Logf("launcher log:\n%s", l.log.String())
		}
	})
	return l
}

// stop sends SIGTERM and requires a clean exit: status 0, no data race
// reported.
func (l *shareLaunch) stop() {
	t := l.w.t
	t.Helper()
	_ = l.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-l.done:
	case <-time.After(shareWait):
		t.Fatalf("the launcher did not exit within %s of SIGTERM", shareWait)
	}
	if l.err != nil {
		t.Errorf("launcher: %v\n%s", l.err, l.log.String())
	}
	checkNoRace(t, "launcher", l.log.String())
}

func checkNoRace(t *testing.T, what, log string) {
	t.Helper()
	if strings.Contains(log, "DATA RACE") {
		t.Errorf("%s reported a data race:\n%s", what, log)
	}
}

// shareBuffer is a bytes.Buffer that a process and the test share.
type shareBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *shareBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *shareBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// shareAgents drives testdata/share/agents.mjs: clients of the official
// TypeScript SDK, in one node process, each running its own `mcpgen
// connect`.
type shareAgents struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *shareBuffer
	done   chan struct{}

	mu      sync.Mutex
	next    int
	waiters map[string]chan json.RawMessage
	events  []shareEvent
	changed chan struct{} // closed and replaced when an event comes
}

type shareEvent struct {
	Event  string          `json:"event"`
	Client string          `json:"client"`
	Target string          `json:"target"`
	Error  *shareRPCError  `json:"error"`
	Params json.RawMessage `json:"params"`
}

type shareRPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *shareRPCError) String() string {
	if e == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%d %s", e.Code, e.Message)
}

func (w *shareWorld) agents() *shareAgents {
	w.t.Helper()
	cmd := exec.Command("node", shareTestdata(w.t, "agents.mjs"))
	cmd.Env = w.env
	cmd.Dir = w.dir
	a := &shareAgents{t: w.t, cmd: cmd, stderr: &shareBuffer{}, done: make(chan struct{}),
		waiters: map[string]chan json.RawMessage{}, changed: make(chan struct{})}
	cmd.Stderr = a.stderr
	var err error
	if a.stdin, err = cmd.StdinPipe(); err != nil {
		w.t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	go a.read(stdout)
	w.t.Cleanup(func() {
		a.close()
		checkNoRace(w.t, "a connect", a.stderr.String())
		if w.t.Failed() {
			w.t.Logf("agents' stderr (the connects' included):\n%s", a.stderr.String())
		}
	})
	return a
}

func (a *shareAgents) read(stdout io.Reader) {
	defer close(a.done)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		line := slices.Clone(sc.Bytes())
		var head struct {
			Tag   string `json:"tag"`
			Event string `json:"event"`
		}
		if err := json.Unmarshal(line, &head); err != nil {
			continue
		}
		a.mu.Lock()
		if head.Event != "" {
			var ev shareEvent
			_ = json.Unmarshal(line, &ev)
			a.events = append(a.events, ev)
			close(a.changed)
			a.changed = make(chan struct{})
		} else if ch := a.waiters[head.Tag]; ch != nil {
			delete(a.waiters, head.Tag)
			ch <- line
		}
		a.mu.Unlock()
	}
	_ = a.cmd.Wait()
}

// start sends a command and returns where its answer will come.
func (a *shareAgents) start(op map[string]any) (string, <-chan json.RawMessage) {
	a.t.Helper()
	a.mu.Lock()
	a.next++
	tag := "t" + strconv.Itoa(a.next)
	ch := make(chan json.RawMessage, 1)
	a.waiters[tag] = ch
	a.mu.Unlock()
	op["tag"] = tag
	b, _ := json.Marshal(op)
	if _, err := a.stdin.Write(append(b, '\n')); err != nil {
		a.t.Fatalf("agents: %v", err)
	}
	return tag, ch
}

// await waits for a command's answer and decodes it into v.
func (a *shareAgents) await(ch <-chan json.RawMessage, v any) {
	a.t.Helper()
	select {
	case line := <-ch:
		var fail struct {
			Fail *shareRPCError `json:"fail"`
		}
		_ = json.Unmarshal(line, &fail)
		if fail.Fail != nil {
			a.t.Fatalf("agents: %s", fail.Fail)
		}
		if v != nil {
			if err := json.Unmarshal(line, v); err != nil {
				a.t.Fatalf("agents: %v: %s", err, line)
			}
		}
	case <-a.done:
		a.t.Fatalf("agents exited:\n%s", a.stderr.String())
	case <-time.After(2 * shareWait):
		a.t.Fatal("agents: no answer")
	}
}

func (a *shareAgents) do(op map[string]any, v any) {
	a.t.Helper()
	_, ch := a.start(op)
	a.await(ch, v)
}

type shareConnected struct {
	ServerInfo struct {
		Name string `json:"name"`
	} `json:"serverInfo"`
	Capabilities struct {
		Tools struct {
			ListChanged bool `json:"listChanged"`
		} `json:"tools"`
	} `json:"capabilities"`
	Tools []string `json:"tools"`
}

func (a *shareAgents) connect(client string, cmd []string) shareConnected {
	a.t.Helper()
	var r shareConnected
	a.do(map[string]any{"op": "connect", "client": client, "cmd": cmd}, &r)
	return r
}

type shareCallResult struct {
	Result *struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"result"`
	Error    *shareRPCError    `json:"error"`
	Progress []json.RawMessage `json:"progress"`
}

func (r *shareCallResult) text() string {
	if r.Result == nil || len(r.Result.Content) == 0 {
		return ""
	}
	return r.Result.Content[0].Text
}

// call calls a tool and requires a result.
func (a *shareAgents) call(client, tool string, args map[string]any) string {
	a.t.Helper()
	var r shareCallResult
	a.do(map[string]any{"op": "call", "client": client, "name": tool, "args": args}, &r)
	if r.Error != nil || r.Result == nil || r.Result.IsError {
		a.t.Fatalf("%s: %s: error %s, result %+v", client, tool, r.Error, r.Result)
	}
	return r.text()
}

func (a *shareAgents) pid(client string) int {
	a.t.Helper()
	text := a.call(client, "pid", nil)
	pid, err := strconv.Atoi(text)
	if err != nil {
		a.t.Fatalf("%s: pid answered %q", client, text)
	}
	return pid
}

type shareEchoResult struct {
	Calls  int             `json:"calls"`
	Errors []shareRPCError `json:"errors"`
	Wrong  []struct {
		Sent string `json:"sent"`
		Got  string `json:"got"`
	} `json:"wrong"`
}

// eventsOf returns the events of a kind ("" for all), for one client ("" for all).
func (a *shareAgents) eventsOf(kind, client string) []shareEvent {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []shareEvent
	for _, ev := range a.events {
		if (kind == "" || ev.Event == kind) && (client == "" || ev.Client == client) {
			out = append(out, ev)
		}
	}
	return out
}

// waitEvent waits until ok holds for the events.
func (a *shareAgents) waitEvent(what string, ok func() bool) {
	a.t.Helper()
	deadline := time.After(shareWait)
	for {
		a.mu.Lock()
		changed := a.changed
		a.mu.Unlock()
		if ok() {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			a.t.Fatalf("waiting for %s; events: %+v", what, a.eventsOf("", ""))
		}
	}
}

// noTrouble fails the test if a client saw an SDK error or lost its
// connection.
func (a *shareAgents) noTrouble() {
	a.t.Helper()
	for _, ev := range a.eventsOf("error", "") {
		a.t.Errorf("client %s: SDK error: %s", ev.Client, ev.Error)
	}
	for _, ev := range a.eventsOf("close", "") {
		a.t.Errorf("client %s: connection closed", ev.Client)
	}
}

// close ends the agents process: its clients close their connects.
func (a *shareAgents) close() {
	a.stdin.Close()
	select {
	case <-a.done:
	case <-time.After(shareWait):
		_ = a.cmd.Process.Kill()
		<-a.done
		a.t.Errorf("agents did not exit at stdin's end")
	}
}

// shareLine is a raw client: JSON-RPC lines over one `mcpgen connect`, so
// that the test chooses ids and tokens and sees every message.
type shareLine struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd
	w    io.WriteCloser
	in   chan shareMsg
	done chan struct{}
}

type shareMsg struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *shareRPCError  `json:"error,omitempty"`
}

func (m shareMsg) String() string { b, _ := json.Marshal(m); return string(b) }

// line starts a raw client of server and initializes it.
func (w *shareWorld) line(name, server string) *shareLine {
	w.t.Helper()
	args := w.connectCmd(server)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = w.env
	stderr := &shareBuffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	l := &shareLine{t: w.t, name: name, cmd: cmd, w: stdin, in: make(chan shareMsg, 1000), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var m shareMsg
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				l.t.Errorf("%s: unreadable line %q", name, sc.Bytes())
				continue
			}
			l.in <- m
		}
		_ = cmd.Wait()
	}()
	w.t.Cleanup(func() {
		l.w.Close()
		select {
		case <-l.done:
		case <-time.After(shareWait):
			_ = cmd.Process.Kill()
			<-l.done
			l.t.Errorf("%s: connect did not exit at stdin's end", name)
		}
		checkNoRace(w.t, "connect", stderr.String())
	})
	l.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"` + name + `","version":"1"}}}`)
	if m := l.next(); m.Error != nil || string(m.ID) != "0" {
		w.t.Fatalf("%s: initialize: %s", name, m)
	}
	l.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return l
}

func (l *shareLine) send(line string) {
	l.t.Helper()
	if _, err := io.WriteString(l.w, line+"\n"); err != nil {
		l.t.Fatalf("%s: %v", l.name, err)
	}
}

func (l *shareLine) call(id, tool string, args any, token string) {
	l.t.Helper()
	a, _ := json.Marshal(args)
	meta := ""
	if token != "" {
		meta = `,"_meta":{"progressToken":` + token + `}`
	}
	l.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + string(a) + meta + `}}`)
}

func (l *shareLine) next() shareMsg {
	l.t.Helper()
	select {
	case m, ok := <-l.in:
		if !ok {
			l.t.Fatalf("%s: connect closed the connection", l.name)
		}
		return m
	case <-time.After(shareWait):
		l.t.Fatalf("%s: nothing from connect", l.name)
	}
	return shareMsg{}
}

// until returns the messages up to and including the response with id.
func (l *shareLine) until(id string) []shareMsg {
	l.t.Helper()
	var got []shareMsg
	for {
		m := l.next()
		got = append(got, m)
		if string(m.ID) == id && m.Method == "" {
			return got
		}
	}
}

// quiet requires that nothing arrives for a while.
func (l *shareLine) quiet() {
	l.t.Helper()
	select {
	case m := <-l.in:
		l.t.Errorf("%s: unexpected %s", l.name, m)
	case <-time.After(shareQuiet):
	}
}

func resultText(t *testing.T, m shareMsg) string {
	t.Helper()
	if m.Error != nil {
		t.Fatalf("error: %s", m)
	}
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(m.Result, &r); err != nil || len(r.Content) == 0 {
		t.Fatalf("not a tool result: %s", m)
	}
	return r.Content[0].Text
}

// 1. Eight clients of the official SDK, each through its own connect,
// 1000 calls each to one server process: every answer is its caller's.
func shareEightClients(t *testing.T, bin string) {
	w := newShareWorld(t, bin)
	w.writeManifest(w.echoServer("echo", nil))
	l := w.launch()
	pid := w.readyPid("echo")
	a := w.agents()

	const clients, calls = 8, 1000
	var names []string
	for i := range clients {
		name := fmt.Sprintf("c%d", i)
		names = append(names, name)
		r := a.connect(name, w.connectCmd("echo"))
		if r.ServerInfo.Name != "share-test-server" || !slices.Contains(r.Tools, "echo") {
			t.Fatalf("%s: connected to %+v", name, r)
		}
		if !r.Capabilities.Tools.ListChanged {
			t.Errorf("%s: tools.listChanged not advertised", name)
		}
	}
	for _, name := range names {
		if got := a.pid(name); got != pid {
			t.Errorf("%s: the server's pid tool says %d, status says %d", name, got, pid)
		}
	}

	// All at once; four calls in flight per client, so that ids interleave.
	var waits []<-chan json.RawMessage
	for _, name := range names {
		_, ch := a.start(map[string]any{"op": "echo", "client": name, "calls": calls, "concurrency": 4, "prefix": name})
		waits = append(waits, ch)
	}
	for i, ch := range waits {
		var r shareEchoResult
		a.await(ch, &r)
		if r.Calls != calls || len(r.Errors) > 0 || len(r.Wrong) > 0 {
			t.Errorf("%s: %d of %d calls answered; %d errors, the first: %v; %d answers not its own, the first: %v",
				names[i], r.Calls, calls, len(r.Errors), r.Errors[:min(5, len(r.Errors))], len(r.Wrong), r.Wrong[:min(5, len(r.Wrong))])
		}
	}

	st, i := w.server("echo")
	s := st.Servers[i]
	if s.Pid != pid || s.Restarts != 0 || s.Clients.Count != clients {
		t.Errorf("status after the calls: pid %d (want %d), restarts %d (want 0), clients %d (want %d)",
			s.Pid, pid, s.Restarts, s.Clients.Count, clients)
	}
	if procs := w.serverPids("echo"); len(procs) != 1 || procs[0] != pid {
		t.Errorf("server processes: %s; want only %d", describePids(procs), pid)
	}
	a.noTrouble()

	a.close()
	w.clientCount("echo", 0)
	l.stop()
	w.nothingLeft()
}

// 2. A server killed mid-flight: every outstanding request gets an error
// (not the SDK's own timeout), the next call reaches the restarted
// process, and the clients hear that its tools changed.
func shareCrash(t *testing.T, bin string) {
	w := newShareWorld(t, bin)
	toolsFile := filepath.Join(w.dir, "tools.txt")
	w.writeManifest(w.echoServer("echo", map[string]string{"SHARE_TOOLS": toolsFile}))
	l := w.launch()
	pid := w.readyPid("echo")
	a := w.agents()

	names := []string{"a", "b", "c"}
	for _, name := range names {
		a.connect(name, w.connectCmd("echo"))
	}
	// Slow calls that would take a minute, bounded by a 45s timeout of the
	// SDK's: an SDK timeout (-32001) would mean the hub left them hanging.
	var slow []<-chan json.RawMessage
	for _, name := range names {
		for k := range 3 {
			_, ch := a.start(map[string]any{"op": "call", "client": name, "name": "slow",
				"args": map[string]any{"ms": 60000, "tag": fmt.Sprintf("%s-%d", name, k)}, "timeoutMs": 45000})
			slow = append(slow, ch)
		}
	}
	// A call that overtakes them has reached the server after them: they
	// are in flight.
	for _, name := range names {
		if got := a.pid(name); got != pid {
			t.Fatalf("%s: pid %d, want %d", name, got, pid)
		}
	}

	// The next process offers one more tool.
	if err := os.WriteFile(toolsFile, []byte("extra"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for _, ch := range slow {
		var r shareCallResult
		a.await(ch, &r)
		if r.Error == nil || r.Error.Code != -32000 {
			t.Errorf("a call in flight when the server was killed: error %s, result %+v; want a -32000 error", r.Error, r.Result)
		}
	}

	for _, name := range names {
		a.waitEvent(name+" told that the tools changed", func() bool { return len(a.eventsOf("list_changed", name)) > 0 })
	}
	newPid := w.readyPid("echo")
	for _, name := range names {
		if got := a.pid(name); got != newPid || got == pid {
			t.Errorf("%s: after the restart the pid tool says %d; status says %d, the killed one was %d", name, got, newPid, pid)
		}
		var r struct {
			Tools []string `json:"tools"`
		}
		a.do(map[string]any{"op": "list", "client": name}, &r)
		if !slices.Contains(r.Tools, "extra") {
			t.Errorf("%s: tools after the restart: %v; want extra among them", name, r.Tools)
		}
		if got := a.call(name, "extra", nil); got != "extra" {
			t.Errorf("%s: extra answered %q", name, got)
		}
	}
	st, i := w.server("echo")
	if s := st.Servers[i]; s.Restarts != 1 || s.Clients.Count != len(names) {
		t.Errorf("status: restarts %d (want 1), clients %d (want %d)", s.Restarts, s.Clients.Count, len(names))
	}
	if procs := w.serverPids("echo"); len(procs) != 1 || procs[0] != newPid {
		t.Errorf("server processes: %s; want only %d", describePids(procs), newPid)
	}
	a.noTrouble()
	a.close()
	l.stop()
	w.nothingLeft()
}

// 3a. Two raw clients that use the same ids and the same progress tokens:
// progress reaches only its owner, under its own token; a cancellation
// cancels only the canceller's request, and it gets no answer.
func shareCancelProgressRaw(t *testing.T, bin string) {
	w := newShareWorld(t, bin)
	w.writeManifest(w.echoServer("echo", nil))
	l := w.launch()
	w.readyPid("echo")
	clients := map[string]*shareLine{"A": w.line("A", "echo"), "B": w.line("B", "echo")}
	order := []string{"A", "B"}

	// Progress, with a string token and then an integer one, on the same
	// ids in both clients.
	for _, tc := range []struct{ id, token string }{{`1`, `"tok"`}, {`"x"`, `7`}} {
		for _, n := range order {
			clients[n].call(tc.id, "progress", map[string]any{"steps": 4, "ms": 20, "tag": n + tc.id}, tc.token)
		}
		for _, n := range order {
			msgs := clients[n].until(tc.id)
			var steps []string
			for _, m := range msgs[:len(msgs)-1] {
				var p struct {
					Token    json.RawMessage `json:"progressToken"`
					Progress int             `json:"progress"`
					Message  string          `json:"message"`
				}
				_ = json.Unmarshal(m.Params, &p)
				if m.Method != "notifications/progress" || string(p.Token) != tc.token || p.Message != n+tc.id {
					t.Errorf("%s: got %s; want progress of %s with token %s", n, m, n+tc.id, tc.token)
				}
				steps = append(steps, strconv.Itoa(p.Progress))
			}
			if got := strings.Join(steps, ","); got != "1,2,3,4" {
				t.Errorf("%s: progress %s, want 1,2,3,4", n, got)
			}
			if got := resultText(t, msgs[len(msgs)-1]); got != n+tc.id {
				t.Errorf("%s: result %q, want %q", n, got, n+tc.id)
			}
		}
	}

	// Both start a slow call under id 2; only A cancels it. A's is
	// stubborn: the server answers it anyway, after 1s (before B's), and
	// the hub must drop that answer.
	clients["A"].call("2", "slow", map[string]any{"ms": 1000, "tag": "A2", "stubborn": true}, `"tok"`)
	clients["B"].call("2", "slow", map[string]any{"ms": 1500, "tag": "B2"}, `"tok"`)
	for _, n := range order {
		clients[n].call("3", "pid", nil, "") // overtakes: id 2 is at the server
		if msgs := clients[n].until("3"); len(msgs) != 1 {
			t.Errorf("%s: before the answer to 3: %v", n, msgs[:len(msgs)-1])
		}
	}
	clients["A"].send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"changed my mind"}}`)
	clients["A"].call("4", "cancelled", nil, "")
	msgs := clients["A"].until("4")
	if got := resultText(t, msgs[len(msgs)-1]); got != `["A2"]` {
		t.Errorf("the server cancelled %s; want [\"A2\"]", got)
	}
	if len(msgs) != 1 {
		t.Errorf("A: after its cancel: %v", msgs[:len(msgs)-1])
	}
	// B's call completes; A's never answers.
	msgs = clients["B"].until("2")
	if got := resultText(t, msgs[len(msgs)-1]); got != "B2" || len(msgs) != 1 {
		t.Errorf("B: %v; want only the result B2", msgs)
	}
	clients["B"].call("4", "cancelled", nil, "")
	if got := resultText(t, clients["B"].until("4")[0]); got != `["A2"]` {
		t.Errorf("the server cancelled %s; want [\"A2\"]", got)
	}
	// The server answered A's id 2 before B's: had the hub passed it on,
	// it would come before this.
	clients["A"].call("5", "pid", nil, "")
	if msgs := clients["A"].until("5"); len(msgs) != 1 {
		t.Errorf("A: an answer after its cancel: %v", msgs[:len(msgs)-1])
	}
	clients["A"].quiet()
	clients["B"].quiet()

	// A cancellation of an id that is not in flight changes nothing.
	clients["B"].send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
	clients["B"].call("6", "cancelled", nil, "")
	if got := resultText(t, clients["B"].until("6")[0]); got != `["A2"]` {
		t.Errorf("the server cancelled %s; want [\"A2\"]", got)
	}
	for _, n := range order {
		clients[n].w.Close()
		<-clients[n].done
	}
	w.clientCount("echo", 0)
	l.stop()
	w.nothingLeft()
}

// 3b. The same with the SDK's own ids and tokens: its clients count
// from the same start, so two clients that do the same use the same ids,
// and progress tokens (the SDK's token is the request's id). First against
// the test server, whose progress messages name their request; then
// against the reference server-everything, whose long-running tool goes on
// sending progress after a cancellation.
func shareCancelProgressSDK(t *testing.T, bin string) {
	w := newShareWorld(t, bin)
	w.writeManifest(w.echoServer("echo", nil) + fmt.Sprintf("[servers.everything]\ncommand = \"node\"\nargs = [%q, \"stdio\", %q]\n",
		os.Getenv("SERVER_EVERYTHING"), w.marker("everything")))
	l := w.launch()
	w.readyPid("echo")
	w.readyPid("everything")
	a := w.agents()
	both := []string{"A", "B"}
	for _, n := range both {
		a.connect(n, w.connectCmd("echo"))
	}

	// The same id and token in both clients: each gets its own progress.
	chans := map[string]<-chan json.RawMessage{}
	for _, n := range both {
		_, chans[n] = a.start(map[string]any{"op": "call", "client": n, "name": "progress",
			"args": map[string]any{"steps": 5, "ms": 20, "tag": n}, "progress": true})
	}
	for _, n := range both {
		var r shareCallResult
		a.await(chans[n], &r)
		got := strings.Join(sdkProgress(a, n, r.Progress), " ")
		want := fmt.Sprintf("1:%[1]s 2:%[1]s 3:%[1]s 4:%[1]s 5:%[1]s", n)
		if r.Error != nil || r.text() != n || got != want {
			t.Errorf("%s: error %s, result %q, progress %q; want result %q, progress %q", n, r.Error, r.text(), got, n, want)
		}
	}

	// The same id again in both; A aborts (the SDK sends
	// notifications/cancelled): the server cancels A's request only. A's
	// is stubborn: the server answers it anyway, before B's, and the hub
	// must drop that answer (A's SDK would report it as an error).
	tags := map[string]string{}
	for _, n := range both {
		args := map[string]map[string]any{
			"A": {"ms": 1000, "tag": "A-slow", "stubborn": true},
			"B": {"ms": 1500, "tag": "B-slow"},
		}[n]
		tags[n], chans[n] = a.start(map[string]any{"op": "call", "client": n, "name": "slow", "args": args, "progress": true})
	}
	for _, n := range both {
		a.pid(n) // overtakes: the slow calls are at the server
	}
	a.do(map[string]any{"op": "abort", "target": tags["A"]}, nil)
	var ra, rb shareCallResult
	a.await(chans["A"], &ra)
	if ra.Error == nil {
		t.Errorf("A: the aborted call answered %q", ra.text())
	}
	if got := a.call("A", "cancelled", nil); got != `["A-slow"]` {
		t.Errorf("the server cancelled %s; want [\"A-slow\"]", got)
	}
	a.await(chans["B"], &rb)
	if rb.Error != nil || rb.text() != "B-slow" {
		t.Errorf("B: error %s, result %q; want B-slow", rb.Error, rb.text())
	}
	if got := a.call("B", "cancelled", nil); got != `["A-slow"]` {
		t.Errorf("the server cancelled %s; want [\"A-slow\"]", got)
	}

	// server-everything: both start the same long-running operation, under
	// the same id and token; A aborts after its first progress. The server
	// goes on sending progress for A's token: none may reach A (its SDK
	// would report a progress notification for an unknown token).
	for _, n := range both {
		a.connect(n+"e", w.connectCmd("everything"))
	}
	args := map[string]any{"duration": 2, "steps": 4}
	for _, n := range both {
		tags[n], chans[n] = a.start(map[string]any{"op": "call", "client": n + "e", "name": "trigger-long-running-operation",
			"args": args, "progress": true})
	}
	a.waitEvent("A's first progress", func() bool {
		for _, ev := range a.eventsOf("progress", "Ae") {
			if ev.Target == tags["A"] {
				return true
			}
		}
		return false
	})
	a.do(map[string]any{"op": "abort", "target": tags["A"]}, nil)
	var rae, rbe shareCallResult
	a.await(chans["A"], &rae)
	if rae.Error == nil {
		t.Errorf("Ae: the aborted call answered %q", rae.text())
	}
	a.await(chans["B"], &rbe)
	if got := strings.Join(sdkProgress(a, "Be", rbe.Progress), " "); rbe.Error != nil ||
		!strings.Contains(rbe.text(), "Long running operation completed") || got != "1: 2: 3: 4:" {
		t.Errorf("Be: error %s, result %q, progress %q (want 1: 2: 3: 4:)", rbe.Error, rbe.text(), got)
	}
	time.Sleep(shareQuiet) // what the server still sends for A has arrived by then
	a.noTrouble()
	a.close()
	l.stop()
	w.nothingLeft()
}

// sdkProgress returns the progress that a client of agents.mjs got for a
// call, as "progress:message". The TypeScript SDK client handles a
// notification a microtask later than a response that came in the same
// read: the last progress of a call, written just before its result, then
// finds its handler gone, and the SDK reports it as a progress notification
// for an unknown token (it does so without mcpgen too). Those count as
// received here, once; every other error event of the client stays for
// noTrouble to report.
func sdkProgress(a *shareAgents, client string, got []json.RawMessage) []string {
	a.t.Helper()
	const unknown = "Received a progress notification for an unknown token: "
	a.mu.Lock()
	kept := a.events[:0:0]
	for _, ev := range a.events {
		if ev.Event == "error" && ev.Client == client && ev.Error != nil && strings.HasPrefix(ev.Error.Message, unknown) {
			var n struct {
				Params json.RawMessage `json:"params"`
			}
			if json.Unmarshal([]byte(strings.TrimPrefix(ev.Error.Message, unknown)), &n) == nil {
				got = append(got, n.Params)
				continue
			}
		}
		kept = append(kept, ev)
	}
	a.events = kept
	a.mu.Unlock()
	var out []string
	for _, p := range got {
		var pp struct {
			Progress int    `json:"progress"`
			Message  string `json:"message"`
		}
		_ = json.Unmarshal(p, &pp)
		out = append(out, fmt.Sprintf("%d:%s", pp.Progress, pp.Message))
	}
	return out
}

// 4. server-everything, which asks its client roots/list, shared by two
// clients: the hub answers with the workspace, and the launcher shuts down
// cleanly.
func shareEverything(t *testing.T, bin string) {
	w := newShareWorld(t, bin)
	w.writeManifest(fmt.Sprintf("[servers.everything]\ncommand = \"node\"\nargs = [%q, \"stdio\", %q]\n",
		os.Getenv("SERVER_EVERYTHING"), w.marker("everything")))
	l := w.launch()
	pid := w.readyPid("everything")
	a := w.agents()
	root := (&url.URL{Scheme: "file", Path: w.wsDir}).String()
	for _, n := range []string{"A", "B"} {
		r := a.connect(n, w.connectCmd("everything"))
		if r.ServerInfo.Name != "mcp-servers/everything" {
			t.Fatalf("%s: server %+v", n, r.ServerInfo)
		}
		if got := a.call(n, "echo", map[string]any{"message": "from " + n}); got != "Echo: from "+n {
			t.Errorf("%s: echo answered %q", n, got)
		}
	}
	// The server asked roots/list 350ms after it was initialized, of the
	// hub: what it holds is the workspace.
	deadline := time.Now().Add(shareWait)
	for _, n := range []string{"A", "B"} {
		for {
			got := a.call(n, "get-roots-list", nil)
			if strings.Contains(got, root) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: get-roots-list: %q; want %s in it", n, got, root)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	st, i := w.server("everything")
	if s := st.Servers[i]; s.Pid != pid || s.Clients.Count != 2 || s.Restarts != 0 {
		t.Errorf("status: pid %d (want %d), clients %d (want 2), restarts %d", s.Pid, pid, s.Clients.Count, s.Restarts)
	}
	if procs := w.serverPids("everything"); len(procs) != 1 || procs[0] != pid {
		t.Errorf("server processes: %s; want only %d", describePids(procs), pid)
	}

	// The launcher stops with the clients still connected: they are told
	// (their connects exit), and nothing is left.
	l.stop()
	for _, n := range []string{"A", "B"} {
		a.waitEvent(n+"'s connection closed", func() bool { return len(a.eventsOf("close", n)) > 0 })
	}
	w.nothingLeft()
	for _, ev := range a.eventsOf("error", "") {
		t.Errorf("client %s: SDK error: %s", ev.Client, ev.Error)
	}
	log, _ := os.ReadFile(filepath.Join(w.dir, "state", w.ws, "everything.log"))
	if bytes.Contains(log, []byte("Failed to request roots")) {
		t.Errorf("server-everything could not get its roots:\n%s", log)
	}
	a.close()
}

// 6. Two agents of one workspace, each with a client of two servers,
// calling all the time: a reload that changes one server leaves the other's
// process alone, a crash restarts the crashed one, and neither agent sees
// an error but for the requests in flight at the crash.
func shareReloadAndCrash(t *testing.T, bin string) {
	w := newShareWorld(t, bin)
	manifest := func(version string) string {
		return w.echoServer("alpha", nil) + w.echoServer("beta", map[string]string{"VERSION": version})
	}
	w.writeManifest(manifest("1"))
	l := w.launch()
	alpha, beta := w.readyPid("alpha"), w.readyPid("beta")
	a := w.agents()
	type client struct{ name, server string }
	var clients []client
	for _, agent := range []string{"x", "y"} {
		for _, server := range []string{"alpha", "beta"} {
			c := client{agent + "-" + server, server}
			a.connect(c.name, w.connectCmd(server))
			clients = append(clients, c)
		}
	}
	pids := func(want map[string]int) {
		t.Helper()
		for _, c := range clients {
			if got := a.pid(c.name); got != want[c.server] {
				t.Errorf("%s: pid %d, want %d", c.name, got, want[c.server])
			}
		}
	}
	pids(map[string]int{"alpha": alpha, "beta": beta})

	// Load: each client keeps two echo calls in flight until told to stop.
	const inflight = 2
	stop := make(chan struct{})
	type tally struct {
		calls  int
		errors []shareRPCError
		wrong  int
	}
	results := make([]tally, len(clients))
	rounds := make([]atomic.Int64, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			for round := 0; ; round++ {
				select {
				case <-stop:
					return
				default:
				}
				var r shareEchoResult
				a.do(map[string]any{"op": "echo", "client": c.name, "calls": 50, "concurrency": inflight,
					"prefix": fmt.Sprintf("%s-%d", c.name, round)}, &r)
				results[i].calls += r.Calls
				results[i].errors = append(results[i].errors, r.Errors...)
				results[i].wrong += len(r.Wrong)
				rounds[i].Add(1)
			}
		})
	}
	// busy waits until every client has finished two more rounds of
	// calls: the load runs across what happens meanwhile, and after it.
	busy := func() {
		t.Helper()
		var from []int64
		for i := range rounds {
			from = append(from, rounds[i].Load())
		}
		deadline := time.Now().Add(shareWait)
		for i := range rounds {
			for rounds[i].Load() < from[i]+2 {
				if time.Now().After(deadline) {
					t.Fatalf("%s: no calls are completing", clients[i].name)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	busy()

	// A reload that changes beta only.
	w.writeManifest(manifest("2"))
	st := w.waitStatus("beta restarted", func(st *shareStatus) bool {
		for _, s := range st.Servers {
			if s.Name == "beta" && s.State == "ready" && s.Pid != beta && s.Pid != 0 {
				return true
			}
		}
		return false
	})
	for _, s := range st.Servers {
		switch s.Name {
		case "alpha":
			if s.Pid != alpha || s.Restarts != 0 {
				t.Errorf("alpha after beta's reload: pid %d (want %d), restarts %d (want 0)", s.Pid, alpha, s.Restarts)
			}
		case "beta":
			beta = s.Pid
		}
	}
	busy()

	// A crash of alpha.
	if err := syscall.Kill(alpha, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	st = w.waitStatus("alpha restarted", func(st *shareStatus) bool {
		for _, s := range st.Servers {
			if s.Name == "alpha" && s.State == "ready" && s.Pid != alpha && s.Pid != 0 {
				return true
			}
		}
		return false
	})
	for _, s := range st.Servers {
		if s.Name == "alpha" {
			alpha = s.Pid
		}
	}
	busy()
	close(stop)
	wg.Wait()

	pids(map[string]int{"alpha": alpha, "beta": beta})
	for i, c := range clients {
		r := results[i]
		// beta restarted gracefully: its process answered what it had
		// read. alpha was killed: at most the calls in flight failed.
		allowed := 0
		if c.server == "alpha" {
			allowed = inflight
		}
		if r.calls == 0 || r.wrong > 0 || len(r.errors) > allowed {
			t.Errorf("%s: %d calls, %d answers not its own, %d errors (at most %d allowed), the first: %v",
				c.name, r.calls, r.wrong, len(r.errors), allowed, r.errors[:min(5, len(r.errors))])
		}
		for _, e := range r.errors[:min(5, len(r.errors))] {
			if e.Code != -32000 || !strings.Contains(e.Message, "retry") {
				t.Errorf("%s: error %s; want the hub's -32000 for a request in flight", c.name, &e)
			}
		}
		t.Logf("%s: %d calls, %d errors", c.name, r.calls, len(r.errors))
	}
	for _, server := range []string{"alpha", "beta"} {
		if procs := w.serverPids(server); len(procs) != 1 {
			t.Errorf("%s processes: %s; want one", server, describePids(procs))
		}
	}
	a.noTrouble()
	a.close()
	l.stop()
	w.nothingLeft()
}

// 5. The real Codex and Claude Code, through configs of emit --launcher,
// with the workspace written in and portable, with a running launcher and
// with the one that connect starts: each validator's health check reaches
// the launcher's one process per server.
func shareAgentsCodexClaude(t *testing.T, bin string) {
	for _, v := range []string{"CODEX_BIN", "CLAUDE_BIN"} {
		if os.Getenv(v) == "" {
			t.Fatalf("%s is not set: run eval \"$(e2e/clients/install.sh)\" first", v)
		}
	}
	w := newShareWorld(t, bin)
	serverLog := filepath.Join(w.dir, "requests.log")
	w.writeManifest(w.echoServer("echo", map[string]string{"SHARE_LOG": serverLog}) +
		"[servers.files]\nbuiltin = \"files\"\nread_only = true\n")

	emit := func(provider string, literal bool) string {
		t.Helper()
		file := filepath.Join(w.dir, provider)
		args := []string{"emit", "--provider", provider, "--launcher", "--manifest", w.manifest, "-o", file}
		if literal {
			file += "-ws"
			args = append(args[:len(args)-1], file, "--workspace", w.ws, "--dir", w.wsDir)
		}
		if _, err := w.run(args...); err != nil {
			t.Fatal(err)
		}
		return file
	}
	configs := []struct {
		name, client, file string
		literal            bool
	}{
		{"codex", "codex", emit("codex", true), true},
		{"claude", "claude", emit("claude", true), true},
		{"codex-portable", "codex", emit("codex", false), false},
		{"claude-portable", "claude", emit("claude", false), false},
	}
	for _, c := range configs {
		b, _ := os.ReadFile(c.file)
		if !bytes.Contains(b, []byte("connect")) {
			t.Fatalf("%s: emit --launcher wrote no mcpgen connect:\n%s", c.name, b)
		}
	}
	validate := func(client, file string, literal bool) {
		t.Helper()
		env := slices.Clip(w.env)
		if !literal {
			env = append(env, "MCPGEN_WORKSPACE="+w.ws)
		}
		var v validation
		if client == "codex" {
			v = validateCodexFile(w.dir, env, []string{"--health"}, file)
		} else {
			v = validateClaudeFile(w.dir, env, []string{"--health"}, file)
		}
		if v.err != nil {
			t.Errorf("%s --health %s: %v\n%s", client, filepath.Base(file), v.err, v.out)
		}
	}
	// requests returns how many tools/list each process of echo answered.
	requests := func() map[int]int {
		b, _ := os.ReadFile(serverLog)
		n := map[int]int{}
		for line := range strings.Lines(string(b)) {
			pid, method, _ := strings.Cut(strings.TrimSpace(line), " ")
			if method == "tools/list" {
				p, _ := strconv.Atoi(pid)
				n[p]++
			}
		}
		return n
	}
	pidsOf := func() map[string]int {
		st, err := w.status()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{"launcher": st.Pid}
		for _, s := range st.Servers {
			if s.State != "ready" || s.Restarts != 0 {
				t.Errorf("%s: %s, %d restarts: %s", s.Name, s.State, s.Restarts, s.LastError)
			}
			out[s.Name] = s.Pid
		}
		return out
	}
	// watchClients polls the status while the validators run, to see them
	// connected (at least once, if it catches them: not asserted).
	watchClients := func() func() map[string]int {
		stop, done := make(chan struct{}), make(chan map[string]int, 1)
		go func() {
			most := map[string]int{}
			for {
				select {
				case <-stop:
					done <- most
					return
				case <-time.After(20 * time.Millisecond):
				}
				if st, err := w.status(); err == nil {
					for _, s := range st.Servers {
						most[s.Name] = max(most[s.Name], s.Clients.Count)
					}
				}
			}
		}()
		return func() map[string]int { close(stop); return <-done }
	}

	// With a running launcher.
	l := w.launch()
	w.readyPid("echo")
	w.readyPid("files")
	before := pidsOf()
	listed := requests()[before["echo"]]
	seen := watchClients()
	for _, c := range configs {
		validate(c.client, c.file, c.literal)
	}
	t.Logf("most clients seen connected at once, with a running launcher: %v", seen())
	if after := pidsOf(); !maps.Equal(before, after) {
		t.Errorf("pids before the agents %v, after %v", before, after)
	}
	reqs := requests()
	t.Logf("tools/list answered by echo (pid %d): %d before the agents, %d after", before["echo"], listed, reqs[before["echo"]])
	if len(reqs) != 1 || reqs[before["echo"]]-listed < len(configs) {
		t.Errorf("tools/list answered by each echo process: %v; want only %d, with %d more than the launcher's own %d",
			reqs, before["echo"], len(configs), listed)
	}
	for _, server := range []string{"echo", "files"} {
		w.clientCount(server, 0)
	}
	l.stop()
	w.nothingLeft()

	// Without one: the first connect starts it, the others share it.
	if err := os.Remove(serverLog); err != nil {
		t.Fatal(err)
	}
	seen = watchClients()
	validate(configs[0].client, configs[0].file, configs[0].literal)
	started := pidsOf()
	for _, c := range configs[1:] {
		validate(c.client, c.file, c.literal)
	}
	t.Logf("most clients seen connected at once, autostarted: %v", seen())
	if after := pidsOf(); !maps.Equal(started, after) {
		t.Errorf("pids after the first agent %v, after the others %v", started, after)
	}
	reqs = requests()
	t.Logf("tools/list answered by the autostarted echo (pid %d): %d", started["echo"], reqs[started["echo"]])
	if len(reqs) != 1 || reqs[started["echo"]] < 1+len(configs) {
		t.Errorf("tools/list answered by each echo process: %v; want only %d, at least %d times", reqs, started["echo"], 1+len(configs))
	}
	// Stop the launcher that connect started, as an operator would.
	if err := syscall.Kill(started["launcher"], syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !waitProcessGone(started["launcher"], shareWait) {
		t.Errorf("the autostarted launcher (pid %d) did not exit on SIGTERM", started["launcher"])
	}
	w.nothingLeft()
	for _, pid := range []int{started["echo"], started["files"]} {
		if !waitProcessGone(pid, 10*time.Second) {
			t.Errorf("server pid %d left behind", pid)
		}
	}
	log, _ := os.ReadFile(filepath.Join(w.dir, "state", w.ws, "autostart.log"))
	checkNoRace(t, "the autostarted launcher", string(log))
	if !bytes.Contains(log, []byte("session stopped")) {
		t.Errorf("the autostarted launcher did not stop cleanly:\n%s", log)
	}
	if _, err := w.status(); err == nil {
		t.Errorf("status still answers after the launcher stopped")
	}
}
