package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestEgress: the proxy tunnels to a host the allowlist names (in any
// case, with a trailing dot), refuses others with 403 and a reason, HTTP
// in the clear with 501, and a head that never ends or is too long with
// 400, holding nothing once closed.
func TestEgress(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		// Echoes one line per connection until the listener closes.
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				line, _ := bufio.NewReader(c).ReadString('\n')
				io.WriteString(c, "echo: "+line)
			}()
		}
	}()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	e := newEgress([]string{"Allowed.Example:" + port, "[::1]:9"})
	defer e.Close()
	// Every host the proxy lets through is the echo listener: the names
	// are not real.
	e.dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, l.Addr().String())
	}

	ask := func(head string) (status, rest string) {
		t.Helper()
		ours, theirs := net.Pipe()
		defer ours.Close()
		e.serve(theirs, "")
		go io.WriteString(ours, head)
		_ = ours.SetReadDeadline(time.Now().Add(time.Minute))
		br := bufio.NewReader(ours)
		status, _ = br.ReadString('\n')
		if strings.Contains(status, " 200 ") {
			br.ReadString('\n') // the blank line
			io.WriteString(ours, "ping\n")
			rest, _ = br.ReadString('\n')
			return status, rest
		}
		b, _ := io.ReadAll(br)
		return status, string(b)
	}
	for _, c := range []struct{ name, head, status, says string }{
		{"allowed", "CONNECT allowed.example.:" + port + " HTTP/1.1\r\nHost: x\r\n\r\n", "200", "echo: ping"},
		{"not allowed", "CONNECT other.example:" + port + " HTTP/1.1\r\n\r\n", "403", "other.example:" + port + " is not in this server's network allowlist"},
		{"other port", "CONNECT allowed.example:1 HTTP/1.1\r\n\r\n", "403", "allowlist"},
		{"clear HTTP", "GET http://allowed.example:" + port + "/ HTTP/1.1\r\nHost: allowed.example\r\n\r\n", "501", "HTTPS (CONNECT) only"},
		{"not HTTP", "\x16\x03\x01 a TLS hello\r\n\r\n", "400", "not an HTTP proxy request"},
		{"huge head", "CONNECT allowed.example:" + port + " HTTP/1.1\r\nX: " + strings.Repeat("a", egressMaxHead) + "\r\n\r\n", "400", "not an HTTP proxy request"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, rest := ask(c.head)
			if !strings.Contains(status, " "+c.status+" ") || !strings.Contains(rest, c.says) {
				t.Errorf("got %q %q, want %s and %q", status, rest, c.status, c.says)
			}
		})
	}
	if !e.allowed("[::1]:9") || e.allowed("[::1]:10") || e.allowed("allowed.example") {
		t.Errorf("allowed: IPv6 and a missing port")
	}
}

// echoServer listens on a loopback port and echoes what each connection
// sends, until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		// Ends when the cleanup closes ln; each echo ends with its
		// connection (the proxy's end, closed by the proxy's stop).
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return ln.Addr().String()
}

// connect asks the proxy at proxy for a tunnel to target, and returns the
// connection and the proxy's status line.
func connect(t *testing.T, proxy, target string) (net.Conn, *bufio.Reader, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", proxy, testWait)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(testWait))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	// The rest of the head, up to the blank line.
	for {
		l, err := br.ReadString('\n')
		if err != nil || l == "\r\n" {
			break
		}
	}
	return c, br, strings.TrimSpace(line)
}

// TestListenEgress: the proxy on a loopback port (macOS's, where there is
// no channel) tunnels to what the allowlist names, refuses the rest with
// a reason, and its stop ends the tunnels it holds and the port.
func TestListenEgress(t *testing.T) {
	granted, other := echoServer(t), echoServer(t)
	addr, stop, err := listenEgress([]string{granted})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	if host, _, _ := net.SplitHostPort(addr); host != "127.0.0.1" {
		t.Fatalf("the proxy listens on %s, want the loopback", addr)
	}

	c, br, status := connect(t, addr, granted)
	if !strings.Contains(status, " 200 ") {
		t.Fatalf("CONNECT to the granted host: got %q, want 200", status)
	}
	fmt.Fprintf(c, "hello\n")
	if got, err := br.ReadString('\n'); got != "hello\n" {
		t.Fatalf("through the tunnel: got %q (%v), want the echo", got, err)
	}

	_, br2, status := connect(t, addr, other)
	if !strings.Contains(status, " 403 ") {
		t.Errorf("CONNECT to a host not granted: got %q, want 403", status)
	}
	body, _ := io.ReadAll(br2)
	if !strings.Contains(string(body), other+" is not in this server's network allowlist") {
		t.Errorf("the refusal says %q, want why", body)
	}

	c3, err := net.DialTimeout("tcp", addr, testWait)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c3, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", granted, granted)
	line, _ := bufio.NewReader(c3).ReadString('\n')
	c3.Close()
	if !strings.Contains(line, " 501 ") {
		t.Errorf("a request in the clear: got %q, want 501", line)
	}

	// stop ends the open tunnel (the client sees its end) and the port.
	stop()
	stopped = true
	if _, err := br.ReadString('\n'); !errors.Is(err, io.EOF) && !isClosed(err) {
		t.Errorf("the tunnel after stop: got %v, want its end", err)
	}
	if c, err := net.DialTimeout("tcp", addr, testWait); err == nil {
		c.Close()
		t.Errorf("the proxy's port still accepts after stop")
	}
}

// isClosed says whether err is a connection's end as a peer's close or
// reset shows it.
func isClosed(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "reset") || strings.Contains(err.Error(), "closed"))
}

// testWait bounds what a test waits for on the network, so that a broken
// proxy fails the test instead of hanging it; no timing is asserted.
const testWait = 60 * time.Second
