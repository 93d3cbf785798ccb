//go:build unix

package commands

import (
	"os"
	"os/exec"
	"syscall"
)

// A tree is the processes of one tool run: the command and what it starts.
// startTree and end are the only code that knows how a run is contained, so
// that a stronger containment (a cgroup, a child subreaper) replaces them
// alone.
//
// Here the tree is the command's process group. A descendant that leaves
// the group (setsid, setpgid) is out of reach of the group's kill; end
// finds those that still hold the run's output pipes (on Linux, through
// /proc), which is what would keep a call from answering. One that has let
// go of the pipes too escapes.
type tree struct {
	cmd *exec.Cmd
}

// startTree starts cmd as the leader of a new process group.
func startTree(cmd *exec.Cmd) (*tree, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &tree{cmd: cmd}, nil
}

// end kills every process of the tree that it can reach: the process group
// and, given the read ends of the run's output pipes, every process that
// holds their write ends, with its descendants. A group that is already
// gone (ESRCH) is what we want.
func (t *tree) end(outputs ...*os.File) {
	_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
	if len(outputs) > 0 {
		killHolders(outputs)
	}
}
