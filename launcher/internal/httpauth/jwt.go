package httpauth

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// signatureAlgorithms are the algorithms of the JWTs admitted: the
// asymmetric ones issuers sign access tokens with. "none" and the HMAC
// family are not among them, so that neither an unsigned token nor one
// signed with the bytes of the issuer's public key as an HMAC secret
// reaches a key.
var signatureAlgorithms = []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.EdDSA}

// leeway is the difference between the issuer's clock and this one that
// exp, nbf and iat may show.
const leeway = 30 * time.Second

// A refusal is why a request is not admitted: the status, the error of
// WWW-Authenticate ("" when the request had no token) and a description
// that says what was wrong with the token, never the token.
type refusal struct {
	status int
	code   string // invalid_request, invalid_token, insufficient_scope
	desc   string
}

func invalidToken(desc string) *refusal {
	return &refusal{status: http.StatusUnauthorized, code: "invalid_token", desc: desc}
}

// accessClaims are the claims of an access token that the launcher reads:
// the registered ones, and the scopes as RFC 9068 (scope, a string) and
// some issuers (scp, a string or an array) write them.
type accessClaims struct {
	jwt.Claims
	Scope string `json:"scope"`
	Scp   any    `json:"scp"`
}

// checkJWT admits a JWT access token for the endpoint at path: signed by a
// key of the issuer's set with an admitted algorithm, then of the issuer,
// for this launcher or this endpoint, within its time, with the scopes
// required. The signature comes first: nothing of a token that does not
// verify is believed, or said back.
func (a *Authenticator) checkJWT(raw, path string) (Identity, *refusal) {
	tok, err := jwt.ParseSigned(raw, signatureAlgorithms)
	if err != nil || len(tok.Headers) != 1 {
		return Identity{}, invalidToken("the token is not a JWT signed with RS256, ES256 or EdDSA")
	}
	h := tok.Headers[0]
	keys, err := a.keys.keys(h.KeyID, jose.SignatureAlgorithm(h.Algorithm))
	if errors.Is(err, errNoKeys) {
		return Identity{}, &refusal{status: http.StatusServiceUnavailable, desc: "the issuer's keys could not be fetched: the token cannot be checked now"}
	}
	if len(keys) == 0 {
		return Identity{}, invalidToken("the token is signed with a key that the issuer does not list")
	}
	var c accessClaims
	verified := false
	for _, k := range keys {
		if tok.Claims(k, &c) == nil {
			verified = true
			break
		}
		c = accessClaims{}
	}
	if !verified {
		return Identity{}, invalidToken("the token's signature does not verify")
	}
	if c.Expiry == nil {
		return Identity{}, invalidToken("the token has no exp: an access token must expire")
	}
	if err := c.Claims.ValidateWithLeeway(jwt.Expected{Issuer: a.issuer, Time: a.now()}, leeway); err != nil {
		switch {
		case errors.Is(err, jwt.ErrInvalidIssuer):
			return Identity{}, invalidToken("the token is of another issuer")
		case errors.Is(err, jwt.ErrExpired):
			return Identity{}, invalidToken("the token has expired")
		case errors.Is(err, jwt.ErrNotValidYet):
			return Identity{}, invalidToken("the token is not valid yet")
		case errors.Is(err, jwt.ErrIssuedInTheFuture):
			return Identity{}, invalidToken("the token is issued in the future")
		}
		return Identity{}, invalidToken("the token's claims are not valid")
	}
	if !a.forEndpoint(c.Audience, path) {
		return Identity{}, invalidToken("the token is for another resource: its aud names neither " + a.audience + " nor " + a.base + path)
	}
	scopes := scopesOf(&c)
	var missing []string
	for _, s := range a.scopes {
		if !slices.Contains(scopes, s) {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		return Identity{}, &refusal{status: http.StatusForbidden, code: "insufficient_scope", desc: "the token lacks the scope " + strings.Join(missing, " ")}
	}
	return Identity{Subject: c.Subject, Scopes: scopes}, nil
}

// forEndpoint reports whether a token of audience aud is for the endpoint
// at path: it names the launcher's audience (every endpoint), or the
// endpoint's own URL (RFC 8707: a client may ask for the most specific
// resource). Scheme and host are compared without case, and an empty path
// is "/", as the MCP spec asks a resource server to.
func (a *Authenticator) forEndpoint(aud jwt.Audience, path string) bool {
	endpoint := canonical(a.base + path)
	for _, v := range aud {
		if c := canonical(v); c == a.canonAudience || c == endpoint {
			return true
		}
	}
	return false
}

// canonical is a URL with its scheme and host in lower case and a path of
// "/" left out; other strings (an audience that is no URL) as they are.
func canonical(s string) string {
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return s
	}
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	if u.Path == "/" && u.RawQuery == "" {
		u.Path, u.RawPath = "", ""
	}
	return u.String()
}

// scopesOf returns the scopes a token grants.
func scopesOf(c *accessClaims) []string {
	out := strings.Fields(c.Scope)
	switch v := c.Scp.(type) {
	case string:
		out = append(out, strings.Fields(v)...)
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}
