// Package launcher runs a workspace session: it starts the manifest's stdio
// servers in process groups of their own, makes them ready, supervises and
// restarts them, follows the manifest as it changes, and shares each
// server among every agent of the workspace.
package launcher
