package main

import (
	"context"
	"fmt"
	"os"

	"github.com/mcpgen/mcpgen/internal/proc"
)

// envContainment forces how mcpgen contains what it starts (launch's
// servers, build's steps and probes, serve's declared tools): "cgroup",
// "subreaper" or "groups"; unset or "auto" takes the strongest the system
// has. For tests, and for systems where the strongest misbehaves; a forced
// mode that the system lacks is an error.
const envContainment = "MCPGEN_CONTAINMENT"

// containmentMode reads envContainment.
func containmentMode() (proc.Mode, error) {
	v := os.Getenv(envContainment)
	if v == "" {
		return proc.ModeAuto, nil
	}
	var m proc.Mode
	if err := m.UnmarshalText([]byte(v)); err != nil {
		return 0, fmt.Errorf("%s: %w", envContainment, err)
	}
	return m, nil
}

// setupContainment sets up the containment of this mcpgen process, for
// the processes of `build` and `serve`; name (a workspace, a server) shows
// in its cgroup's name. Close it when they are done.
func setupContainment(ctx context.Context, name string) (*proc.Containment, error) {
	mode, err := containmentMode()
	if err != nil {
		return nil, err
	}
	return proc.Setup(ctx, proc.Options{Name: name, Mode: mode})
}

// closeContainment ends what c still holds, waiting proc.KillWait at most
// for a process stuck in the kernel.
func closeContainment(c *proc.Containment) error {
	ctx, cancel := context.WithTimeout(context.Background(), proc.KillWait)
	defer cancel()
	return c.Close(ctx)
}
