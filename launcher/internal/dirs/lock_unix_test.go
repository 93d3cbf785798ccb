//go:build unix

package dirs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestLockDiesWithHolder runs a launcher stand-in that takes the lock and
// starts a child, kills it with SIGKILL, and takes the lock while the
// orphaned child still runs: the kernel released the lock, and the child
// never held it.
func TestLockDiesWithHolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHelperProcess$")
	cmd.Env = append(os.Environ(), "MCPGEN_TEST_LOCK_DIR="+dir)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		t.Fatal(err)
	}
	helper := cmd.Process.Pid
	exited := make(chan struct{})
	go func() { // ends when the helper exits: killed below or at cleanup
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		syscall.Kill(-helper, syscall.SIGKILL) // the helper and its child
		inW.Close()
		<-exited
	})

	line, err := bufio.NewReader(outR).ReadString('\n')
	childPid, ok := strings.CutPrefix(strings.TrimSpace(line), "locked ")
	if !ok {
		t.Fatalf("helper said %q (%v), want \"locked PID\"", line, err)
	}
	child, err := strconv.Atoi(childPid)
	if err != nil {
		t.Fatal(err)
	}

	if pid, running := Holder(dir); pid != helper || !running {
		t.Errorf("Holder = %d, %v; want %d, true", pid, running, helper)
	}
	l, err := Lock(dir)
	var held *LockedError
	if !errors.As(err, &held) || held.Pid != helper {
		l.Unlock()
		t.Fatalf("Lock while the helper holds it: %v, want a *lockedError with pid %d", err, helper)
	}

	if err := syscall.Kill(helper, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	if !alive(child) {
		t.Fatalf("the helper's child %d is gone: the test proves nothing", child)
	}
	if pid, running := Holder(dir); running {
		t.Errorf("Holder after kill -9 = %d, true; want not running", pid)
	}
	l, err = Lock(dir)
	if err != nil {
		t.Fatalf("Lock after kill -9 of the holder: %v", err)
	}
	if err := l.Unlock(); err != nil {
		t.Error(err)
	}
}

// TestLockHelperProcess is not a test: it is the launcher stand-in of
// TestLockDiesWithHolder. It takes the lock, starts a child, says
// "locked CHILDPID" and waits for its stdin to close.
func TestLockHelperProcess(t *testing.T) {
	dir := os.Getenv("MCPGEN_TEST_LOCK_DIR")
	if dir == "" {
		t.Skip("the helper process of TestLockDiesWithHolder")
	}
	if _, err := Lock(dir); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	child := exec.Command("sleep", "300")
	if err := child.Start(); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Printf("locked %d\n", child.Process.Pid)
	var b [1]byte
	os.Stdin.Read(b[:])
	child.Process.Kill()
	child.Wait()
	os.Exit(0)
}
