package manifest

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSessionHTTPKeys(t *testing.T) {
	m, err := Parse([]byte(`[session]
listen = "127.0.0.1:0"
tls_cert = "tls/cert.pem"
tls_key = "key.pem"
[session.auth]
token_env = "MCPGEN_TOKEN"
tokens_file = "tokens"
issuer = "http://127.0.0.1:9000"
jwks_url = "http://[::1]:9000/keys"
audience = "https://mcp.example.com/mcp"
required_scopes = ["mcp:tools"]
`), "m.toml", filepath.FromSlash("/srv/ws"))
	if err != nil {
		t.Fatal(err)
	}
	s := m.Session
	want := Auth{TokenEnv: "MCPGEN_TOKEN", TokensFile: "tokens", Issuer: "http://127.0.0.1:9000", JWKSURL: "http://[::1]:9000/keys",
		Audience: "https://mcp.example.com/mcp", RequiredScopes: []string{"mcp:tools"}}
	if s.Listen != "127.0.0.1:0" || s.Auth == nil || !reflect.DeepEqual(*s.Auth, want) {
		t.Errorf("got listen %q auth %+v, want %+v", s.Listen, s.Auth, want)
	}
	// A bare file name is the manifest's directory's, not a program on PATH.
	for in, want := range map[string]string{"key.pem": "/srv/ws/key.pem", "tls/cert.pem": "/srv/ws/tls/cert.pem", "": ""} {
		if got := m.SessionPath(in); got != filepath.FromSlash(want) {
			t.Errorf("SessionPath(%q): got %q, want %q", in, got, want)
		}
	}
	if abs := filepath.Join(t.TempDir(), "x.pem"); m.SessionPath(abs) != abs {
		t.Errorf("SessionPath of an absolute path: got %q", m.SessionPath(abs))
	}
	if got := s.HTTPSessionTimeout(); got != DefaultSessionTimeout {
		t.Errorf("default session timeout: got %v", got)
	}
	s.SessionTimeout = time.Minute
	if got := s.HTTPSessionTimeout(); got != time.Minute {
		t.Errorf("session timeout: got %v", got)
	}
	if m, err := Parse([]byte("version = 1\n"), "m.toml", "/"); err != nil || m.Session.Auth != nil || m.Session.Listen != "" {
		t.Errorf("no [session]: got %+v, %v", m.Session, err)
	}
}

func TestCheckListen(t *testing.T) {
	for _, tc := range []struct {
		addr, wantErr string
	}{
		{"127.0.0.1:8080", ""},
		{"127.0.0.1:0", ""},
		{"[::1]:0", ""},
		{":8443", ""},
		{"0.0.0.0:80", ""},
		{"localhost:65535", ""},
		{"mcp.example.com:443", ""},
		{"[fe80::1%eth0]:80", ""},
		{"localhost", "is not host:port"},
		{"::1:80", "is not host:port"},
		{"127.0.0.1:", "the port must be a number"},
		{"127.0.0.1:http", "the port must be a number"},
		{"127.0.0.1:65536", "the port must be a number"},
		{"127.0.0.1:-1", "the port must be a number"},
		{"bad_host:80", "is neither an IP address nor a host name"},
		{"-x.example:80", "is neither an IP address nor a host name"},
		{"a..b:80", "is neither an IP address nor a host name"},
	} {
		err := CheckListen(tc.addr)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("CheckListen(%q): got %v, want nil", tc.addr, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("CheckListen(%q): got %v, want an error with %q", tc.addr, err, tc.wantErr)
		}
	}
}

func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST": true, "localhost.": true, "127.0.0.1": true, "127.1.2.3": true, "::1": true,
		"::ffff:127.0.0.1": true, "0.0.0.0": false, "": false, "::": false, "10.0.0.1": false,
		"localhost.example.com": false, "evil.example.com": false, "[::1]": false,
	} {
		if got := LoopbackHost(host); got != want {
			t.Errorf("LoopbackHost(%q): got %v, want %v", host, got, want)
		}
	}
}

func TestSessionMetricsAndDrain(t *testing.T) {
	m, err := Parse([]byte("[session]\nmetrics = \"open\"\ndrain_timeout = \"45s\"\n"), "m.toml", "/")
	if err != nil {
		t.Fatal(err)
	}
	if m.Session.Metrics != MetricsOpen || m.Session.Drain() != 45*time.Second {
		t.Errorf("got metrics %q drain %v, want %q 45s", m.Session.Metrics, m.Session.Drain(), MetricsOpen)
	}
	if m, err := Parse([]byte("version = 1\n"), "m.toml", "/"); err != nil || m.Session.Metrics != "" || m.Session.Drain() != DefaultDrainTimeout {
		t.Errorf("no [session]: got metrics %q drain %v, %v", m.Session.Metrics, m.Session.Drain(), err)
	}
	for _, tc := range []struct{ in, want string }{
		{"metrics = \"opne\"", `m.toml:2:11: unknown metrics mode "opne" (did you mean "open"?); use "auth"`},
		{"metrics = true", `m.toml:2:11: "session.metrics" must be a string`},
		{"drain_timeout = \"soon\"", `m.toml:2:17:`},
	} {
		_, err := Parse([]byte("[session]\n"+tc.in+"\n"), "m.toml", "/")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", tc.in, err, tc.want)
		}
	}
}
