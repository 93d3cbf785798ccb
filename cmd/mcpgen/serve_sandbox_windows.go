package main

import (
	"fmt"
	"strings"

	"github.com/mcpgen/mcpgen/internal/sandbox"
	"github.com/mcpgen/mcpgen/manifest"
)

// serveSandboxed: Windows enforces no sandbox yet. A server whose
// manifest enables one runs as it would without (a command server in its
// Job Object), saying so, unless its sandbox is strict.
func (a *app) serveSandboxed(m *manifest.Manifest, s *manifest.Server, c *manifest.Context) (ran bool, err error) {
	policy, err := m.SandboxPolicy(s, c, nil)
	if err != nil || policy == nil {
		return false, err
	}
	r := sandbox.Inspect(policy)
	if policy.Enforce == sandbox.EnforceStrict {
		return true, fmt.Errorf("server %q: %w", s.Name, &sandbox.StrictError{Report: r})
	}
	fmt.Fprintf(a.stderr, "mcpgen: server %q: sandbox (%s): not enforced: %s\n", s.Name, r.Platform, strings.Join(r.NotEnforced, "; "))
	return false, nil
}
