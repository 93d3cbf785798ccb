//go:build unix

package e2e

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

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
