package launcher

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

func TestLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	lockPath := filepath.Join(dir, lockFile)
	self := os.Getpid()

	if pid, running := Holder(dir); running {
		t.Fatalf("Holder before any launch = %d, true; want not running", pid)
	}
	// A longer pid left by an earlier launcher must not leave debris.
	if err := os.WriteFile(lockPath, []byte("1234567890\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fileText(t, lockPath), strconv.Itoa(self)+"\n"; got != want {
		t.Errorf("lock file holds %q, want %q", got, want)
	}
	if pid, running := Holder(dir); pid != self || !running {
		t.Errorf("Holder = %d, %v; want %d, true", pid, running, self)
	}

	// flock locks belong to open files, so a second Lock in this process
	// meets the first as another launcher would.
	l2, err := lock(dir)
	var held *lockedError
	if !errors.As(err, &held) {
		l2.Unlock()
		t.Fatalf("second Lock: %v, want a *lockedError", err)
	}
	if held.Pid != self || held.Workspace != "ws" {
		t.Errorf("lockedError = %+v, want pid %d, workspace ws", held, self)
	}

	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if pid, running := Holder(dir); running {
		t.Errorf("Holder after Unlock = %d, true; want not running", pid)
	}
	if got := fileText(t, lockPath); got != "" {
		t.Errorf("lock file after Unlock holds %q, want nothing", got)
	}
	l, err = lock(dir)
	if err != nil {
		t.Fatalf("Lock after Unlock: %v", err)
	}
	defer l.Unlock()

	// A holder whose pid cannot be read is still a holder.
	if err := os.WriteFile(lockPath, []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if pid, running := Holder(dir); pid != 0 || !running {
		t.Errorf("Holder with an unreadable pid = %d, %v; want 0, true", pid, running)
	}
}

func TestLockedErrorMessage(t *testing.T) {
	tests := []struct {
		err  lockedError
		want string
	}{
		{lockedError{"acme-1", 4242}, `workspace "acme-1" already has a launcher (pid 4242); see it with mcpgen status --workspace acme-1, or stop it with mcpgen stop --workspace acme-1`},
		{lockedError{"acme-1", 0}, `workspace "acme-1" already has a launcher (pid unknown); see it with mcpgen status --workspace acme-1, or stop it with mcpgen stop --workspace acme-1`},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
}

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
	l, err := lock(dir)
	var held *lockedError
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
	l, err = lock(dir)
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
	if _, err := lock(dir); err != nil {
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

func fileText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
