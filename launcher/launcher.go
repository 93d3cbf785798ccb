// Package launcher runs a workspace session: it starts the manifest's stdio
// servers, each contained with all it starts, makes them ready, supervises and
// restarts them, follows the manifest as it changes, and shares each server
// among every agent of the workspace. It also holds what the mcpgen command
// needs around a session: its directories, the running sessions (found
// without creating anything), its control socket's client calls (status,
// reload, connect, stop, restart, wait), its logs, and the build and probe
// of `mcpgen build`.
//
// The machinery is in internal packages: hub shares one server process
// among clients, watch follows the manifest and the servers' sources,
// logfile keeps the capped logs, dirs finds and makes the workspace's
// directories and holds its lock, and the module's internal/proc starts,
// contains and stops processes, and sweeps what a killed launcher left.
package launcher
