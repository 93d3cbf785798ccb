//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	json "github.com/goccy/go-json"
)

// launchHTTP runs a built mcpgen launch --listen 127.0.0.1:0 of manifest
// in workspace ws, with env added, until stop (SIGINT, then wait; at the
// test's end if not before), and returns the gateway's URL as status
// --json shows it, and the launcher's log (JSON lines), whole once
// stopped.
func launchHTTP(t *testing.T, manifest string, env ...string) (bin, url string, environ []string, log *lockedBuffer, stop func()) {
	t.Helper()
	bin, err := buildMcpgen()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := os.MkdirTemp("", "mcpgen-rt") // a short path: the control socket's is bounded
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rt) })
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpgen.toml")
	if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	environ = append(os.Environ(), "MCPGEN_RUNTIME_DIR="+rt, "MCPGEN_STATE_DIR="+filepath.Join(dir, "state"), "MCPGEN_WORKSPACE=")
	environ = append(environ, env...)
	log = &lockedBuffer{}
	cmd := exec.Command(bin, "launch", "--workspace", "web", "--manifest", path, "--listen", "127.0.0.1:0", "--log-format", "json")
	cmd.Env, cmd.Stdout, cmd.Stderr = environ, log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGINT)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(time.Minute):
				_ = cmd.Process.Kill()
				<-done
				t.Errorf("the launcher did not stop on SIGINT:\n%s", log)
			}
		})
	}
	t.Cleanup(stop)
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := statusJSON(bin, environ)
		if err == nil && out.HTTP.URL != "" && len(out.Servers) > 0 && out.Servers[0].State == "ready" {
			return bin, out.HTTP.URL, environ, log, stop
		}
		if time.Now().After(deadline) {
			t.Fatalf("the launcher did not serve over HTTP: %v\n%s", err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type httpStatus struct {
	Servers []struct{ State string }
	HTTP    struct {
		URL      string
		Auth     string
		Sessions int
	}
}

func statusJSON(bin string, env []string) (*httpStatus, error) {
	cmd := exec.Command(bin, "status", "--workspace", "web", "--json")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	var st httpStatus
	return &st, json.Unmarshal(out, &st)
}

const echoManifest = `version = 1

[session.auth]
token_env = "WEB_TOKEN"

[servers.a.tools.say]
description = "Say it"
run = ["echo", "a:", "{text}"]
args.text = { type = "string" }
`

const webToken = "web-token-0123456789abcdef-never-logged"

// TestLaunchListen: a real mcpgen launch --listen serves the workspace
// over HTTP behind its token: mcpgen serve --url (the relay of Claude
// Desktop's entries) calls a tool through it with the token, and is
// refused without; each bad request of the issue gets its answer from
// the real process, and the log never holds a token.
func TestLaunchListen(t *testing.T) {
	if testing.Short() {
		t.Skip("builds mcpgen")
	}
	bin, url, env, log, stop := launchHTTP(t, echoManifest, "WEB_TOKEN="+webToken)

	// A tool called through the relay, with the token: each line once
	// the answer before it came, as an agent sends them.
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"relay-test","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"say","arguments":{"text":"over http"}}}`,
	}
	relay := func(env []string) string {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "serve", "--url", url, "--bearer-token-env", "RELAY_TOKEN")
		cmd.Env = env
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		rd := bufio.NewReader(stdout)
		for _, l := range lines {
			io.WriteString(stdin, l+"\n")
			line, err := rd.ReadString('\n')
			out.WriteString(line)
			if err != nil {
				break
			}
		}
		stdin.Close()
		rest, _ := io.ReadAll(rd)
		out.Write(rest)
		_ = cmd.Wait()
		return out.String() + stderr.String()
	}
	out := relay(append(env, "RELAY_TOKEN="+webToken))
	if !strings.Contains(out, `"id":2,"result":{"content":[{"type":"text","text":"a: over http\n"}]`) {
		t.Errorf("the relay with the token:\n%s", out)
	}
	out = relay(append(env, "RELAY_TOKEN=not-the-token"))
	if strings.Contains(out, `"a: over http`) || !strings.Contains(out, "401") {
		t.Errorf("the relay with a forged token:\n%s", out)
	}

	hdrs := func(kv ...string) []string { return kv }
	good := hdrs("Authorization", "Bearer "+webToken)
	sid := initSession(t, url, good)
	ping := `{"jsonrpc":"2.0","id":9,"method":"ping"}`
	for _, tc := range []struct {
		name, method, sid, body string
		headers                 []string
		status                  int
		want                    string
	}{
		{"no token", "POST", "", ping, nil, 401, "bearer token"},
		{"forged token", "POST", sid, ping, hdrs("Authorization", "Bearer forged-"+webToken), 401, "not one this launcher admits"},
		{"too large", "POST", sid, `{"x":"` + strings.Repeat("x", 16<<20) + `"}`, good, 413, "longer than"},
		{"wrong content type", "POST", sid, ping, append(hdrs("Content-Type", "text/plain"), good...), 415, "Content-Type"},
		{"wrong accept", "POST", sid, ping, append(hdrs("Accept", "text/html"), good...), 406, "Accept"},
		{"malformed JSON", "POST", sid, `{"jsonrpc":`, good, 400, "-32700"},
		{"batch", "POST", sid, "[" + ping + "]", good, 400, "batches"},
		{"unknown session", "POST", "feedfacefeedface", ping, good, 404, "initialize a new one"},
		{"foreign Host", "POST", sid, ping, append(hdrs("Host", "rebound.example"), good...), 403, "Host"},
		{"foreign Origin", "POST", sid, ping, append(hdrs("Origin", "https://evil.example"), good...), 403, "Origin"},
		{"good", "POST", sid, ping, good, 200, `"id":9,"result":{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := send(t, tc.method, url, tc.sid, tc.body, tc.headers...)
			if code != tc.status || !strings.Contains(body, tc.want) {
				t.Errorf("%d %s, want %d with %q", code, body, tc.status, tc.want)
			}
		})
	}
	st, err := statusJSON(bin, env)
	if err != nil || st.HTTP.Sessions != 1 || st.HTTP.Auth != "a bearer token" {
		t.Errorf("status: %+v %v", st, err)
	}
	if code, body := send(t, "DELETE", url, sid, "", good...); code != http.StatusNoContent {
		t.Errorf("DELETE: %d %s", code, body)
	}
	stop()
	if !strings.Contains(log.String(), "request refused") {
		t.Errorf("the launcher's log does not show the refusals:\n%s", log)
	}
	if strings.Contains(log.String(), webToken[:16]) {
		t.Errorf("the launcher's log holds the token:\n%s", log)
	}
}

// initSession initializes a session at url, and returns its id.
func initSession(t *testing.T, url string, headers []string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %s %s", resp.Status, body)
	}
	return sid
}

// send sends a request as a client does, headers overriding its own (Host
// sets the request's host), and returns the status and body.
func send(t *testing.T, method, url, sid, body string, headers ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
