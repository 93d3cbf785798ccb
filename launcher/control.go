package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	json "github.com/goccy/go-json"
)

// The control socket speaks one JSON request line, then one JSON answer
// line. After a successful connect, the connection carries the client's
// MCP messages to the server's hub, and back.
type controlRequest struct {
	Op     string `json:"op"` // status, connect, reload
	Server string `json:"server,omitempty"`
	// Stdio, on a connect, offers the client's stdin and stdout: when the
	// answer says Stdio too, the client sends them (SCM_RIGHTS, with one
	// byte) and the hub reads and writes the agent's pipes itself, so that
	// no bridge copies every message through one more process. The
	// connection then stays open only to tell each side that the other
	// ended.
	Stdio bool `json:"stdio,omitempty"`
}

type controlAnswer struct {
	OK     bool    `json:"ok"`
	Error  string  `json:"error,omitempty"`
	Status *Status `json:"status,omitempty"`
	Stdio  bool    `json:"stdio,omitempty"` // the launcher takes the stdio offered
}

// maxRequestLine bounds the request line.
const maxRequestLine = 4 << 10

// serveControl accepts control connections until ln is closed. Each
// connection has a goroutine, which ends with the connection (a connect
// ends when its client or the hub closes it).
func (s *Session) serveControl(ctx context.Context, ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return // closed at shutdown
		}
		go s.control(ctx, conn)
	}
}

func (s *Session) control(ctx context.Context, conn net.Conn) {
	if err := checkPeer(conn); err != nil {
		s.log.Warn("control socket: connection refused", "error", err)
		conn.Close()
		return
	}
	// The request line is read a byte at a time: anything after it is the
	// client's first MCP message, which must not be swallowed by a buffer.
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := readLine(conn, maxRequestLine)
	_ = conn.SetReadDeadline(time.Time{})
	var req controlRequest
	if err == nil {
		err = json.Unmarshal(line, &req)
	}
	if err != nil {
		answer(conn, controlAnswer{Error: fmt.Sprintf("bad control request: %v", err)})
		conn.Close()
		return
	}
	switch req.Op {
	case "status":
		answer(conn, controlAnswer{OK: true, Status: s.Status()})
		conn.Close()
	case "reload":
		s.reloadNow(true)
		st := s.Status()
		a := controlAnswer{OK: st.Reload.OK, Status: st}
		if !st.Reload.OK {
			a.Error = st.Reload.Error
		}
		answer(conn, a)
		conn.Close()
	case "connect":
		h, err := s.hubOf(req.Server)
		if err != nil {
			answer(conn, controlAnswer{Error: err.Error()})
			conn.Close()
			return
		}
		if err := answer(conn, controlAnswer{OK: true, Stdio: req.Stdio && canPassStdio}); err != nil {
			conn.Close()
			return
		}
		if !req.Stdio || !canPassStdio {
			h.Serve(ctx, conn)
			return
		}
		stdio, err := receiveStdio(conn)
		if err != nil {
			s.log.Warn("control socket: connect", "server", req.Server, "error", err)
			conn.Close()
			return
		}
		go func() {
			// The client (mcpgen connect) exited: the agent is gone, or
			// killed it. Ends when conn is closed below.
			_, _ = io.Copy(io.Discard, conn)
			stdio.Close()
		}()
		h.Serve(ctx, stdio)
		conn.Close() // the client exits
	default:
		answer(conn, controlAnswer{Error: fmt.Sprintf("unknown control request %q", req.Op)})
		conn.Close()
	}
}

func answer(w io.Writer, a controlAnswer) error {
	// As the hub does: what a server or a manifest wrote reads as written.
	b, err := json.MarshalWithOption(a, json.DisableHTMLEscape())
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func readLine(r io.Reader, max int) ([]byte, error) {
	var line []byte
	var b [1]byte
	for len(line) <= max {
		if _, err := r.Read(b[:]); err != nil {
			return nil, err
		}
		if b[0] == '\n' {
			return line, nil
		}
		line = append(line, b[0])
	}
	return nil, errors.New("request line too long")
}

// NotRunningError says that a workspace has no launcher.
type NotRunningError struct{ Workspace string }

func (e *NotRunningError) Error() string {
	return fmt.Sprintf("no launcher is running for workspace %q (start one with mcpgen launch --workspace %s)", e.Workspace, e.Workspace)
}

// dialControl connects to a workspace's control socket and sends a request.
func dialControl(workspace string, req controlRequest) (net.Conn, *controlAnswer, error) {
	dir, err := RuntimeDir(workspace)
	if err != nil {
		return nil, nil, err
	}
	path, err := socketPath(dir, controlSocket)
	if err != nil {
		return nil, nil, err
	}
	conn, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		if noListener(err) {
			return nil, nil, &NotRunningError{workspace}
		}
		return nil, nil, err
	}
	b, _ := json.Marshal(req)
	if _, err := conn.Write(append(b, '\n')); err != nil {
		conn.Close()
		return nil, nil, err
	}
	line, err := readLine(conn, 64<<20)
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("the launcher of workspace %q did not answer: %v", workspace, err)
	}
	var a controlAnswer
	if err := json.Unmarshal(line, &a); err != nil {
		conn.Close()
		return nil, nil, err
	}
	return conn, &a, nil
}

// QueryStatus asks the launcher of workspace for its status.
func QueryStatus(workspace string) (*Status, error) {
	conn, a, err := dialControl(workspace, controlRequest{Op: "status"})
	if err != nil {
		return nil, err
	}
	conn.Close()
	if !a.OK || a.Status == nil {
		return nil, errors.New(a.Error)
	}
	return a.Status, nil
}

// RequestReload asks the launcher of workspace to reload its manifest.
func RequestReload(workspace string) (*Status, error) {
	conn, a, err := dialControl(workspace, controlRequest{Op: "reload"})
	if err != nil {
		return nil, err
	}
	conn.Close()
	if !a.OK {
		return a.Status, errors.New(a.Error)
	}
	return a.Status, nil
}

// Connect opens an MCP connection to a server of workspace, through its
// launcher's hub.
func connect(workspace, server string) (net.Conn, error) {
	conn, _, err := ConnectStdio(workspace, server, nil, nil)
	return conn, err
}

// ConnectStdio connects to a server of workspace and, when in and out are
// given and the launcher takes them, hands them to its hub: the hub then
// speaks MCP on them directly, and the connection returned only ends when
// the hub is done with them (passed is true). Otherwise (passed is false)
// the connection carries the MCP messages, as with Connect.
func ConnectStdio(workspace, server string, in, out *os.File) (conn net.Conn, passed bool, err error) {
	offer := in != nil && out != nil && canPassStdio
	conn, a, err := dialControl(workspace, controlRequest{Op: "connect", Server: server, Stdio: offer})
	if err != nil {
		return nil, false, err
	}
	if !a.OK {
		conn.Close()
		return nil, false, errors.New(a.Error)
	}
	if !offer || !a.Stdio {
		return conn, false, nil // an older launcher: bridge
	}
	if err := sendStdio(conn, in, out); err != nil {
		conn.Close()
		return nil, false, fmt.Errorf("handing stdio to the launcher: %w", err)
	}
	return conn, true, nil
}
