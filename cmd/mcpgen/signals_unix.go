//go:build unix

package main

import (
	"os"
	"syscall"
)

// launchSignals are what launch handles: SIGINT and SIGTERM stop the
// session, SIGHUP reloads it.
var launchSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

func isReloadSignal(sig os.Signal) bool { return sig == syscall.SIGHUP }

// reloadHint says how to reload a session, under the live table.
const reloadHint = "SIGHUP (or mcpgen reload)"
