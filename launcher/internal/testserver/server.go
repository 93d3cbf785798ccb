// Package testserver is what the launcher's tests run and talk to: an MCP
// server written on the wire, played by the test binary itself, and a
// client that speaks to a hub line by line. It is for tests only.
package testserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/mcp"
)

// EnvMode, in a test binary's environment, makes it serve in that mode
// instead of testing (see Main).
const EnvMode = "MCPGEN_TESTSERVER"

// Main makes the test binary double as the MCP servers that the tests run:
// with EnvMode=MODE in its environment it serves, then exits, instead of
// testing. Call it first in TestMain. See serve for the modes.
func Main() {
	if mode := os.Getenv(EnvMode); mode != "" {
		serve(mode)
		os.Exit(0)
	}
}

// Spec returns the spec of a test server in mode; extra holds more
// environment ("K=V").
func Spec(t testing.TB, mode string, extra ...string) *proc.Spec {
	t.Helper()
	return &proc.Spec{Path: Self(t), Args: []string{"-test.run=^$"}, Dir: t.TempDir(), Env: slices.Concat(os.Environ(), []string{EnvMode + "=" + mode}, extra)}
}

// Self is the test binary, which serves when EnvMode is set.
func Self(t testing.TB) string {
	t.Helper()
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// serve is a small MCP server written on the wire, so that it can do
// what a library would not let it: ask its client things, crash mid-call,
// ignore SIGTERM, leave children behind. Modes:
//
//	echo        tools (see below), exits at stdin's EOF after answering
//	exit        writes "boom: cannot start" to stderr and exits 1
//	hang        never answers initialize
//	noterm      as echo, but ignores SIGTERM and stdin's EOF
//	grandchild  as echo, with a `sleep 300` child whose pid it writes to
//	            $MCPGEN_TESTSERVER_PIDFILE
//	escape      as echo, with the escapes of issue 8 item 2, each a
//	            `sleep 300` that writes "PID START" to a file in
//	            $MCPGEN_TESTSERVER_PIDDIR before the server answers: a
//	            child that calls setsid ("setsid"), and a daemon that
//	            double-forks and calls setsid ("daemon")
//	fragile     as echo, but exits 2 when its first request is not
//	            initialize (some legacy servers die of an era probe)
//	modern      a server of the modern revision only (see modern.go)
//	dual        mcp.Server, of both eras, with the tool echo (modern.go)
//
// Tools: echo {text}, slow {ms}, progress {steps}, crash, pid, sample
// (asks its client sampling/createMessage), roots (asks roots/list), add
// (adds a tool "extra" and says tools/list_changed). $MCPGEN_TESTSERVER_TOOLS
// (comma-separated) limits the tools listed. tools/list pages by two.
// Tools that are called but listed only when $MCPGEN_TESTSERVER_TOOLS
// names them: flood {steps} (sends that many log messages as fast as it
// can, then answers), deep {idLast} (answers with structuredContent nested
// DeepNesting levels, its id before the result, or after it with
// idLast), never (never answers), stream (sends progress every few
// milliseconds, and never answers), touch {text} (says that the resource
// of URI text was updated: notifications/resources/updated), elicit {text,
// steps, ms, impatient, until} (asks its client elicitation/create steps
// times, one after the other, then answers "TEXT: ANSWER..." with each
// answer ms later, or "refused: ERROR" when one was an error, with
// progress after each answer when the call has a progress token;
// impatient, it asks once and answers "impatient" without waiting for the
// answer: at once, or once the file until names exists; a call cancelled
// meanwhile is not answered); and the method test/never is never answered
// either. $MCPGEN_TESTSERVER_CANCELS names a
// file that the server appends each notifications/cancelled's requestId
// to, on a line, as it reads it. $MCPGEN_TESTSERVER_LIST_DELAY_MS makes it
// answer tools/list in one page, that late, with the tools as they were
// when asked: how a test has them change while a listing is under way.
//
// With $MCPGEN_TESTSERVER_CATALOG=1 it also has what the gateway serves
// besides tools, named after $MCPGEN_TESTSERVER_NAME (NAME, default
// "test"): a tool log {text} (sends a log message); a prompt greet
// {who}; the resources test://NAME/readme and test://shared; the template
// test://NAME/item/{id}; completions (NAME); logging; and
// $MCPGEN_TESTSERVER_INSTRUCTIONS as its instructions.
//
// $MCPGEN_TESTSERVER_BANNER is a line written to stderr at the start; with
// $MCPGEN_TESTSERVER_BANNER_LOG, the server waits until that log holds it
// before it serves, so that a test knows the banner was read before the
// server became ready. $MCPGEN_TESTSERVER_LAST_WORDS is a line that crash
// writes to stderr before it exits. $MCPGEN_TESTSERVER_EOF_NOTE names a
// file (a FIFO, say) that the server writes its pid to, on a line, as soon
// as its stdin ends: how a benchmark knows when the launcher told it to
// stop. With $MCPGEN_TESTSERVER_EXIT_AFTER, it then waits (WaitLong at
// most) until that file exists before it exits: how a test holds a stop
// half done. $MCPGEN_TESTSERVER_METHODS names a file where it notes every
// message it reads (see noteMethod).
func serve(mode string) {
	if banner := os.Getenv("MCPGEN_TESTSERVER_BANNER"); banner != "" {
		fmt.Fprintln(os.Stderr, banner)
		if log := os.Getenv("MCPGEN_TESTSERVER_BANNER_LOG"); log != "" {
			for deadline := time.Now().Add(WaitLong); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if b, _ := os.ReadFile(log); strings.Contains(string(b), banner) {
					break
				}
			}
		}
	}
	switch mode {
	case "exit":
		fmt.Fprintln(os.Stderr, "boom: cannot start")
		os.Exit(1)
	case "hang":
		_, _ = io.Copy(io.Discard, os.Stdin)
		select {}
	case "noterm":
		signal.Ignore(syscall.SIGTERM)
	case "grandchild":
		child := exec.Command("sleep", "300")
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_ = os.WriteFile(os.Getenv("MCPGEN_TESTSERVER_PIDFILE"), []byte(strconv.Itoa(child.Process.Pid)), 0o600)
	case "escape":
		if err := escape(os.Getenv("MCPGEN_TESTSERVER_PIDDIR")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "dual":
		serveDual()
		return
	}
	s := &wireServer{
		w:       mcp.NewWriter(os.Stdout),
		cancels: map[mcp.ID]context.CancelFunc{},
		asks:    map[mcp.ID]chan *mcp.Message{},
		tools:   []string{"echo", "slow", "progress", "crash", "pid", "sample", "roots", "add"},
		catalog: os.Getenv("MCPGEN_TESTSERVER_CATALOG") == "1",
		name:    cmp.Or(os.Getenv("MCPGEN_TESTSERVER_NAME"), "test"),
	}
	if s.catalog {
		s.tools = append(s.tools, "log")
	}
	if mode == "modern" {
		s.modern, s.tools = true, slices.Clone(modernTools)
		if subscribeOn() {
			s.tools = append(s.tools, "touch")
		}
		if tasksOn() {
			s.tools = append(s.tools, "task")
		}
	}
	if list := os.Getenv("MCPGEN_TESTSERVER_TOOLS"); list != "" {
		s.tools = strings.Split(list, ",")
	}
	r := mcp.NewReader(os.Stdin)
	for first := true; ; first = false {
		msg, err := r.Read()
		if err != nil {
			noteEOF()
			break
		}
		noteMethod(msg)
		if mode == "fragile" && first && msg.Method != "initialize" {
			fmt.Fprintf(os.Stderr, "fragile: %s before initialize\n", msg.Method)
			os.Exit(2)
		}
		switch {
		case msg.IsResponse():
			s.mu.Lock()
			ch := s.asks[msg.ID]
			delete(s.asks, msg.ID)
			s.mu.Unlock()
			if ch != nil {
				ch <- msg
			}
		case msg.IsRequest():
			ctx, cancel := context.WithCancel(context.Background())
			s.mu.Lock()
			s.cancels[msg.ID] = cancel
			s.mu.Unlock()
			s.wg.Go(func() { s.handle(ctx, msg) })
		case msg.Method == "notifications/cancelled":
			var p struct {
				RequestID mcp.ID `json:"requestId"`
			}
			_ = json.Unmarshal(msg.Params, &p)
			noteCancel(p.RequestID)
			s.mu.Lock()
			if cancel := s.cancels[p.RequestID]; cancel != nil {
				cancel()
			}
			s.mu.Unlock()
			s.unlisten(p.RequestID)
		}
	}
	s.wg.Wait() // answer what was read, then exit
	s.endListens()
	if path := os.Getenv("MCPGEN_TESTSERVER_EXIT_AFTER"); path != "" {
		for deadline := time.Now().Add(WaitLong); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(path); err == nil {
				break
			}
		}
	}
	if mode == "noterm" {
		select {}
	}
}

// noteEOF writes the pid to $MCPGEN_TESTSERVER_EOF_NOTE, if set.
func noteEOF() {
	path := os.Getenv("MCPGEN_TESTSERVER_EOF_NOTE")
	if path == "" {
		return
	}
	// Not blocking: a FIFO that nobody reads any more (its test ended)
	// fails the open at once instead of holding the exit.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|syscall.O_NONBLOCK, 0)
	if err != nil {
		return
	}
	fmt.Fprintf(f, "%d\n", os.Getpid())
	f.Close()
}

// noteCancel appends id to $MCPGEN_TESTSERVER_CANCELS, if set.
func noteCancel(id mcp.ID) {
	path := os.Getenv("MCPGEN_TESTSERVER_CANCELS")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	fmt.Fprintln(f, id)
	f.Close()
}

// DeepNesting is how deep the deep tool nests its answer: one level
// beyond what a JSON-RPC line may hold (jsonwire.MaxDepth).
const DeepNesting = 10001

type wireServer struct {
	w       *mcp.Writer
	wg      sync.WaitGroup
	mu      sync.Mutex
	cancels map[mcp.ID]context.CancelFunc
	asks    map[mcp.ID]chan *mcp.Message
	nextAsk int64
	tools   []string
	catalog bool   // prompts, resources, completions, logging
	name    string // what the catalog's items are named after
	modern  bool   // the modern mode (modern.go)
	listens []*listen
}

// idLine is sh that writes "PID START" of the shell running it to
// $DIR/name, atomically; the shell then execs, which keeps both.
func idLine(name string) string {
	return `set -- $(cat /proc/$$/stat); echo "$1 ${22}" > "$DIR/` + name + `.tmp"; mv "$DIR/` + name + `.tmp" "$DIR/` + name + `"`
}

// escape starts the escapes of the mode of that name and waits until each
// has said who it is in dir. The setsid child is ours (setsid(1) calls
// setsid itself in a process that leads no group); the daemon's parent
// waits until it has said who it is, then exits, so that the daemon is
// known even where it dies young (a subreaper kills orphans at once).
func escape(dir string) error {
	env := append(os.Environ(), "DIR="+dir)
	child := exec.Command("setsid", "sh", "-c", idLine("setsid")+"; exec sleep 300")
	child.Env = env
	if err := child.Start(); err != nil {
		return err
	}
	go func() { _ = child.Wait() }() // ends when it is killed
	daemon := exec.Command("sh", "-c", `( setsid sh -c '`+idLine("daemon")+`; exec sleep 300' >/dev/null 2>&1 &
  until [ -e "$DIR/daemon" ]; do sleep 0.01; done )`)
	daemon.Env = env
	if out, err := daemon.CombinedOutput(); err != nil {
		return fmt.Errorf("daemon: %v: %s", err, out)
	}
	for deadline := time.Now().Add(WaitLong); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(dir + "/setsid"); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the setsid child did not say who it is")
		}
	}
}

func (s *wireServer) reply(id mcp.ID, result any) {
	raw, _ := json.Marshal(result)
	_ = s.w.Write(&mcp.Message{ID: id, Result: raw})
}

func (s *wireServer) text(id mcp.ID, text string) {
	s.reply(id, map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}})
}

// ask sends the client a request and waits for its answer.
func (s *wireServer) ask(method string, params any) *mcp.Message {
	s.mu.Lock()
	s.nextAsk++
	id := mcp.StringID("ask-" + strconv.FormatInt(s.nextAsk, 10))
	ch := make(chan *mcp.Message, 1)
	s.asks[id] = ch
	s.mu.Unlock()
	raw, _ := json.Marshal(params)
	_ = s.w.Write(&mcp.Message{ID: id, Method: method, Params: raw})
	return <-ch
}

func (s *wireServer) handle(ctx context.Context, msg *mcp.Message) {
	defer func() {
		s.mu.Lock()
		delete(s.cancels, msg.ID)
		s.mu.Unlock()
	}()
	if s.modern {
		s.modernRequest(ctx, msg)
		return
	}
	switch msg.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(msg.Params, &p)
		caps := map[string]any{"tools": map[string]any{"listChanged": true}}
		if s.catalog {
			caps["prompts"] = map[string]any{"listChanged": true}
			caps["resources"] = map[string]any{"subscribe": true, "listChanged": true}
			caps["logging"] = map[string]any{}
			caps["completions"] = map[string]any{}
		}
		result := map[string]any{
			"protocolVersion": p.ProtocolVersion,
			"capabilities":    caps,
			"serverInfo":      map[string]any{"name": "testserver", "version": "1"},
		}
		if text := os.Getenv("MCPGEN_TESTSERVER_INSTRUCTIONS"); text != "" {
			result["instructions"] = text
		}
		s.reply(msg.ID, result)
	case "ping":
		s.reply(msg.ID, map[string]any{})
	case "tools/list":
		var p struct {
			Cursor string `json:"cursor"`
		}
		_ = json.Unmarshal(msg.Params, &p)
		start, _ := strconv.Atoi(p.Cursor)
		s.mu.Lock()
		tools := s.tools
		s.mu.Unlock()
		end := min(start+2, len(tools))
		delay, _ := strconv.Atoi(os.Getenv("MCPGEN_TESTSERVER_LIST_DELAY_MS"))
		if delay > 0 {
			end = len(tools) // one page: the list as it was when asked
		}
		var page []any
		for _, name := range tools[start:end] {
			page = append(page, map[string]any{"name": name, "inputSchema": map[string]any{"type": "object"}})
		}
		result := map[string]any{"tools": page}
		if end < len(tools) {
			result["nextCursor"] = strconv.Itoa(end)
		}
		if delay > 0 {
			select {
			case <-afterMs(delay):
			case <-ctx.Done():
			}
		}
		s.reply(msg.ID, result)
	case "tools/call":
		s.call(ctx, msg)
	case "test/never":
		<-ctx.Done() // cancelled: no answer
	case "prompts/list", "prompts/get", "resources/list", "resources/templates/list", "resources/read",
		"resources/subscribe", "completion/complete", "logging/setLevel":
		if s.catalog {
			s.catalogRequest(msg)
			return
		}
		_ = s.w.Write(&mcp.Message{ID: msg.ID, Error: mcp.NewError(mcp.CodeMethodNotFound, "no method %s", msg.Method)})
	default:
		_ = s.w.Write(&mcp.Message{ID: msg.ID, Error: mcp.NewError(mcp.CodeMethodNotFound, "no method %s", msg.Method)})
	}
}

func (s *wireServer) call(ctx context.Context, msg *mcp.Message) {
	var p struct {
		Name      string `json:"name"`
		Arguments struct {
			Text   string `json:"text"`
			Ms     int    `json:"ms"`
			Steps  int    `json:"steps"`
			IDLast bool   `json:"idLast"`
			// elicit's
			Impatient bool   `json:"impatient"`
			Until     string `json:"until"`
		} `json:"arguments"`
		Meta struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	_ = json.Unmarshal(msg.Params, &p)
	switch p.Name {
	case "echo":
		s.text(msg.ID, p.Arguments.Text)
	case "slow":
		select {
		case <-time.After(time.Duration(p.Arguments.Ms) * time.Millisecond):
			s.text(msg.ID, "slept")
		case <-ctx.Done(): // cancelled: no answer
		}
	case "progress":
		for i := 1; i <= p.Arguments.Steps; i++ {
			params, _ := json.Marshal(map[string]any{"progressToken": p.Meta.ProgressToken, "progress": i, "total": p.Arguments.Steps})
			_ = s.w.Write(&mcp.Message{Method: "notifications/progress", Params: params})
		}
		s.text(msg.ID, "done")
	case "deep":
		nested := strings.Repeat("[", DeepNesting-1) + strings.Repeat("]", DeepNesting-1) // in an object: DeepNesting levels
		result := `{"content":[{"type":"text","text":"deep"}],"structuredContent":{"v":` + nested + `}}`
		line := `{"jsonrpc":"2.0","id":` + msg.ID.String() + `,"result":` + result + `}`
		if p.Arguments.IDLast {
			line = `{"jsonrpc":"2.0","result":` + result + `,"id":` + msg.ID.String() + `}`
		}
		_ = s.w.WriteLine([]byte(line))
	case "never":
		<-ctx.Done() // cancelled: no answer
	case "stream":
		for i := 1; ; i++ {
			params, _ := json.Marshal(map[string]any{"progressToken": p.Meta.ProgressToken, "progress": i})
			_ = s.w.Write(&mcp.Message{Method: "notifications/progress", Params: params})
			select {
			case <-ctx.Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	case "crash":
		if words := os.Getenv("MCPGEN_TESTSERVER_LAST_WORDS"); words != "" {
			fmt.Fprintln(os.Stderr, words)
		}
		os.Exit(3)
	case "pid":
		s.text(msg.ID, strconv.Itoa(os.Getpid()))
	case "read":
		// The file named by text, or what refused it: how a test sees
		// what a sandbox lets the server read.
		b, err := os.ReadFile(p.Arguments.Text)
		if err != nil {
			s.text(msg.ID, "error: "+err.Error())
			break
		}
		s.text(msg.ID, string(b))
	case "sample":
		resp := s.ask("sampling/createMessage", map[string]any{"messages": []any{}, "maxTokens": 1})
		s.text(msg.ID, answerText(resp))
	case "roots":
		resp := s.ask("roots/list", nil)
		s.text(msg.ID, answerText(resp))
	case "elicit":
		s.legacyElicit(ctx, msg.ID, p.Meta.ProgressToken, p.Arguments.Text, p.Arguments.Steps, p.Arguments.Ms, p.Arguments.Impatient, p.Arguments.Until)
	case "log":
		params, _ := json.Marshal(map[string]any{"level": "info", "logger": "testlog", "data": p.Arguments.Text})
		_ = s.w.Write(&mcp.Message{Method: "notifications/message", Params: params})
		s.text(msg.ID, "logged")
	case "touch":
		params, _ := json.Marshal(map[string]any{"uri": p.Arguments.Text})
		_ = s.w.Write(&mcp.Message{Method: "notifications/resources/updated", Params: params})
		s.text(msg.ID, "touched")
	case "flood":
		for i := range p.Arguments.Steps {
			params, _ := json.Marshal(map[string]any{"level": "info", "logger": "flood", "data": fmt.Sprintf("line %d of %d", i+1, p.Arguments.Steps)})
			_ = s.w.Write(&mcp.Message{Method: "notifications/message", Params: params})
		}
		s.text(msg.ID, "flooded")
	case "add":
		s.mu.Lock()
		s.tools = append(s.tools, "extra")
		s.mu.Unlock()
		_ = s.w.Write(&mcp.Message{Method: "notifications/tools/list_changed"})
		s.text(msg.ID, "added")
	default:
		_ = s.w.Write(&mcp.Message{ID: msg.ID, Error: mcp.NewError(mcp.CodeInvalidParams, "unknown tool %q", p.Name)})
	}
}

// catalogRequest answers what the gateway serves besides tools.
func (s *wireServer) catalogRequest(msg *mcp.Message) {
	var p struct {
		Name      string            `json:"name"`
		URI       string            `json:"uri"`
		Arguments map[string]string `json:"arguments"`
	}
	_ = json.Unmarshal(msg.Params, &p)
	switch msg.Method {
	case "prompts/list":
		s.reply(msg.ID, map[string]any{"prompts": []any{map[string]any{"name": "greet", "arguments": []any{map[string]any{"name": "who"}}}}})
	case "prompts/get":
		s.reply(msg.ID, map[string]any{"messages": []any{map[string]any{"role": "user",
			"content": map[string]any{"type": "text", "text": fmt.Sprintf("%s greets %s", s.name, p.Arguments["who"])}}}})
	case "resources/list":
		s.reply(msg.ID, map[string]any{"resources": []any{
			map[string]any{"uri": "test://" + s.name + "/readme", "name": "readme"},
			map[string]any{"uri": "test://shared", "name": "shared of " + s.name},
		}})
	case "resources/templates/list":
		s.reply(msg.ID, map[string]any{"resourceTemplates": []any{map[string]any{"uriTemplate": "test://" + s.name + "/item/{id}", "name": "item"}}})
	case "resources/read":
		s.reply(msg.ID, map[string]any{"contents": []any{map[string]any{"uri": p.URI, "text": s.name + " reads " + p.URI}}})
	case "completion/complete":
		s.reply(msg.ID, map[string]any{"completion": map[string]any{"values": []string{s.name}}})
	default: // logging/setLevel, resources/subscribe
		s.reply(msg.ID, map[string]any{})
	}
}

// answerText is how the test server reports its client's answer.
func answerText(m *mcp.Message) string {
	if m.Error != nil {
		return fmt.Sprintf("error %d: %s", m.Error.Code, m.Error.Message)
	}
	return string(m.Result)
}

// legacyElicit is the tool elicit of the legacy modes: see serve.
func (s *wireServer) legacyElicit(ctx context.Context, id mcp.ID, token json.RawMessage, text string, steps, ms int, impatient bool, until string) {
	params := map[string]any{"mode": "form", "message": "Confirm " + text + "?",
		"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}}
	if impatient {
		go s.ask("elicitation/create", params) // ends when the client answers, or the hub refuses
		for deadline := time.Now().Add(WaitLong); until != "" && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(until); err == nil {
				break
			}
		}
		s.text(id, "impatient")
		return
	}
	answers := ""
	for range max(steps, 1) {
		resp := s.ask("elicitation/create", params)
		if ctx.Err() != nil {
			return // cancelled: no answer
		}
		if resp.Error != nil {
			s.text(id, "refused: "+resp.Error.Message)
			return
		}
		answers += " " + string(resp.Result)
		if token != nil { // progress after each answer, on the call's token
			params, _ := json.Marshal(map[string]any{"progressToken": token, "progress": len(answers)})
			_ = s.w.Write(&mcp.Message{Method: "notifications/progress", Params: params})
		}
	}
	select {
	case <-ctx.Done():
		return // cancelled: no answer
	case <-time.After(time.Duration(ms) * time.Millisecond):
	}
	s.text(id, text+":"+answers)
}
