package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/gateway"
	"github.com/mcpgen/mcpgen/launcher/internal/httpauth"
	"github.com/mcpgen/mcpgen/launcher/internal/httpface"
	"github.com/mcpgen/mcpgen/launcher/internal/httpguard"
	"github.com/mcpgen/mcpgen/manifest"
)

// sessionHTTP is the session's HTTP face, when it serves one: the
// workspace gateway and each server over HTTP (launch --listen, [session]
// listen), as PlanHTTP planned it at the start. A reload does not change
// it: the address, TLS and authentication are the start's.
type sessionHTTP struct {
	face   *httpface.Face
	srv    *http.Server
	base   string // scheme://host:port
	auth   string // how it admits agents, for status; "" none
	served chan struct{}
	once   sync.Once
}

// startHTTP listens as m and launch's flags say, and serves the HTTP face
// until stopHTTP; nil when the workspace is not served over HTTP. ctx is
// the session's: the agents' connections end with it.
func (s *Session) startHTTP(ctx context.Context, m *manifest.Manifest) (*sessionHTTP, error) {
	plan, err := PlanHTTP(m, s.opts.HTTP, nil)
	if err != nil || plan == nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", plan.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", plan.Addr, err)
	}
	h := &sessionHTTP{base: plan.BaseURL(ln.Addr()), served: make(chan struct{})}
	var auth *httpauth.Authenticator
	if plan.Auth != nil {
		auth, err = httpauth.New(ctx, plan.Auth, httpauth.Options{BaseURL: h.base, Log: s.log})
		if err != nil {
			ln.Close()
			return nil, err
		}
		h.auth = auth.String()
	}
	h.face = httpface.New(ctx, httpface.Options{
		Log:            s.log,
		Endpoint:       s.httpEndpoint,
		Tools:          []string{gateway.ToolsAll, gateway.ToolsSearch},
		Open:           s.openClient,
		Close:          s.closeClient,
		Ready:          s.up,
		Auth:           auth,
		Loopback:       plan.Loopback,
		SessionTimeout: plan.SessionTimeout,
	})
	s.metrics = s.newMetrics()
	h.srv = httpguard.Server(s.observeHandler(h.face.Handler(), auth, m, plan.Loopback), s.log)
	go func() {
		defer close(h.served)
		var err error
		if plan.TLSCert != "" {
			err = h.srv.ServeTLS(ln, plan.TLSCert, plan.TLSKey)
		} else {
			err = h.srv.Serve(ln)
		}
		if !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http: serving stopped", "error", err)
		}
	}()
	if w := plan.Warning(); w != "" {
		s.log.Warn(w)
	}
	s.log.Info("serving over HTTP", "url", h.base+httpauth.GatewayPath, "servers", h.base+httpauth.ServerPath("NAME"), "auth", orNone(h.auth), "metrics", h.base+MetricsPath, "metrics_auth", metricsAuth(m, auth))
	return h, nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// httpEndpoint returns what serves an HTTP session of server's endpoint:
// the gateway's for "", else the server's hub, as connect NAME has it.
func (s *Session) httpEndpoint(server, tools string) (httpface.Serve, error) {
	if server == "" {
		s.mu.Lock()
		gw := s.gw
		s.mu.Unlock()
		if gw == nil {
			return nil, errors.New("the session is not running")
		}
		return func(ctx context.Context, rwc io.ReadWriteCloser) {
			gw.ServeJoin(ctx, rwc, gateway.Join{Tools: tools})
		}, nil
	}
	h, err := s.hubOf(server)
	if err != nil {
		return nil, err
	}
	return h.Serve, nil
}

// stop ends the HTTP sessions and the server: once the servers have
// stopped, as the control socket's agents are.
func (h *sessionHTTP) stop() {
	if h == nil {
		return
	}
	h.once.Do(func() {
		h.face.Close()
		// What is left is requests that end with their sessions: a
		// moment to write their answers, then the connections close.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if h.srv.Shutdown(ctx) != nil {
			h.srv.Close()
		}
		<-h.served
	})
}

// status is the HTTP face's part of status.
func (h *sessionHTTP) status() *ctl.HTTPStatus {
	if h == nil {
		return nil
	}
	return &ctl.HTTPStatus{
		URL:        h.base + httpauth.GatewayPath,
		ServersURL: h.base + httpauth.ServerPath("{name}"),
		Auth:       orNone(h.auth),
		Sessions:   h.face.Sessions(),
		Stateless:  h.face.Stateless(),
	}
}

// metricsAuth says who may read /metrics, for the log.
func metricsAuth(m *manifest.Manifest, auth *httpauth.Authenticator) string {
	if auth == nil || m.Session.Metrics == manifest.MetricsOpen {
		return "open"
	}
	return "auth"
}
