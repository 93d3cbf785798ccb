package httpauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgen/mcpgen/launcher/internal/httpguard"
)

// The paths of the HTTP face's MCP endpoints, which the metadata
// describes: the gateway, and each server alone.
const GatewayPath = "/mcp"

// ServerPath is the path of server name's own endpoint.
func ServerPath(name string) string { return "/servers/" + name + "/mcp" }

// Options are what New needs besides the Config.
type Options struct {
	// BaseURL is the HTTP face as agents reach it when they use the
	// listener's own address: scheme://host:port, the port the one
	// bound. The default audience is its GatewayPath. Needed with an
	// issuer and no audience.
	BaseURL string
	// Log receives the refusals (never a token) and the fetches of the
	// issuer's keys; nil: none.
	Log *slog.Logger

	// Now and RefetchInterval are the clock and the least time between
	// two fetches of the issuer's keys (a minute); for tests.
	Now             func() time.Time
	RefetchInterval time.Duration
}

// An Authenticator admits the requests of agents to the HTTP face.
type Authenticator struct {
	token  []digest    // token_env's, as a set of one; nil: none
	tokens *tokensFile // nil: none
	log    *slog.Logger
	now    func() time.Time

	// JWTs, when issuer is set.
	issuer   string
	audience string // the launcher's: aud for every endpoint
	// base is the audience without its GatewayPath: an endpoint's URL is
	// base and the endpoint's path.
	base          string
	canonAudience string
	scopes        []string
	keys          *keySource
}

// New returns the Authenticator of c. ctx bounds the fetches of the
// issuer's keys (the session's: they end when it stops); nothing is
// fetched before a token needs it.
func New(ctx context.Context, c *Config, o Options) (*Authenticator, error) {
	a := &Authenticator{tokens: c.tokens, log: o.Log, now: o.Now, issuer: c.Issuer, audience: c.Audience, scopes: c.RequiredScopes}
	if a.log == nil {
		a.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if a.now == nil {
		a.now = time.Now
	}
	if c.token != "" {
		a.token = []digest{digestOf(c.token)}
	}
	if c.Issuer == "" {
		return a, nil
	}
	if a.audience == "" {
		if o.BaseURL == "" {
			return nil, errors.New("[session.auth] issuer: the URL agents reach is not known: set audience to it, such as \"https://mcp.example.com/mcp\"")
		}
		a.audience = strings.TrimSuffix(o.BaseURL, "/") + GatewayPath
	}
	a.base = strings.TrimSuffix(strings.TrimSuffix(a.audience, "/"), GatewayPath)
	a.canonAudience = canonical(a.audience)
	interval := o.RefetchInterval
	if interval <= 0 {
		interval = defaultRefetchInterval
	}
	a.keys = &keySource{issuer: c.Issuer, jwksURL: c.JWKSURL, fetch: newFetcher(), interval: interval, now: a.now, log: a.log, ctx: ctx}
	return a, nil
}

// Identity is who a request was admitted as.
type Identity struct {
	// Bearer: by a token of token_env or tokens_file, which names no one.
	Bearer bool
	// Subject and Scopes are a JWT's sub and scopes.
	Subject string
	Scopes  []string
}

type identityKey struct{}

// FromContext returns the identity Wrap admitted the request as.
func FromContext(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}

// Wrap admits each request to next, with its identity in its context
// (FromContext), or answers it (Check). The request's path is the
// endpoint a JWT must be for.
func (a *Authenticator) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := a.Check(w, r)
		if !ok {
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), identityKey{}, id)))
	})
}

// Check admits r, or answers it and returns false:
//
//   - no token: 401, with the challenge that names the metadata (and the
//     scopes required);
//   - a token that is none of the bearer tokens and not a valid JWT of
//     the issuer for this endpoint: 401 invalid_token;
//   - a JWT without a required scope: 403 insufficient_scope;
//   - two Authorization headers: 400 invalid_request;
//   - the issuer's keys that cannot be fetched: 503.
//
// Refusals of a token are logged with what was wrong, never the token.
func (a *Authenticator) Check(w http.ResponseWriter, r *http.Request) (Identity, bool) {
	tok, ref := bearer(r)
	if ref == nil {
		if a.matchesBearer(tok) {
			return Identity{Bearer: true}, true
		}
		if a.keys != nil && strings.Count(tok, ".") == 2 {
			var id Identity
			if id, ref = a.checkJWT(tok, r.URL.Path); ref == nil {
				return id, true
			}
		} else {
			ref = invalidToken("the token is not one this launcher admits")
		}
	}
	a.refuse(w, r, ref)
	return Identity{}, false
}

// matchesBearer reports whether tok is token_env's or one of the tokens
// file's, in constant time.
func (a *Authenticator) matchesBearer(tok string) bool {
	ok := a.token != nil && matches(a.token, tok)
	if a.tokens != nil {
		ok = matches(a.tokens.current(a.log), tok) || ok
	}
	return ok
}

// bearer returns the request's bearer token (RFC 6750: the Authorization
// header alone; a token in the URL, which logs and histories keep, is not
// looked at), or the refusal of a request without a good one.
func bearer(r *http.Request) (string, *refusal) {
	hs := r.Header.Values("Authorization")
	switch {
	case len(hs) == 0:
		return "", &refusal{status: http.StatusUnauthorized}
	case len(hs) > 1:
		return "", &refusal{status: http.StatusBadRequest, code: "invalid_request", desc: "more than one Authorization header"}
	}
	scheme, tok, _ := strings.Cut(strings.TrimSpace(hs[0]), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		// Another scheme (Basic) is no attempt at this one: the
		// challenge alone, as for no token.
		return "", &refusal{status: http.StatusUnauthorized}
	}
	tok = strings.TrimSpace(tok)
	if !b64token(tok) || len(tok) > maxTokenLength {
		return "", invalidToken("the Authorization header does not hold a bearer token")
	}
	return tok, nil
}

// refuse answers r with ref, and logs it. A request without a token is
// how an agent that has none learns where to get one: logged at Debug.
func (a *Authenticator) refuse(w http.ResponseWriter, r *http.Request, ref *refusal) {
	level := slog.LevelWarn
	if ref.code == "" && ref.status == http.StatusUnauthorized {
		level = slog.LevelDebug
	}
	a.log.Log(r.Context(), level, "http: request refused", "status", ref.status, "reason", orNone(ref.desc), "path", r.URL.Path, "remote", r.RemoteAddr)
	if ref.status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", strconv.Itoa(int(defaultRefetchInterval.Seconds())))
		httpguard.Refuse(w, ref.status, ref.desc)
		return
	}
	w.Header().Set("WWW-Authenticate", a.challenge(r.URL.Path, ref))
	msg := ref.desc
	if msg == "" {
		msg = "this endpoint needs a bearer token (Authorization: Bearer ...)"
	}
	httpguard.Refuse(w, ref.status, msg)
}

func orNone(s string) string {
	if s == "" {
		return "no token"
	}
	return s
}

// challenge is the WWW-Authenticate of a refusal (RFC 6750 section 3,
// RFC 9728 section 5.1): the metadata of the endpoint at path when there
// is an issuer, the scopes required, and the error.
func (a *Authenticator) challenge(path string, ref *refusal) string {
	var params []string
	if a.keys != nil {
		params = append(params, "resource_metadata="+quote(a.MetadataURL(path)))
	} else {
		params = append(params, `realm="mcpgen"`)
	}
	if ref.code != "" {
		params = append(params, "error="+quote(ref.code))
	}
	if len(a.scopes) > 0 && (ref.code == "" || ref.code == "insufficient_scope" || ref.code == "invalid_token") {
		params = append(params, "scope="+quote(strings.Join(a.scopes, " ")))
	}
	if ref.desc != "" {
		params = append(params, "error_description="+quote(ref.desc))
	}
	return "Bearer " + strings.Join(params, ", ")
}

// quote writes a quoted-string of HTTP.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// String describes how the Authenticator admits agents, for the log: never
// a token.
func (a *Authenticator) String() string {
	var ways []string
	if a.token != nil {
		ways = append(ways, "a bearer token")
	}
	if a.tokens != nil {
		ways = append(ways, "the tokens of "+a.tokens.path)
	}
	if a.keys != nil {
		ways = append(ways, fmt.Sprintf("JWTs of %s for %s", a.issuer, a.audience))
	}
	return strings.Join(ways, ", ")
}
