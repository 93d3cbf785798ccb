package commands

import (
	"context"
	"sync"
	"testing"

	"github.com/mcpgen/mcpgen/internal/proc"
)

// groupsContainment holds the runs of the tests that are not about
// containment: process groups, which every Unix has. run_linux_test.go
// runs the attacks in every mode.
var groupsContainment = sync.OnceValues(func() (*proc.Containment, error) {
	return proc.Setup(context.Background(), proc.Options{Name: "commands-test", Mode: proc.ModeGroups})
})

func containment(t testing.TB) *proc.Containment {
	t.Helper()
	c, err := groupsContainment()
	if err != nil {
		t.Skipf("no containment here: %v", err)
	}
	return c
}
