// Package ctl is what a workspace's running session says about itself,
// and how mcpgen's commands ask it: the status that its control socket
// answers (each server's state, its clients, the gateway's names, the last
// reload) and how it is shown.
//
// The session (package launcher) fills the status in; it imports this
// package, never the other way round, so that the launcher's own tests can
// drive a session through its control socket as mcpgen's commands do.
package ctl
