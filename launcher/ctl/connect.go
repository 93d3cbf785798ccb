package ctl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/mcpgen/mcpgen/launcher/internal/wire"
)

// Connect connects to a server of workspace, through its launcher's hub,
// and, when in and out are given and the launcher takes them, hands them to
// the hub: the hub then speaks MCP on them directly, and the connection
// returned only ends when the hub is done with them (passed is true).
// Otherwise (passed is false) the connection carries the MCP messages.
func Connect(ctx context.Context, workspace, server string, in, out *os.File) (conn net.Conn, passed bool, err error) {
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

// ConnectGateway connects to the workspace gateway of workspace: every
// server's tools behind one MCP connection (servers limits it to some;
// tools, "all" or "search", overrides [gateway] tools for it). As with
// Connect, in and out are handed to the launcher when it takes them
// (passed), and the connection then only says when it is done.
func ConnectGateway(ctx context.Context, workspace string, servers []string, tools string, in, out *os.File) (conn net.Conn, passed bool, err error) {
	conn, passed, err = connectStdio(ctx, workspace, wire.Request{Op: "gateway", Servers: servers, Tools: tools}, in, out)
	if err != nil && strings.Contains(err.Error(), `unknown control request "gateway"`) {
		return nil, false, ErrNoGateway
	}
	return conn, passed, err
}

// ErrNoGateway is matched (errors.Is) by the error of ConnectGateway when
// the workspace's launcher predates the gateway.
var ErrNoGateway = errors.New("the launcher of this workspace has no gateway: restart it with this mcpgen")
