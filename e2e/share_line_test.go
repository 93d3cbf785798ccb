//go:build unix

package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"testing"
	"time"
)

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
