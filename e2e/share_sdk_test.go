//go:build unix

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

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
