package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The egress proxy is how a sandbox whose network is a list of host:port
// pairs reaches them, and nothing else. The sandboxed process has no
// network of its own (a namespace with only its loopback); each connection
// it opens to the proxy's port there, or to a host service it was granted
// (localhost:5432), is handed to mcpgen outside, which connects to the
// host only when the allowlist names it. The proxy speaks HTTP CONNECT
// host:port, what HTTPS_PROXY makes clients send. Names are resolved
// outside, by mcpgen, so the sandbox needs no DNS either.

// Bounds on what one sandboxed process can make the proxy hold.
const (
	egressMaxConns = 256              // connections open at once
	egressMaxHead  = 64 << 10         // bytes of a request line and headers
	egressHeadWait = 30 * time.Second // for the request head to arrive
	egressDialWait = 30 * time.Second // for the host to answer
)

// egress serves the connections of one sandboxed process.
type egress struct {
	allow map[string]bool // "host:port", the host in lower case, IPv6 unbracketed
	dial  func(ctx context.Context, network, addr string) (net.Conn, error)

	mu     sync.Mutex
	conns  map[net.Conn]struct{} // open: the sandbox's and the hosts'
	closed bool
	wg     sync.WaitGroup // one per connection served
}

func newEgress(hosts []string) *egress {
	e := &egress{allow: map[string]bool{}, conns: map[net.Conn]struct{}{}}
	for _, hp := range hosts {
		if key, ok := hostKey(hp); ok {
			e.allow[key] = true
		}
	}
	e.dial = (&net.Dialer{Timeout: egressDialWait}).DialContext
	return e
}

// hostKey is hostport as the allowlist holds it.
func hostKey(hostport string) (string, bool) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil || host == "" || port == "" {
		return "", false
	}
	return net.JoinHostPort(strings.TrimSuffix(strings.ToLower(host), "."), port), true
}

func (e *egress) allowed(hostport string) bool {
	key, ok := hostKey(hostport)
	return ok && e.allow[key]
}

// track adds c to the open connections; false when the proxy is closed or
// full, and c is closed.
func (e *egress) track(c net.Conn) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || len(e.conns) >= 2*egressMaxConns {
		c.Close()
		return false
	}
	e.conns[c] = struct{}{}
	return true
}

func (e *egress) untrack(c net.Conn) {
	c.Close()
	e.mu.Lock()
	delete(e.conns, c)
	e.mu.Unlock()
}

// serve serves one connection of the sandbox in a goroutine of its own,
// which ends when either side closes or Close is called. target is the
// host:port the sandbox reached through a forwarded port, "" for the
// proxy's own port.
func (e *egress) serve(c net.Conn, target string) {
	e.mu.Lock()
	full := len(e.conns) >= egressMaxConns
	e.mu.Unlock()
	if full {
		c.Close()
		return
	}
	if !e.track(c) {
		return
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		defer e.untrack(c)
		if target != "" {
			if e.allowed(target) {
				e.pipe(c, nil, target)
			}
			return
		}
		e.proxy(c)
	}()
}

// proxy reads one request from c and answers it: CONNECT opens a tunnel,
// a request with an absolute URL is passed on; a host not allowed gets
// 403 and a body that says why.
func (e *egress) proxy(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(egressHeadWait))
	br := bufio.NewReader(io.LimitReader(c, egressMaxHead))
	req, err := http.ReadRequest(br)
	if err != nil {
		refuse(c, http.StatusBadRequest, "mcpgen sandbox: not an HTTP proxy request: "+err.Error())
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if req.Method != http.MethodConnect {
		// HTTP in the clear is not passed on: it would need the proxy to
		// parse and rewrite every request, for what APIs no longer serve.
		refuse(c, http.StatusNotImplemented, "mcpgen sandbox: the egress proxy passes on HTTPS (CONNECT) only; use https://")
		return
	}
	target := req.Host
	if !e.allowed(target) {
		refuse(c, http.StatusForbidden, fmt.Sprintf("mcpgen sandbox: %s is not in this server's network allowlist (the manifest's sandbox.network)", target))
		return
	}
	// What the client sent after its CONNECT (a TLS hello, eagerly) is in
	// br; the limit applied to the head only.
	e.pipe(c, io.MultiReader(bufferedOf(br), c), target, "HTTP/1.1 200 Connection established\r\n\r\n")
}

// bufferedOf is what br has read ahead of its caller.
func bufferedOf(br *bufio.Reader) io.Reader {
	b, _ := br.Peek(br.Buffered())
	return strings.NewReader(string(b))
}

// pipe connects c to target and copies both ways until either ends. from
// is what to send target (nil: c itself); hello is written to c once the
// host has answered.
func (e *egress) pipe(c net.Conn, from io.Reader, target string, hello ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), egressDialWait)
	up, err := e.dial(ctx, "tcp", target)
	cancel()
	if err != nil {
		if len(hello) > 0 {
			refuse(c, http.StatusBadGateway, "mcpgen sandbox: "+err.Error())
		}
		return
	}
	if !e.track(up) {
		return
	}
	defer e.untrack(up)
	for _, h := range hello {
		if _, err := io.WriteString(c, h); err != nil {
			return
		}
	}
	if from == nil {
		from = c
	}
	done := make(chan struct{})
	go func() {
		// Ends when c or up is closed: the other copy closes both.
		_, _ = io.Copy(c, up)
		closeWrite(c)
		close(done)
	}()
	_, _ = io.Copy(up, from)
	closeWrite(up)
	<-done
}

// closeWrite half-closes c when it can, so that the other side sees the
// end of what was sent and may still answer.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		if cw.CloseWrite() == nil {
			return
		}
	}
	c.Close()
}

func refuse(c net.Conn, status int, why string) {
	_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s\n",
		status, http.StatusText(status), len(why)+1, why)
}

// listen serves the proxy on ln, a loopback TCP port the sandbox may
// connect to, where the platform has no channel to hand its connections
// over (macOS). It returns when ln is closed. An accept that fails
// otherwise (for want of descriptors) is retried after a pause, as
// net/http does, so that the proxy outlives a burst.
func (e *egress) listen(ln net.Listener) {
	pause := 5 * time.Millisecond
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(pause)
			pause = min(2*pause, time.Second)
			continue
		}
		pause = 5 * time.Millisecond
		e.serve(c, "")
	}
}

// listenEgress serves an egress proxy for hosts on a loopback port of its
// own, and returns its address and stop, which closes the port, ends every
// connection and waits for the goroutines. The port is open to every
// process of the machine that can reach the loopback, as any listener
// there is.
func listenEgress(hosts []string) (addr string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("sandbox: the egress proxy's port: %v", err)
	}
	e := newEgress(hosts)
	done := make(chan struct{})
	go func() {
		// Ends when stop closes ln.
		defer close(done)
		e.listen(ln)
	}()
	return ln.Addr().String(), func() {
		ln.Close()
		<-done
		e.Close()
	}, nil
}

// proxyEnv are the variables that send a sandboxed process's HTTPS
// through the egress proxy at addr. NO_PROXY names the loopback alone: a
// service of the machine that the sandbox was granted (localhost:5432) is
// reached at its own port, and the server's own loopback is its own; any
// other host it named would be dialled directly, and fail.
// NODE_USE_ENV_PROXY makes Node's own fetch (from Node 24) honour them.
func proxyEnv(addr string) []string {
	url := "http://" + addr
	var set []string
	for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"} {
		set = append(set, k+"="+url)
	}
	const loopback = "localhost,127.0.0.1,::1"
	return append(set, "NO_PROXY="+loopback, "no_proxy="+loopback, "NODE_USE_ENV_PROXY=1")
}

// isLoopback says whether host names this machine's loopback.
func isLoopback(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Close ends every connection and waits for their goroutines.
func (e *egress) Close() {
	e.mu.Lock()
	e.closed = true
	for c := range e.conns {
		c.Close()
	}
	e.mu.Unlock()
	e.wg.Wait()
}
