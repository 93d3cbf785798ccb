package httpface

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

// modernMeta is the _meta of a stateless request of the tests, with more
// members if any (",..." JSON).
func modernMeta(more string) string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + mcp.ModernVersion + `","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"m","version":"1"}` + more + `}`
}

// modernPost POSTs a stateless request with the headers its body asks
// for (headers overrides them; "" deletes one), and returns the response.
func modernPost(t *testing.T, ctx context.Context, url, body string, headers map[string]string) *http.Response {
	t.Helper()
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"params"`
	}
	if err := json.Unmarshal([]byte(body), &msg); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(versionHeader, mcp.ModernVersion)
	req.Header.Set(methodHeader, msg.Method)
	if msg.Params.Name != "" {
		req.Header.Set(nameHeader, msg.Params.Name)
	} else if msg.Params.URI != "" {
		req.Header.Set(nameHeader, msg.Params.URI)
	}
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// messages reads a response's messages: its JSON body, or its events.
func messages(t *testing.T, resp *http.Response) []*mcp.Message {
	t.Helper()
	defer resp.Body.Close()
	var out []*mcp.Message
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		m, err := mcp.DecodeMessage(b)
		if err != nil {
			t.Fatalf("%d %s: %v", resp.StatusCode, b, err)
		}
		return append(out, m)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			m, err := mcp.DecodeMessage([]byte(data))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
	}
	return out
}

// TestStatelessCall: a modern request without a session is answered on
// its POST as JSON, under its own id, completed as the modern revision
// completes a result; server/discover is answered from the face's
// description.
func TestStatelessCall(t *testing.T) {
	_, srv, _ := testFace(t, Options{})
	resp := modernPost(t, context.Background(), srv.URL+"/mcp", `{"jsonrpc":"2.0","id":"x-1","method":"echo","params":{"v":7,`+modernMeta("")+`}}`, nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get(sessionHeader) != "" {
		t.Fatalf("status %d, session %q", resp.StatusCode, resp.Header.Get(sessionHeader))
	}
	ms := messages(t, resp)
	if len(ms) != 1 || ms[0].ID.String() != `"x-1"` || !strings.Contains(string(ms[0].Result), `"v":7`) || !strings.Contains(string(ms[0].Result), `"resultType":"complete"`) {
		t.Fatalf("answer: %s", ms[0].AppendJSON(nil))
	}
	resp = modernPost(t, context.Background(), srv.URL+"/servers/a/mcp", `{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{`+modernMeta("")+`}}`, nil)
	ms = messages(t, resp)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(ms[0].Result), `"supportedVersions"`) || !strings.Contains(string(ms[0].Result), `"listChanged":true`) {
		t.Fatalf("discover: %d %s", resp.StatusCode, ms[0].AppendJSON(nil))
	}
}

// TestStatelessChecks: the headers that mirror a stateless request's body
// are checked against it, and what the revision refuses is refused with
// its code and HTTP status, under the request's id.
func TestStatelessChecks(t *testing.T) {
	_, srv, _ := testFace(t, Options{})
	url := srv.URL + "/mcp"
	call := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{},` + modernMeta("") + `}}`
	for _, c := range []struct {
		name    string
		body    string
		headers map[string]string
		status  int
		code    int64
		says    string
	}{
		{"no version header", call, map[string]string{versionHeader: ""}, 400, mcp.CodeHeaderMismatch, "MCP-Protocol-Version header is required"},
		{"version header differs", call, map[string]string{versionHeader: "2099-01-01"}, 400, mcp.CodeHeaderMismatch, `does not match the body's version`},
		{"unknown version", strings.Replace(call, mcp.ModernVersion, "v999", 1), map[string]string{versionHeader: "v999"}, 400, mcp.CodeUnsupportedProtocolVersion, ""},
		{"no method header", call, map[string]string{methodHeader: ""}, 400, mcp.CodeHeaderMismatch, "Mcp-Method header is required"},
		{"method header differs", call, map[string]string{methodHeader: "tools/list"}, 400, mcp.CodeHeaderMismatch, `"tools/list" does not match`},
		{"no name header", call, map[string]string{nameHeader: ""}, 400, mcp.CodeHeaderMismatch, "Mcp-Name header is required"},
		{"name header differs", call, map[string]string{nameHeader: "other"}, 400, mcp.CodeHeaderMismatch, `"other" does not match params.name "echo"`},
		{"name header malformed", call, map[string]string{nameHeader: "=?base64?***?="}, 400, mcp.CodeHeaderMismatch, "malformed"},
		{"no client capabilities", strings.Replace(call, `"io.modelcontextprotocol/clientCapabilities":{},`, "", 1), nil, 400, mcp.CodeInvalidParams, "clientCapabilities"},
		{"no version in _meta", `{"jsonrpc":"2.0","id":5,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}}`, nil, 400, mcp.CodeInvalidParams, "protocolVersion"},
		{"ping", `{"jsonrpc":"2.0","id":5,"method":"ping","params":{` + modernMeta("") + `}}`, nil, 404, mcp.CodeMethodNotFound, "not part of revision"},
		{"initialize", `{"jsonrpc":"2.0","id":5,"method":"initialize","params":{` + modernMeta("") + `}}`, nil, 404, mcp.CodeMethodNotFound, "not part of revision"},
		{"unknown method", `{"jsonrpc":"2.0","id":5,"method":"nope/nope","params":{` + modernMeta("") + `}}`, nil, 404, mcp.CodeMethodNotFound, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := modernPost(t, context.Background(), url, c.body, c.headers)
			ms := messages(t, resp)
			if resp.StatusCode != c.status || ms[0].Error == nil || ms[0].Error.Code != c.code || ms[0].ID.String() != "5" || !strings.Contains(ms[0].Error.Message, c.says) {
				t.Errorf("%d %s", resp.StatusCode, ms[0].AppendJSON(nil))
			}
		})
	}
	// An Mcp-Name in its base64 form is read so.
	resp := modernPost(t, context.Background(), url, call, map[string]string{nameHeader: "=?base64?ZWNobw==?="})
	if ms := messages(t, resp); resp.StatusCode != http.StatusOK || ms[0].Error != nil {
		t.Errorf("base64 name: %d %s", resp.StatusCode, ms[0].AppendJSON(nil))
	}
}

// TestStatelessSharedIDs: clients that choose the same request id and the
// same progress token at once each get their own progress and answer.
func TestStatelessSharedIDs(t *testing.T) {
	_, srv, _ := testFace(t, Options{})
	var wg sync.WaitGroup
	errs := make(chan string, 32)
	for i := range 32 {
		wg.Go(func() {
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"progress","params":{"n":%d,%s}}`, i, modernMeta(`,"progressToken":"tok"`))
			ms := messages(t, modernPost(t, context.Background(), srv.URL+"/mcp", body, nil))
			if len(ms) != 2 || ms[0].Method != "notifications/progress" || !strings.Contains(string(ms[0].Params), `"progressToken":"tok"`) {
				errs <- fmt.Sprintf("client %d: %d messages, first %s", i, len(ms), ms[0].AppendJSON(nil))
				return
			}
			if a := ms[1]; a.ID.String() != "1" || !strings.Contains(string(a.Result), fmt.Sprintf(`"n":%d,`, i)) {
				errs <- fmt.Sprintf("client %d got %s", i, a.AppendJSON(nil))
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestStatelessLogLevel: a request hears the log messages of its level
// or louder while it is under way, and none when its _meta asks for none.
func TestStatelessLogLevel(t *testing.T) {
	_, srv, _ := testFace(t, Options{})
	body := `{"jsonrpc":"2.0","id":1,"method":"log","params":{"levels":["debug","warning"],` + modernMeta(`,"io.modelcontextprotocol/logLevel":"info"`) + `}}`
	ms := messages(t, modernPost(t, context.Background(), srv.URL+"/mcp", body, nil))
	if len(ms) != 2 || ms[0].Method != "notifications/message" || !strings.Contains(string(ms[0].Params), `"warning"`) {
		t.Errorf("with logLevel info: %d messages", len(ms))
	}
	body = `{"jsonrpc":"2.0","id":1,"method":"log","params":{"levels":["debug","warning"],` + modernMeta("") + `}}`
	if ms := messages(t, modernPost(t, context.Background(), srv.URL+"/mcp", body, nil)); len(ms) != 1 || !ms[0].IsResponse() {
		t.Errorf("without logLevel: %d messages, first %s", len(ms), ms[0].AppendJSON(nil))
	}
}

// TestStatelessCancel: a client that closes its response cancels its
// request.
func TestStatelessCancel(t *testing.T) {
	_, srv, _ := testFace(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"hang","params":{`+modernMeta("")+`}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(versionHeader, mcp.ModernVersion)
		req.Header.Set(methodHeader, "hang")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-hangStarted:
	case <-time.After(10 * time.Second):
		t.Fatal("the request did not reach its handler")
	}
	cancel()
	<-done
	select {
	case m := <-hangCancelled:
		if m != "hang" {
			t.Errorf("cancelled: %q", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request was not cancelled when its client closed its response")
	}
}

// TestStatelessListen: subscriptions/listen is a long event stream: its
// acknowledgment first, then the changes it asked for, tagged with the
// client's request id (which another client uses too, at once).
func TestStatelessListen(t *testing.T) {
	_, srv, _ := testFace(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listen := `{"jsonrpc":"2.0","id":"sub","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + modernMeta("") + `}}`
	resp := modernPost(t, ctx, srv.URL+"/mcp", listen, nil)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("listen: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	defer resp.Body.Close()
	events := make(chan *mcp.Message, 8)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				if m, err := mcp.DecodeMessage([]byte(data)); err == nil {
					events <- m
				}
			}
		}
		close(events)
	}()
	next := func() *mcp.Message {
		select {
		case m := <-events:
			return m
		case <-time.After(10 * time.Second):
			t.Fatal("no event")
			return nil
		}
	}
	if m := next(); m == nil || m.Method != "notifications/subscriptions/acknowledged" || !strings.Contains(string(m.Params), `"io.modelcontextprotocol/subscriptionId":"sub"`) {
		t.Fatalf("first event: %s", m.AppendJSON(nil))
	}
	// Another client's request changes the tools, and uses the same id:
	// its answer is its own, and the change reaches the listen, tagged
	// with the listen's id.
	ms := messages(t, modernPost(t, ctx, srv.URL+"/mcp", `{"jsonrpc":"2.0","id":"sub","method":"change","params":{`+modernMeta("")+`}}`, nil))
	if len(ms) != 1 || ms[0].ID.String() != `"sub"` || ms[0].Error != nil {
		t.Fatalf("change: %d messages, %s", len(ms), ms[0].AppendJSON(nil))
	}
	if m := next(); m == nil || m.Method != "notifications/tools/list_changed" || !strings.Contains(string(m.Params), `"io.modelcontextprotocol/subscriptionId":"sub"`) {
		t.Fatalf("change event: %s", m.AppendJSON(nil))
	}
}

// TestStatelessLinger: a stateless agent counts as a client of the
// launcher until it has had no request for the linger; then it ends, and
// the next request makes another.
func TestStatelessLinger(t *testing.T) {
	var opened, closed atomic.Int32
	f, srv, ta := testFace(t, Options{
		StatelessLinger: 20 * time.Millisecond,
		Open:            func() bool { opened.Add(1); return true },
		Close:           func() { closed.Add(1) },
	})
	call := `{"jsonrpc":"2.0","id":1,"method":"echo","params":{` + modernMeta("") + `}}`
	for round := int32(1); round <= 2; round++ {
		if ms := messages(t, modernPost(t, context.Background(), srv.URL+"/mcp", call, nil)); ms[0].Error != nil {
			t.Fatalf("round %d: %s", round, ms[0].AppendJSON(nil))
		}
		waitFor(t, "the idle stateless agent to end", func() bool {
			return f.Stateless() == 0 && ta.conns.Load() == 0 && closed.Load() == round
		})
		if opened.Load() != round {
			t.Fatalf("round %d: opened %d times", round, opened.Load())
		}
	}
}

// TestStatelessDeafClient: a client that never reads its response while
// its request floods it is cut off (its request cancelled) at the bounds
// of what may wait for it; another client of the same subject, on the
// same agent connection, is answered meanwhile and after.
// The flood is long: its log messages are lossy, and on a busy machine the
// agent's queue sheds many before they reach the request, which the bound
// cuts only once enough have (20,000 were too few under load).
func TestStatelessDeafClient(t *testing.T) {
	var logs logBuffer
	_, srv, _ := testFace(t, Options{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	body := `{"jsonrpc":"2.0","id":1,"method":"flood","params":{"n":200000,"size":1000,"lossy":true,` + modernMeta(`,"io.modelcontextprotocol/logLevel":"debug"`) + `}}`
	host := strings.TrimPrefix(srv.URL, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%s: %s\r\n%s: flood\r\nContent-Length: %d\r\n\r\n%s",
		host, versionHeader, mcp.ModernVersion, methodHeader, len(body), body)
	// Nothing of conn is read from now on.
	echo := `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"other":true,` + modernMeta("") + `}}`
	waitFor(t, "the deaf client to be cut off", func() bool {
		ms := messages(t, modernPost(t, context.Background(), srv.URL+"/mcp", echo, nil))
		if len(ms) != 1 || !strings.Contains(string(ms[0].Result), `"other":true`) {
			t.Fatalf("the other client: %s", ms[0].AppendJSON(nil))
		}
		return strings.Contains(logs.String(), "cut off")
	})
}
