//go:build unix

package e2e

// The lazy tests run many workspaces, each with launchers that agents'
// `mcpgen connect` starts, and lazy servers that the agents' calls start:
// the reference memory server (node), the built-in files server and a
// declared one. They check that cost follows use: every agent is answered,
// only the servers in use run (and their launchers), and once the agents
// have gone, the servers stop and the launchers exit. They log the figures
// (processes, RSS, PSS, times) that the issue asks for.
//
//	eval "$(e2e/clients/install.sh)"
//	MCPGEN_E2E=1 go test -count=1 -v -run Lazy ./e2e/

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lazyWait bounds an agent's exchange: a hang guard, not a timing check.
const lazyWait = 90 * time.Second

// lazyGone bounds the wait for every launcher and server to be gone once
// the last client has left: a hang guard, not a timing check (tests never
// assert timings: the machine is shared). The figure (gone within
// 10 s, with idle_timeout 1s and idle_exit 2s) is the time measured, which
// the tests log.
const lazyGone = 2 * time.Minute

// A lazyWorld is many workspaces under one directory, sharing a runtime
// and a state dir; every process started in it carries its token in its
// environment.
type lazyWorld struct {
	t     *testing.T
	dir   string
	token string
	env   []string
}

func newLazyWorld(t *testing.T) *lazyWorld {
	t.Helper()
	sb := newSandbox(t) // skips unless MCPGEN_E2E=1
	if os.Getenv("SERVER_MEMORY") == "" {
		t.Fatal("SERVER_MEMORY is not set: run eval \"$(e2e/clients/install.sh)\" first")
	}
	// A short base: the control sockets' paths must fit in 107 bytes.
	dir, err := os.MkdirTemp("", "mcpgen-lz-")
	if err != nil {
		t.Fatal(err)
	}
	w := &lazyWorld{t: t, dir: dir, token: fmt.Sprintf("lazy-%08x", rand.Uint32())}
	for _, d := range []string{"run", "state"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	w.env = append(sb.env,
		"MCPGEN_RUNTIME_DIR="+filepath.Join(dir, "run"),
		"MCPGEN_STATE_DIR="+filepath.Join(dir, "state"),
		"MCPGEN_LAZY_TOKEN="+w.token)
	t.Cleanup(func() {
		w.reap()
		os.RemoveAll(dir)
	})
	return w
}

// workspace writes workspace i's manifest and returns its id and dir.
func (w *lazyWorld) workspace(i int, body string) (string, string) {
	w.t.Helper()
	ws := fmt.Sprintf("ws%03d", i)
	dir := filepath.Join(w.dir, ws)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mcpgen.toml"), []byte(body), 0o644); err != nil {
		w.t.Fatal(err)
	}
	return ws, dir
}

// memoryServer is the table of a lazy reference memory server.
func memoryServer(name, idle string) string {
	return fmt.Sprintf("[servers.%s]\ncommand = %q\nargs = [%q]\nenv = { MEMORY_FILE_PATH = \"${WORKSPACE_DIR}/%s.json\" }\nstart = \"lazy\"\nidle_timeout = %q\nstartup_timeout = \"60s\"\n\n",
		name, node, os.Getenv("SERVER_MEMORY"), name, idle)
}

// An agent is one `mcpgen connect` that an agent runs, spoken to line by
// line.
type lazyAgent struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr bytes.Buffer
}

// connect starts `mcpgen connect` for server of workspace ws, as an agent
// does, from the workspace's directory; it starts a launcher if none runs.
func (w *lazyWorld) connect(ws, dir, server string) (*lazyAgent, error) {
	a := &lazyAgent{cmd: exec.Command(mcpgen, "connect", "--workspace", ws, server)}
	a.cmd.Env, a.cmd.Dir, a.cmd.Stderr = w.env, dir, &a.stderr
	var err error
	if a.in, err = a.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := a.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	a.out = bufio.NewReader(out)
	return a, a.cmd.Start()
}

// request sends a request and returns its answer's result; the answer must
// come within lazyWait.
func (a *lazyAgent) request(id int, method, params string) (json.RawMessage, error) {
	if _, err := fmt.Fprintf(a.in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params); err != nil {
		return nil, err
	}
	type answer struct {
		line []byte
		err  error
	}
	got := make(chan answer, 1)
	go func() { // ends with the answer, or when the agent's stdout closes
		for {
			line, err := a.out.ReadBytes('\n')
			if err != nil {
				got <- answer{nil, err}
				return
			}
			var m struct {
				ID *int `json:"id"`
			}
			if json.Unmarshal(line, &m) == nil && m.ID != nil && *m.ID == id {
				got <- answer{line, nil}
				return
			}
		}
	}()
	select {
	case r := <-got:
		if r.err != nil {
			return nil, fmt.Errorf("%s: %v; connect's stderr: %s", method, r.err, a.stderr.String())
		}
		var m struct {
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(r.line, &m); err != nil {
			return nil, err
		}
		if m.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, m.Error.Message)
		}
		return m.Result, nil
	case <-time.After(lazyWait):
		return nil, fmt.Errorf("%s: no answer within %s; connect's stderr: %s", method, lazyWait, a.stderr.String())
	}
}

// session initializes, then calls a tool.
func (a *lazyAgent) session(tool, args string) error {
	if _, err := a.request(1, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"lazy-agent","version":"1"}}`); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(a.in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return err
	}
	result, err := a.request(2, "tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, tool, args))
	if err != nil {
		return err
	}
	if bytes.Contains(result, []byte(`"isError":true`)) {
		return fmt.Errorf("%s: %s", tool, result)
	}
	return nil
}

// leave closes the agent's stdin and waits for connect to exit.
func (a *lazyAgent) leave() error {
	a.in.Close()
	done := make(chan error, 1)
	go func() { done <- a.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("connect: %v: %s", err, a.stderr.String())
		}
		return nil
	case <-time.After(lazyWait):
		_ = a.cmd.Process.Kill()
		return fmt.Errorf("connect did not exit within %s of its stdin's end", lazyWait)
	}
}

// A lazyProc is a process of the world.
type lazyProc struct {
	pid       int
	kind      string // launcher, connect or server
	rss, pss  int64  // bytes
	anon      int64
	cmdline   string
	workspace string // a launcher's
}

// procs lists the live processes that carry the world's token.
func (w *lazyWorld) procs() []lazyProc {
	needle := []byte("MCPGEN_LAZY_TOKEN=" + w.token + "\x00")
	entries, _ := os.ReadDir("/proc")
	var out []lazyProc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !bytes.Contains(append(env, 0), needle) {
			continue
		}
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue // a zombie holds nothing
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		p := lazyProc{pid: pid, kind: "server", cmdline: strings.Join(args, " ")}
		if len(args) > 1 && args[0] == mcpgen {
			switch args[1] {
			case "launch":
				p.kind = "launcher"
				for i, a := range args {
					if a == "--workspace" && i+1 < len(args) {
						p.workspace = args[i+1]
					}
				}
			case "connect":
				p.kind = "connect"
			}
		}
		p.rss = statusKB(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:")
		p.anon = statusKB(fmt.Sprintf("/proc/%d/status", pid), "RssAnon:")
		p.pss = statusKB(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss:")
		out = append(out, p)
	}
	return out
}

// statusKB reads a "Key: N kB" line of a /proc file, in bytes.
func statusKB(path, key string) int64 {
	b, _ := os.ReadFile(path)
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n << 10
			}
		}
	}
	return 0
}

// tally sums processes up by kind.
type tally struct {
	n              int
	rss, pss, anon int64
}

func (w *lazyWorld) tally() map[string]tally {
	out := map[string]tally{}
	for _, p := range w.procs() {
		t := out[p.kind]
		t.n++
		t.rss += p.rss
		t.pss += p.pss
		t.anon += p.anon
		out[p.kind] = t
	}
	return out
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func (w *lazyWorld) logTally(what string, m map[string]tally) {
	w.t.Helper()
	for _, kind := range []string{"launcher", "server", "connect"} {
		t := m[kind]
		if t.n == 0 {
			w.t.Logf("%s: no %s", what, kind)
			continue
		}
		w.t.Logf("%s: %d %s processes, RSS %s (%s each), PSS %s (%s each), anonymous %s (%s each)", what, t.n, kind,
			mib(t.rss), mib(t.rss/int64(t.n)), mib(t.pss), mib(t.pss/int64(t.n)), mib(t.anon), mib(t.anon/int64(t.n)))
	}
}

// waitNone waits until no process of the world remains, at most d (a
// hang guard), and returns how long that took; it fails the test with
// what remains.
func (w *lazyWorld) waitNone(d time.Duration) time.Duration {
	w.t.Helper()
	start := time.Now()
	for {
		left := w.procs()
		if len(left) == 0 {
			return time.Since(start)
		}
		if time.Since(start) > d {
			var names []string
			for _, p := range left {
				names = append(names, fmt.Sprintf("%d %s (%s)", p.pid, p.kind, p.cmdline))
			}
			w.t.Fatalf("%s after the last client left (a hang guard), still running: %s", d, strings.Join(names, "; "))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// reap ends what a failed test left.
func (w *lazyWorld) reap() {
	for _, p := range w.procs() {
		if p.kind == "launcher" {
			_ = syscall.Kill(p.pid, syscall.SIGTERM)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(w.procs()) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	for _, p := range w.procs() {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
}

// TestLazyTwentyWorkspaces: 20 workspaces, each autostarted by one agent's
// call to a lazy server: every agent is answered, and once the last has
// left, no launcher and no server remains (idle_timeout 1s, idle_exit
// 2s). How long that took is logged, against the 10 s.
func TestLazyTwentyWorkspaces(t *testing.T) {
	w := newLazyWorld(t)
	const n = 20
	body := "version = 1\n\n[session]\nidle_exit = \"2s\"\n\n" + memoryServer("memory", "1s")
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		ws, dir := w.workspace(i, body)
		wg.Go(func() {
			a, err := w.connect(ws, dir, "memory")
			if err == nil {
				err = a.session("read_graph", "{}")
				if lerr := a.leave(); err == nil {
					err = lerr
				}
			}
			errs[i] = err
		})
	}
	wg.Wait()
	left := time.Now()
	for i, err := range errs {
		if err != nil {
			t.Errorf("workspace %d: %v", i, err)
		}
	}
	t.Logf("%d agents answered in %s, each through a launcher it started and a lazy server its call started", n, left.Sub(start).Round(time.Millisecond))
	gone := w.waitNone(lazyGone)
	t.Logf("no launcher and no server %s after the last client left (the issue's figure: 10s; idle_timeout 1s, idle_exit 2s)", gone.Round(time.Millisecond))
}

// TestLazyTwoHundredWorkspaces: 200 workspaces of 5 lazy servers each, 10
// in use: what runs is the 10 servers in use and their 10 launchers, not
// 1,000 servers. It logs the processes and their memory, in use and idle
// (an idle launcher's own cost), then checks that they all go.
func TestLazyTwoHundredWorkspaces(t *testing.T) {
	w := newLazyWorld(t)
	const n, inUse = 200, 10
	body := "version = 1\n\n[session]\nidle_exit = \"2s\"\n\n" +
		memoryServer("memory", "1s") +
		memoryServer("notes", "1s") +
		fmt.Sprintf("[servers.fs]\ncommand = %q\nargs = [%q, \"${WORKSPACE_DIR}\"]\nstart = \"lazy\"\nidle_timeout = \"1s\"\n\n", node, os.Getenv("SERVER_FILESYSTEM")) +
		"[servers.files]\nbuiltin = \"files\"\nstart = \"lazy\"\nidle_timeout = \"1s\"\n\n" +
		"[servers.hello]\nstart = \"lazy\"\nidle_timeout = \"1s\"\n\n[servers.hello.tools.hello]\nrun = [\"echo\", \"hello\"]\n"
	type workspace struct{ id, dir string }
	var all []workspace
	for i := range n {
		id, dir := w.workspace(i, body)
		all = append(all, workspace{id, dir})
	}
	// The agents of 10 workspaces, spread over the 200, stay connected.
	agents := make([]*lazyAgent, inUse)
	errs := make([]error, inUse)
	var wg sync.WaitGroup
	for i := range inUse {
		ws := all[i*n/inUse]
		wg.Go(func() {
			a, err := w.connect(ws.id, ws.dir, "memory")
			if err == nil {
				err = a.session("read_graph", "{}")
			}
			agents[i], errs[i] = a, err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("agent %d: %v", i, err)
		}
	}
	inUseTally := w.tally()
	w.logTally("10 agents connected", inUseTally)
	if l, s := inUseTally["launcher"].n, inUseTally["server"].n; l != inUse || s != inUse {
		t.Errorf("with %d agents on %d of %d workspaces (%d servers configured): got %d launchers and %d servers, want %d and %d",
			inUse, inUse, n, n*5, l, s, inUse, inUse)
	}

	// The agents leave: the servers stop once idle; the launchers, idle,
	// stay for their idle_exit, then go too.
	for i, a := range agents {
		if err := a.leave(); err != nil {
			t.Errorf("agent %d: %v", i, err)
		}
	}
	left := time.Now()
	deadline := left.Add(lazyGone) // a hang guard
	for w.tally()["server"].n > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	stopped := time.Since(left)
	idle := w.tally()
	w.logTally("the agents gone, the servers stopped", idle)
	if idle["server"].n != 0 {
		t.Errorf("the agents gone: got %d servers still running after %s (a hang guard), want none", idle["server"].n, lazyGone)
	}
	t.Logf("the servers stopped %s after the agents left (idle_timeout 1s)", stopped.Round(time.Millisecond))
	gone := w.waitNone(lazyGone)
	t.Logf("no launcher and no server %s after the servers stopped, %s after the agents left (the issue's figure: 10s; idle_exit 2s)",
		gone.Round(time.Millisecond), time.Since(left).Round(time.Millisecond))

	// What running them all would cost: one workspace's five servers,
	// each started by a call, times 200.
	calls := []struct{ server, tool, args string }{
		{"memory", "read_graph", "{}"},
		{"notes", "read_graph", "{}"},
		{"fs", "list_allowed_directories", "{}"},
		{"files", "list_directory", "{}"},
		{"hello", "hello", "{}"},
	}
	var five []*lazyAgent
	for _, c := range calls {
		a, err := w.connect(all[0].id, all[0].dir, c.server)
		if err == nil {
			err = a.session(c.tool, c.args)
		}
		if err != nil {
			t.Fatalf("%s: %v", c.server, err)
		}
		five = append(five, a)
	}
	one := w.tally()
	w.logTally("one workspace with its 5 servers running", one)
	srv := one["server"]
	t.Logf("so every server of the 200 workspaces running would take about %d launchers and %d servers, RSS %s (PSS %s); the 10 in use took %d and %d, RSS %s (PSS %s)",
		n, n*5, mib(int64(n)*(srv.rss+one["launcher"].rss)), mib(int64(n)*(srv.pss+one["launcher"].pss)),
		inUseTally["launcher"].n, inUseTally["server"].n,
		mib(inUseTally["server"].rss+inUseTally["launcher"].rss), mib(inUseTally["server"].pss+inUseTally["launcher"].pss))
	for _, a := range five {
		if err := a.leave(); err != nil {
			t.Error(err)
		}
	}
	w.waitNone(lazyGone)
}
