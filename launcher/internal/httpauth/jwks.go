package httpauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	json "github.com/goccy/go-json"
)

// The JWK set's cache: the keys are fetched again for a key id they do not
// hold (the issuer rotated its keys), and once they are old (a key the
// issuer withdrew must stop admitting tokens), but never twice within
// refetchInterval, so that tokens with made-up key ids cannot make the
// launcher hammer the issuer.
const (
	defaultRefetchInterval = time.Minute
	keysMaxAge             = time.Hour
	maxKeys                = 100 // the keys of a set that are used
	minRSABits             = 2048
)

// errNoKeys says that no keys could be fetched yet: the token cannot be
// checked, which is the server's failure, not the client's (503).
var errNoKeys = errors.New("the issuer's keys could not be fetched")

// keySet is what one fetch brought. A new fetch makes a new set: readers
// hold a set without locks.
type keySet struct {
	keys    []jose.JSONWebKey
	loaded  bool      // keys came from a fetch that succeeded
	fetched time.Time // when they came
	attempt time.Time // the last fetch, whatever came of it
	// jwksURL is where the keys are: the configured jwks_url, or the
	// jwks_uri that discovery found (kept, so discovery runs once).
	jwksURL string
}

// keySource holds the issuer's keys and fetches them when they are needed.
// Requests that find the key they need in the current set never wait; one
// fetch runs at a time, and the others that need it wait for it (bounded
// by refreshBudget).
type keySource struct {
	issuer, jwksURL string
	fetch           *fetcher
	interval        time.Duration
	now             func() time.Time
	log             *slog.Logger
	ctx             context.Context // ends fetches when the launcher stops

	set     atomic.Pointer[keySet]
	fetchMu sync.Mutex // one fetch at a time
}

// keys returns the public keys that may have signed a token of alg with
// key id kid (any suited key when kid is empty), fetching the set when it
// holds none, is old, or lacks kid. errNoKeys: none was ever fetched.
func (k *keySource) keys(kid string, alg jose.SignatureAlgorithm) ([]any, error) {
	cur := k.set.Load()
	if cur != nil && cur.loaded {
		found := cur.find(kid, alg)
		if len(found) > 0 && k.now().Sub(cur.fetched) < keysMaxAge {
			return found, nil
		}
	}
	cur = k.refresh(cur)
	if !cur.loaded {
		return nil, errNoKeys
	}
	return cur.find(kid, alg), nil
}

// refresh fetches the set unless another fetch did since have was read,
// or the last attempt was less than interval ago, and returns the set
// now current. A fetch that fails keeps the keys there were.
func (k *keySource) refresh(have *keySet) *keySet {
	k.fetchMu.Lock()
	defer k.fetchMu.Unlock()
	cur := k.set.Load()
	if cur != have {
		return cur // fetched while this one waited
	}
	now := k.now()
	if cur != nil && now.Sub(cur.attempt) < k.interval {
		return cur
	}
	next := &keySet{attempt: now, jwksURL: k.jwksURL}
	if cur != nil {
		next.keys, next.loaded, next.fetched = cur.keys, cur.loaded, cur.fetched
		if next.jwksURL == "" {
			next.jwksURL = cur.jwksURL
		}
	}
	ctx, cancel := context.WithTimeout(k.ctx, refreshBudget)
	defer cancel()
	keys, jwksURL, err := k.load(ctx, next.jwksURL)
	if err != nil {
		k.log.Warn("http: fetching the issuer's keys", "issuer", k.issuer, "error", err, "next_attempt_after", k.interval)
	} else {
		next.keys, next.loaded, next.fetched, next.jwksURL = keys, true, now, jwksURL
		k.log.Info("http: the issuer's keys fetched", "issuer", k.issuer, "jwks_url", jwksURL, "keys", len(keys))
	}
	k.set.Store(next)
	return next
}

// load fetches the JWK set from jwksURL, found first by discovery when it
// is empty.
func (k *keySource) load(ctx context.Context, jwksURL string) ([]jose.JSONWebKey, string, error) {
	if jwksURL == "" {
		var err error
		if jwksURL, err = k.discover(ctx); err != nil {
			return nil, "", err
		}
	}
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := k.fetch.getJSON(ctx, jwksURL, &doc); err != nil {
		return nil, jwksURL, err
	}
	var keys []jose.JSONWebKey
	for _, raw := range doc.Keys {
		var key jose.JSONWebKey
		// A key of a type this launcher does not use (a newer
		// algorithm, a symmetric key) is skipped, not an error: the
		// others still admit their tokens. So is a private key, which
		// anyone who read the set could sign with.
		if err := key.UnmarshalJSON(raw); err != nil || !key.Valid() || !key.IsPublic() {
			continue
		}
		keys = append(keys, key)
		if len(keys) == maxKeys {
			break
		}
	}
	if len(keys) == 0 {
		return nil, jwksURL, fmt.Errorf("%s holds no public signing key", jwksURL)
	}
	return keys, jwksURL, nil
}

// discover finds the issuer's jwks_uri in its metadata, in the places and
// the order MCP clients look for an authorization server's: RFC 8414 with
// the issuer's path after the well-known one, OpenID discovery the same
// way, then OpenID discovery after the issuer's path. The document must
// name the issuer itself (RFC 8414 section 3.3): another's would hand the
// launcher keys that are not the issuer's.
func (k *keySource) discover(ctx context.Context) (string, error) {
	var errs []error
	for _, where := range metadataURLs(k.issuer) {
		var doc struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if err := k.fetch.getJSON(ctx, where, &doc); err != nil {
			errs = append(errs, err)
			continue
		}
		switch {
		case doc.Issuer != k.issuer:
			return "", fmt.Errorf("the metadata at %s is of issuer %q, not %q: set issuer to the one the tokens name", where, doc.Issuer, k.issuer)
		case doc.JWKSURI == "":
			return "", fmt.Errorf("the metadata at %s has no jwks_uri: set jwks_url", where)
		}
		u, err := url.Parse(doc.JWKSURI)
		if err != nil || !u.IsAbs() {
			return "", fmt.Errorf("the metadata at %s has a jwks_uri that is not an absolute URL", where)
		}
		if err := fetchable(u); err != nil {
			return "", fmt.Errorf("the metadata at %s: jwks_uri %w", where, err)
		}
		return doc.JWKSURI, nil
	}
	return "", fmt.Errorf("no metadata of issuer %s (set jwks_url to skip discovery): %w", k.issuer, errors.Join(errs...))
}

// metadataURLs are the places of an issuer's metadata, in the order they
// are tried.
func metadataURLs(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil
	}
	origin := u.Scheme + "://" + u.Host
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	if path == "" {
		return []string{origin + "/.well-known/oauth-authorization-server", origin + "/.well-known/openid-configuration"}
	}
	return []string{
		origin + "/.well-known/oauth-authorization-server" + path,
		origin + "/.well-known/openid-configuration" + path,
		origin + path + "/.well-known/openid-configuration",
	}
}

// find returns the public keys of the set that may have signed a token of
// alg with key id kid: for signing (use "sig" or unsaid), of alg when the
// key says one, and of the type and strength that alg needs. A key id
// that the set does not hold finds nothing; an empty one, every suited
// key.
func (s *keySet) find(kid string, alg jose.SignatureAlgorithm) []any {
	var out []any
	for i := range s.keys {
		key := &s.keys[i]
		if kid != "" && key.KeyID != kid || key.Use != "" && key.Use != "sig" || key.Algorithm != "" && key.Algorithm != string(alg) {
			continue
		}
		if pub := suited(key.Key, alg); pub != nil {
			out = append(out, pub)
		}
	}
	return out
}

// suited returns key when it is a public key of the type alg signs with,
// strong enough; nil otherwise. A symmetric key never is: a token that
// says HS256 and is signed with the bytes of a public key must not pass.
func suited(key any, alg jose.SignatureAlgorithm) any {
	switch alg {
	case jose.RS256:
		if k, ok := key.(*rsa.PublicKey); ok && k.N.BitLen() >= minRSABits {
			return k
		}
	case jose.ES256:
		if k, ok := key.(*ecdsa.PublicKey); ok && k.Curve == elliptic.P256() {
			return k
		}
	case jose.EdDSA:
		if k, ok := key.(ed25519.PublicKey); ok && len(k) == ed25519.PublicKeySize {
			return k
		}
	}
	return nil
}
