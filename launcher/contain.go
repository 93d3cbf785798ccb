package launcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/internal/sandbox"
	"github.com/mcpgen/mcpgen/manifest"
)

// This file is the session's containment: it ends what the record of an
// earlier launcher names (one killed with SIGKILL), sets up the containers
// that every process the session starts goes in, and records them for the
// next launch, should this one be killed; and it starts at most
// startConcurrency servers at once.

// containment is the session's part in containing what it starts: set up
// by Run (setupContainment), before any server exists, and read without a
// lock after that.
type containment struct {
	// Containment holds every process the session starts (nil before
	// Run has set it up), and record names what it holds for the next
	// launch, should this one be killed.
	*proc.Containment
	record      *proc.Record
	stopRefresh func() // ends the goroutine that refreshes the record
	// spares are the sandboxes' setup steps, started ahead of need: a
	// sandboxed server that restarts, reloads or starts late takes one
	// (see sandbox.Spares). Closed before the containment.
	spares *sandbox.Spares
	// slots bounds the servers starting at once: each start holds a few
	// descriptors, and a manifest of thousands must not spend them all at
	// once.
	slots chan struct{}
	log   *slog.Logger
}

// startConcurrency is how many servers start at once, at most: enough to
// keep two cores busy with spawns, few enough that their descriptors stay
// a small part of what a launch needs (proc.FilesPerStart each).
const startConcurrency = 16

// setupContainment ends what the record of an earlier launcher names
// (one killed with SIGKILL), sets up the session's containment and starts
// its record. An unreadable record stops the launch: what it names is no
// launcher's to guess at.
func (s *Session) setupContainment(ctx context.Context, runtimeDir string) error {
	entries, err := proc.ReadRecord(runtimeDir)
	if err != nil {
		return err
	}
	var left []proc.Entry
	if len(entries) > 0 {
		// Bounded: a process stuck in the kernel must not hold the launch.
		sctx, cancel := context.WithTimeout(ctx, s.timing.TermGrace+proc.KillWait)
		var ended []proc.ProcID
		ended, left, err = proc.Sweep(sctx, entries, s.timing.TermGrace)
		cancel()
		if err != nil {
			s.log.Warn("ending what an earlier launcher left: what is left stays recorded for the next launch", "error", err)
		}
		if len(ended) > 0 {
			pids := make([]int, len(ended))
			for i, id := range ended {
				pids[i] = id.Pid
			}
			s.log.Info("ended processes an earlier launcher left behind", "pids", pids)
		}
	}
	c, err := proc.Setup(ctx, proc.Options{Name: s.opts.Workspace, Mode: s.opts.Containment})
	if err != nil {
		return err
	}
	rec, err := proc.NewRecord(runtimeDir, c, left)
	if err != nil {
		_ = c.Close(ctx)
		return err
	}
	s.mu.Lock()
	s.contain.Containment, s.contain.record, s.contain.spares = c, rec, sandbox.NewSpares(c.StartOutside)
	s.mu.Unlock()
	stop, refreshed := make(chan struct{}), make(chan struct{})
	s.contain.stopRefresh = func() { close(stop); <-refreshed }
	go func() {
		// Records what containers' processes start (ModeSubreaper's
		// Changed); ends with closeContainment.
		defer close(refreshed)
		for {
			select {
			case <-stop:
				return
			case <-c.Changed():
				if err := rec.Refresh(); err != nil {
					s.log.Warn("recording what servers started", "error", err)
				}
			}
		}
	}()
	return nil
}

// closeContainment ends whatever is still contained (what the agent of
// launch -- CMD left, say) and, when nothing is left, the record.
func (s *Session) closeContainment() {
	s.contain.stopRefresh()
	s.contain.spares.Close()
	ctx, cancel := context.WithTimeout(context.Background(), proc.KillWait)
	defer cancel()
	if err := s.contain.Close(ctx); err != nil {
		s.log.Warn("processes outlived the session: they stay recorded for the next launch to end", "error", err)
		return
	}
	if err := s.contain.record.Remove(); err != nil {
		s.log.Warn("removing the containment record", "error", err)
	}
}

// StartAttached starts cmd in a container of the session, sharing the
// launcher's terminal and process group: the agent that launch -- CMD
// runs (see proc.Container.StartAttached). The caller waits for it; the
// session's end ends whatever it leaves. It fails before Run has set up
// the containment.
func (s *Session) StartAttached(name string, cmd *exec.Cmd) error {
	s.mu.Lock()
	c, closing := s.contain.Containment, s.stop.closing
	s.mu.Unlock()
	if c == nil || closing {
		return fmt.Errorf("start %s: the session is not running", name)
	}
	k, err := c.New(name, proc.Limits{})
	if err != nil {
		return err
	}
	if err := k.StartAttached(cmd); err != nil {
		_ = k.Close(context.Background())
		return err
	}
	return nil
}

// CheckCapacity refuses, with the numbers, a manifest whose servers a
// session could not hold within the file descriptor limit (raised to the
// hard limit first): see proc.CheckCapacity. A session checks every
// manifest it loads; launch checks the first before anything else.
func CheckCapacity(m *manifest.Manifest) error {
	n := 0
	for _, srv := range m.Servers {
		if srv.Enabled && srv.Kind.Stdio() {
			n++
		}
	}
	if err := proc.CheckCapacity(proc.Capacity{Servers: n, Starts: min(n, startConcurrency)}); err != nil {
		return fmt.Errorf("%s: %w", m.File, err)
	}
	return nil
}

// checkLimits says, at the key's place in the manifest, why a server's
// memory_max or cpu_max cannot be enforced here.
func checkLimits(c *proc.Containment, m *manifest.Manifest, srv *manifest.Server, lim proc.Limits) error {
	err := c.Check(lim)
	var le *proc.LimitError
	if !errors.As(err, &le) {
		return err
	}
	pos := srv.MemoryMaxPos
	if le.Key == "cpu_max" {
		pos = srv.CPUMaxPos
	}
	return &manifest.Error{File: m.File, Pos: pos, Server: srv.Name, Key: le.Key, Msg: le.Error()}
}

// start starts a server's process in a container of its own, once a
// start slot is free (see startConcurrency), or fails when ctx ends first.
func (c *containment) start(ctx context.Context, spec *proc.Spec) (*proc.Process, error) {
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	defer func() { <-c.slots }()
	spec.Containment, spec.Spares = c.Containment, c.spares
	return proc.Start(spec)
}

// contained logs, once a server's process has been stopped or killed, why
// its container could not be closed, if so.
func (c *containment) contained(server string, p *proc.Process) {
	if err := p.CloseErr(); err != nil {
		c.log.Warn("processes of a stopped server are left: they stay recorded for the next launch to end", "server", server, "error", err)
	}
}
