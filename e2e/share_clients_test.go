//go:build unix

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

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
