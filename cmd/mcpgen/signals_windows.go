package main

import (
	"os"
	"syscall"
)

// launchSignals are what launch handles: Ctrl-C and Ctrl-Break (os.Interrupt)
// and the console's close, logoff and shutdown (which Go delivers as
// SIGTERM) stop the session. Windows has no SIGHUP: mcpgen reload reloads.
var launchSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

func isReloadSignal(os.Signal) bool { return false }

// reloadHint says how to reload a session, under the live table.
const reloadHint = "mcpgen reload --workspace ID"
