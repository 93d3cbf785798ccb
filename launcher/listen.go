package launcher

import (
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/mcpgen/mcpgen/launcher/internal/httpauth"
	"github.com/mcpgen/mcpgen/manifest"
)

// HTTPOptions are launch's flags for serving the workspace over HTTP.
type HTTPOptions struct {
	// Listen is --listen, host:port; empty: the manifest's [session]
	// listen, and neither: no HTTP.
	Listen string
	// NoAuth is --no-auth: serve beyond loopback without [session.auth].
	NoAuth bool
}

// An HTTPPlan is how the launcher serves the workspace over HTTP, from the
// manifest and launch's flags, checked before anything listens: what the
// HTTP face is built from.
type HTTPPlan struct {
	// Addr is where to listen: host:port, port 0 for a free one.
	Addr string
	// Loopback says that Addr is on loopback only: every request's Host
	// and Origin must name this machine (httpguard.Local).
	Loopback bool
	// TLSCert and TLSKey are HTTPS's PEM files, absolute, checked to
	// load; empty: plain HTTP.
	TLSCert, TLSKey string
	// SessionTimeout ends an HTTP client's session unused that long.
	SessionTimeout time.Duration
	// Auth admits agents (httpauth.New, with BaseURL); nil: anyone who
	// reaches Addr, which is loopback unless NoAuth.
	Auth *httpauth.Config
	// NoAuth says that --no-auth serves beyond loopback without
	// authentication: Warning says so, loudly, at start.
	NoAuth bool
}

// PlanHTTP returns how the launcher of m serves the workspace over HTTP,
// nil when neither o nor m asks it to, or why it may not: an address
// that does not parse, TLS files that do not load, a [session.auth] whose
// token is not set, and an address beyond loopback without
// [session.auth], which would let anyone who reaches it run the
// workspace's tools (--no-auth allows it). getenv is the environment
// (nil: the process's), read once here for token_env.
func PlanHTTP(m *manifest.Manifest, o HTTPOptions, getenv manifest.Lookup) (*HTTPPlan, error) {
	addr, where := o.Listen, "--listen "+o.Listen
	if addr == "" {
		addr, where = m.Session.Listen, fmt.Sprintf("%s: [session] listen = %q", m.Where("session", "listen"), m.Session.Listen)
	}
	switch {
	case addr == "" && o.NoAuth:
		return nil, fmt.Errorf("--no-auth is for a launcher that listens: pass --listen ADDR too, or set [session] listen in %s", manifestName(m))
	case addr == "":
		return nil, nil
	}
	if err := manifest.CheckListen(addr); err != nil {
		return nil, fmt.Errorf("%s: %v", where, err)
	}
	host, _, _ := net.SplitHostPort(addr)
	p := &HTTPPlan{Addr: addr, Loopback: manifest.LoopbackHost(host), SessionTimeout: m.Session.HTTPSessionTimeout()}

	if m.Session.Auth != nil && o.NoAuth {
		return nil, fmt.Errorf("--no-auth: %s has [session.auth] (%s), which admits agents with a token: drop --no-auth, or [session.auth] to serve without one", manifestName(m), m.Where("session", "auth"))
	}
	var err error
	if p.Auth, err = httpauth.Load(m, getenv); err != nil {
		return nil, err
	}
	switch {
	case p.Auth == nil && !p.Loopback && !o.NoAuth:
		return nil, noAuthError(m, where, addr)
	case p.Auth == nil && !p.Loopback:
		p.NoAuth = true
	}
	if p.Auth != nil && p.Auth.Issuer != "" && p.Auth.Audience == "" && unspecified(host) {
		return nil, fmt.Errorf("%s: [session.auth] issuer: %s listens on every interface, so the URL that agents reach, which JWTs must name, is not known: set audience = \"https://mcp.example.com/mcp\", that URL", m.Where("session", "auth", "issuer"), where)
	}
	if s := m.Session; s.TLSCert != "" {
		p.TLSCert, p.TLSKey = m.SessionPath(s.TLSCert), m.SessionPath(s.TLSKey)
		if _, err := tls.LoadX509KeyPair(p.TLSCert, p.TLSKey); err != nil {
			return nil, fmt.Errorf("%s: [session] tls_cert and tls_key: %v", m.Where("session", "tls_cert"), err)
		}
	}
	return p, nil
}

// noAuthError is the refusal to listen at addr, beyond loopback, without
// [session.auth], and how to add a token.
func noAuthError(m *manifest.Manifest, where, addr string) error {
	return fmt.Errorf("%s is not loopback, and %s has no [session.auth]: anyone who reaches %s would run the workspace's tools. "+
		"Add a token: put [session.auth] with token_env = \"MCPGEN_TOKEN\" in %s, and start the launcher with MCPGEN_TOKEN set to a long random secret (openssl rand -hex 32), "+
		"which agents send as a bearer token (mcpgen emit --gateway-url URL --gateway-token-env MCPGEN_TOKEN writes their entry); "+
		"or listen on 127.0.0.1; or pass --no-auth to serve without authentication, behind a proxy that authenticates",
		where, manifestName(m), addr, manifestName(m))
}

// manifestName is the manifest as messages name it.
func manifestName(m *manifest.Manifest) string {
	if m.File == "" {
		return "mcpgen.toml"
	}
	return filepath.Base(m.File)
}

// unspecified reports whether a listen host is every interface.
func unspecified(host string) bool {
	ip := net.ParseIP(host)
	return host == "" || ip != nil && ip.IsUnspecified()
}

// Warning is what the launcher says when it starts to serve p, loudly:
// serving beyond loopback without authentication. "" otherwise.
func (p *HTTPPlan) Warning() string {
	if !p.NoAuth {
		return ""
	}
	return fmt.Sprintf("WARNING: --no-auth: serving on %s without authentication: anyone who reaches it runs the workspace's tools", p.Addr)
}

// BaseURL is the HTTP face's URL once it listens at bound: the scheme,
// the host as Addr names it (the bound address for every interface), and
// the port bound.
func (p *HTTPPlan) BaseURL(bound net.Addr) string {
	scheme := "http"
	if p.TLSCert != "" {
		scheme = "https"
	}
	host, port, _ := net.SplitHostPort(p.Addr)
	if tcp, ok := bound.(*net.TCPAddr); ok {
		port = strconv.Itoa(tcp.Port)
		if unspecified(host) {
			host = tcp.IP.String()
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}
