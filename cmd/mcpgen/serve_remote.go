package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/mcp"
	"github.com/mcpgen/mcpgen/mcp/streamable"
)

// serveRemote gives the agent a remote server on stdin and stdout: what
// Codex runs for a url server whose url or headers it cannot express (a
// ${VAR} in the url, a header that mixes text and a reference). The url,
// the headers and the token are resolved here, from the context and the
// variables the agent passed, and go nowhere but into the requests.
func (a *app) serveRemote(ctx context.Context, m *manifest.Manifest, s *manifest.Server, c *manifest.Context) error {
	r, err := m.Remote(s, c, nil)
	if err != nil {
		return err
	}
	header := http.Header{}
	for _, h := range r.Headers {
		header.Add(h.Name, h.Value)
	}
	// The transport logs what no answer shows (a stream given up), never
	// the token, a header or the url's query; the agent keeps our stderr.
	logger := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn, ReplaceAttr: dropTime}))
	t, err := streamable.New(r.URL, streamable.Options{Header: header, BearerToken: r.BearerToken, Logger: logger})
	if err != nil {
		return fmt.Errorf("server %q: %w", s.Name, err)
	}
	if err := relayRemote(ctx, t, a.stdin, a.stdout, max(s.Startup(), s.ToolCall())); err != nil {
		return fmt.Errorf("server %q: %w", s.Name, err)
	}
	return nil
}

// serveURLOptions are serve's flags for relaying to a URL.
type serveURLOptions struct {
	url, tokenEnv string
}

// serveURL gives the agent the Streamable HTTP endpoint of --url on stdin
// and stdout, with the token of --bearer-token-env: what Claude Desktop,
// which runs stdio servers only, runs to reach a launcher's gateway
// served over HTTP. No manifest is read; the token goes nowhere but into
// the requests.
func (a *app) serveURL(o serveURLOptions) error {
	var token string
	if o.tokenEnv != "" {
		if err := manifest.CheckVarName(o.tokenEnv); err != nil {
			return usageError("--bearer-token-env: %v", err)
		}
		if token = os.Getenv(o.tokenEnv); token == "" {
			return fmt.Errorf("--bearer-token-env %s: the variable is not set or empty in the environment mcpgen got (an agent started from a desktop may not have your shell's): set it there", o.tokenEnv)
		}
	}
	logger := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn, ReplaceAttr: dropTime}))
	t, err := streamable.New(o.url, streamable.Options{BearerToken: token, Logger: logger})
	if err != nil {
		return usageError("--url: %v", err)
	}
	// SIGINT and SIGTERM end the session (DELETE) before mcpgen exits.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return relayRemote(ctx, t, a.stdin, a.stdout, max(manifest.DefaultStartupTimeout, manifest.DefaultToolTimeout))
}

// relayRemote copies the agent's messages (in) to the session t and the
// server's (t) to the agent (out), until one side ends:
//
//   - the agent closes in: its requests still unanswered get their answers,
//     for grace at most (the server's longest timeout), as a hub answers
//     what an agent asked before it left; then the session ends (DELETE);
//   - ctx is done (SIGINT, SIGTERM): the session ends at once;
//   - the session fails (the server ended it, or cannot be reached): the
//     error is returned, and mcpgen exits with it, as a server process
//     would.
//
// A line from the agent that is too long or not JSON-RPC is answered here,
// as the server would answer it, and not sent.
func relayRemote(ctx context.Context, t io.ReadWriteCloser, in io.Reader, out io.Writer, grace time.Duration) error {
	rl := &relay{t: t, out: out, pending: map[string]bool{}, answered: make(chan struct{}, 1)}
	agentDone := make(chan struct{})
	go func() {
		// Ends at the agent's EOF, or once the session refuses a write
		// (it ended); a read of in that never returns ends with the
		// process.
		defer close(agentDone)
		rl.fromAgent(in)
	}()
	stop := make(chan struct{})
	closed := make(chan struct{})
	go func() {
		// Ends once it has closed t, which ends fromServer.
		defer close(closed)
		select {
		case <-ctx.Done():
		case <-stop:
		case <-agentDone:
			rl.waitAnswered(ctx, stop, grace)
		}
		_ = t.Close()
	}()
	err := rl.fromServer()
	close(stop)
	<-closed
	return err
}

// relay is the state relayRemote shares between its directions.
type relay struct {
	t   io.ReadWriteCloser
	out io.Writer

	outMu sync.Mutex // one message at a time to the agent

	mu       sync.Mutex
	pending  map[string]bool // the ids of the agent's requests not answered yet
	answered chan struct{}   // signalled when an answer settles one
}

func (rl *relay) write(line []byte) error {
	rl.outMu.Lock()
	defer rl.outMu.Unlock()
	_, err := rl.out.Write(line)
	return err
}

func (rl *relay) fromAgent(in io.Reader) {
	r := mcp.NewReader(in)
	for {
		msg, err := r.Read()
		var derr *mcp.DecodeError
		switch {
		case errors.As(err, &derr):
			if resp := derr.ServerResponse(); resp != nil {
				if rl.write(append(resp.AppendJSON(nil), '\n')) != nil {
					return
				}
			}
			continue
		case err != nil:
			return
		}
		switch {
		case msg.IsRequest():
			rl.mu.Lock()
			rl.pending[msg.ID.String()] = true
			rl.mu.Unlock()
		case msg.Method == "notifications/cancelled":
			// A cancelled request gets no answer: none is owed.
			var p struct {
				RequestID mcp.ID `json:"requestId"`
			}
			if json.Unmarshal(msg.Params, &p) == nil && p.RequestID.IsValid() {
				rl.mu.Lock()
				delete(rl.pending, p.RequestID.String())
				rl.mu.Unlock()
			}
		}
		if _, err := rl.t.Write(append(msg.AppendJSON(nil), '\n')); err != nil {
			return
		}
	}
}

// fromServer copies the server's messages to the agent until the session
// ends: nil when it was closed, else why it failed.
func (rl *relay) fromServer() error {
	r := mcp.NewReader(rl.t)
	for {
		line, err := r.ReadLine()
		if errors.Is(err, io.EOF) || errors.Is(err, streamable.ErrClosed) {
			return nil
		}
		if err != nil {
			return err
		}
		if msg, derr := mcp.DecodeMessage(line); derr == nil && msg.IsResponse() {
			rl.mu.Lock()
			delete(rl.pending, msg.ID.String())
			rl.mu.Unlock()
			select {
			case rl.answered <- struct{}{}:
			default:
			}
		}
		if err := rl.write(append(line, '\n')); err != nil {
			return nil // the agent is gone: nobody to tell
		}
	}
}

// waitAnswered waits until every request of the agent has its answer, for
// grace at most, or until ctx is done or stop is closed.
func (rl *relay) waitAnswered(ctx context.Context, stop <-chan struct{}, grace time.Duration) {
	timer := time.NewTimer(grace)
	defer timer.Stop()
	for {
		rl.mu.Lock()
		n := len(rl.pending)
		rl.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-rl.answered:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		case <-stop:
			return
		}
	}
}

// dropTime leaves the time out of log lines: the agent's log has its own.
func dropTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}
