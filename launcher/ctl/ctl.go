// Package ctl is how mcpgen's commands talk to a workspace's running
// session: the client half of its control socket. It asks for the status
// (QueryStatus), a reload, the restart of a server, a stop, a wait until
// the servers are up; it connects an agent to a server's hub (Connect) or
// to the workspace gateway (ConnectGateway), handing over its stdio where
// it can; it finds the running sessions (RunningSessions, Sessions) and a
// workspace's logs, all without creating anything.
//
// The status a session answers, and how it is shown, is defined here too:
// the session (package launcher) fills it in and imports this package,
// never the other way round, so that the launcher's own tests drive a
// session through its control socket as mcpgen's commands do. The protocol
// both halves speak is launcher/internal/wire.
package ctl
