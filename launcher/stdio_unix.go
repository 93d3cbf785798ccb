//go:build unix

package launcher

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// canPassStdio says that this launcher takes a client's stdin and stdout
// over the control socket (SCM_RIGHTS).
const canPassStdio = true

// receiveStdio takes the stdin and stdout that a client hands over.
func receiveStdio(conn net.Conn) (*stdioConn, error) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return nil, errors.New("not a unix socket")
	}
	_ = uc.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer uc.SetReadDeadline(time.Time{})
	buf := make([]byte, 1)
	oob := make([]byte, syscall.CmsgSpace(2*4))
	_, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, fmt.Errorf("receiving stdio: %w", err)
	}
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return nil, fmt.Errorf("receiving stdio: %w", err)
	}
	var fds []int
	for i := range msgs {
		got, err := syscall.ParseUnixRights(&msgs[i])
		if err == nil {
			fds = append(fds, got...)
		}
	}
	if len(fds) != 2 {
		for _, fd := range fds {
			syscall.Close(fd)
		}
		return nil, fmt.Errorf("receiving stdio: %d descriptors, want 2", len(fds))
	}
	// Non-blocking, so that the runtime's poller waits on them and Close
	// interrupts a read.
	for _, fd := range fds {
		syscall.CloseOnExec(fd)
		_ = syscall.SetNonblock(fd, true)
	}
	return &stdioConn{r: os.NewFile(uintptr(fds[0]), "agent stdin"), w: os.NewFile(uintptr(fds[1]), "agent stdout")}, nil
}

// stdioConn is an agent's stdin and stdout, as one connection.
type stdioConn struct {
	r, w *os.File
	once sync.Once
}

func (c *stdioConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *stdioConn) Write(p []byte) (int, error) { return c.w.Write(p) }

// Deadlines work on both pipes, made non-blocking and so polled by the
// runtime (see receiveStdio): the hub stops reading an agent that it
// drops, and bounds its last writes to one that does not read.
func (c *stdioConn) SetWriteDeadline(t time.Time) error { return c.w.SetWriteDeadline(t) }
func (c *stdioConn) SetReadDeadline(t time.Time) error  { return c.r.SetReadDeadline(t) }

// SyscallConn is the agent's stdout, which the hub writes to without
// blocking when the pipe has room, and without a goroutine in between.
func (c *stdioConn) SyscallConn() (syscall.RawConn, error) { return c.w.SyscallConn() }

func (c *stdioConn) Close() error {
	c.once.Do(func() {
		c.r.Close()
		c.w.Close()
	})
	return nil
}
