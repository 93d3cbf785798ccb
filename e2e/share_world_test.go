//go:build unix

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

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
		Era       string   `json:"era"`
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
// crashed servers come back quickly, and flags added.
func (w *shareWorld) launch(flags ...string) *shareLaunch {
	w.t.Helper()
	args := append([]string{"launch", "--workspace", w.ws, "--manifest", w.manifest,
		"--log-format", "text", "--backoff", "100ms", "--debounce", "50ms"}, flags...)
	cmd := exec.Command(w.bin, args...)
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
