// Package launcher runs a workspace session: it starts the manifest's stdio
// servers, each contained with all it starts, makes them ready, supervises and
// restarts them, follows the manifest as it changes, and shares each server
// among every agent of the workspace, on the faces a session has (connect
// NAME, and the workspace gateway), which its control socket serves. It
// also holds what the mcpgen command needs to start one: the workspace's
// directories, its log, and the build and probe of `mcpgen build`.
//
// What mcpgen's commands ask a running session (status, reload, restart,
// stop, wait, connect, its logs, the running sessions) is package ctl's:
// the client half of the control socket, and the status it answers, which
// the session fills in. docs/architecture.md draws the whole.
//
// The machinery is in internal packages: hub shares one server process
// among clients, gateway merges every server behind one endpoint, watch
// follows the manifest and the servers' sources, logfile keeps the capped
// logs, dirs finds and makes the workspace's directories and holds its
// lock, wire is the control socket's protocol, and the module's
// internal/proc starts, contains and stops processes, and sweeps what a
// killed launcher left.
package launcher
