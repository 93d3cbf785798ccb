package httpauth

import (
	"net/http"
	"net/url"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/internal/httpguard"
	"github.com/mcpgen/mcpgen/manifest"
)

// MetadataPath is where the Protected Resource Metadata is served (RFC
// 9728): this path alone, for the launcher, and followed by an endpoint's
// path, for that endpoint.
const MetadataPath = "/.well-known/oauth-protected-resource"

// metadata is a Protected Resource Metadata document (RFC 9728 section 2).
type metadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported,omitempty"`
	BearerMethods        []string `json:"bearer_methods_supported"`
	ResourceName         string   `json:"resource_name,omitempty"`
}

func (m *metadata) marshal() ([]byte, error) {
	return json.MarshalWithOption(m, json.DisableHTMLEscape())
}

// MetadataURL is the URL of the metadata of the endpoint at path: the
// well-known path put between the endpoint's host and its path (RFC 9728
// section 3.1); "" without an issuer.
func (a *Authenticator) MetadataURL(path string) string {
	if a.keys == nil {
		return ""
	}
	u, err := url.Parse(a.base)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host + MetadataPath + strings.TrimSuffix(u.EscapedPath(), "/") + path
}

// ServeMetadata answers a request for the Protected Resource Metadata (any
// path under MetadataPath): the launcher's at MetadataPath itself, an
// endpoint's at MetadataPath followed by the endpoint's path. It is
// public, as clients read it before they have a token: 404 without an
// issuer (bearer tokens are not got from anyone), and for a path that is
// no endpoint's.
func (a *Authenticator) ServeMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		httpguard.Refuse(w, http.StatusMethodNotAllowed, "the metadata is read with GET")
		return
	}
	resource, ok := a.resourceAt(r.URL.Path)
	if !ok {
		httpguard.Refuse(w, http.StatusNotFound, "no protected resource metadata here")
		return
	}
	doc := metadata{
		Resource:             resource,
		AuthorizationServers: []string{a.issuer},
		ScopesSupported:      a.scopes,
		BearerMethods:        []string{"header"},
		ResourceName:         "mcpgen",
	}
	body, err := doc.marshal()
	if err != nil {
		httpguard.Refuse(w, http.StatusInternalServerError, "the metadata could not be written")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "max-age=300")
	// Browser-based clients read it from another origin; it is public.
	h.Set("Access-Control-Allow-Origin", "*")
	_, _ = w.Write(body)
}

// resourceAt returns the resource whose metadata is at path.
func (a *Authenticator) resourceAt(path string) (string, bool) {
	if a.keys == nil || !strings.HasPrefix(path, MetadataPath) {
		return "", false
	}
	rest := strings.TrimPrefix(path, MetadataPath)
	if rest == "" || rest == "/" {
		return a.audience, true
	}
	// The endpoint's path, after the audience's own (a launcher behind an
	// ingress at https://example.com/team/mcp has its metadata at
	// /.well-known/oauth-protected-resource/team/mcp).
	if u, err := url.Parse(a.base); err == nil {
		rest = strings.TrimPrefix(rest, strings.TrimSuffix(u.EscapedPath(), "/"))
	}
	if !endpoint(rest) {
		return "", false
	}
	return a.base + rest, true
}

// endpoint reports whether path is an MCP endpoint's: GatewayPath, or
// ServerPath of a name that a server may have.
func endpoint(path string) bool {
	if path == GatewayPath {
		return true
	}
	name, ok := strings.CutPrefix(path, "/servers/")
	if !ok {
		return false
	}
	name, ok = strings.CutSuffix(name, GatewayPath)
	return ok && manifest.CheckServerName(name) == nil
}
