package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/mcpgen/mcpgen/internal/proc"
)

// TestContainScripts runs the scripts in testdata/contain, real launchers
// whose servers escape their process groups, in each containment mode
// that the system has ($MCPGEN_CONTAINMENT). The scripts see, in
// $RUNNING, how many processes the escape server and its neighbour run
// (the subreaper kills a double-forked daemon at once); in $LEFT, how many
// a launcher killed with SIGKILL leaves (its servers exit at their
// stdin's EOF, their escapes do not); in $CONTAINMENT, what status says.
func TestContainScripts(t *testing.T) {
	if testing.Short() {
		t.Skip("an attack test, with real launchers in every containment mode: run without -short")
	}
	modes := []struct {
		mode                 proc.Mode
		running, left        int
		containment, summary string
	}{
		{proc.ModeCgroup, 4, 2, `cgroup v2 at /.*/mcpgen-c1-[0-9]+, limits: `, "cgroup"},
		{proc.ModeSubreaper, 3, 1, `subreaper \(asked for\)`, "subreaper"},
	}
	for _, m := range modes {
		t.Run(m.mode.String(), func(t *testing.T) {
			c, err := proc.Setup(context.Background(), proc.Options{Name: "probe", Mode: m.mode})
			if err != nil {
				t.Skipf("%s containment unavailable here: %v", m.mode, err)
			}
			if err := c.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			testscript.Run(t, testscript.Params{
				Dir:                 "testdata/contain",
				RequireExplicitExec: true,
				Setup: func(env *testscript.Env) error {
					env.Setenv("HOME", env.WorkDir+"/home")
					env.Setenv("USER", "tester")
					env.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
					env.Setenv(envContainment, m.mode.String())
					env.Setenv("RUNNING", strconv.Itoa(m.running))
					env.Setenv("LEFT", strconv.Itoa(m.left))
					env.Setenv("CONTAINMENT", m.containment)
					env.Setenv("MODE", m.summary)
					// Whatever a failed script leaves, the test does not.
					env.Defer(func() {
						left, _ := workspaceProcs(env.WorkDir + "/ws")
						for _, p := range left {
							_ = syscall.Kill(p.Pid, syscall.SIGKILL)
						}
					})
					return os.MkdirAll(env.WorkDir+"/home", 0o700)
				},
				Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
					"procs": cmdProcs,
				},
			})
		})
	}
}

// cmdProcs waits until exactly N live processes have WORKSPACE_DIR=DIR in
// their environment (what a workspace's servers and all they start
// inherit), and fails, listing them, if that does not happen within a
// minute: a hang guard, not a timing check.
//
//	procs DIR N
func cmdProcs(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: procs DIR N")
	}
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	deadline := time.Now().Add(time.Minute)
	for {
		found, err := workspaceProcs(args[0])
		ts.Check(err)
		if len(found) == want {
			return
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			for _, p := range found {
				cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(p.Pid) + "/cmdline")
				fmt.Fprintf(&b, "\n  %d (parent %d, group %d, session %d): %s", p.Pid, p.PPid, p.Pgid, p.Sid, bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))
			}
			ts.Fatalf("%d processes of %s, want %d:%s", len(found), args[0], want, b.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// workspaceProcs lists the live processes with WORKSPACE_DIR=dir in their
// environment.
func workspaceProcs(dir string) ([]proc.Proc, error) {
	all, err := proc.Procs()
	if err != nil {
		return nil, err
	}
	needle := []byte("WORKSPACE_DIR=" + dir + "\x00")
	var found []proc.Proc
	for _, p := range all {
		if p.Dead() || p.Pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + strconv.Itoa(p.Pid) + "/environ")
		if err == nil && bytes.Contains(append(env, 0), needle) {
			found = append(found, p)
		}
	}
	return found, nil
}
