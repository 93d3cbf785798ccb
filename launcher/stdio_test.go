//go:build unix

package launcher

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestStdioConn: the agent's stdio, handed over by mcpgen connect, is what
// the hub needs to bound an agent that does not read: a write to a full
// stdout ends at its deadline, a read ends at its deadline (how the hub
// stops reading an agent it drops), and the stdout's descriptor is
// non-blocking (the hub writes to it without a goroutine in between, never
// blocking). The agent's pipes are blocking, as a process's stdio usually
// is: the launcher makes them non-blocking when it takes them.
func TestStdioConn(t *testing.T) {
	var in, out [2]int // the agent's stdin and stdout
	if err := syscall.Pipe(in[:]); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Pipe(out[:]); err != nil {
		t.Fatal(err)
	}
	agentIn, agentOut := os.NewFile(uintptr(in[1]), "agent writes"), os.NewFile(uintptr(out[0]), "agent reads")
	defer agentIn.Close()
	defer agentOut.Close()

	dir, err := os.MkdirTemp("", "stdio") // short: a socket path has a limit
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ln, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	if _, _, err := client.(*net.UnixConn).WriteMsgUnix([]byte{0}, syscall.UnixRights(in[0], out[1]), nil); err != nil {
		t.Fatal(err)
	}
	syscall.Close(in[0]) // passed: the launcher holds its own
	syscall.Close(out[1])
	stdio, err := receiveStdio(server)
	if err != nil {
		t.Fatal(err)
	}
	defer stdio.Close()

	rc, err := stdio.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	if err := rc.Control(func(fd uintptr) { flags, err = unix.FcntlInt(fd, unix.F_GETFL, 0) }); err != nil || flags&unix.O_NONBLOCK == 0 {
		t.Errorf("the agent's stdout: flags %#x, %v; want O_NONBLOCK", flags, err)
	}

	ended := make(chan error, 1)
	go func() { // ends at the deadline, or when the test closes the pipe
		if err := stdio.SetWriteDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
			ended <- err
			return
		}
		_, err := stdio.Write(make([]byte, 4<<20)) // more than a pipe holds: nobody reads
		ended <- err
	}()
	if err := waitErr(t, ended); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("write to a stdout nobody reads: %v, want os.ErrDeadlineExceeded", err)
	}

	go func() { // likewise
		if err := stdio.SetReadDeadline(time.Now()); err != nil {
			ended <- err
			return
		}
		_, err := stdio.Read(make([]byte, 1))
		ended <- err
	}()
	if err := waitErr(t, ended); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read of a silent stdin past its deadline: %v, want os.ErrDeadlineExceeded", err)
	}
}

func waitErr(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(waitLong):
		t.Fatal("still blocked: the deadline did not reach the pipe")
		return nil
	}
}
