// Package httpguard checks what reaches the launcher's HTTP face before any
// MCP is read: the Host and Origin of requests to a loopback listener (DNS
// rebinding), and the method, Content-Type, Accept and size of a request
// to an MCP endpoint, as the Streamable HTTP transport of both eras states
// them. It also holds the server's limits (a read-header timeout, a header
// size) and writes the refusals, each a JSON-RPC error without an id, as
// the transport allows.
package httpguard

import (
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/mcp"
)

// Refuse answers the request with status and a JSON-RPC error without an
// id that says msg. The error's code is -32600 (invalid request): the
// status says the rest.
func Refuse(w http.ResponseWriter, status int, msg string) {
	body := (&mcp.Message{Error: mcp.NewError(mcp.CodeInvalidRequest, "%s", msg)}).AppendJSON(nil)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// Local checks the Host and Origin of every request to a listener on
// loopback, and refuses (403) one that names another machine: a web page
// whose name its DNS server rebinds to 127.0.0.1 makes the browser send
// its own name as Host (and Origin), and must not reach the workspace's
// tools, with or without authentication. A request without Origin is not
// a browser's cross-origin one; "null" (a sandboxed page, a file) is
// refused. The port is not compared: a tunnel (ssh -L) may reach the
// listener under another, and a name that can rebind is never loopback's.
func Local(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if msg := checkLocal(r); msg != "" {
			Refuse(w, http.StatusForbidden, msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkLocal returns why r may not reach a loopback listener, or "".
func checkLocal(r *http.Request) string {
	if !loopbackHostPort(r.Host) {
		return "the Host header does not name this machine (localhost, 127.0.0.1 or [::1]): the launcher listens on loopback only, and refuses names that a web page could rebind to it"
	}
	origins := r.Header.Values("Origin")
	if len(origins) > 1 {
		return "more than one Origin header"
	}
	if len(origins) == 1 {
		u, err := url.Parse(origins[0])
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !manifest.LoopbackHost(u.Hostname()) {
			return "the Origin of the request is not this machine's: the launcher listens on loopback only, and web pages elsewhere may not reach it"
		}
	}
	return ""
}

// loopbackHostPort reports whether a Host header (host, or host:port,
// an IPv6 address in brackets) names loopback.
func loopbackHostPort(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	return host != "" && manifest.LoopbackHost(host)
}
