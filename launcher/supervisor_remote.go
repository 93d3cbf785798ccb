package launcher

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/hub"
	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/mcp"
	"github.com/mcpgen/mcpgen/mcp/streamable"
)

// runRemote is runOnce for a remote (url) server: a Streamable HTTP session
// stands in for the process. The hub's upstream runs on the transport as
// on a process's stdio, so the server is shared (connect NAME) and takes
// part in the gateway as a stdio server does. The session ending (the
// server expired it, or cannot be reached) is a crash: backoff, then a new
// session. A command ends the session (DELETE) before it is handled, and
// so does a stop for idleness (idle_timeout): a lazy or idle remote server
// holds no session, and connects again when a request needs it, as a
// stdio server starts.
func (v *supervisor) runRemote(cfg *serverConfig) (*supervisorCmd, crashInfo) {
	v.setState(ctl.Starting, "")
	r := cfg.remote
	header := http.Header{}
	for _, h := range r.Headers {
		header.Add(h.Name, h.Value)
	}
	// The transport never logs the token, a header or the URL's query.
	t, err := streamable.New(r.URL, streamable.Options{Header: header, BearerToken: r.BearerToken, Protocol: cfg.server.Protocol,
		MaxReconnects: v.timing.RemoteReconnects, Logger: v.host.log.With("server", v.name)})
	if err != nil {
		return v.commandOr(crashInfo{err: &proc.PermanentError{Err: fmt.Errorf("url: %w", err)}})
	}
	started := time.Now()
	v.mu.Lock()
	v.pid, v.startedAt, v.remote = 0, started, t
	v.mu.Unlock()
	defer func() {
		v.mu.Lock()
		v.remote = nil
		v.mu.Unlock()
	}()

	opts, err := remoteOpen(t, v.openOptions(cfg))
	if err != nil {
		_ = t.Close()
		return v.commandOr(crashInfo{err: &proc.PermanentError{Err: err}})
	}
	up := v.hub.NewUpstream(t, t)
	go up.Run() // ends when the transport does: Close, or the session fails

	res, cmd := v.handshake(cfg, up, opts)
	if cmd != nil {
		v.hub.Detach(up)
		closeRemote(t, up)
		return cmd, crashInfo{}
	}
	v.handshook(cfg, up, &res)
	if res.err != nil {
		v.hub.Detach(up)
		closeRemote(t, up)
		return v.commandOr(crashInfo{err: fmt.Errorf("handshake: %w", res.err)})
	}
	v.hub.Attach(up, res.init, res.tools)
	keep := v.keepCatalog(cfg, up, res.init, res.tools)
	v.mu.Lock()
	v.state, v.lastError = ctl.Ready, ""
	v.mu.Unlock()
	v.event(ctl.Ready, fmt.Sprintf("remote, %d tools", len(v.hub.Tools())), nil)

	cmd, err = v.watch(nil, up, keep)
	v.hub.Detach(up)
	closeRemote(t, up)
	if cmd != nil {
		return cmd, crashInfo{}
	}
	return nil, crashInfo{err: err, stable: time.Since(started) >= v.timing.StableAfter, ready: true}
}

// A modernTransport is a transport that says whether it speaks the modern
// revision's Streamable HTTP (its headers, no session), as
// streamable.Transport does unless protocol pins a legacy revision. Over
// one that does not, a url server is opened in the legacy era, without a
// probe (a probe's answer could make the server modern, and its next
// requests would lack the headers).
type modernTransport interface{ SpeaksModern() bool }

// remoteOpen is how a url server over t is opened: as opts say, if t
// speaks the modern revision, but for the probe's grace, which HTTP has no
// use for (every request is answered: the binding decides on the answer
// alone); else at a legacy revision (the one pinned, or the latest), and a
// pinned modern revision is an error.
func remoteOpen(t any, opts mcp.OpenOptions) (mcp.OpenOptions, error) {
	if m, ok := t.(modernTransport); ok && m.SpeaksModern() {
		opts.Grace = -1
		return opts, nil
	}
	if mcp.VersionEra(opts.Version) == mcp.EraModern {
		return opts, fmt.Errorf("protocol %q: mcpgen reaches url servers over the legacy Streamable HTTP only, for now: use protocol = \"auto\" or a legacy revision", opts.Version)
	}
	return mcp.OpenOptions{Version: cmp.Or(opts.Version, mcp.LatestVersion)}, nil
}

// closeRemote ends a remote session (the transport's DELETE takes a few
// seconds at most) and waits for the upstream, which answers what was in
// flight with an error.
func closeRemote(t *streamable.Transport, up *hub.Upstream) {
	_ = t.Close()
	<-up.Done()
}

// remoteKey sums up what a remote server's session depends on, so that a
// change of its url, headers or token (in the environment of a reload)
// reconnects it. It is a hash: the key holds no secret.
func remoteKey(r *manifest.Remote) string {
	if r == nil {
		return ""
	}
	h := sha256.New()
	fmt.Fprintf(h, "%q\x00%q\x00", r.URL, r.BearerToken)
	// In name order: headers written in another order are the same
	// request (see restartKey).
	for _, kv := range slices.SortedFunc(slices.Values(r.Headers), func(a, b manifest.EnvVar) int { return strings.Compare(a.Name, b.Name) }) {
		fmt.Fprintf(h, "%q=%q\x00", kv.Name, kv.Value)
	}
	return "remote:" + hex.EncodeToString(h.Sum(nil))
}

// toolFilter is the hub's filter for a server's enabled_tools and
// disabled_tools; nil when it has neither.
func toolFilter(s *manifest.Server) func(string) bool {
	if s.EnabledTools == nil && s.DisabledTools == nil {
		return nil
	}
	return s.ExposesTool
}
