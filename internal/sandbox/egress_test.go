package sandbox

import (
	"bufio"
	"context"
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
