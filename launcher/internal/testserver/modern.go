package testserver

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

// This file is the test server's modern mode ("modern"): a server of the
// modern revision only (2026-07-28), written on the wire, as a server
// that never heard of the legacy one would be. It answers server/discover,
// and every request that carries the revision's _meta (a request without
// it, or at another version, gets the revision's errors); it refuses
// initialize with an error that names the version it speaks, as the spec
// advises; it sends no request of its own, and no ping is answered.
// subscriptions/listen is acknowledged and kept open until cancelled, and
// tools/list_changed goes to the subscriptions that asked for it, tagged
// with their id. The tools are those of echo, but for sample and roots
// (server requests, which the revision has no more), and with elicit
// {text, ask, steps, careless}: it returns input_required, asking
// elicitation/create (or sampling, or roots), and goes on with the retry
// that carries the answers (inputResponses) and the requestState it gave
// (see wireServer.elicit). $MCPGEN_TESTSERVER_TOOLS limits the tools listed,
// as in the other modes; $MCPGEN_TESTSERVER_DISCOVER_DELAY_MS makes it
// answer server/discover that late, and $MCPGEN_TESTSERVER_LISTEN_DELAY_MS
// take (and acknowledge) a subscription that late, its other requests
// answered meanwhile.
//
// The dual mode ("dual") is a server of both eras: mcp.Server, which
// mcpgen's own servers (mcpgen serve) run on, with the tool echo.

// modernTools are the modern mode's tools.
var modernTools = []string{"echo", "slow", "progress", "crash", "pid", "add", "elicit", "log"}

// A listen is a subscription of the modern mode: its request's id and the
// notifications it asked for.
type listen struct {
	id        mcp.ID
	tools     bool     // toolsListChanged
	tasks     []string // taskIds: the tasks of the tasks extension it hears of
	resources []string // resourceSubscriptions: the resources it hears of
}

var serverInfo = json.RawMessage(`{"name":"testserver-modern","version":"1"}`)

// modernRequest answers one request of the modern mode.
func (s *wireServer) modernRequest(ctx context.Context, msg *mcp.Message) {
	if msg.Method == "initialize" {
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(msg.Params, &p)
		err := mcp.UnsupportedVersionError(p.ProtocolVersion, mcp.ModernVersions)
		err.Message = "Unsupported protocol version: this server speaks " + mcp.ModernVersion + " only, which has no initialize (send server/discover)"
		s.fail(msg.ID, err)
		return
	}
	meta, err := mcp.ParseRequestMeta(msg.Params)
	if err == nil {
		if werr := mcp.CheckModernRequest(&meta, mcp.ModernVersions); werr != nil {
			err = werr
		}
	}
	if err != nil {
		s.fail(msg.ID, err.(*mcp.Error))
		return
	}
	switch msg.Method {
	case "server/discover":
		if ms, _ := strconv.Atoi(os.Getenv("MCPGEN_TESTSERVER_DISCOVER_DELAY_MS")); ms > 0 {
			<-afterMs(ms) // a slow server, which a probe's grace runs out on
		}
		result := map[string]any{
			"supportedVersions": mcp.ModernVersions,
			"capabilities":      map[string]any{"tools": map[string]any{"listChanged": true}},
			"ttlMs":             0,
			"cacheScope":        mcp.CachePrivate,
		}
		if tasksOn() {
			result["capabilities"] = map[string]any{"tools": map[string]any{"listChanged": true},
				"extensions": map[string]any{tasksExtension: map[string]any{}}}
		}
		if subscribeOn() {
			result["capabilities"].(map[string]any)["resources"] = map[string]any{"subscribe": true}
		}
		if text := os.Getenv("MCPGEN_TESTSERVER_INSTRUCTIONS"); text != "" {
			result["instructions"] = text
		}
		s.complete(msg.ID, result)
	case "subscriptions/listen":
		s.listen(ctx, msg)
	case "tools/list":
		var p struct {
			Cursor string `json:"cursor"`
		}
		_ = json.Unmarshal(msg.Params, &p)
		start, _ := strconv.Atoi(p.Cursor)
		s.mu.Lock()
		tools := s.tools
		s.mu.Unlock()
		start = min(start, len(tools))
		end := min(start+2, len(tools))
		page := []any{}
		for _, name := range tools[start:end] {
			page = append(page, map[string]any{"name": name, "inputSchema": map[string]any{"type": "object"}})
		}
		result := map[string]any{"tools": page, "ttlMs": 0, "cacheScope": mcp.CachePrivate}
		if end < len(tools) {
			result["nextCursor"] = strconv.Itoa(end)
		}
		s.complete(msg.ID, result)
	case "tools/call":
		s.modernCall(ctx, msg, &meta)
	case "tasks/get", "tasks/update", "tasks/cancel":
		s.taskRequest(msg)
	case "resources/list":
		s.complete(msg.ID, map[string]any{"resources": []any{}, "ttlMs": 0, "cacheScope": mcp.CachePrivate})
	default:
		s.fail(msg.ID, mcp.NewError(mcp.CodeMethodNotFound, "no method %s", msg.Method))
	}
}

// complete answers with a complete result, as the revision has it: with
// its resultType, and the server's identity in _meta.
func (s *wireServer) complete(id mcp.ID, result map[string]any) {
	result["resultType"] = mcp.ResultComplete
	result["_meta"] = map[string]any{mcp.MetaServerInfo: serverInfo}
	s.reply(id, result)
}

func (s *wireServer) fail(id mcp.ID, err *mcp.Error) {
	_ = s.w.Write(&mcp.Message{ID: id, Error: err})
}

// listen acknowledges a subscription, and keeps it until cancelled (its
// request is not answered: the server ends it only at its exit).
func (s *wireServer) listen(ctx context.Context, msg *mcp.Message) {
	var p struct {
		Notifications struct {
			ToolsListChanged      bool     `json:"toolsListChanged"`
			TaskIDs               []string `json:"taskIds"`
			ResourceSubscriptions []string `json:"resourceSubscriptions"`
		} `json:"notifications"`
	}
	_ = json.Unmarshal(msg.Params, &p)
	if ms, _ := strconv.Atoi(os.Getenv("MCPGEN_TESTSERVER_LISTEN_DELAY_MS")); ms > 0 {
		select { // requests run each on a goroutine: the others are answered meanwhile
		case <-afterMs(ms):
		case <-ctx.Done():
			return // cancelled meanwhile
		}
	}
	l := &listen{id: msg.ID, tools: p.Notifications.ToolsListChanged}
	if subscribeOn() {
		l.resources = p.Notifications.ResourceSubscriptions
	}
	if tasksOn() {
		l.tasks = slices.DeleteFunc(p.Notifications.TaskIDs, func(id string) bool { return !strings.HasPrefix(id, "task-") })
	}
	s.mu.Lock()
	s.listens = append(s.listens, l)
	s.mu.Unlock()
	honored := map[string]any{}
	if l.tools {
		honored["toolsListChanged"] = true
	}
	if len(l.tasks) > 0 {
		honored["taskIds"] = l.tasks
	}
	if len(l.resources) > 0 {
		honored["resourceSubscriptions"] = l.resources
	}
	s.notify(l, "notifications/subscriptions/acknowledged", map[string]any{"notifications": honored})
}

// notify sends a notification on subscription l, tagged with its id.
func (s *wireServer) notify(l *listen, method string, params map[string]any) {
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{mcp.MetaSubscriptionID: l.id}
	raw, _ := json.Marshal(params)
	_ = s.w.Write(&mcp.Message{Method: method, Params: raw})
}

// unlisten ends the subscription that request id opened, if it is one.
func (s *wireServer) unlisten(id mcp.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listens = slices.DeleteFunc(s.listens, func(l *listen) bool { return l.id == id })
}

// endListens ends every subscription gracefully, as a server that exits
// should: each one's request is answered at last, with its id.
func (s *wireServer) endListens() {
	s.mu.Lock()
	listens := s.listens
	s.listens = nil
	s.mu.Unlock()
	for _, l := range listens {
		raw, _ := json.Marshal(map[string]any{"resultType": mcp.ResultComplete,
			"_meta": map[string]any{mcp.MetaSubscriptionID: l.id, mcp.MetaServerInfo: serverInfo}})
		_ = s.w.Write(&mcp.Message{ID: l.id, Result: raw})
	}
}

// noteMethod appends what msg is to the file $MCPGEN_TESTSERVER_METHODS
// names, if set, one line each: its method, the version its _meta names
// and the name of the client it names ("-" for what it does not name), so
// that a test sees what the server was sent, and on whose behalf.
func noteMethod(msg *mcp.Message) {
	noteMeta(msg)
	path := os.Getenv("MCPGEN_TESTSERVER_METHODS")
	if path == "" || msg.Method == "" {
		return
	}
	version, client := "-", "-"
	if m, err := mcp.ParseRequestMeta(msg.Params); err == nil {
		version = cmp.Or(m.ProtocolVersion, "-")
		var info mcp.Implementation
		if json.Unmarshal(m.ClientInfo, &info) == nil && info.Name != "" {
			client = strings.ReplaceAll(info.Name, " ", "_")
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	fmt.Fprintf(f, "%s %s %s\n", msg.Method, version, client)
	f.Close()
}

// noteMeta appends each request's params._meta, as read, to the file
// $MCPGEN_TESTSERVER_META names, if set, one line each: "METHOD META",
// "-" for a request without _meta; so that a test sees which members of
// its _meta a request reached the server with.
func noteMeta(msg *mcp.Message) {
	path := os.Getenv("MCPGEN_TESTSERVER_META")
	if path == "" || !msg.IsRequest() {
		return
	}
	var p struct {
		Meta json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal(msg.Params, &p)
	meta := "-"
	if len(p.Meta) > 0 {
		var b bytes.Buffer
		if json.Compact(&b, p.Meta) == nil {
			meta = b.String()
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	fmt.Fprintf(f, "%s %s\n", msg.Method, meta)
	f.Close()
}

func afterMs(ms int) <-chan time.Time { return time.After(time.Duration(ms) * time.Millisecond) }

// modernCall runs a tool of the modern mode.
func (s *wireServer) modernCall(ctx context.Context, msg *mcp.Message, meta *mcp.RequestMeta) {
	var p struct {
		Name      string `json:"name"`
		Arguments struct {
			Text  string `json:"text"`
			Ms    int    `json:"ms"`
			Steps int    `json:"steps"`
		} `json:"arguments"`
	}
	_ = json.Unmarshal(msg.Params, &p)
	s.mu.Lock()
	listed := slices.Contains(s.tools, p.Name)
	s.mu.Unlock()
	if !listed {
		s.fail(msg.ID, mcp.NewError(mcp.CodeInvalidParams, "unknown tool %q", p.Name))
		return
	}
	text := func(t string) {
		s.complete(msg.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": t}}})
	}
	switch p.Name {
	case "echo":
		text(p.Arguments.Text)
	case "log":
		// A log message of level info, sent only when the request's _meta
		// asks for that level or a more verbose one, as the revision has
		// it (there is no logging/setLevel).
		if meta.LogLevel == "debug" || meta.LogLevel == "info" {
			params, _ := json.Marshal(map[string]any{"level": "info", "logger": "testlog", "data": p.Arguments.Text})
			_ = s.w.Write(&mcp.Message{Method: "notifications/message", Params: params})
		}
		text("logged")
	case "slow":
		select {
		case <-ctx.Done(): // cancelled: no answer
		case <-afterMs(p.Arguments.Ms):
			text("slept")
		}
	case "progress":
		for i := 1; i <= p.Arguments.Steps; i++ {
			params, _ := json.Marshal(map[string]any{"progressToken": meta.ProgressToken, "progress": i, "total": p.Arguments.Steps})
			_ = s.w.Write(&mcp.Message{Method: "notifications/progress", Params: params})
		}
		text("done")
	case "crash":
		os.Exit(3)
	case "pid":
		text(strconv.Itoa(os.Getpid()))
	case "touch":
		s.mu.Lock()
		var tell []*listen
		for _, l := range s.listens {
			if slices.Contains(l.resources, p.Arguments.Text) {
				tell = append(tell, l)
			}
		}
		s.mu.Unlock()
		for _, l := range tell {
			s.notify(l, "notifications/resources/updated", map[string]any{"uri": p.Arguments.Text})
		}
		text("touched")
	case "add":
		s.mu.Lock()
		s.tools = append(s.tools, "extra")
		var tell []*listen
		for _, l := range s.listens {
			if l.tools {
				tell = append(tell, l)
			}
		}
		s.mu.Unlock()
		for _, l := range tell {
			s.notify(l, "notifications/tools/list_changed", nil)
		}
		text("added")
	case "elicit":
		s.elicit(msg, meta, text)
	case "task":
		// A task: its result is the handle (see taskRequest).
		id := "task-" + p.Arguments.Text
		s.reply(msg.ID, map[string]any{"resultType": "task", "taskId": id, "status": "working", "ttlMs": 60000, "pollIntervalMs": 10})
	}
}

// The tasks extension, in the modern mode with $MCPGEN_TESTSERVER_TASKS=1:
// advertised in discover, with the tool task {text}, which issues the
// task task-TEXT.
const tasksExtension = "io.modelcontextprotocol/tasks"

func tasksOn() bool { return os.Getenv("MCPGEN_TESTSERVER_TASKS") == "1" }

// subscribeOn says whether the modern mode tells of resource changes
// ($MCPGEN_TESTSERVER_SUBSCRIBE=1): resources.subscribe in its
// capabilities, the resourceSubscriptions of a listen honoured, and a
// tool touch {text} that says the resource of URI text was updated, on
// each subscription that asked for it.
func subscribeOn() bool { return os.Getenv("MCPGEN_TESTSERVER_SUBSCRIBE") == "1" }

// taskRequest answers tasks/get (every task of task-* is completed, its
// result naming it), tasks/update (acknowledged, then notifications/tasks
// says the task completed, on each subscription that asked for the task:
// taskIds) and tasks/cancel (acknowledged); an unknown task is an error.
func (s *wireServer) taskRequest(msg *mcp.Message) {
	var p struct {
		TaskID string `json:"taskId"`
	}
	_ = json.Unmarshal(msg.Params, &p)
	if !strings.HasPrefix(p.TaskID, "task-") {
		s.fail(msg.ID, mcp.NewError(mcp.CodeInvalidParams, "unknown task %q", p.TaskID))
		return
	}
	if msg.Method != "tasks/get" {
		s.complete(msg.ID, map[string]any{})
		if msg.Method == "tasks/update" {
			s.mu.Lock()
			var tell []*listen
			for _, l := range s.listens {
				if slices.Contains(l.tasks, p.TaskID) {
					tell = append(tell, l)
				}
			}
			s.mu.Unlock()
			for _, l := range tell {
				s.notify(l, "notifications/tasks", map[string]any{"taskId": p.TaskID, "status": "completed"})
			}
		}
		return
	}
	s.complete(msg.ID, map[string]any{"taskId": p.TaskID, "status": "completed",
		"result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "done " + p.TaskID}}}})
}

// elicit asks for input through multi round-trip requests: each call
// without the answers gets input_required; the retry with the answers and
// the state it gave goes on. Its arguments: text; ask, what it asks:
// "elicitation" (the default: a confirmation), "sampling" (a message),
// "roots" (the client's roots) or "all" (the three at once); steps, how
// many rounds it asks (1 by default: the retry of round N asks round
// N+1's); careless, to ask whatever the client declared (a server that
// does not check, as the spec says it must). The state names the text and
// the round, so that a retry of another call is refused. It completes with
// "TEXT: ANSWER..." listing each round's answers, as the client gave them.
// A call with a progress token gets progress ROUND+1 of STEPS+1 each round.
func (s *wireServer) elicit(msg *mcp.Message, meta *mcp.RequestMeta, text func(string)) {
	var p struct {
		Arguments struct {
			Text     string `json:"text"`
			Ask      string `json:"ask"`
			Steps    int    `json:"steps"`
			Careless bool   `json:"careless"`
		} `json:"arguments"`
	}
	_ = json.Unmarshal(msg.Params, &p)
	arg := p.Arguments.Text
	steps := max(p.Arguments.Steps, 1)
	responses, got, hasState, retry, err := mcp.RetryParams(msg.Params)
	if err != nil {
		s.fail(msg.ID, err.(*mcp.Error))
		return
	}
	prefix := "confirm:" + base64.RawURLEncoding.EncodeToString([]byte(arg)) + ":"
	round, answers := 0, ""
	if retry {
		rest, ok := strings.CutPrefix(got, prefix)
		n, answered, _ := strings.Cut(rest, ":")
		round, err = strconv.Atoi(n)
		if !hasState || !ok || err != nil {
			s.fail(msg.ID, mcp.NewError(mcp.CodeInvalidParams, "invalid params: requestState %q is not this call's", got))
			return
		}
		prev, _ := base64.RawURLEncoding.DecodeString(answered)
		answers = string(prev)
		keys := askKeys(p.Arguments.Ask)
		for _, k := range keys {
			if len(responses[k]) == 0 {
				s.fail(msg.ID, mcp.NewError(mcp.CodeInvalidParams, "invalid params: inputResponses has no answer to %q", k))
				return
			}
			answers += " " + k + "=" + strings.TrimSpace(string(responses[k]))
		}
		round++
	}
	if meta.ProgressToken != nil { // one step of progress per round, on the call's token
		params, _ := json.Marshal(map[string]any{"progressToken": meta.ProgressToken, "progress": round + 1, "total": steps + 1})
		_ = s.w.Write(&mcp.Message{Method: "notifications/progress", Params: params})
	}
	if round >= steps {
		text(fmt.Sprintf("%s:%s", arg, answers))
		return
	}
	var caps map[string]json.RawMessage
	_ = json.Unmarshal(meta.ClientCapabilities, &caps)
	r := &mcp.InputRequiredResult{InputRequests: map[string]mcp.InputRequest{},
		RequestState: prefix + strconv.Itoa(round) + ":" + base64.RawURLEncoding.EncodeToString([]byte(answers)), HasState: true}
	for _, k := range askKeys(p.Arguments.Ask) {
		var req mcp.InputRequest
		switch k {
		case "confirm":
			req = mcp.InputRequest{Method: "elicitation/create", Params: json.RawMessage(
				`{"mode":"form","message":` + quote("Confirm "+arg+"?") + `,"requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}`)}
		case "sample":
			req = mcp.InputRequest{Method: "sampling/createMessage", Params: json.RawMessage(
				`{"messages":[{"role":"user","content":{"type":"text","text":` + quote("Say "+arg) + `}}],"maxTokens":10}`)}
		case "roots":
			req = mcp.InputRequest{Method: "roots/list"}
		}
		if capability, _, _ := strings.Cut(req.Method, "/"); !p.Arguments.Careless && capability != "roots" {
			if _, ok := caps[capability]; !ok {
				s.fail(msg.ID, mcp.MissingCapabilityError(capability))
				return
			}
		}
		r.InputRequests[k] = req
		r.Keys = append(r.Keys, k)
	}
	raw, _ := r.MarshalJSON()
	_ = s.w.Write(&mcp.Message{ID: msg.ID, Result: raw})
}

// askKeys are the keys of the input requests that elicit's ask asks.
func askKeys(ask string) []string {
	switch ask {
	case "sampling":
		return []string{"sample"}
	case "roots":
		return []string{"roots"}
	case "all":
		return []string{"confirm", "sample", "roots"}
	}
	return []string{"confirm"}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// serveDual serves the dual mode: mcp.Server on stdin and stdout, each
// message noted as the other modes note them (noteMethod).
func serveDual() {
	srv := mcp.NewServer(mcp.Implementation{Name: "testserver-dual", Version: "1"}, nil)
	_ = srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal(req.Arguments, &args)
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(args.Text)}}, nil
		}})
	in, feed := io.Pipe()
	go func() {
		// Ends at stdin's end, which it passes on.
		r, w := mcp.NewReader(os.Stdin), mcp.NewWriter(feed)
		for {
			msg, err := r.Read()
			if err != nil {
				feed.Close()
				return
			}
			noteMethod(msg)
			_ = w.Write(msg)
		}
	}()
	_ = srv.Serve(context.Background(), in, os.Stdout)
	noteEOF()
}
