package httpauth

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
	json "github.com/goccy/go-json"
)

// getMetadata gets the metadata at path from a.ServeMetadata.
func getMetadata(t *testing.T, a *Authenticator, method, path string) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	a.ServeMetadata(rec, httptest.NewRequest(method, path, nil))
	var doc map[string]any
	if rec.Code == 200 {
		if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
			t.Fatalf("%s: not JSON: %v\n%s", path, err, rec.Body)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", path, ct)
		}
	}
	return rec.Code, doc
}

func TestMetadata(t *testing.T) {
	const issuer = "https://auth.example.com"
	a, _, _ := newAuth(t, &Config{Issuer: issuer, RequiredScopes: []string{"mcp:tools"}})
	for _, tc := range []struct {
		method, path string
		status       int
		resource     string
	}{
		{"GET", MetadataPath, 200, testAudience},
		{"GET", MetadataPath + "/mcp", 200, testBase + "/mcp"},
		{"GET", MetadataPath + ServerPath("git"), 200, testBase + "/servers/git/mcp"},
		{"HEAD", MetadataPath + "/mcp", 200, ""},
		{"GET", MetadataPath + "/etc/passwd", 404, ""},
		{"GET", MetadataPath + "/servers/a.b/mcp", 404, ""},
		{"GET", MetadataPath + "/servers//mcp", 404, ""},
		{"GET", MetadataPath + "x", 404, ""},
		{"POST", MetadataPath + "/mcp", 405, ""},
	} {
		status, doc := getMetadata(t, a, tc.method, tc.path)
		if status != tc.status {
			t.Errorf("%s %s: got %d, want %d", tc.method, tc.path, status, tc.status)
			continue
		}
		if tc.resource == "" {
			continue
		}
		want := map[string]any{
			"resource":                 tc.resource,
			"authorization_servers":    []any{issuer},
			"scopes_supported":         []any{"mcp:tools"},
			"bearer_methods_supported": []any{"header"},
			"resource_name":            "mcpgen",
		}
		if !reflect.DeepEqual(doc, want) {
			t.Errorf("%s: got %v, want %v", tc.path, doc, want)
		}
	}

	// Without an issuer, there is no one to get a token from.
	plain, _, _ := newAuth(t, &Config{token: tokA})
	if status, _ := getMetadata(t, plain, "GET", MetadataPath+"/mcp"); status != 404 {
		t.Errorf("no issuer: got %d, want 404", status)
	}
	if got := plain.MetadataURL("/mcp"); got != "" {
		t.Errorf("no issuer: MetadataURL %q", got)
	}
}

// TestMetadataBehindIngress: a launcher whose audience has a path (an
// ingress serves it at https://example.com/team/mcp) has its metadata
// where RFC 9728 puts it for that URL, and names it so.
func TestMetadataBehindIngress(t *testing.T) {
	a, _, _ := newAuth(t, &Config{Issuer: "https://auth.example.com", Audience: "https://example.com/team/mcp"})
	if got, want := a.MetadataURL("/mcp"), "https://example.com/.well-known/oauth-protected-resource/team/mcp"; got != want {
		t.Errorf("MetadataURL: got %q, want %q", got, want)
	}
	for path, want := range map[string]string{
		MetadataPath + "/team/mcp":             "https://example.com/team/mcp",
		MetadataPath + "/team/servers/git/mcp": "https://example.com/team/servers/git/mcp",
		MetadataPath:                           "https://example.com/team/mcp",
	} {
		if status, doc := getMetadata(t, a, "GET", path); status != 200 || doc["resource"] != want {
			t.Errorf("%s: got %d %v, want resource %s", path, status, doc["resource"], want)
		}
	}
}

// TestDiscoveryAsAClient follows what an MCP client does with a 401: it
// reads the resource_metadata of the challenge, gets the metadata there,
// finds the issuer and the resource, and comes back with a token for that
// resource.
func TestDiscoveryAsAClient(t *testing.T) {
	iss := newIssuer(t, "")
	var a *Authenticator
	mux := http.NewServeMux()
	mux.HandleFunc(MetadataPath+"/", func(w http.ResponseWriter, r *http.Request) { a.ServeMetadata(w, r) })
	mux.HandleFunc(MetadataPath, func(w http.ResponseWriter, r *http.Request) { a.ServeMetadata(w, r) })
	mux.Handle("/servers/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "tools") })).ServeHTTP(w, r)
	}))
	face := httptest.NewServer(mux)
	defer face.Close()
	var err error
	a, err = New(t.Context(), &Config{Issuer: iss.url, RequiredScopes: []string{"mcp:tools"}}, Options{BaseURL: face.URL, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	endpoint := face.URL + ServerPath("git")

	resp, err := http.Post(endpoint, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	m := regexp.MustCompile(`resource_metadata="([^"]+)"`).FindStringSubmatch(resp.Header.Get("WWW-Authenticate"))
	if resp.StatusCode != 401 || m == nil {
		t.Fatalf("got %d %q, want 401 naming the metadata", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	resp, err = http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Resource string   `json:"resource"`
		Servers  []string `json:"authorization_servers"`
	}
	err = json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if err != nil || doc.Resource != endpoint || len(doc.Servers) != 1 || doc.Servers[0] != iss.url {
		t.Fatalf("metadata at %s: got %+v (%v), want the resource %s of issuer %s", m[1], doc, err, endpoint, iss.url)
	}
	// The token the client gets for that resource (RFC 8707).
	tok := mint(t, jose.ES256, ecKey, ecKID, iss.good().with(claims{"aud": doc.Resource}))
	req, _ := http.NewRequest("POST", endpoint, strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "tools" {
		t.Errorf("with the token: got %d %q", resp.StatusCode, body)
	}
}
