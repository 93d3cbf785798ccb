//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

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
