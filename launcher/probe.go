package launcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"syscall"
	"time"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/launcher/internal/hub"
	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/mcp"
)

// A serverError is a server that failed to start or to become ready, with
// the tail of what it wrote to stderr.
type serverError struct {
	Err    error
	Stderr []byte
}

func (e *serverError) Error() string {
	if len(e.Stderr) == 0 {
		return e.Err.Error()
	}
	return e.Err.Error() + "\n    stderr:\n" + indent(string(e.Stderr))
}

func (e *serverError) Unwrap() error { return e.Err }

// Probe starts server s of m in context c, in a container of contain,
// makes it ready and stops it: how mcpgen build checks that a server
// works. It returns the tools the server offered and how long it took from
// spawn to ready. self is the mcpgen binary (for built-in and declared
// servers), env the environment the server inherits. The server is opened
// in the era its protocol key says, or the one it answers (a server whose
// process ends when asked is started again, as a legacy one that is asked
// nothing: see mcp.ErrProbeEnded). For a workspace (c.WorkspaceID), it
// keeps what the server offered in the workspace's catalog cache, as a
// launcher does after a handshake (its era, tools, and the prompts,
// resources and templates it lists), so that a lazy server answers
// tools/list before its first start and its first start asks nothing; a
// catalog that cannot be kept fails the probe.
func Probe(ctx context.Context, contain *proc.Containment, m *manifest.Manifest, s *manifest.Server, c *manifest.Context, self string, env []string) ([]*mcp.Tool, time.Duration, error) {
	spec, err := serverSpec(m, s, c, self, env)
	if err != nil {
		return nil, 0, err
	}
	spec.Containment, spec.Name = contain, s.Name
	spec.Limits = proc.Limits{MemoryMax: s.MemoryMax, CPUMax: s.CPUMax}
	if err := checkLimits(contain, m, s, spec.Limits); err != nil {
		return nil, 0, err
	}
	r := probeOnce(ctx, spec, s, c, mcp.OpenOptions{Version: s.Protocol})
	if errors.Is(r.err, mcp.ErrProbeEnded) {
		r = probeOnce(ctx, spec, s, c, mcp.OpenOptions{Known: mcp.EraLegacy})
	}
	if r.err != nil {
		return nil, r.elapsed, r.err
	}
	if c.WorkspaceID != "" {
		if err := keepProbed(m, s, c, spec, env, &catalog{r.init, r.tools, r.lists}); err != nil {
			return r.tools, r.elapsed, err
		}
	}
	return r.tools, r.elapsed, nil
}

// A probed is what one start of Probe gave.
type probed struct {
	init    *mcp.InitializeResult
	tools   []*mcp.Tool
	lists   hub.Lists
	elapsed time.Duration
	err     error
}

// probeOnce starts the server of spec, opens it as opts say, lists what
// it offers and stops it.
func probeOnce(ctx context.Context, spec *proc.Spec, s *manifest.Server, c *manifest.Context, opts mcp.OpenOptions) probed {
	stderr := proc.NewTail(4 << 10)
	spec.Stderr = stderr
	p, err := proc.Start(spec)
	if err != nil {
		return probed{err: err}
	}
	// The hub answers the server's roots/list with the workspace dir.
	up := hub.New(s.Name, c.WorkspaceDir, slog.New(slog.DiscardHandler)).NewUpstream(p.Stdout(), p.Stdin())
	go up.Run() // ends when the process exits
	timeout := s.Startup()
	hctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("not ready within %s (startup_timeout)", timeout))
	var r probed
	r.init, r.tools, r.err = up.Open(hctx, opts)
	r.err = pinHint(s.Protocol, r.err)
	r.elapsed = time.Since(p.Started)
	if r.err == nil && c.WorkspaceID != "" {
		// What the catalog keeps besides tools, within what is left of
		// the startup timeout; a list that fails is left out.
		r.lists = up.Lists(hctx, r.init)
	}
	cancel()
	stopErr := p.Stop(ctx)
	<-up.Done()
	if r.err != nil && !errors.Is(r.err, mcp.ErrProbeEnded) {
		r.err = &serverError{Err: handshakeError(r.err, stopErr), Stderr: stderr.Bytes()}
	}
	return r
}

// handshakeError explains a failed handshake: when the server exited with
// a failure status, that is the news, not the broken pipe it left.
func handshakeError(err, exit error) error {
	var ee *exec.ExitError
	if errors.As(exit, &ee) && !isSignal(exit) && ee.ExitCode() > 0 {
		return fmt.Errorf("it %v before it was ready", exitError(exit))
	}
	return err
}

// isSignal reports whether a process exited because we signalled it.
func isSignal(err error) bool {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return true
		}
	}
	return false
}
