// Package httpauth admits agents to the launcher's HTTP face: bearer tokens
// (token_env, tokens_file), compared in constant time, and JWT access
// tokens of an OAuth 2.1 authorization server, checked as its resource
// server checks them (the signature with a key of the issuer's JWK set,
// iss, aud, exp, nbf, the scopes). It serves the Protected Resource
// Metadata (RFC 9728) that tells a client where to get a token, and writes
// the 401 and 403 answers with their WWW-Authenticate. No token is ever
// logged or put in an error.
//
// JWS and JWK are go-jose's (github.com/go-jose/go-jose/v4), the one
// dependency this package adds: its parser refuses an algorithm outside
// the list it is given before any key is looked at, it reads the RSA, EC
// and OKP keys of a JWK set, and it is maintained and reviewed as security
// code; written here, it would be the launcher's riskiest code.
package httpauth

import (
	"errors"
	"fmt"
	"os"

	"github.com/mcpgen/mcpgen/manifest"
)

// Config is [session.auth] as the launcher read it when it started. It
// holds the token of token_env: a secret, never written or logged.
type Config struct {
	// TokenEnv names the variable the token came from; empty: none.
	TokenEnv string
	token    string
	// TokensFile is the tokens file's absolute path; empty: none.
	TokensFile string
	tokens     *tokensFile

	// Issuer, when set, admits its JWT access tokens; Audience (empty:
	// the endpoint's URL, from Options.BaseURL), JWKSURL (empty: from the
	// issuer's metadata) and RequiredScopes as [session.auth] says.
	Issuer         string
	Audience       string
	JWKSURL        string
	RequiredScopes []string
}

// Load reads m's [session.auth]: the token of token_env from getenv (the
// environment when nil), once, and the tokens file, so that a variable
// that is unset or a file that is missing or holds a bad line fails the
// launch, with the place of its key. nil, nil when m has none.
func Load(m *manifest.Manifest, getenv manifest.Lookup) (*Config, error) {
	a := m.Session.Auth
	if a == nil {
		return nil, nil
	}
	if getenv == nil {
		getenv = os.LookupEnv
	}
	c := &Config{TokenEnv: a.TokenEnv, Issuer: a.Issuer, Audience: a.Audience, JWKSURL: a.JWKSURL, RequiredScopes: a.RequiredScopes}
	if a.TokenEnv != "" {
		c.token, _ = getenv(a.TokenEnv)
		where := m.Where("session", "auth", "token_env")
		if c.token == "" {
			return nil, fmt.Errorf("%s: [session.auth] token_env: %s is not set or empty: export it, a long random secret (openssl rand -hex 32), where the launcher starts", where, a.TokenEnv)
		}
		if err := checkToken(c.token); err != nil {
			return nil, fmt.Errorf("%s: [session.auth] token_env: the value of %s %v", where, a.TokenEnv, err)
		}
	}
	if a.TokensFile != "" {
		c.TokensFile = m.SessionPath(a.TokensFile)
		f, err := openTokensFile(c.TokensFile)
		if err != nil {
			return nil, fmt.Errorf("%s: [session.auth] tokens_file: %w", m.Where("session", "auth", "tokens_file"), err)
		}
		c.tokens = f
	}
	return c, nil
}

// MinTokenLength is the shortest bearer token admitted: shorter ones are
// too easily guessed.
const MinTokenLength = 16

// maxTokenLength bounds a bearer token (the request's headers are bounded
// too, but a token of a file is read before any request).
const maxTokenLength = 4096

// checkToken says what is wrong with a bearer token, if anything, without
// saying the token: it must be RFC 6750's b64token (letters, digits,
// "-._~+/", then "=" at the end), MinTokenLength long at least.
func checkToken(tok string) error {
	switch {
	case len(tok) < MinTokenLength:
		return fmt.Errorf("has %d characters: a token needs %d at least, better 32 random bytes (openssl rand -hex 32)", len(tok), MinTokenLength)
	case len(tok) > maxTokenLength:
		return fmt.Errorf("has %d characters, more than the %d a token may have", len(tok), maxTokenLength)
	case !b64token(tok):
		return errors.New("is not a bearer token: use letters, digits and -._~+/ (with = only at the end), such as openssl rand -hex 32 prints")
	}
	return nil
}

// b64token reports whether s is RFC 6750's b64token:
// 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
func b64token(s string) bool {
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/') {
			break
		}
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}
