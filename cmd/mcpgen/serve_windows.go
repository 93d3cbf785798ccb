package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"time"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/manifest"
)

// execServer runs a command server in mcpgen's place. Windows cannot
// replace a process's program (it has no exec), so the server runs as a
// child that inherits mcpgen's stdin, stdout and stderr: the agent still
// talks to the server itself, through the same handles, and mcpgen only
// waits, then exits with the server's status. The child is in a Job
// Object with kill-on-close (internal/proc), started suspended and put in
// it before it runs: when mcpgen ends, however it ends, the system kills
// the server and everything it started. The program is found with the
// server's own PATH and PATHEXT ("npx" is npx.cmd), and a batch file runs
// through cmd.exe with its arguments quoted for it (proc.Prepare).
func execServer(m *manifest.Manifest, s *manifest.Server, c *manifest.Context) error {
	p, env, err := serverProcess(m, s, c)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.Path, p.Args...)
	cmd.Dir, cmd.Env = p.Dir, env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr

	ctx := context.Background()
	jobs, err := proc.Setup(ctx, proc.Options{Name: s.Name, Mode: proc.ModeJob})
	if err != nil {
		return fmt.Errorf("server %q: %w", s.Name, err)
	}
	k, err := jobs.New(s.Name, proc.Limits{})
	if err != nil {
		return fmt.Errorf("server %q: %w", s.Name, err)
	}
	// Ctrl-C in a console reaches the server too (it shares the console):
	// the server decides whether it ends, and mcpgen with it.
	signal.Ignore(os.Interrupt)
	if err := k.Start(cmd); err != nil {
		return fmt.Errorf("server %q: %w", s.Name, proc.StartError(p.Path, err))
	}
	waitErr := cmd.Wait()
	// What the server left running goes with it, as it would with the
	// job's handle when mcpgen exits.
	stop, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_ = jobs.Close(stop)
	var ee *exec.ExitError
	switch {
	case waitErr == nil:
		return nil
	case errors.As(waitErr, &ee):
		return &exitError{code: ee.ExitCode(), err: errors.New("")}
	}
	return fmt.Errorf("server %q: %w", s.Name, waitErr)
}
