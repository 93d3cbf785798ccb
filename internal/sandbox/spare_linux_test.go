package sandbox

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// readySpare returns the idle spare of s for p, once Ready says there is
// one, without taking it.
func readySpare(t *testing.T, s *Spares, p *Policy) *Spare {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := s.Ready(ctx, p); err != nil {
		t.Fatal(err)
	}
	pl, _ := decide(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idle[kindOf(pl)]
}

// TestSpareEnvironment: a spare is started with nothing of the
// launcher's environment. It becomes the sandbox's PID 1, whose
// environment a server can read (/proc/1/environ): the launcher's keys
// must not be there.
func TestSpareEnvironment(t *testing.T) {
	const secret = "MCPGEN_TEST_LAUNCHER_SECRET"
	t.Setenv(secret, "sk-not-a-real-key")
	s := NewSpares(nil)
	defer s.Close()
	sp := readySpare(t, s, &Policy{Network: Network{Mode: NetNone}})
	env, err := os.ReadFile("/proc/" + strconv.Itoa(sp.cmd.Process.Pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	if len(env) != 0 {
		t.Errorf("the spare's environment is %q, want none", env)
	}
}

// TestSpareGone: a spare killed while it waits is no failed start: Run
// says ErrSpareGone and leaves the command as it was, for Prepare.
func TestSpareGone(t *testing.T) {
	s := NewSpares(nil)
	defer s.Close()
	p := &Policy{Network: Network{Mode: NetNone}}
	sp := readySpare(t, s, p)
	if err := sp.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("true")
	cmd.Env = []string{"A=1"}
	env := cmd.Env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
	got := s.Take(cmd, p)
	if got != sp {
		t.Fatalf("Take gave %v, want the idle spare %v", got, sp)
	}
	// Its exit first, so that the order meets a closed socket.
	state, _ := sp.cmd.Process.Wait()
	t.Logf("the spare: %v", state)
	setup, err := sp.Run(cmd)
	setup.Close()
	if !errors.Is(err, ErrSpareGone) {
		t.Fatalf("Run: %v, want ErrSpareGone", err)
	}
	if !slices.Equal(cmd.Env, env) || len(cmd.ExtraFiles) != 0 {
		t.Errorf("the command was changed: env %q, extra files %d", cmd.Env, len(cmd.ExtraFiles))
	}
}

// TestSparesClose: Close ends the idle spares, a stopped one too (a
// launcher's stop must not wait on it): none is left running.
func TestSparesClose(t *testing.T) {
	s := NewSpares(nil)
	var pids []int
	for _, p := range []*Policy{{Network: Network{Mode: NetNone}}, {Network: Network{Mode: NetAll}}} {
		pids = append(pids, readySpare(t, s, p).cmd.Process.Pid)
	}
	if err := syscall.Kill(pids[0], syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }() // ends when Close returns
	select {
	case <-closed:
	case <-time.After(bound):
		syscall.Kill(pids[0], syscall.SIGKILL)
		<-closed
		t.Fatalf("Close waited %v on a stopped spare", bound)
	}
	for _, pid := range pids {
		// Waited for by Close: no process, not even a zombie, has it.
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil && bytes.Contains(b, []byte(spareEntry)) {
			t.Errorf("spare %d still runs after Close", pid)
		}
	}
	if s.Take(exec.Command("true"), &Policy{Network: Network{Mode: NetNone}}) != nil {
		t.Error("Take after Close gave a spare")
	}
}
