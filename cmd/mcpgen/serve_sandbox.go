//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/mcpgen/mcpgen/internal/sandbox"
	"github.com/mcpgen/mcpgen/manifest"
)

// serveSandboxed runs server s in its sandbox when the manifest gives it
// one, as an agent's config runs it (`mcpgen serve NAME`): a command
// server's command, or mcpgen serving a built-in or declared one again,
// as a child in the sandbox with this process's stdio, SIGINT and SIGTERM
// passed on. It returns when the child has exited, with its status; ran
// is false when there is no sandbox to enter (none, or this process is
// the one inside).
func (a *app) serveSandboxed(m *manifest.Manifest, s *manifest.Server, c *manifest.Context) (ran bool, err error) {
	if sandbox.Inside() {
		return false, nil
	}
	policy, err := m.SandboxPolicy(s, c, os.LookupEnv)
	if err != nil || policy == nil {
		return false, err
	}
	if !sandbox.Enforces {
		// Nothing to enter here: the server runs as it would without,
		// saying so, unless its sandbox is strict.
		r := sandbox.Inspect(policy)
		if policy.Enforce == sandbox.EnforceStrict {
			return true, fmt.Errorf("server %q: %w", s.Name, &sandbox.StrictError{Report: r})
		}
		fmt.Fprintf(a.stderr, "mcpgen: server %q: sandbox (%s): not enforced: %s\n", s.Name, r.Platform, strings.Join(r.NotEnforced, "; "))
		return false, nil
	}
	var cmd *exec.Cmd
	if s.Kind == manifest.KindCommand {
		p, env, err := serverProcess(m, s, c)
		if err != nil {
			return true, err
		}
		path, err := lookPathIn(p.Path, env)
		if err != nil {
			return true, fmt.Errorf("server %q: %w", s.Name, err)
		}
		cmd = exec.Command(path, p.Args...)
		cmd.Dir, cmd.Env = p.Dir, env
	} else {
		self, err := os.Executable()
		if err != nil {
			return true, err
		}
		cmd = exec.Command(self, slices.Concat([]string{"serve"}, m.Flags(), []string{s.Name})...)
		cmd.Env = os.Environ() // Prepare marks it as inside
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = a.stdin, a.stdout, a.stderr
	setup, err := sandbox.Prepare(cmd, policy)
	defer setup.Close() // once the child has exited
	if err != nil {
		return true, fmt.Errorf("server %q: %w", s.Name, err)
	}
	if r := setup.Report; len(r.NotEnforced) > 0 {
		// The agent keeps a server's stderr in its log.
		fmt.Fprintf(a.stderr, "mcpgen: server %q: sandbox (%s): not enforced: %s\n", s.Name, r.Platform, strings.Join(r.NotEnforced, "; "))
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return true, fmt.Errorf("server %q: %w", s.Name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }() // the child's one Wait
	for {
		select {
		case sig := <-sigs:
			_ = cmd.Process.Signal(sig)
		case err := <-done:
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return true, &exitError{code: max(ee.ExitCode(), 1), err: errors.New("")}
			}
			return true, err
		}
	}
}
