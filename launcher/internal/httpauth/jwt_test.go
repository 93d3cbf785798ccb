package httpauth

import (
	"crypto/ed25519"
	"crypto/rand"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// TestJWT gives the authenticator the tokens of a test issuer on loopback,
// good and forged, and checks that each is admitted or refused as a
// resource server must.
func TestJWT(t *testing.T) {
	iss := newIssuer(t, "")
	a, _, lg := newAuth(t, &Config{Issuer: iss.url, RequiredScopes: []string{"mcp:tools"}})
	good := iss.good()
	now := time.Now()
	_, otherEd, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var minted []string
	tests := []struct {
		name   string
		path   string // default /mcp
		token  string
		status int
		// inChallenge is in the WWW-Authenticate of a refusal.
		inChallenge string
	}{
		{name: "good, RS256", token: mint(t, jose.RS256, rsaKey, rsaKID, good), status: 200},
		{name: "good, ES256", token: mint(t, jose.ES256, ecKey, ecKID, good), status: 200},
		{name: "good, EdDSA", token: mint(t, jose.EdDSA, edKey, edKID, good), status: 200},
		{name: "good, no kid", token: mint(t, jose.ES256, ecKey, "", good), status: 200},
		{name: "good, scp as an array", token: mint(t, jose.RS256, rsaKey, rsaKID, good.with(claims{"scope": nil, "scp": []string{"mcp:tools"}})), status: 200},
		{name: "good, aud as an array", token: mint(t, jose.RS256, rsaKey, rsaKID, good.with(claims{"aud": []string{"https://other.example", testAudience}})), status: 200},
		{name: "good, aud in capitals", token: mint(t, jose.RS256, rsaKey, rsaKID, good.with(claims{"aud": "HTTP://127.0.0.1:8080/mcp"})), status: 200},
		{name: "good, for one server, there", path: "/servers/git/mcp", token: mint(t, jose.RS256, rsaKey, rsaKID, good.with(claims{"aud": testBase + "/servers/git/mcp"})), status: 200},
		{name: "good, for the launcher, at a server", path: "/servers/git/mcp", token: mint(t, jose.RS256, rsaKey, rsaKID, good), status: 200},
		{name: "good, expired within the leeway", token: mint(t, jose.RS256, rsaKey, rsaKID, good.with(claims{"exp": now.Add(-10 * time.Second).Unix()})), status: 200},

		{name: "wrong audience", token: mint(t, jose.RS256, rsaKey, rsaKID, good.with(claims{"aud": "https://other.example/mcp"})), status: 401, inChallenge: `error="invalid_token"`},
		{name: "no audience", token: mint(t, jose.RS256, rsaKey, rsaKID, good.with(claims{"aud": nil})), status: 401, inChallenge: "another resource"},
		{name: "for one server, at the gateway", token: mint(t, jose.RS256, rsaKey, rsaKID, good.with(claims{"aud": testBase + "/servers/git/mcp"})), status: 401, inChallenge: "another resource"},
		{name: "for one server, at another", path: "/servers/docs/mcp", token: mint(t, jose.RS256, rsaKey, rsaKID, good.with(claims{"aud": testBase + "/servers/git/mcp"})), status: 401, inChallenge: "another resource"},
		{name: "wrong issuer", token: mint(t, jose.RS256, rsaKey, rsaKID, good.with(claims{"iss": "https://evil.example"})), status: 401, inChallenge: "another issuer"},
		{name: "expired", token: mint(t, jose.RS256, rsaKey, rsaKID, good.with(claims{"exp": now.Add(-5 * time.Minute).Unix()})), status: 401, inChallenge: "expired"},
		{name: "not valid yet", token: mint(t, jose.RS256, rsaKey, rsaKID, good.with(claims{"nbf": now.Add(5 * time.Minute).Unix()})), status: 401, inChallenge: "not valid yet"},
		{name: "issued in the future", token: mint(t, jose.RS256, rsaKey, rsaKID, good.with(claims{"iat": now.Add(5 * time.Minute).Unix()})), status: 401, inChallenge: "future"},
		{name: "no exp", token: mint(t, jose.RS256, rsaKey, rsaKID, good.with(claims{"exp": nil})), status: 401, inChallenge: "no exp"},
		{name: "unknown key", token: mint(t, jose.RS256, rogueRSA, "rogue-1", good), status: 401, inChallenge: "does not list"},
		{name: "unknown key, no kid", token: mint(t, jose.EdDSA, otherEd, "", good), status: 401, inChallenge: "does not verify"},
		{name: "another key under a known kid", token: mint(t, jose.RS256, rogueRSA, rsaKID, good), status: 401, inChallenge: "does not verify"},
		{name: "a known kid of another type", token: mint(t, jose.RS256, rsaKey, ecKID, good), status: 401, inChallenge: "does not list"},
		{name: "a key of the set too weak", token: mint(t, jose.RS256, weakRSA, wkK, good), status: 401, inChallenge: "does not list"},
		{name: "a key for encryption", token: mint(t, jose.RS256, rogueRSA, "enc-1", good), status: 401, inChallenge: "does not list"},
		{name: "alg none", token: unsigned(t, rsaKID, good), status: 401, inChallenge: "not a JWT signed with"},
		{name: "HS256 with the public key", token: mint(t, jose.HS256, publicPEM(t, rsaKey.Public()), rsaKID, good), status: 401, inChallenge: "not a JWT signed with"},
		{name: "HS256 with the set's symmetric key", token: mint(t, jose.HS256, []byte("0123456789abcdef0123456789abcdef"), "oct-1", good), status: 401, inChallenge: "not a JWT signed with"},
		{name: "RS512", token: mint(t, jose.RS512, rsaKey, rsaKID, good), status: 401, inChallenge: "not a JWT signed with"},
		{name: "missing scope", token: mint(t, jose.RS256, rsaKey, rsaKID, good.with(claims{"scope": "profile"})), status: 403, inChallenge: `error="insufficient_scope", scope="mcp:tools"`},
		{name: "a payload changed", token: tamper(t, mint(t, jose.RS256, rsaKey, rsaKID, good)), status: 401, inChallenge: "does not verify"},
		{name: "not a JWT", token: "abcdefghijklmnop.qrstuvwxyz.0123", status: 401, inChallenge: "not a JWT signed with"},
	}
	for _, tc := range tests {
		minted = append(minted, tc.token)
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if path == "" {
				path = "/mcp"
			}
			got := do(a, path, "Bearer "+tc.token)
			if got.status != tc.status {
				t.Fatalf("got %d (%s; %s), want %d", got.status, got.challenge, got.body, tc.status)
			}
			if tc.status == 200 {
				if got.id.Subject != "agent-7" || got.id.Bearer {
					t.Errorf("identity: got %+v, want the token's subject", got.id)
				}
				return
			}
			if !strings.Contains(got.challenge, tc.inChallenge) {
				t.Errorf("WWW-Authenticate: got %q, want %q in it", got.challenge, tc.inChallenge)
			}
			meta := `resource_metadata="` + testBase + "/.well-known/oauth-protected-resource" + path + `"`
			if !strings.HasPrefix(got.challenge, "Bearer "+meta) {
				t.Errorf("WWW-Authenticate: got %q, want it to start with Bearer %s", got.challenge, meta)
			}
		})
	}
	if out := lg.String(); !strings.Contains(out, "expired") || !strings.Contains(out, "insufficient") && !strings.Contains(out, "lacks the scope") {
		t.Errorf("the refusals are not logged with their reasons:\n%s", out)
	}
	checkNoToken(t, lg.String(), minted)
	// Every good token was checked with the set fetched once (the unknown
	// kid asked for it again, but within the minute).
	if n := iss.jwksFetches.Load(); n != 1 {
		t.Errorf("the JWK set was fetched %d times, want 1", n)
	}
}

// tamper changes a claim of a signed token, keeping its signature.
func tamper(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	c := unsigned(t, "", claims{"sub": "admin"})
	return parts[0] + "." + strings.Split(c, ".")[1] + "." + parts[2]
}

// checkNoToken fails the test if a token, or the signature that makes it
// one, is in the logs.
func checkNoToken(t *testing.T, out string, tokens []string) {
	t.Helper()
	for _, tok := range tokens {
		sig := tok
		if parts := strings.Split(tok, "."); len(parts) == 3 && len(parts[2]) > 8 {
			sig = parts[2]
		}
		if strings.Contains(out, sig) {
			t.Errorf("a token is in the logs:\n%s", out)
			return
		}
	}
}

// TestChallenges: what a request without a usable token gets.
func TestChallenges(t *testing.T) {
	iss := newIssuer(t, "")
	a, _, lg := newAuth(t, &Config{Issuer: iss.url, RequiredScopes: []string{"mcp:tools", "mcp:read"}})
	token := mint(t, jose.RS256, rsaKey, rsaKID, iss.good())
	for _, tc := range []struct {
		name   string
		auth   []string
		status int
		want   string
	}{
		{"no token", nil, 401, `Bearer resource_metadata="http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp", scope="mcp:tools mcp:read"`},
		{"Basic", []string{"Basic YWxhZGRpbjpvcGVuc2VzYW1l"}, 401, `Bearer resource_metadata="http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp", scope="mcp:tools mcp:read"`},
		{"two Authorization headers", []string{"Bearer " + token, "Bearer " + token}, 400, `error="invalid_request"`},
		{"Bearer without a token", []string{"Bearer"}, 401, `error="invalid_token"`},
		{"a token with a space", []string{"Bearer abcdefgh ijklmnopq"}, 401, `error="invalid_token"`},
		{"a token that is not one of the launcher's", []string{"Bearer abcdefghijklmnopqrstuvwxyz"}, 401, `error="invalid_token"`},
		{"bearer in small letters", []string{"bearer " + token}, 403, `error="insufficient_scope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := do(a, "/mcp", tc.auth...)
			if got.status != tc.status || !strings.Contains(got.challenge, tc.want) {
				t.Errorf("got %d %q, want %d with %q", got.status, got.challenge, tc.status, tc.want)
			}
		})
	}
	// A token in the URL is not looked at (it would be in logs and
	// histories).
	r := httptest.NewRequest("POST", "/mcp?access_token="+token, nil)
	rec := httptest.NewRecorder()
	if _, ok := a.Check(rec, r); ok || rec.Code != 401 {
		t.Errorf("a token in the query: got %d, want 401", rec.Code)
	}
	checkNoToken(t, lg.String(), []string{token})
}

// TestKeysRefetch: the JWK set is cached, fetched again for a key id it
// does not hold (a rotation) at most once a minute, and once it is old.
func TestKeysRefetch(t *testing.T) {
	iss := newIssuer(t, "")
	a, clk, _ := newAuth(t, &Config{Issuer: iss.url})
	good := iss.good()
	fetches := func() int { return int(iss.jwksFetches.Load()) }
	check := func(tok string, want, wantFetches int) {
		t.Helper()
		if got := do(a, "/mcp", "Bearer "+tok); got.status != want {
			t.Fatalf("got %d %q, want %d", got.status, got.challenge, want)
		}
		if got := fetches(); got != wantFetches {
			t.Fatalf("JWK set fetched %d times, want %d", got, wantFetches)
		}
	}
	check(mint(t, jose.RS256, rsaKey, rsaKID, good), 200, 1)
	check(mint(t, jose.ES256, ecKey, ecKID, good), 200, 1)
	// Made-up key ids: one fetch, then none within the minute.
	check(mint(t, jose.RS256, rogueRSA, "made-up-1", good), 401, 1) // fetched at start, less than a minute ago
	clk.advance(61 * time.Second)
	check(mint(t, jose.RS256, rogueRSA, "made-up-2", good), 401, 2)
	for i := range 5 {
		check(mint(t, jose.RS256, rogueRSA, "made-up-"+string(rune('3'+i)), good), 401, 2)
	}
	// The issuer rotates: a new key, which the next fetch brings.
	iss.mu.Lock()
	iss.keys = append(iss.keys, jose.JSONWebKey{Key: rogueRSA.Public(), KeyID: "rsa-2", Algorithm: "RS256"})
	iss.mu.Unlock()
	rotated := mint(t, jose.RS256, rogueRSA, "rsa-2", good)
	check(rotated, 401, 2) // within the minute of the last fetch
	clk.advance(61 * time.Second)
	check(rotated, 200, 3)
	check(rotated, 200, 3)
	// The issuer withdraws a key: an old set is fetched again.
	iss.mu.Lock()
	iss.keys = iss.keys[1:] // rsa-1 gone
	iss.mu.Unlock()
	old := mint(t, jose.RS256, rsaKey, rsaKID, good)
	check(old, 200, 3)
	clk.advance(keysMaxAge)
	check(old, 401, 4)
	if n := iss.metaFetches.Load(); n != 1 {
		t.Errorf("the metadata was fetched %d times, want 1: discovery runs once", n)
	}
}

// TestDiscovery: the JWK set's URL comes from the issuer's metadata, in
// the places MCP clients look, and must be the issuer's own.
func TestDiscovery(t *testing.T) {
	t.Run("RFC 8414, the issuer's path after the well-known one", func(t *testing.T) {
		iss := newIssuer(t, "/tenant-1")
		a, _, _ := newAuth(t, &Config{Issuer: iss.url})
		if got := do(a, "/mcp", "Bearer "+mint(t, jose.RS256, rsaKey, rsaKID, iss.good())); got.status != 200 {
			t.Fatalf("got %d %q", got.status, got.challenge)
		}
	})
	t.Run("OpenID discovery after the issuer's path", func(t *testing.T) {
		iss := newIssuer(t, "/realms/dev")
		iss.metaPaths = map[string]string{"/realms/dev/.well-known/openid-configuration": iss.url}
		a, _, _ := newAuth(t, &Config{Issuer: iss.url})
		if got := do(a, "/mcp", "Bearer "+mint(t, jose.RS256, rsaKey, rsaKID, iss.good())); got.status != 200 {
			t.Fatalf("got %d %q", got.status, got.challenge)
		}
	})
	t.Run("jwks_url set: no discovery", func(t *testing.T) {
		iss := newIssuer(t, "")
		a, _, _ := newAuth(t, &Config{Issuer: iss.url, JWKSURL: iss.srv.URL + "/jwks"})
		if got := do(a, "/mcp", "Bearer "+mint(t, jose.RS256, rsaKey, rsaKID, iss.good())); got.status != 200 {
			t.Fatalf("got %d %q", got.status, got.challenge)
		}
		if n := iss.metaFetches.Load(); n != 0 {
			t.Errorf("metadata fetched %d times, want 0", n)
		}
	})
	for _, tc := range []struct {
		name    string
		setup   func(iss *testIssuer)
		wantLog string
	}{
		{"metadata of another issuer", func(iss *testIssuer) {
			iss.metaPaths = map[string]string{"/.well-known/oauth-authorization-server": "https://evil.example"}
		}, "is of issuer"},
		{"no metadata", func(iss *testIssuer) { iss.metaPaths = map[string]string{} }, "no metadata of issuer"},
		{"a JWK set too big", func(iss *testIssuer) {
			iss.jwksBody = []byte(`{"keys": [` + strings.Repeat(" ", maxDocument) + `]}`)
		}, "longer than"},
		{"not JSON", func(iss *testIssuer) { iss.jwksBody = []byte("<html>") }, "not the JSON expected"},
		{"no key", func(iss *testIssuer) { iss.jwksBody = []byte(`{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}`) }, "no public signing key"},
		{"a redirect to plain http", func(iss *testIssuer) { iss.redirect = "http://keys.example/jwks" }, "is not https"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			iss := newIssuer(t, "")
			tc.setup(iss)
			a, _, lg := newAuth(t, &Config{Issuer: iss.url})
			tok := mint(t, jose.RS256, rsaKey, rsaKID, iss.good())
			got := do(a, "/mcp", "Bearer "+tok)
			if got.status != 503 {
				t.Fatalf("got %d %q, want 503: no keys, so the token cannot be checked", got.status, got.challenge)
			}
			if !strings.Contains(lg.String(), tc.wantLog) {
				t.Errorf("the log lacks %q:\n%s", tc.wantLog, lg)
			}
			checkNoToken(t, lg.String(), []string{tok})
		})
	}
}

func TestNewWithoutAudience(t *testing.T) {
	if _, err := New(t.Context(), &Config{Issuer: "https://auth.example"}, Options{}); err == nil || !strings.Contains(err.Error(), "set audience") {
		t.Errorf("got %v, want an error that asks for an audience", err)
	}
}
