package launcher

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"

	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/agent"
	"github.com/mcpgen/mcpgen/launcher/internal/gateway"
	"github.com/mcpgen/mcpgen/launcher/internal/wire"
	"github.com/mcpgen/mcpgen/manifest"
)

// GatewayMetaServer is the _meta key of a tool or prompt listed by the
// gateway that names the server that has it (and GatewayMetaName its own
// name for it).
const (
	GatewayMetaServer = gateway.MetaServer
	GatewayMetaName   = gateway.MetaName
)

// updateGateway gives the gateway the session's servers, in manifest
// order, after apply.
func (s *Session) updateGateway(m *manifest.Manifest) {
	s.mu.Lock()
	gw := s.gw
	var backends []gateway.Backend
	for _, srv := range m.Servers {
		if v := s.servers[srv.Name]; v != nil {
			backends = append(backends, gateway.Backend{Name: srv.Name, Description: srv.Description, Hub: v.hub, State: v.gatewayState})
		}
	}
	s.mu.Unlock()
	if gw != nil {
		gw.Set(backends, gateway.Options{
			Always: m.Gateway.Prefix == manifest.GatewayPrefixAlways,
			Search: m.Gateway.Tools == manifest.GatewayToolsSearch,
			Pin:    m.Gateway.Pin,
			Reveal: m.Gateway.SearchReveal,
		})
	}
}

// gatewayState is what the gateway tells an agent of a server that cannot
// take its call.
func (v *supervisor) gatewayState() gateway.State {
	v.mu.Lock()
	defer v.mu.Unlock()
	return gateway.State{State: string(v.state), RetryAt: v.retryAt, LastError: v.lastError}
}

// gatewayStatus returns the gateway's part of status, nil before Run.
func (s *Session) gatewayStatus() *ctl.GatewayStatus {
	s.mu.Lock()
	gw, m := s.gw, s.m
	s.mu.Unlock()
	if gw == nil || m == nil {
		return nil
	}
	c := gw.Catalog()
	st := &ctl.GatewayStatus{
		Prefix:    m.Gateway.Prefix,
		Tools:     gatewayNames(c.Tools),
		Prompts:   gatewayNames(c.Prompts),
		Conflicts: []ctl.GatewayConflict{},
	}
	if st.Prefix == "" {
		st.Prefix = manifest.GatewayPrefixConflicts
	}
	if m.Gateway.Tools == manifest.GatewayToolsSearch {
		st.Search = &ctl.GatewaySearch{Pin: append([]string{}, m.Gateway.Pin...), Reveal: m.Gateway.SearchReveal}
		for _, pin := range m.Gateway.Pin {
			if !slices.ContainsFunc(c.Tools, func(n gateway.Name) bool { return n.Name == pin }) {
				st.Search.Unknown = append(st.Search.Unknown, pin)
			}
		}
	}
	for _, cf := range c.Conflicts {
		st.Conflicts = append(st.Conflicts, ctl.GatewayConflict(cf))
	}
	st.Clients.Names = gw.Clients()
	st.Clients.Count = len(st.Clients.Names)
	st.Clients.Eras = clientEras(gw.Eras())
	st.Clients.Requests.Modern, st.Clients.Requests.Legacy = gw.Requests()
	return st
}

func gatewayNames(names []gateway.Name) []ctl.GatewayName {
	out := make([]ctl.GatewayName, len(names)) // [] in JSON when empty
	for i, n := range names {
		out[i] = ctl.GatewayName(n)
	}
	return out
}

// serveGateway serves the control socket's gateway request: the agent's
// connection becomes a session of the workspace gateway, on the socket or
// on the stdio the client hands over (as connect does).
//
// The agent counts as a client of the session (openClient) for as long as
// it is connected, so that the launcher does not exit for idleness under
// it; it keeps no server running for that (see the hub's lazy.go).
func (s *Session) serveGateway(ctx context.Context, conn net.Conn, req wire.Request) {
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
	s.stdioClients.gateway.Add(1)
	defer s.stdioClients.gateway.Add(-1)
	s.mu.Lock()
	gw := s.gw
	s.mu.Unlock()
	if gw == nil {
		answer(conn, controlAnswer{Error: "the session is not running"})
		conn.Close()
		return
	}
	if err := gw.Check(req.Servers); err != nil {
		answer(conn, controlAnswer{Error: err.Error()})
		conn.Close()
		return
	}
	if req.Tools != "" && req.Tools != gateway.ToolsAll && req.Tools != gateway.ToolsSearch {
		answer(conn, controlAnswer{Error: fmt.Sprintf("--tools %q: use %q (every tool) or %q (search_tools, call_tool and the pinned tools)", req.Tools, gateway.ToolsAll, gateway.ToolsSearch)})
		conn.Close()
		return
	}
	join := gateway.Join{Servers: req.Servers, Tools: req.Tools}
	s.serveClient(conn, req, func(c io.ReadWriteCloser) { gw.ServeJoin(ctx, c, join) })
}

// serveClient accepts a connect or gateway request and serves the agent
// with serve: on the socket, or on the stdio that the client (mcpgen
// connect) hands over, until the agent is gone or the client exits (the
// agent is gone, or killed it). logArgs describe the request in a warning.
func (s *Session) serveClient(conn net.Conn, req wire.Request, serve func(io.ReadWriteCloser), logArgs ...any) {
	if err := answer(conn, controlAnswer{OK: true, Stdio: req.Stdio && canPassStdio}); err != nil {
		conn.Close()
		return
	}
	if !req.Stdio || !canPassStdio {
		serve(conn)
		return
	}
	stdio, err := receiveStdio(conn)
	if err != nil {
		s.log.Warn("control socket: "+req.Op, append(logArgs, "error", err)...)
		conn.Close()
		return
	}
	go func() {
		// Ends when conn is closed below.
		_, _ = io.Copy(io.Discard, conn)
		stdio.Close()
	}()
	serve(stdio)
	conn.Close() // the client exits
}

// clientEras is what status shows of the agents' eras.
func clientEras(eras []agent.EraStatus) []ctl.ClientEra {
	var out []ctl.ClientEra
	for _, e := range eras {
		out = append(out, ctl.ClientEra{Name: e.Name, Session: e.Session, Modern: e.Modern, Legacy: e.Legacy})
	}
	return out
}
