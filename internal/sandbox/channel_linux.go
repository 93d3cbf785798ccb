package sandbox

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"

	"golang.org/x/sys/unix"
)

// The channel is how the setup step, inside the sandbox's network
// namespace, hands mcpgen outside each connection the sandbox opens to the
// egress proxy or to a host service it was granted: a SOCK_SEQPACKET pair,
// one message per connection, its descriptor attached (SCM_RIGHTS) and its
// target as the text ("" for the proxy). mcpgen never dials into the
// sandbox, and the sandbox never reaches the host's network but through
// it.

// startEgress makes the channel for cmd and serves it: the child's end
// goes to cmd.ExtraFiles, and its number in the child is returned. The
// setup's release ends the serving and the connections.
func startEgress(cmd *exec.Cmd, hosts []string, s *Setup) (int, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("sandbox: the egress channel: %v", err)
	}
	theirs := os.NewFile(uintptr(pair[1]), "sandbox-egress")
	ours := os.NewFile(uintptr(pair[0]), "sandbox-egress")
	conn, err := net.FileConn(ours) // a dup, polled; ours is closed below
	ours.Close()
	if err != nil {
		theirs.Close()
		return 0, fmt.Errorf("sandbox: the egress channel: %v", err)
	}
	uc := conn.(*net.UnixConn)
	e := newEgress(hosts)
	done := make(chan struct{})
	go func() {
		// Ends when the channel is closed: by release, or by the setup
		// step's exit (the sandbox's end).
		defer close(done)
		receive(uc, e)
	}()
	cmd.ExtraFiles = append(cmd.ExtraFiles, theirs)
	s.release = append(s.release, func() {
		theirs.Close()
		uc.Close()
		<-done
		e.Close()
	})
	return 2 + len(cmd.ExtraFiles), nil
}

// receive serves each connection that arrives on the channel, until it
// closes.
func receive(uc *net.UnixConn, e *egress) {
	buf := make([]byte, 512)
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		n, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 && oobn == 0 {
			return
		}
		fds := rights(oob[:oobn])
		if len(fds) != 1 {
			for _, fd := range fds {
				unix.Close(fd)
			}
			continue
		}
		f := os.NewFile(uintptr(fds[0]), "sandbox-conn")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			continue
		}
		e.serve(c, strings.TrimSuffix(string(buf[:n]), "\x00"))
	}
}

// rights are the descriptors a message carried.
func rights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if got, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}

// forwardInside runs in the setup step, in the sandbox's network
// namespace: it brings up the loopback, listens for the egress proxy on a
// port of it (returned) and on each granted host service of hosts (a
// loopback address: localhost:5432), and hands every connection to the
// channel fd. The accept loops run until the process exits.
func forwardInside(channel int, hosts []string) (proxy string, err error) {
	f := os.NewFile(uintptr(channel), "sandbox-egress")
	conn, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return "", fmt.Errorf("the egress channel: %v", err)
	}
	uc := conn.(*net.UnixConn)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("the egress proxy's port: %v", err)
	}
	go handOver(uc, ln, "")
	for _, hp := range hosts {
		host, port, _ := net.SplitHostPort(hp)
		if !isLoopback(host) {
			continue
		}
		// The service keeps its address inside: what it was configured
		// with (localhost:5432) works as it is.
		for _, addr := range []string{"127.0.0.1", "::1"} {
			l, err := net.Listen("tcp", net.JoinHostPort(addr, port))
			if err != nil {
				if addr == "::1" {
					continue // no IPv6 inside: the IPv4 one serves
				}
				return "", fmt.Errorf("forwarding %s: %v", hp, err)
			}
			go handOver(uc, l, net.JoinHostPort(host, port))
		}
	}
	return ln.Addr().String(), nil
}

// handOver passes each connection accepted on ln to the channel, with
// target as its text, and closes its own copy. It returns when ln fails.
func handOver(uc *net.UnixConn, ln net.Listener, target string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return // the listener has no deadline: it is closed, or broken
		}
		tc := c.(*net.TCPConn)
		f, err := tc.File()
		tc.Close()
		if err != nil {
			continue
		}
		// The text is never empty on the wire: a message of no bytes
		// reads as the end of the channel.
		_, _, err = uc.WriteMsgUnix([]byte(target+"\x00"), unix.UnixRights(int(f.Fd())), nil)
		f.Close()
		if err != nil {
			return // mcpgen's end is gone
		}
	}
}

// loUp brings up the loopback of the process's network namespace.
func loUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing up the loopback: %v", err)
	}
	return nil
}
