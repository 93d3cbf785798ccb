package launcher

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/ctl"
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
		if s.Draining() {
			answer(conn, s.drainRefusal())
			conn.Close()
			return
		}
		if !s.openClient() {
			answer(conn, refuseExiting(s.opts.Workspace))
			conn.Close()
			return
		}
		defer s.closeClient()
		s.stdioClients.hub.Add(1)
		defer s.stdioClients.hub.Add(-1)
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
