//go:build unix

package proc

import "os/exec"

// Prepare readies cmd, made by exec.Command with its Dir and Env set, to be
// started: on Windows it finds the program as the child's environment
// would and runs batch files through cmd.exe safely (command_windows.go).
// Unix needs nothing.
func Prepare(cmd *exec.Cmd) error { return nil }
