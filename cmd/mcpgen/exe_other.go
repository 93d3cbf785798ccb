//go:build !windows

package main

// exeSuffix ends the names of programs that mcpgen new builds: nothing
// outside Windows.
const exeSuffix = ""
