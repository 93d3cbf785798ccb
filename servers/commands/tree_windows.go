package commands

import (
	"os"
	"os/exec"
)

// A tree is the processes of one tool run (see tree_unix.go). On Windows it
// is the command alone: what the command starts is not killed with it
// (that takes a job object).
type tree struct {
	cmd *exec.Cmd
}

// startTree starts cmd.
func startTree(cmd *exec.Cmd) (*tree, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &tree{cmd: cmd}, nil
}

// end kills the command, if it still runs.
func (t *tree) end(outputs ...*os.File) {
	_ = t.cmd.Process.Kill()
}
