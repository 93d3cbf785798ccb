package launcher

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/manifest"
)

// selfSigned writes a certificate for 127.0.0.1 and its key into dir, as
// cert.pem and key.pem.
func selfSigned(t *testing.T, dir string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mcpgen test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "cert.pem"), string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	writeFile(t, filepath.Join(dir, "key.pem"), string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})))
}

// TestPlanHTTP: how a launcher serves its workspace over HTTP, from the
// manifest and the flags; above all, that it refuses to listen beyond
// loopback without [session.auth], unless --no-auth, and says how to add
// a token.
func TestPlanHTTP(t *testing.T) {
	dir := t.TempDir()
	selfSigned(t, dir)
	writeFile(t, filepath.Join(dir, "tokens"), "tok-0123456789abcdef\n")
	env := map[string]string{"MCPGEN_TOKEN": "0123456789abcdef0123"}
	const token = "[session.auth]\ntoken_env = \"MCPGEN_TOKEN\"\n"
	for _, tc := range []struct {
		name     string
		manifest string
		opts     HTTPOptions
		want     *HTTPPlan // nil: no HTTP, unless wantErr
		wantErr  []string  // all in the error
	}{
		{name: "no listen", manifest: "version = 1\n"},
		{name: "loopback, no auth", opts: HTTPOptions{Listen: "127.0.0.1:0"},
			want: &HTTPPlan{Addr: "127.0.0.1:0", Loopback: true, SessionTimeout: 30 * time.Minute}},
		{name: "localhost", opts: HTTPOptions{Listen: "localhost:8080"},
			want: &HTTPPlan{Addr: "localhost:8080", Loopback: true, SessionTimeout: 30 * time.Minute}},
		{name: "IPv6 loopback", opts: HTTPOptions{Listen: "[::1]:0"},
			want: &HTTPPlan{Addr: "[::1]:0", Loopback: true, SessionTimeout: 30 * time.Minute}},
		{name: "the manifest's listen", manifest: "[session]\nlisten = \"127.0.0.1:9000\"\nsession_timeout = \"5m\"\n",
			want: &HTTPPlan{Addr: "127.0.0.1:9000", Loopback: true, SessionTimeout: 5 * time.Minute}},
		{name: "the flag over the manifest", manifest: "[session]\nlisten = \"0.0.0.0:9000\"\n", opts: HTTPOptions{Listen: "127.0.0.1:0"},
			want: &HTTPPlan{Addr: "127.0.0.1:0", Loopback: true, SessionTimeout: 30 * time.Minute}},

		{name: "every interface, no auth", opts: HTTPOptions{Listen: ":8080"},
			wantErr: []string{"--listen :8080 is not loopback, and mcpgen.toml has no [session.auth]", "Add a token: put [session.auth] with token_env = \"MCPGEN_TOKEN\" in mcpgen.toml", "openssl rand -hex 32", "--no-auth"}},
		{name: "the manifest's, beyond loopback, no auth", manifest: "[session]\nlisten = \"0.0.0.0:8080\"\n",
			wantErr: []string{"mcpgen.toml:2:10: [session] listen = \"0.0.0.0:8080\" is not loopback", "Add a token"}},
		{name: "an interface's address, no auth", opts: HTTPOptions{Listen: "192.0.2.7:8080"}, wantErr: []string{"is not loopback"}},
		{name: "a host name, no auth", opts: HTTPOptions{Listen: "mcp.internal:8080"}, wantErr: []string{"is not loopback"}},
		{name: "beyond loopback, --no-auth", opts: HTTPOptions{Listen: "0.0.0.0:8080", NoAuth: true},
			want: &HTTPPlan{Addr: "0.0.0.0:8080", NoAuth: true, SessionTimeout: 30 * time.Minute}},
		{name: "loopback, --no-auth", opts: HTTPOptions{Listen: "127.0.0.1:0", NoAuth: true},
			want: &HTTPPlan{Addr: "127.0.0.1:0", Loopback: true, SessionTimeout: 30 * time.Minute}},
		{name: "--no-auth with auth", manifest: token, opts: HTTPOptions{Listen: "0.0.0.0:8080", NoAuth: true},
			wantErr: []string{"--no-auth: mcpgen.toml has [session.auth] (mcpgen.toml:1:10)", "drop --no-auth"}},
		{name: "--no-auth alone", opts: HTTPOptions{NoAuth: true}, wantErr: []string{"--no-auth is for a launcher that listens: pass --listen ADDR"}},
		{name: "a bad address", opts: HTTPOptions{Listen: "8080"}, wantErr: []string{"--listen 8080: \"8080\" is not host:port"}},

		{name: "beyond loopback with a token", manifest: token, opts: HTTPOptions{Listen: ":8443"},
			want: &HTTPPlan{Addr: ":8443", SessionTimeout: 30 * time.Minute}},
		{name: "a token unset", manifest: "[session.auth]\ntoken_env = \"UNSET_TOKEN\"\n", opts: HTTPOptions{Listen: ":8443"},
			wantErr: []string{"mcpgen.toml:2:13: [session.auth] token_env: UNSET_TOKEN is not set or empty"}},
		{name: "a tokens file beside the manifest", manifest: "[session.auth]\ntokens_file = \"tokens\"\n", opts: HTTPOptions{Listen: ":8443"},
			want: &HTTPPlan{Addr: ":8443", SessionTimeout: 30 * time.Minute}},
		{name: "an issuer, every interface, no audience", manifest: "[session.auth]\nissuer = \"https://auth.example.com\"\n", opts: HTTPOptions{Listen: ":8443"},
			wantErr: []string{"mcpgen.toml:2:10: [session.auth] issuer: --listen :8443 listens on every interface", "set audience"}},
		{name: "an issuer, every interface, an audience", manifest: "[session.auth]\nissuer = \"https://auth.example.com\"\naudience = \"https://mcp.example.com/mcp\"\n", opts: HTTPOptions{Listen: ":8443"},
			want: &HTTPPlan{Addr: ":8443", SessionTimeout: 30 * time.Minute}},
		{name: "an issuer, an address", manifest: "[session.auth]\nissuer = \"https://auth.example.com\"\n", opts: HTTPOptions{Listen: "192.0.2.7:8443"},
			want: &HTTPPlan{Addr: "192.0.2.7:8443", SessionTimeout: 30 * time.Minute}},

		{name: "HTTPS", manifest: "[session]\nlisten = \"127.0.0.1:0\"\ntls_cert = \"cert.pem\"\ntls_key = \"key.pem\"\n",
			want: &HTTPPlan{Addr: "127.0.0.1:0", Loopback: true, TLSCert: filepath.Join(dir, "cert.pem"), TLSKey: filepath.Join(dir, "key.pem"), SessionTimeout: 30 * time.Minute}},
		{name: "HTTPS, a key that is not the certificate's", manifest: "[session]\nlisten = \"127.0.0.1:0\"\ntls_cert = \"cert.pem\"\ntls_key = \"tokens\"\n",
			wantErr: []string{"mcpgen.toml:3:12: [session] tls_cert and tls_key:"}},
		{name: "HTTPS, missing", manifest: "[session]\nlisten = \"127.0.0.1:0\"\ntls_cert = \"none.pem\"\ntls_key = \"key.pem\"\n",
			wantErr: []string{"mcpgen.toml:3:12: [session] tls_cert and tls_key: open " + filepath.Join(dir, "none.pem")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := tc.manifest
			if text == "" {
				text = "version = 1\n"
			}
			m, err := manifest.Parse([]byte(text), "mcpgen.toml", dir)
			if err != nil {
				t.Fatal(err)
			}
			p, err := PlanHTTP(m, tc.opts, func(name string) (string, bool) { v, ok := env[name]; return v, ok })
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("got %+v, want an error", p)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("got %v\nwant %q in it", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if p != nil {
					t.Fatalf("got %+v, want no HTTP", p)
				}
				return
			}
			got := *p
			got.Auth = nil
			if got != *tc.want {
				t.Errorf("got %+v\nwant %+v", got, *tc.want)
			}
			if (p.Auth != nil) != (tc.manifest != "" && strings.Contains(tc.manifest, "[session.auth]")) {
				t.Errorf("auth: got %+v", p.Auth)
			}
			if (p.Warning() != "") != p.NoAuth || p.NoAuth && !strings.Contains(p.Warning(), "without authentication") {
				t.Errorf("warning: got %q", p.Warning())
			}
		})
	}
}

func TestPlanBaseURL(t *testing.T) {
	for _, tc := range []struct {
		plan  HTTPPlan
		bound net.Addr
		want  string
	}{
		{HTTPPlan{Addr: "127.0.0.1:0"}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 41234}, "http://127.0.0.1:41234"},
		{HTTPPlan{Addr: "localhost:0", TLSCert: "c"}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8443}, "https://localhost:8443"},
		{HTTPPlan{Addr: "[::1]:0"}, &net.TCPAddr{IP: net.IPv6loopback, Port: 80}, "http://[::1]:80"},
		{HTTPPlan{Addr: ":0"}, &net.TCPAddr{IP: net.IPv6unspecified, Port: 9000}, "http://[::]:9000"},
	} {
		if got := tc.plan.BaseURL(tc.bound); got != tc.want {
			t.Errorf("BaseURL of %s bound at %v: got %q, want %q", tc.plan.Addr, tc.bound, got, tc.want)
		}
	}
}
