package commands

import (
	"context"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/mcpgen/mcpgen/internal/proc"
)

// A tree is the processes of one tool run (see tree_unix.go). On Windows it
// is a Job Object with kill-on-close (internal/proc's containment): the
// command starts suspended, is put in the job, then runs, so that
// everything it starts is in the job too, and nothing can leave it. Ending
// the tree terminates the job and closes it; if this server dies first,
// the system closes the job and kills what it holds.
type tree struct {
	k *proc.Container
}

// containment is the job containment of this process, made once.
var containment = sync.OnceValues(func() (*proc.Containment, error) {
	return proc.Setup(context.Background(), proc.Options{Name: "tools", Mode: proc.ModeJob})
})

// startTree starts cmd in a job of its own. A batch file (.cmd, .bat) runs
// through cmd.exe, and an argument that cmd.exe would read as its own
// syntax is refused (proc.Prepare): the arguments are the model's.
func startTree(cmd *exec.Cmd) (*tree, error) {
	c, err := containment()
	if err != nil {
		return nil, err
	}
	k, err := c.New("tool", proc.Limits{})
	if err != nil {
		return nil, err
	}
	if err := k.Start(cmd); err != nil {
		_ = endJob(k)
		return nil, err
	}
	return &tree{k: k}, nil
}

// endWait bounds the wait for a terminated job to be empty: only a process
// stuck in the kernel takes long.
const endWait = 5 * time.Second

// end kills every process of the tree: no process leaves a job, so the
// holders of the outputs are among them.
func (t *tree) end(outputs ...*os.File) { _ = endJob(t.k) }

func endJob(k *proc.Container) error {
	ctx, cancel := context.WithTimeout(context.Background(), endWait)
	defer cancel()
	return k.Close(ctx)
}
