package e2e

// The remote tests reach the reference server-everything, started in its
// streamableHttp mode on a loopback port, with mcpgen tools ls and
// mcpgen tools call --url: the Streamable HTTP client against a real server
// (the official TypeScript SDK's server transport), with sessions, event
// stream answers, the GET stream and the server's requests to the client.

import (
	"bytes"
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

func TestRemoteTools(t *testing.T) {
	sb := newSandbox(t)
	srv := startEverythingHTTP(t)
	url := srv.url

	tests := []struct {
		name     string
		args     []string
		wantCode int
		// want and wantErr must appear in stdout and stderr.
		want, wantErr []string
	}{
		{name: "ls", args: []string{"tools", "ls", "--url", url},
			want: []string{"NAME", "echo", "Echo Tool", "get-sum", "get-roots-list"}},
		{name: "call echo", args: []string{"tools", "call", "--url", url, "echo", "message=hi"},
			want: []string{"Echo: hi\n"}},
		{name: "typed arguments", args: []string{"tools", "call", "--url", url, "get-sum", "a=2", "b=3.5"},
			want: []string{"The sum of 2 and 3.5 is 5.5."}},
		{name: "arguments as JSON", args: []string{"tools", "call", "--url", url, "echo", "--args", `{"message":"from json"}`},
			want: []string{"Echo: from json"}},
		// The server asks for the client's roots on the GET stream (its
		// tool waits for the answer): the current directory.
		{name: "roots", args: []string{"tools", "call", "--url", url, "get-roots-list"},
			want: []string{"file://" + sb.dir}},
		{name: "image summarized", args: []string{"tools", "call", "--url", url, "get-tiny-image"},
			want: []string{"[image: image/png,"}},
		// The form's required field has no default: cancelled, and said.
		{name: "elicitation", args: []string{"tools", "call", "--url", url, "trigger-elicitation-request"},
			want: []string{"cancel"}, wantErr: []string{"the server asked for input", "has no default"}},
		{name: "error result", args: []string{"tools", "call", "--url", url, "get-annotated-message", "messageType=nonsense"},
			wantCode: 1, wantErr: []string{"Invalid"}},
		{name: "bad value for the schema", args: []string{"tools", "call", "--url", url, "get-sum", "a=two", "b=1"},
			wantCode: 2, wantErr: []string{`"two" is not a number`}},
		{name: "wrong path", args: []string{"tools", "ls", "--url", strings.TrimSuffix(url, "/mcp") + "/nope"},
			wantCode: 1, wantErr: []string{"404 Not Found", "check the URL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := sb.try(run{args: append([]string{mcpgen}, tt.args...)})
			code := 0
			if ee, ok := res.err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if res.err != nil {
				t.Fatalf("%s", res)
			}
			if code != tt.wantCode {
				t.Errorf("exit code: got %d, want %d\n%s", code, tt.wantCode, res)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.stdout, w) {
					t.Errorf("stdout lacks %q\n%s", w, res)
				}
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(res.stderr, w) {
					t.Errorf("stderr lacks %q\n%s", w, res)
				}
			}
		})
	}

	t.Run("ls --json", func(t *testing.T) {
		res := sb.must(run{args: []string{mcpgen, "tools", "ls", "--url", url, "--json"}})
		var tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if err := json.Unmarshal([]byte(res.stdout), &tools); err != nil {
			t.Fatalf("not a JSON array of tools: %v\n%s", err, res)
		}
		found := false
		for _, tool := range tools {
			found = found || (tool.Name == "echo" && len(tool.InputSchema) > 0)
		}
		if !found {
			t.Errorf("no echo tool with its schema in %s", res.stdout)
		}
	})

	// Every command ended its session: the server logs each DELETE.
	sessions := strings.Count(srv.stdout(), "Session initialized with ID")
	deleted := strings.Count(srv.stdout(), "Received session termination request")
	if sessions == 0 || deleted != sessions {
		t.Errorf("sessions: %d initialized, %d deleted; want every one deleted\n%s", sessions, deleted, srv.stdout())
	}
	srv.stop(t)
}

// everythingHTTP is server-everything in streamableHttp mode, started by a
// test.
type everythingHTTP struct {
	url  string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

// startEverythingHTTP starts server-everything's streamableHttp mode on a
// free loopback port: testdata/loopback.cjs keeps its listener on
// 127.0.0.1 (it would listen on every interface) and says which port PORT=0
// got.
func startEverythingHTTP(t *testing.T) *everythingHTTP {
	t.Helper()
	preload, err := filepath.Abs(filepath.Join("testdata", "loopback.cjs"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "--require", preload, os.Getenv("SERVER_EVERYTHING"), "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT=0")
	s := &everythingHTTP{cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		// The one Wait of the server; ends when it exits.
		_ = cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() { s.stop(t) })

	const listening = "loopback.cjs: listening on "
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := s.out.String()
		if _, rest, ok := strings.Cut(out, listening); ok {
			if addr, _, ok := strings.Cut(rest, "\n"); ok {
				if !strings.HasPrefix(addr, "127.0.0.1:") {
					t.Fatalf("server-everything listens on %s, want loopback", addr)
				}
				s.url = "http://" + addr + "/mcp"
				return s
			}
		}
		select {
		case <-s.done:
			t.Fatalf("server-everything exited before listening:\n%s", out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything did not listen within 30s:\n%s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *everythingHTTP) stdout() string { return s.out.String() }

// stop ends the server by its PID (SIGTERM, then SIGKILL) and checks that
// it is gone.
func (s *everythingHTTP) stop(t *testing.T) {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	if err := syscall.Kill(s.cmd.Process.Pid, 0); err == nil {
		t.Errorf("server-everything (pid %d) is still running", s.cmd.Process.Pid)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
