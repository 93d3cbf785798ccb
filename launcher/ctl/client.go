package ctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"time"

	"github.com/mcpgen/mcpgen/launcher/internal/dirs"
	"github.com/mcpgen/mcpgen/launcher/internal/wire"
)

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
func dialControl(ctx context.Context, workspace string, req wire.Request, answerWait time.Duration) (net.Conn, *wire.Answer[Status], error) {
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
	a, err := wire.ParseAnswer[Status](line)
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("the launcher of workspace %q answered badly: %v", workspace, err)
	}
	return conn, a, nil
}

// QueryStatus asks the launcher of workspace for its status.
func QueryStatus(ctx context.Context, workspace string) (*Status, error) {
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

// Reload asks the launcher of workspace to reload its manifest, as SIGHUP
// does, and returns the status after it; when the manifest is invalid, the
// error says why, and the status is the one of the servers that keep
// running.
func Reload(ctx context.Context, workspace string) (*Status, error) {
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

// Restart asks the launcher of workspace to restart one server now,
// failed or not, and waits until it is ready, failed or in backoff again,
// or until its startup timeout has passed: then starting says so. The
// status is the one after the restart.
func Restart(ctx context.Context, workspace, server string) (st *Status, starting bool, err error) {
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
func WaitSettled(ctx context.Context, workspace string) (st *Status, starting []string, err error) {
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

// exitWait bounds how long Stop waits for a launcher's process to exit
// once it has released its workspace: a moment, normally; the bound is
// for a pid that names another process here (a launcher in another PID
// namespace).
const exitWait = time.Second

// Stop asks the launcher of workspace to stop, as SIGTERM does
// (force: as a second signal does, which skips the servers' grace
// periods), and waits until the session has ended: every server stopped
// and the lock released, and then, for a moment at most (exitWait), until
// its process has exited. When ctx ends first, the error is a
// *StillStoppingError. The status is the one from before the stop.
func Stop(ctx context.Context, workspace string, force bool) (*Status, error) {
	conn, a, err := dialControl(ctx, workspace, wire.Request{Op: "stop", Force: force}, statusWait)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if !a.OK || a.Status == nil {
		return nil, errors.New(a.Error)
	}
	st := a.Status
	start := startOf(st.Pid) // while it runs, to know it from a later holder of its pid
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
			if err == nil && start != 0 {
				waitExit(ctx, st.Pid, start)
			}
			return st, err
		}
		select {
		case <-ctx.Done():
			return st, &StillStoppingError{Workspace: workspace, Pid: st.Pid}
		case <-time.After(20 * time.Millisecond):
		}
	}
}
