package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/dirs"
	"github.com/mcpgen/mcpgen/launcher/internal/wire"
)

// The control socket speaks wire's protocol: one JSON request line, then
// one JSON answer line, which carries the session's status. After a
// successful connect, the connection carries the client's MCP messages to
// the server's hub, and back.
type controlAnswer = wire.Answer[ctl.Status]

// answer writes the answer to a request.
func answer(w io.Writer, a controlAnswer) error { return wire.WriteAnswer(w, a) }

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
	line, err := wire.ReadLine(conn, wire.MaxRequestLine)
	_ = conn.SetReadDeadline(time.Time{})
	var req wire.Request
	if err == nil {
		err = json.Unmarshal(line, &req)
	}
	if err != nil {
		answer(conn, controlAnswer{Error: fmt.Sprintf("bad control request: %v", err)})
		conn.Close()
		return
	}
	switch req.Op {
	case "connect", "gateway", "restart", "wait":
		// They need the servers: they wait for the first apply (a stop
		// does not: see Run). The client bounds its own wait.
		select {
		case <-s.up:
		case <-ctx.Done():
			answer(conn, controlAnswer{Error: fmt.Sprintf("workspace %q is stopping", s.opts.Workspace)})
			conn.Close()
			return
		}
	}
	switch req.Op {
	case "status":
		answer(conn, controlAnswer{OK: true, Status: s.Status()})
		conn.Close()
	case "reload":
		s.reloadNow(true, nil)
		st := s.Status()
		a := controlAnswer{OK: st.Reload.OK, Status: st}
		if !st.Reload.OK {
			a.Error = st.Reload.Error
		}
		answer(conn, a)
		conn.Close()
	case "stop":
		// The answer says the stop has begun; the connection then stays
		// open until the session has ended (every server stopped, the
		// lock released), which its client waits for.
		ended := s.requestStop(req.Force)
		if answer(conn, controlAnswer{OK: true, Status: s.Status()}) == nil {
			<-ended
		}
		conn.Close()
	case "restart":
		starting, err := s.restartServer(ctx, req.Server)
		a := controlAnswer{OK: err == nil, Status: s.Status(), Starting: starting}
		if err != nil {
			a.Error = err.Error()
		}
		answer(conn, a)
		conn.Close()
	case "wait":
		starting := s.waitSettled(ctx, nil)
		answer(conn, controlAnswer{OK: true, Status: s.Status(), Starting: starting})
		conn.Close()
	case "connect":
		if !s.openClient() {
			answer(conn, refuseExiting(s.opts.Workspace))
			conn.Close()
			return
		}
		defer s.closeClient()
		h, err := s.hubOf(req.Server)
		if err != nil {
			answer(conn, controlAnswer{Error: err.Error()})
			conn.Close()
			return
		}
		s.serveClient(conn, req, func(c io.ReadWriteCloser) { h.Serve(ctx, c) }, "server", req.Server)
	case "gateway":
		s.serveGateway(ctx, conn, req)
	default:
		answer(conn, controlAnswer{Error: fmt.Sprintf("unknown control request %q", req.Op)})
		conn.Close()
	}
}

// NotRunningError says that a workspace has no launcher: none runs, or
// the one that runs is exiting (idle), and takes no more clients.
type NotRunningError struct {
	Workspace string
	Exiting   bool
}

func (e *NotRunningError) Error() string {
	if e.Exiting {
		return fmt.Sprintf("workspace %q: %s", e.Workspace, wire.ExitingMessage)
	}
	return fmt.Sprintf("no launcher is running for workspace %q (start one with mcpgen launch --workspace %s)", e.Workspace, e.Workspace)
}

// dialWait bounds the dial of a control socket.
const dialWait = 5 * time.Second

// dialControl connects to a workspace's control socket, sends a request
// and reads the answer line, within answerWait (0: no bound, for requests
// that the launcher bounds itself). It creates nothing: a workspace that
// was never launched has no launcher running.
func dialControl(ctx context.Context, workspace string, req wire.Request, answerWait time.Duration) (net.Conn, *controlAnswer, error) {
	dir, exists, err := dirs.FindRuntimeDir(workspace)
	if err != nil {
		return nil, nil, err
	}
	if !exists {
		return nil, nil, &NotRunningError{Workspace: workspace}
	}
	path, err := dirs.SocketPath(dir, dirs.ControlSocket)
	if err != nil {
		return nil, nil, err
	}
	d := net.Dialer{Timeout: dialWait}
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		if noListener(err) {
			return nil, nil, &NotRunningError{Workspace: workspace}
		}
		return nil, nil, err
	}
	// The request, the answer and ctx: a launcher that is stuck (stopped
	// with SIGSTOP, say) fails the request rather than hang it.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	if answerWait > 0 {
		_ = conn.SetDeadline(time.Now().Add(answerWait))
	}
	if _, err := conn.Write(append(req.AppendJSON(nil), '\n')); err != nil {
		conn.Close()
		return nil, nil, err
	}
	line, err := wire.ReadLine(conn, 64<<20)
	if err != nil {
		conn.Close()
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if _, serr := os.Stat(path); errors.Is(serr, fs.ErrNotExist) {
			// It closed the connection unanswered, and its socket is
			// gone: it exits (idle) and this connection was on its way.
			return nil, nil, &NotRunningError{Workspace: workspace, Exiting: true}
		}
		return nil, nil, fmt.Errorf("the launcher of workspace %q did not answer: %v", workspace, err)
	}
	_ = conn.SetDeadline(time.Time{})
	a, err := wire.ParseAnswer[ctl.Status](line)
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("the launcher of workspace %q answered badly: %v", workspace, err)
	}
	return conn, a, nil
}

// QueryStatus asks the launcher of workspace for its status.
func QueryStatus(ctx context.Context, workspace string) (*ctl.Status, error) {
	return queryStatus(ctx, workspace)
}

func queryStatus(ctx context.Context, workspace string) (*ctl.Status, error) {
	conn, a, err := dialControl(ctx, workspace, wire.Request{Op: "status"}, statusWait)
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
func RequestReload(ctx context.Context, workspace string) (*ctl.Status, error) {
	conn, a, err := dialControl(ctx, workspace, wire.Request{Op: "reload"}, 0)
	if err != nil {
		return nil, err
	}
	conn.Close()
	if !a.OK {
		return a.Status, errors.New(a.Error)
	}
	return a.Status, nil
}

// RequestRestart asks the launcher of workspace to restart one server now,
// failed or not, and waits until it is ready, failed or in backoff again,
// or until its startup timeout has passed: then starting says so. The
// status is the one after the restart.
func RequestRestart(ctx context.Context, workspace, server string) (st *ctl.Status, starting bool, err error) {
	conn, a, err := dialControl(ctx, workspace, wire.Request{Op: "restart", Server: server}, 0)
	if err != nil {
		return nil, false, err
	}
	conn.Close()
	if !a.OK {
		return a.Status, false, errors.New(a.Error)
	}
	return a.Status, len(a.Starting) > 0, nil
}

// WaitSettled waits until no server of the workspace is starting: each is
// ready, failed or in backoff. The launcher bounds the wait by its servers'
// startup timeouts; starting names the servers still starting then.
func WaitSettled(ctx context.Context, workspace string) (st *ctl.Status, starting []string, err error) {
	conn, a, err := dialControl(ctx, workspace, wire.Request{Op: "wait"}, 0)
	if err != nil {
		return nil, nil, err
	}
	conn.Close()
	if !a.OK || a.Status == nil {
		return nil, nil, errors.New(a.Error)
	}
	return a.Status, a.Starting, nil
}

// A StillStoppingError is a launcher that was asked to stop and had not
// ended when the caller stopped waiting.
type StillStoppingError struct {
	Workspace string
	Pid       int
}

func (e *StillStoppingError) Error() string {
	return fmt.Sprintf("the launcher of workspace %q (pid %d) is still stopping its servers: run mcpgen stop --force --workspace %s to skip their grace periods", e.Workspace, e.Pid, e.Workspace)
}

// RequestStop asks the launcher of workspace to stop, as SIGTERM does
// (force: as a second signal does, which skips the servers' grace
// periods), and waits until the session has ended: every server stopped
// and the lock released. When ctx ends first, the error is a
// *StillStoppingError. The status is the one from before the stop.
func RequestStop(ctx context.Context, workspace string, force bool) (*ctl.Status, error) {
	conn, a, err := dialControl(ctx, workspace, wire.Request{Op: "stop", Force: force}, statusWait)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if !a.OK || a.Status == nil {
		return nil, errors.New(a.Error)
	}
	st := a.Status
	// The launcher closes the connection when the session has ended (or
	// the kernel does, when it dies).
	stop := context.AfterFunc(ctx, func() { _ = conn.SetReadDeadline(time.Now()) })
	defer stop()
	_, _ = io.Copy(io.Discard, conn)
	if ctx.Err() != nil {
		return st, &StillStoppingError{Workspace: workspace, Pid: st.Pid}
	}
	// The lock is released before the connection closes; this only covers
	// a connection that ended some other way.
	for {
		if _, running, err := IsRunning(workspace); err != nil || !running {
			return st, err
		}
		select {
		case <-ctx.Done():
			return st, &StillStoppingError{Workspace: workspace, Pid: st.Pid}
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Connect opens an MCP connection to a server of workspace, through its
// launcher's hub.
func connect(workspace, server string) (net.Conn, error) {
	conn, _, err := ConnectStdio(context.Background(), workspace, server, nil, nil)
	return conn, err
}

// ConnectStdio connects to a server of workspace and, when in and out are
// given and the launcher takes them, hands them to its hub: the hub then
// speaks MCP on them directly, and the connection returned only ends when
// the hub is done with them (passed is true). Otherwise (passed is false)
// the connection carries the MCP messages, as with Connect.
func ConnectStdio(ctx context.Context, workspace, server string, in, out *os.File) (conn net.Conn, passed bool, err error) {
	return connectStdio(ctx, workspace, wire.Request{Op: "connect", Server: server}, in, out)
}

// connectStdio sends a connect or gateway request, offering in and out.
func connectStdio(ctx context.Context, workspace string, req wire.Request, in, out *os.File) (conn net.Conn, passed bool, err error) {
	offer := in != nil && out != nil && canPassStdio
	req.Stdio = offer
	conn, a, err := dialControl(ctx, workspace, req, statusWait)
	if err != nil {
		return nil, false, err
	}
	if !a.OK {
		conn.Close()
		if a.Exiting {
			return nil, false, &NotRunningError{Workspace: workspace, Exiting: true}
		}
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
