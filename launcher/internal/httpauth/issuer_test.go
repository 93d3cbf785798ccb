package httpauth

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	json "github.com/goccy/go-json"
)

// The test issuer's keys, made once: an RSA key takes a while to make.
var (
	keysOnce                  sync.Once
	rsaKey, rogueRSA          *rsa.PrivateKey
	ecKey                     *ecdsa.PrivateKey
	edKey                     ed25519.PrivateKey
	weakRSA                   *rsa.PrivateKey
	errKeys                   error
	rsaKID, ecKID, edKID, wkK = "rsa-1", "ec-1", "ed-1", "weak-1"
)

func testKeys(t *testing.T) {
	t.Helper()
	keysOnce.Do(func() {
		if rsaKey, errKeys = rsa.GenerateKey(rand.Reader, 2048); errKeys != nil {
			return
		}
		if rogueRSA, errKeys = rsa.GenerateKey(rand.Reader, 2048); errKeys != nil {
			return
		}
		if weakRSA, errKeys = rsa.GenerateKey(rand.Reader, 1024); errKeys != nil {
			return
		}
		if ecKey, errKeys = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); errKeys != nil {
			return
		}
		_, edKey, errKeys = ed25519.GenerateKey(rand.Reader)
	})
	if errKeys != nil {
		t.Fatal(errKeys)
	}
}

// testIssuer is an authorization server on loopback: its metadata (RFC
// 8414, or OpenID discovery) and its JWK set, each request counted.
type testIssuer struct {
	t   *testing.T
	srv *httptest.Server
	url string // the issuer: the server's URL and path

	mu        sync.Mutex
	keys      []jose.JSONWebKey // the public keys it lists
	metaPaths map[string]string // path -> the issuer the document names
	jwksBody  []byte            // when set, served instead of the keys
	redirect  string            // when set, /jwks redirects there

	jwksFetches atomic.Int32
	metaFetches atomic.Int32
}

// newIssuer starts an issuer at path ("" for the server's root) that
// serves its RFC 8414 metadata.
func newIssuer(t *testing.T, path string) *testIssuer {
	testKeys(t)
	iss := &testIssuer{t: t, metaPaths: map[string]string{}}
	iss.srv = httptest.NewServer(http.HandlerFunc(iss.serve))
	t.Cleanup(iss.srv.Close)
	iss.url = iss.srv.URL + path
	iss.metaPaths["/.well-known/oauth-authorization-server"+path] = iss.url
	iss.keys = []jose.JSONWebKey{
		{Key: rsaKey.Public(), KeyID: rsaKID, Algorithm: "RS256", Use: "sig"},
		{Key: ecKey.Public(), KeyID: ecKID, Use: "sig"},
		{Key: edKey.Public(), KeyID: edKID},
		{Key: weakRSA.Public(), KeyID: wkK, Algorithm: "RS256"},
		// Keys no token may use: a symmetric one, one for encryption.
		{Key: []byte("0123456789abcdef0123456789abcdef"), KeyID: "oct-1", Algorithm: "HS256"},
		{Key: rogueRSA.Public(), KeyID: "enc-1", Use: "enc"},
	}
	return iss
}

func (iss *testIssuer) serve(w http.ResponseWriter, r *http.Request) {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	if name, ok := iss.metaPaths[r.URL.Path]; ok {
		iss.metaFetches.Add(1)
		writeJSON(w, map[string]string{"issuer": name, "jwks_uri": iss.srv.URL + "/jwks"})
		return
	}
	if r.URL.Path != "/jwks" {
		http.NotFound(w, r)
		return
	}
	iss.jwksFetches.Add(1)
	switch {
	case iss.redirect != "":
		http.Redirect(w, r, iss.redirect, http.StatusFound)
	case iss.jwksBody != nil:
		_, _ = w.Write(iss.jwksBody)
	default:
		writeJSON(w, jose.JSONWebKeySet{Keys: iss.keys})
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// claims are a token's claims, as the test sets them.
type claims map[string]any

// good are the claims of a token that the authenticator of newAuth admits.
func (iss *testIssuer) good() claims {
	now := time.Now()
	return claims{"iss": iss.url, "aud": testAudience, "sub": "agent-7", "exp": now.Add(5 * time.Minute).Unix(),
		"iat": now.Unix(), "scope": "mcp:tools profile"}
}

// with returns c with the keys of more set (a nil value deletes the key).
func (c claims) with(more claims) claims {
	out := claims{}
	for k, v := range c {
		out[k] = v
	}
	for k, v := range more {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// mint signs c with key, as alg, naming kid ("" for none).
func mint(t *testing.T, alg jose.SignatureAlgorithm, key any, kid string, c claims) string {
	t.Helper()
	var k any = key
	if kid != "" {
		k = jose.JSONWebKey{Key: key, KeyID: kid}
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: k}, (&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(sig).Claims(map[string]any(c)).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// unsigned is a token with alg "none": a header and claims, no signature.
func unsigned(t *testing.T, kid string, c claims) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]string{"alg": "none", "kid": kid, "typ": "JWT"}) + "." + enc(c) + "."
}

// publicPEM is the issuer's RSA public key as PEM: what an attacker who
// signs HS256 with the public key as the secret uses.
func publicPEM(t *testing.T, k crypto.PublicKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// testBase is the HTTP face the authenticators of the tests stand for, and
// testAudience its default audience.
const (
	testBase     = "http://127.0.0.1:8080"
	testAudience = testBase + "/mcp"
)

// clock is a test's time, moved by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// logs collects what an authenticator logs.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// newAuth returns an authenticator of c, with the test's clock and its
// logs.
func newAuth(t *testing.T, c *Config) (*Authenticator, *clock, *logs) {
	t.Helper()
	clk := &clock{now: time.Now()}
	lg := &logs{}
	a, err := New(context.Background(), c, Options{BaseURL: testBase, Now: clk.Now,
		Log: slog.New(slog.NewTextHandler(lg, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	return a, clk, lg
}

// answer is what a request through Wrap got.
type answer struct {
	status    int
	challenge string
	body      string
	id        Identity
}

// do sends a request to path through a.Wrap, with the Authorization
// headers given.
func do(a *Authenticator, path string, authorization ...string) answer {
	r := httptest.NewRequest("POST", path, strings.NewReader("{}"))
	for _, h := range authorization {
		r.Header.Add("Authorization", h)
	}
	var got answer
	rec := httptest.NewRecorder()
	a.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.id, _ = FromContext(r.Context())
		w.WriteHeader(http.StatusOK)
	})).ServeHTTP(rec, r)
	got.status, got.challenge, got.body = rec.Code, rec.Header().Get("WWW-Authenticate"), rec.Body.String()
	return got
}
