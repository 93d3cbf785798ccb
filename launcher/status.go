package launcher

import (
	"context"
	"maps"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/mcpgen/mcpgen/launcher/ctl"
)

// This file is what the session says of itself: its status (mcpgen
// status, the live table), and the wait until no server is starting
// (launch -- CMD, mcpgen restart).

// settleMargin is added to the longest startup timeout to bound a wait for
// the servers: the time to spawn a process, or to stop the one before.
const settleMargin = 5 * time.Second

// waitSettled waits until none of the named servers (every server, when
// names is nil) is starting: each is ready, failed or in backoff. It waits
// at most their longest startup timeout (plus a margin), and returns the
// servers still starting then, or when ctx ends.
func (s *Session) waitSettled(ctx context.Context, names []string) (starting []string) {
	var bound time.Duration
	for _, v := range s.supervisors(names) {
		bound = max(bound, v.config().server.Startup())
	}
	t := time.NewTimer(bound + settleMargin)
	defer t.Stop()
	for {
		// Taken before the states are read: a change after the read
		// closes it.
		s.mu.Lock()
		changed := s.settle
		s.mu.Unlock()
		starting = starting[:0]
		for _, v := range s.supervisors(names) {
			if v.currentState() == ctl.Starting {
				starting = append(starting, v.name)
			}
		}
		if len(starting) == 0 {
			return nil
		}
		select {
		case <-changed:
		case <-t.C:
			return starting
		case <-ctx.Done():
			return starting
		}
	}
}

// Status returns the session's status.
func (s *Session) Status() *ctl.Status {
	s.mu.Lock()
	st := &ctl.Status{
		Workspace: s.opts.Workspace,
		Pid:       os.Getpid(),
		StartedAt: s.started.UTC(),
		Reload:    s.loads.last,
	}
	if s.contain.Containment != nil {
		st.Containment = s.contain.Report()
	}
	if s.m != nil {
		st.Manifest = s.m.File
		if s.m.Path != "" {
			st.Manifest = s.m.Path
		}
	}
	if s.ctx != nil {
		st.Dir, st.User = s.ctx.WorkspaceDir, s.ctx.UserID
	}
	servers := slices.Collect(maps.Values(s.servers))
	order := map[string]int{}
	if s.m != nil {
		for i, srv := range s.m.Servers {
			order[srv.Name] = i
		}
	}
	s.mu.Unlock()
	for _, v := range servers {
		st.Servers = append(st.Servers, v.status())
	}
	sort.Slice(st.Servers, func(i, j int) bool { return order[st.Servers[i].Name] < order[st.Servers[j].Name] })
	st.Gateway = s.gatewayStatus()
	s.mu.Lock()
	web := s.http
	s.mu.Unlock()
	st.HTTP = web.status()
	s.idleExitStatus(st)
	return st
}
