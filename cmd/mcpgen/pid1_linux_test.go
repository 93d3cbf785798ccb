package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pid1Agent is the agent of the PID 1 tests, a shell script: it forks a
// grandchild that outlives its parent (orphaned, it comes to PID 1), waits
// for it to be gone from /proc (a zombie left unreaped stays there), says
// so in the file "reaped", and then waits for a signal, exiting 42 on
// SIGTERM (which it ignores with IGNORE_TERM set) and 43 on SIGINT. The waits are bounded (a hang guard, not a
// timing check): an orphan left a zombie exits 3.
const pid1Agent = `
trap 'exit 42' TERM
if [ -n "$IGNORE_TERM" ]; then trap '' TERM; fi
trap 'exit 43' INT
sh -c 'sleep 0.2 & echo $! > orphan.pid; exit 0'
orphan=$(cat orphan.pid)
i=0
while [ -e /proc/$orphan ]; do
	i=$((i+1))
	if [ $i -gt 400 ]; then
		echo "orphan $orphan still in /proc: $(cat /proc/$orphan/stat)" >&2
		exit 3
	fi
	sleep 0.05
done
echo ok > reaped
i=0
while [ $i -lt 1200 ]; do
	i=$((i+1))
	sleep 0.05
done
exit 4
`

// TestPID1 runs mcpgen launch -- AGENT as PID 1 of a PID namespace, as a
// container's entrypoint is: an orphan that outlives its parent is reaped
// (no zombie is left), SIGTERM and SIGINT sent to PID 1 reach the agent,
// and launch exits with the agent's status. It runs in each containment
// mode that the namespace allows: as PID 1, a launcher in a cgroup used to
// leave the orphans it was given as zombies, and one without a terminal
// dropped SIGINT while its agent ran.
func TestPID1(t *testing.T) {
	if testing.Short() {
		t.Skip("builds mcpgen and runs it in a PID namespace")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare --pid --mount-proc")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare here")
	}
	if out, err := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "true").CombinedOutput(); err != nil {
		t.Skipf("unshare --pid --fork --mount-proc does not work here: %v: %s", err, out)
	}
	bin, err := buildMcpgen()
	if err != nil {
		t.Fatal(err)
	}
	// The modes' reaping differs (a cgroup's launcher has none of its own,
	// a subreaper's kills its orphans), and so may the path of a signal.
	// An agent that ignores SIGTERM is killed after --agent-grace, and
	// launch exits as a shell says of a SIGKILL.
	for _, tc := range []struct {
		name string
		mode string
		sig  syscall.Signal
		env  []string
		args []string
		want int
	}{
		{"auto/TERM", "auto", syscall.SIGTERM, nil, nil, 42},
		{"groups/INT", "groups", syscall.SIGINT, nil, nil, 43},
		{"subreaper/INT", "subreaper", syscall.SIGINT, nil, nil, 43},
		{"auto/TERM-ignored", "auto", syscall.SIGTERM, []string{"IGNORE_TERM=1"}, []string{"--agent-grace", "1s"}, 128 + 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stderr, log := runPID1(t, bin, tc.mode, tc.sig, tc.env, tc.args)
			if code != tc.want {
				t.Fatalf("launch as PID 1 exited %d, want %d (the agent's status on %v)\nstderr:\n%s\nlauncher's log:\n%s", code, tc.want, tc.sig, stderr, log)
			}
			// The servers were stopped by the session, after the agent, not
			// killed with the namespace.
			if !strings.Contains(log, "msg=\"session stopped\"") {
				t.Errorf("the launcher's log does not say the session stopped:\n%s", log)
			}
		})
	}
}

// runPID1 runs the agent under launch as PID 1 (with env added, and args
// before --), waits for its orphan to be reaped, sends sig to PID 1 and
// returns its exit status, its stderr and the launcher's log.
func runPID1(t *testing.T, bin, mode string, sig syscall.Signal, env, args []string) (code int, stderr, log string) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "mcpgen.toml"), []byte("[servers.files]\nbuiltin = \"files\"\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "agent.sh"), []byte(pid1Agent), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
	defer cancel()
	argv := []string{"--pid", "--fork", "--mount-proc", bin, "launch", "--workspace", "pid1", "--manifest", filepath.Join(dir, "mcpgen.toml")}
	argv = append(append(argv, args...), "--", "sh", "agent.sh")
	cmd := exec.CommandContext(ctx, "unshare", argv...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"MCPGEN_CONTAINMENT="+mode,
		"MCPGEN_RUNTIME_DIR="+filepath.Join(dir, "run"),
		"MCPGEN_STATE_DIR="+filepath.Join(dir, "state"),
		"MCPGEN_WORKSPACE=",
	)
	cmd.Env = append(cmd.Env, env...)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	// Its own group: SIGKILL to the group on timeout ends the namespace.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	must(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }() // ends with the namespace, or the hang guard
	result := func() (int, string, string) {
		err := <-done
		b, _ := os.ReadFile(filepath.Join(dir, "state", "pid1", "launcher.log"))
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), errOut.String(), string(b)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, errOut.String(), string(b)
	}

	// Wait for the orphan to be gone (the agent says so), or for the
	// agent's own verdict.
	for !exists(filepath.Join(dir, "reaped")) {
		select {
		case err := <-done:
			done <- err
			return result()
		case <-ctx.Done():
			t.Fatalf("the agent did not start, or its orphan was not reaped\nstderr:\n%s", errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	init := namespaceInit(t, cmd.Process.Pid)
	must(t, syscall.Kill(init, sig))
	return result()
}

// namespaceInit returns the pid, as seen here, of the PID 1 that unshare
// (pid unsharePid) forked.
func namespaceInit(t *testing.T, unsharePid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(unsharePid) + "/task/" + strconv.Itoa(unsharePid) + "/children")
	if err != nil {
		t.Fatalf("finding unshare's child: %v", err)
	}
	f := strings.Fields(string(b))
	if len(f) != 1 {
		t.Fatalf("unshare has children %q, want one", f)
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func exists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// pid1TerminalAgent writes its process group and its terminal's foreground
// group to the file "groups", says it is ready, and exits 43 on SIGINT.
const pid1TerminalAgent = `
read -r pid comm state ppid pgrp sid tty tpgid rest < /proc/self/stat
echo "$pgrp $tpgid" > groups
trap 'exit 43' INT
echo ok > ready
i=0
while [ $i -lt 1200 ]; do
	i=$((i+1))
	sleep 0.05
done
exit 4
`

// TestPID1Terminal: as PID 1 on a terminal (docker run -it), mcpgen's init
// gives the terminal to its child's own process group, so that Ctrl-C
// reaches the launcher and its agent once, from the terminal, and not a
// second time passed on by init (a launcher without an agent took the
// second for a second signal and skipped the grace periods). Ctrl-C still
// reaches the agent, and launch exits with its status.
func TestPID1Terminal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds mcpgen and runs it in a PID namespace")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare --pid --mount-proc")
	}
	for _, prog := range []string{"unshare", "setsid"} {
		if _, err := exec.LookPath(prog); err != nil {
			t.Skipf("no %s here", prog)
		}
	}
	if out, err := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "true").CombinedOutput(); err != nil {
		t.Skipf("unshare --pid --fork --mount-proc does not work here: %v: %s", err, out)
	}
	bin, err := buildMcpgen()
	if err != nil {
		t.Fatal(err)
	}
	ptmx, tty := openPtyPair(t)
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "mcpgen.toml"), []byte("[servers.files]\nbuiltin = \"files\"\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "agent.sh"), []byte(pid1TerminalAgent), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
	defer cancel()
	// setsid -c makes PID 1 a session leader with the terminal, as a
	// container runtime does with -t.
	cmd := exec.CommandContext(ctx, "unshare", "--pid", "--fork", "--mount-proc", "setsid", "-c",
		bin, "launch", "--workspace", "pid1t", "--manifest", filepath.Join(dir, "mcpgen.toml"), "--", "sh", "agent.sh")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"MCPGEN_RUNTIME_DIR="+filepath.Join(dir, "run"),
		"MCPGEN_STATE_DIR="+filepath.Join(dir, "state"),
		"MCPGEN_WORKSPACE=",
	)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // the terminal is nobody's yet
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	must(t, cmd.Start())
	var out bytes.Buffer
	drained := make(chan struct{})
	go func() { // ends when the last terminal end closes (EIO) or at Cleanup
		defer close(drained)
		_, _ = io.Copy(&out, ptmx)
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }() // ends with the namespace, or the hang guard

	for !exists(filepath.Join(dir, "ready")) {
		select {
		case err := <-done:
			t.Fatalf("launch exited before its agent was ready: %v", err)
		case <-ctx.Done():
			t.Fatal("the agent did not start")
		case <-time.After(20 * time.Millisecond):
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "groups"))
	must(t, err)
	var pgrp, tpgid int
	if _, err := fmt.Sscan(string(b), &pgrp, &tpgid); err != nil {
		t.Fatalf("groups %q: %v", b, err)
	}
	if pgrp == 1 || pgrp != tpgid {
		t.Errorf("the agent's process group is %d and the terminal's foreground group %d: want a group of the child's (not init's, 1) that has the terminal", pgrp, tpgid)
	}
	_, err = ptmx.Write([]byte{3}) // Ctrl-C
	must(t, err)
	err = <-done
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 43 {
		t.Errorf("after Ctrl-C, launch ended with %v, want exit status 43 (the agent's)", err)
	}
	tty.Close()
	_ = ptmx.SetReadDeadline(time.Now().Add(10 * time.Second))
	<-drained
	if t.Failed() {
		t.Logf("terminal:\n%s", out.String())
	}
}
