package httpface

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/internal/httpauth"
	"github.com/mcpgen/mcpgen/manifest"
)

// issuer is an OAuth authorization server on loopback: its metadata and
// its JWK set of one key, made here.
type issuer struct {
	url string
	key *ecdsa.PrivateKey
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	iss := &issuer{key: key}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			_ = json.NewEncoder(w).Encode(map[string]string{"issuer": iss.url, "jwks_uri": iss.url + "/jwks"})
		case "/jwks":
			_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.Public(), KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	iss.url = srv.URL
	return iss
}

// mint signs a token of the issuer's for aud, of subject sub, that
// expires at exp.
func (iss *issuer) mint(t *testing.T, aud, sub string, exp time.Time) string {
	t.Helper()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: iss.key, KeyID: "k1"}}, (&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(sig).Claims(jwt.Claims{
		Issuer: iss.url, Subject: sub, Audience: jwt.Audience{aud},
		IssuedAt: jwt.NewNumericDate(exp.Add(-time.Hour)), Expiry: jwt.NewNumericDate(exp),
	}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

const testToken = "s3cret-token-that-must-never-be-logged"

// authedFace serves a Face whose [session.auth] admits testToken and the
// issuer's JWTs for audience, logging to log.
func authedFace(t *testing.T, iss *issuer, audience string, log *logBuffer) string {
	t.Helper()
	dir := t.TempDir()
	src := "[session.auth]\ntoken_env = \"T\"\nissuer = \"" + iss.url + "\"\naudience = \"" + audience + "\"\n"
	m, err := manifest.Parse([]byte(src), filepath.Join(dir, "mcpgen.toml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := httpauth.Load(m, func(name string) (string, bool) { return testToken, name == "T" })
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a, err := httpauth.New(context.Background(), cfg, httpauth.Options{Log: logger})
	if err != nil {
		t.Fatal(err)
	}
	_, srv, _ := testFace(t, Options{Auth: a, Log: logger})
	return srv.URL
}

func TestAuth(t *testing.T) {
	iss := newIssuer(t)
	const audience = "http://127.0.0.1/mcp"
	var log logBuffer
	base := authedFace(t, iss, audience, &log)
	url := base + "/mcp"
	good := iss.mint(t, audience, "alice", time.Now().Add(time.Hour))
	expired := iss.mint(t, audience, "alice", time.Now().Add(-time.Hour))
	forged := good[:strings.LastIndex(good, ".")+1] + strings.Repeat("A", 86)
	for _, tc := range []struct {
		name, auth string
		status     int
	}{
		{"no token", "", 401},
		{"forged bearer token", "Bearer not-" + testToken, 401},
		{"forged JWT", "Bearer " + forged, 401},
		{"expired JWT", "Bearer " + expired, 401},
		{"bearer token", "Bearer " + testToken, 200},
		{"JWT", "Bearer " + good, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := request(t, http.MethodPost, url, "", initBody, "Authorization", tc.auth)
			body := readAll(t, resp)
			if resp.StatusCode != tc.status {
				t.Fatalf("%s, want %d: %s", resp.Status, tc.status, body)
			}
			if tc.status == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer ") {
				t.Errorf("WWW-Authenticate %q, want a Bearer challenge", resp.Header.Get("WWW-Authenticate"))
			}
		})
	}
	for _, secret := range []string{testToken, forged, expired, good} {
		if strings.Contains(log.String(), secret) || strings.Contains(log.String(), secret[:20]) {
			t.Errorf("the log holds a token:\n%s", log.String())
		}
	}
	if !strings.Contains(log.String(), "request refused") {
		t.Errorf("the log says nothing of the refusals:\n%s", log.String())
	}

	// A session answers whom it began with: another subject does not
	// find it.
	resp := request(t, http.MethodPost, url, "", initBody, "Authorization", "Bearer "+good)
	readAll(t, resp)
	sid := resp.Header.Get(sessionHeader)
	bob := iss.mint(t, audience, "bob", time.Now().Add(time.Hour))
	resp = request(t, http.MethodPost, url, sid, `{"jsonrpc":"2.0","id":2,"method":"echo"}`, "Authorization", "Bearer "+bob)
	if body := readAll(t, resp); resp.StatusCode != http.StatusNotFound {
		t.Errorf("another subject's request in alice's session: %s %s, want 404", resp.Status, body)
	}
	resp = request(t, http.MethodPost, url, sid, `{"jsonrpc":"2.0","id":2,"method":"echo","params":{}}`, "Authorization", "Bearer "+good)
	if body := readAll(t, resp); resp.StatusCode != http.StatusOK {
		t.Errorf("alice's request in her session: %s %s", resp.Status, body)
	}

	// The metadata is public.
	resp = request(t, http.MethodGet, base+httpauth.MetadataPath+"/mcp", "", "", "Accept", "")
	if body := readAll(t, resp); resp.StatusCode != http.StatusOK || !strings.Contains(body, iss.url) {
		t.Errorf("metadata: %s %s", resp.Status, body)
	}
}
