package providers

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"

	"github.com/mcpgen/mcpgen/internal/lazyregexp"
	"github.com/mcpgen/mcpgen/manifest"
)

// A HiddenSecret is a literal secret that import replaced by a ${VAR}
// reference: the variable to set, and where the value was. The value itself
// is never kept.
type HiddenSecret struct {
	Var    string
	Server string
	Key    string // in the server's table: "env.GITHUB_TOKEN", "headers.Authorization"
	From   string // FILE:LINE of the entry
}

// HideSecrets replaces every literal value of servers that looks like a
// secret by a reference to a variable, and returns the variables to set, in
// order. A secret under an env key becomes a reference to a variable of the
// same name (which Codex passes on natively); a literal bearer token becomes
// bearer_token_env; other secrets get SERVER_KEY names. Two different
// values never share a variable: the second gets the server's name in
// front.
func HideSecrets(servers []*ImportedServer) []HiddenSecret {
	h := &hider{values: map[string]string{}}
	for _, s := range servers {
		h.server(s)
	}
	return h.hidden
}

// SecretValues returns the literal secrets that HideSecrets would hide in
// servers (which it changes as HideSecrets does), each once: to tell
// whether a file still holds them, never to be shown.
func SecretValues(servers []*ImportedServer) []string {
	h := &hider{values: map[string]string{}}
	for _, s := range servers {
		h.server(s)
	}
	var out []string
	for _, v := range h.values {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

type hider struct {
	values map[string]string // variable -> the secret it stands for, to keep two apart
	hidden []HiddenSecret
}

// name returns the variable for a secret: the first of candidates that no
// other secret took, else the last one numbered (_2, _3, ...).
func (h *hider) name(value string, candidates ...string) string {
	try := func(c string) bool {
		if v, taken := h.values[c]; taken && v != value {
			return false
		}
		h.values[c] = value
		return true
	}
	for _, c := range candidates {
		if try(c) {
			return c
		}
	}
	for i := 2; ; i++ {
		if c := fmt.Sprintf("%s_%d", candidates[len(candidates)-1], i); try(c) {
			return c
		}
	}
}

func (h *hider) record(s *ImportedServer, v, key string) {
	h.hidden = append(h.hidden, HiddenSecret{Var: v, Server: s.Server.Name, Key: key, From: s.Where()})
	note := "a literal secret in " + s.File + ": set " + v
	if old := s.KeyNotes[key]; old != "" {
		note = old + ", " + v
	}
	s.NoteKey(key, note)
}

func (h *hider) server(s *ImportedServer) {
	srv := s.Server
	for i, e := range srv.Env {
		lit, ok := e.Value.Literal()
		if !ok || !IsSecret(e.Name, lit) {
			continue
		}
		v := h.name(lit, e.Name, envName(srv.Name)+"_"+e.Name)
		srv.Env[i].Value = manifest.Template{{Ref: v}}
		h.record(s, v, "env."+e.Name)
	}
	for i := 0; i < len(srv.Args); i++ {
		lit, ok := srv.Args[i].Literal()
		if !ok {
			continue
		}
		// --token=VALUE, or --token VALUE, or a value that says what it is.
		if flag, val, isFlag := strings.Cut(lit, "="); isFlag && strings.HasPrefix(flag, "-") && IsSecret(flag, val) {
			v := h.name(val, envName(srv.Name+"_"+strings.TrimLeft(flag, "-")))
			srv.Args[i] = manifest.Template{{Text: flag + "="}, {Ref: v}}
			h.record(s, v, fmt.Sprintf("args[%d]", i))
			continue
		}
		key := ""
		if i > 0 {
			if prev, ok := srv.Args[i-1].Literal(); ok && strings.HasPrefix(prev, "-") && !strings.Contains(prev, "=") {
				key = prev
			}
		}
		if IsSecret(key, lit) {
			name := "TOKEN"
			if key != "" {
				name = strings.TrimLeft(key, "-")
			}
			v := h.name(lit, envName(srv.Name+"_"+name))
			srv.Args[i] = manifest.Template{{Ref: v}}
			h.record(s, v, fmt.Sprintf("args[%d]", i))
		}
	}
	if lit, ok := srv.URL.Literal(); ok {
		h.url(s, lit)
	}
	var headers []manifest.Var
	for _, hd := range srv.Headers {
		lit, ok := hd.Value.Literal()
		if !ok || !namesSecret(hd.Name, lit) && !IsSecret(hd.Name, lit) {
			headers = append(headers, hd)
			continue
		}
		scheme, token, hasScheme := strings.Cut(lit, " ")
		if strings.EqualFold(hd.Name, "Authorization") && hasScheme && strings.EqualFold(scheme, "Bearer") && srv.BearerTokenEnv == "" {
			v := h.name(strings.TrimSpace(token), envName(srv.Name+"_TOKEN"))
			srv.BearerTokenEnv = v
			h.hidden = append(h.hidden, HiddenSecret{Var: v, Server: srv.Name, Key: "headers.Authorization", From: s.Where()})
			s.NoteKey("bearer_token_env", "was a literal bearer token in the Authorization header of "+s.File+": set "+v+" to the token alone")
			continue
		}
		v := h.name(lit, envName(srv.Name+"_"+hd.Name))
		hd.Value = manifest.Template{{Ref: v}}
		headers = append(headers, hd)
		h.record(s, v, "headers."+hd.Name)
	}
	srv.Headers = headers
}

// url hides a password in the URL's user info, and the values of query
// parameters that are secrets (?api_key=...), keeping the rest of the text
// as written. The variables hold the text as it was in the URL, escapes
// included.
func (h *hider) url(s *ImportedServer, raw string) {
	var t manifest.Template
	found := false
	secret := func(want, value string) {
		v := h.name(value, envName(s.Server.Name+"_"+want))
		t = append(t, manifest.Segment{Ref: v})
		h.record(s, v, "url")
		found = true
	}
	rest := raw
	if i := strings.Index(rest, "://"); i >= 0 {
		authEnd := len(rest)
		if j := strings.IndexAny(rest[i+3:], "/?#"); j >= 0 {
			authEnd = i + 3 + j
		}
		auth := rest[i+3 : authEnd]
		if at := strings.LastIndex(auth, "@"); at >= 0 {
			if user, pw, ok := strings.Cut(auth[:at], ":"); ok && pw != "" {
				t = appendText(t, rest[:i+3]+user+":")
				secret("PASSWORD", pw)
				rest = rest[i+3+at:]
			}
		}
	}
	if q := strings.Index(rest, "?"); q >= 0 {
		end := len(rest)
		if f := strings.Index(rest[q:], "#"); f >= 0 {
			end = q + f
		}
		t = appendText(t, rest[:q+1])
		for i, kv := range strings.Split(rest[q+1:end], "&") {
			if i > 0 {
				t = appendText(t, "&")
			}
			k, v, ok := strings.Cut(kv, "=")
			plain, err := url.QueryUnescape(v)
			if !ok || err != nil || !namesSecret(k, plain) && !IsSecret(k, plain) {
				t = appendText(t, kv)
				continue
			}
			t = appendText(t, k+"=")
			secret(k, v)
		}
		rest = rest[end:]
	}
	if !found {
		return
	}
	s.Server.URL = appendText(t, rest)
	s.Note("Its url held a secret, now a reference: Claude Code expands it; for Codex, which expands no variable in a url, emit writes an entry that runs mcpgen serve, which resolves it when Codex starts the server.")
}

// appendText appends literal text to t, joined with the text before it.
func appendText(t manifest.Template, text string) manifest.Template {
	if text == "" {
		return t
	}
	if n := len(t); n > 0 && t[n-1].Ref == "" {
		t[n-1].Text += text
		return t
	}
	return append(t, manifest.Segment{Text: text})
}

// Last words of a header's or a query parameter's name that say it holds a
// secret, whatever the value: X-Api-Key, X-Auth-Token, X-Client-Secret,
// Authorization, Cookie; ?api_key=, ?apikey=, ?key=, ?access_token=,
// ?sig=, ?X-Amz-Signature=. A key sent with every request is a secret
// however short or plain it is, and a value written there is nothing but
// what the server checks.
var secretNameWords = []string{"KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PWD", "AUTH", "AUTHORIZATION", "COOKIE", "SIG", "SIGNATURE", "CREDENTIAL", "CREDENTIALS"}

// namesSecret reports whether a header or a query parameter named name
// holds a secret by its name alone: any value but an empty one.
func namesSecret(name, value string) bool {
	ws := words(name)
	return strings.TrimSpace(value) != "" && len(ws) > 0 && slices.Contains(secretNameWords, ws[len(ws)-1])
}

// Words in a key's name that say it holds a secret, whatever the value.
var strongWords = []string{"SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "CREDENTIALS", "AUTHORIZATION", "COOKIE", "PRIVATE"}

// Words that say it may hold one: then the value must look like a token.
var weakWords = []string{"TOKEN", "KEY", "APIKEY", "AUTH", "PAT", "SIGNATURE", "SESSION", "BEARER", "DSN"}

// Last words that name something about a secret, not the secret itself.
var notSecretWords = []string{"FILE", "PATH", "DIR", "URL", "URI", "HOST", "PORT", "ID", "NAME", "TYPE", "MODE", "LEVEL", "COUNT", "LIMIT", "LIMITS", "SIZE", "MAX", "MIN", "TIMEOUT", "HEADER", "ENV", "VAR", "ENABLED", "REGION", "EXPIRY", "TTL", "FORMAT"}

// Token prefixes of well-known services: a value that starts with one of
// them (and goes on like a token) is a secret under any key.
var tokenPrefixes = []string{
	"sk-", "sk_live_", "sk_test_", "rk_live_", "rk_test_", "pk_live_", // OpenAI, Anthropic (sk-ant-), Stripe
	"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", // GitHub
	"glpat-", "gldt-", // GitLab
	"xoxb-", "xoxp-", "xoxa-", "xoxs-", "xoxe-", "xapp-", // Slack
	"AKIA", "ASIA", // AWS access key ids
	"AIza", "ya29.", // Google
	"npm_", "pypi-", "hf_", "dop_v1_", "SG.", "shpat_", "shpss_", "lin_api_", "ntn_", "secret_", "sq0atp-", "glsa_", "dapi",
}

var (
	wordSplit = lazyregexp.New(`[^A-Za-z0-9]+`)
	camelCase = lazyregexp.New(`([a-z0-9])([A-Z])`)
	jwt       = lazyregexp.New(`^eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}$`)
	tokenChar = lazyregexp.New(`^[A-Za-z0-9_\-.+/=:~]+$`)
	number    = lazyregexp.New(`^[+-]?[0-9]+(\.[0-9]+)?$`)
)

// words splits a key's name into upper-case words: "X-Api-Key" and
// "apiKey" give [X API KEY] and [API KEY].
func words(name string) []string {
	name = camelCase.ReplaceAllString(name, "${1}_${2}")
	var out []string
	for _, w := range wordSplit.Split(strings.ToUpper(name), -1) {
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}

// IsSecret reports whether a literal value under key (an env name, a
// header, a flag, a query parameter; "" when there is none) looks like a
// secret:
//   - a token of a well-known service, or a JWT, under any key;
//   - a URL that carries a password;
//   - any non-empty value under a key that names a secret outright
//     (*SECRET*, *PASSWORD*, Authorization, Cookie), unless it is a number
//     or a boolean;
//   - a token-like value (long, without spaces, high entropy) under a key
//     that may name one (*_TOKEN, *_KEY, *AUTH*).
//
// A key whose last word names something about a secret (TOKEN_FILE,
// KEY_ID, SECRET_NAME) holds no secret itself, unless its value says so.
func IsSecret(key, value string) bool {
	value = strings.TrimSpace(value)
	if value == "" {
		return false
	}
	if hasTokenPrefix(value) || jwt.MatchString(value) {
		return true
	}
	if u, err := url.Parse(value); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			return true
		}
	}
	ws := words(key)
	if len(ws) == 0 {
		return false
	}
	if slices.Contains(notSecretWords, ws[len(ws)-1]) {
		return false
	}
	lower := strings.ToLower(value)
	plain := number.MatchString(value) || lower == "true" || lower == "false" || lower == "yes" || lower == "no"
	for _, w := range ws {
		if slices.Contains(strongWords, w) {
			return !plain
		}
	}
	for _, w := range ws {
		if slices.Contains(weakWords, w) {
			return !plain && tokenLike(value)
		}
	}
	return false
}

// hasTokenPrefix reports whether v starts with a known service's prefix
// and goes on for at least 12 more token characters ("sk-learn" is not a
// key).
func hasTokenPrefix(v string) bool {
	for _, p := range tokenPrefixes {
		if rest, ok := strings.CutPrefix(v, p); ok && len(rest) >= 12 && tokenChar.MatchString(rest) {
			return true
		}
	}
	return false
}

// tokenLike reports whether v looks generated: at least 16 characters
// without spaces, not a path or a URL, mixing kinds of characters, with an
// entropy of at least 3 bits per character. A scheme in front ("Basic
// dXNlcjpwYXNz") is allowed.
func tokenLike(v string) bool {
	if _, rest, ok := strings.Cut(v, " "); ok && !strings.Contains(rest, " ") {
		v = rest
	}
	if len(v) < 16 || !tokenChar.MatchString(v) || strings.Contains(v, "://") ||
		strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~") || strings.HasPrefix(v, ".") {
		return false
	}
	classes := 0
	for _, class := range []string{"abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789"} {
		if strings.ContainsAny(v, class) {
			classes++
		}
	}
	return classes >= 2 && entropy(v) >= 3
}

// entropy returns the Shannon entropy of s's bytes, in bits per byte.
func entropy(s string) float64 {
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	var h float64
	n := float64(len(s))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// envName makes a variable name of s: upper case, runs of other characters
// as one "_", not starting with a digit.
func envName(s string) string {
	var b strings.Builder
	under := false
	for _, r := range strings.ToUpper(s) {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			under = false
		} else if !under && b.Len() > 0 {
			b.WriteByte('_')
			under = true
		}
	}
	out := strings.TrimRight(b.String(), "_")
	if out == "" || out[0] >= '0' && out[0] <= '9' {
		out = "V_" + out
	}
	return out
}
