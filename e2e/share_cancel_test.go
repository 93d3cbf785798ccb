//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

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
