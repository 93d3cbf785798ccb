package commands

import (
	"context"
	"os"
	"os/exec"

	"github.com/mcpgen/mcpgen/internal/proc"
)

// A tree is the processes of one tool run: the command and everything it
// starts, in a container of its own. startTree and end are the only code
// that knows how a run is contained.
//
// In a cgroup, or under the subreaper, the container holds whatever the
// command does with sessions and groups: ending it ends every process,
// and with them every holder of the run's output. With process groups
// only, a descendant that leaves the group (setsid) is out of the
// container's reach: end then finds those that still hold the run's
// output pipes (on Linux, through /proc), which is what would keep a call
// from answering; one that let go of the pipes too escapes.
type tree struct {
	k       *proc.Container
	holders bool // look for holders of the output: the container cannot reach them all
}

// startTree starts cmd in a new container of c, named for the tool.
func startTree(c *proc.Containment, name string, cmd *exec.Cmd) (*tree, error) {
	k, err := c.New("tool-"+name, proc.Limits{})
	if err != nil {
		return nil, err
	}
	if err := k.Start(cmd); err != nil {
		closeTree(k)
		return nil, err
	}
	return &tree{k: k, holders: c.Mode() == proc.ModeGroups}, nil
}

// end kills every process of the tree that it can reach: the container's
// and, given the read ends of the run's output pipes where the container
// cannot reach every process, those that hold their write ends, with
// their descendants.
func (t *tree) end(outputs ...*os.File) {
	ctx, cancel := context.WithTimeout(context.Background(), proc.KillWait)
	defer cancel()
	_ = t.k.Kill(ctx)
	if len(outputs) > 0 && t.holders {
		killHolders(outputs)
	}
}

// close releases the container, killing what is left in it.
func (t *tree) close() { closeTree(t.k) }

func closeTree(k *proc.Container) {
	ctx, cancel := context.WithTimeout(context.Background(), proc.KillWait)
	defer cancel()
	_ = k.Close(ctx)
}
