package manifest

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/mcpgen/mcpgen/internal/lazyregexp"
)

// The forms of [session]'s strings, as the schema states them; the decoder
// checks them by hand (CheckListen, authURL, scopes).
var (
	listenPattern  = lazyregexp.New(`^(\[[0-9A-Fa-f:.%a-zA-Z]+\]|[^:\[\]]*):[0-9]{1,5}$`)
	httpURLPattern = lazyregexp.New(`^https?://`)
	// scopeToken is RFC 6749's scope-token: printable ASCII but for the
	// space, '"' and '\'.
	scopeToken = lazyregexp.New(`^[!#-\[\]-~]+$`)
)

// CheckListen reports what is wrong with a listen address, if anything: it
// must be host:port, the host empty (every interface), an IP address or
// a DNS name, the port 0 (a free one) to 65535.
func CheckListen(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port: write \"127.0.0.1:8080\" (port 0 picks a free one)", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 || port == "" {
		return fmt.Errorf("%q: the port must be a number from 0 (a free one) to 65535", addr)
	}
	if host == "" {
		return nil
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	if !dnsName(host) {
		return fmt.Errorf("%q: %q is neither an IP address nor a host name", addr, host)
	}
	return nil
}

// dnsName reports whether s has the form of a host name: labels of
// letters, digits and '-', separated by dots.
func dnsName(s string) bool {
	if len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(strings.TrimSuffix(s, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// LoopbackHost reports whether host (a URL's or a listen address's, without
// brackets) names this machine only: "localhost", or a loopback address.
func LoopbackHost(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// path decodes a file's path, as written: SessionPath resolves it.
func (d *decoder) path(p []string, v any) string {
	s, ok := d.str(p, v)
	if ok && strings.TrimSpace(s) == "" {
		d.valueError(p, "%q is empty: name a file, relative to the manifest's directory", name(p))
	}
	return s
}

// authURL decodes a URL of [session.auth] (see CheckAuthURL).
func (d *decoder) authURL(p []string, v any, noQuery, fetched bool) string {
	s, ok := d.str(p, v)
	if !ok {
		return ""
	}
	if err := CheckAuthURL(s, noQuery, fetched); err != nil {
		d.valueError(p, "%q: %v", name(p), err)
	}
	return s
}

// CheckAuthURL reports what is wrong with a URL of [session.auth], if
// anything: it must be an absolute http or https URL without a fragment
// (nor a query, with noQuery); fetched, it must be https, or http on
// loopback, where nothing crosses a network.
func CheckAuthURL(s string, noQuery, fetched bool) error {
	u, err := url.Parse(s)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "":
		return fmt.Errorf("%q is not an absolute http or https URL, such as \"https://auth.example.com\"", s)
	case u.User != nil:
		return fmt.Errorf("%q holds credentials, which a URL of the manifest must not: remove %q", s, u.User.String()+"@")
	case u.Fragment != "" || strings.HasSuffix(s, "#"):
		return fmt.Errorf("%q has a fragment (#...), which an identifier of OAuth must not: remove it", s)
	case noQuery && (u.RawQuery != "" || u.ForceQuery):
		return fmt.Errorf("%q has a query (?...), which an issuer must not (RFC 8414): remove it", s)
	case fetched && u.Scheme == "http" && !LoopbackHost(u.Hostname()):
		return fmt.Errorf("%q is fetched over plain http: use https (http only on loopback)", s)
	}
	return nil
}

// scopes decodes required_scopes: scope tokens, each once.
func (d *decoder) scopes(p []string, v any) []string {
	ss, ok := d.strs(p, v)
	if !ok {
		return nil
	}
	for i, s := range ss {
		if !scopeToken.MatchString(s) {
			d.valueError(child(p, indexKey(i)), "%q: %q is not a scope: a scope is printable ASCII without spaces, '\"' or '\\'", name(p), s)
		}
	}
	return ss
}

func (d *decoder) auth(path []string, v any) *Auth {
	t, ok := d.table(path, v)
	if !ok {
		return nil
	}
	a := &Auth{}
	decodeKeys(d, authKeys, path, t, a)
	d.needsOne(path, t, authWays, authWaysWhy, authKeys.names())
	return a
}

// needsOne checks that the table t at path sets one of the keys of
// needed (a misspelt one counts: its error says it already).
func (d *decoder) needsOne(path []string, t map[string]any, needed []string, why string, known []string) {
	for _, k := range needed {
		if _, set := t[k]; set || misspelt(t, known, k) {
			return
		}
	}
	d.keyError(path, "%q %s", dotted(path), why)
}

// checkRequires checks, for every key of the table t that table lists,
// that the keys it requires are set beside it.
func checkRequires[T any](d *decoder, table keyTable[T], path []string, t map[string]any) {
	names := table.names()
	for _, k := range d.sortedKeys(path, t) {
		spec, ok := table.find(k)
		if !ok {
			continue
		}
		for _, r := range spec.requires {
			if _, set := t[r]; !set && !misspelt(t, names, r) {
				d.keyError(child(path, k), "%q needs %q too: %s", name(child(path, k)), r, spec.requiresWhy)
			}
		}
	}
}
