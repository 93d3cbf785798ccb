//go:build unix

package e2e

import (
	"crypto/subtle"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// TestGatewayURLReachedByRealClients: the entries of emit --gateway-url
// bring the real clients to a gateway served over HTTP behind a bearer
// token (here a proxy on loopback that admits that token alone, in front
// of server-everything's Streamable HTTP). Codex (bearer_token_env_var),
// Claude Code (Authorization: Bearer ${VAR}) and Claude Desktop's entry
// (mcpgen serve --url, run as Claude Code runs a stdio entry) connect with
// the token from their environment and list the tools; without the
// variable, none gets in.
func TestGatewayURLReachedByRealClients(t *testing.T) {
	sb := newSandbox(t)
	srv := startEverythingHTTP(t)
	const token = "e2e-gateway-0123456789abcdef"
	const tokenEnv = "MCPGEN_E2E_GATEWAY_TOKEN"
	target, err := url.Parse(srv.url)
	if err != nil {
		t.Fatal(err)
	}
	var admitted, refused atomic.Int32
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme, r.Out.URL.Host, r.Out.Host = target.Scheme, target.Host, target.Host
			r.Out.Header.Del("Authorization")
		},
		FlushInterval: -1, // event streams as they come
	}
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+token)) != 1 {
			refused.Add(1)
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcpgen"`)
			http.Error(w, "a bearer token is needed", http.StatusUnauthorized)
			return
		}
		admitted.Add(1)
		proxy.ServeHTTP(w, r)
	}))
	defer gw.Close()
	gwURL := gw.URL + "/mcp"
	m := sb.write("gw/mcpgen.toml", "version = 1\n")

	for _, provider := range []string{"codex", "claude", "claude-desktop"} {
		t.Run(provider, func(t *testing.T) {
			file := filepath.Join(sb.dir, "gw", provider+"-config")
			sb.mcpgen("", "emit", "--manifest", m, "--provider", provider, "--gateway-url", gwURL, "--gateway-token-env", tokenEnv, "-o", file)
			validate := func(env []string) validation {
				flags := []string{"--health", "--no-netns"} // the gateway is on this machine's loopback
				if provider == "codex" {
					return validateCodexFile(sb.dir, slices.Concat(sb.env, env), flags, file, "mcpgen")
				}
				if provider == "claude-desktop" {
					flags = append(flags, "--desktop")
				}
				return validateClaudeFile(sb.dir, slices.Concat(sb.env, env), flags, file)
			}
			before := admitted.Load()
			v := validate([]string{tokenEnv + "=" + token})
			if v.err != nil {
				t.Fatalf("with %s set: %v\n%s", tokenEnv, v.err, v.out)
			}
			if !slices.Equal(v.servers, []string{"mcpgen"}) || admitted.Load() == before {
				t.Fatalf("with %s set: servers %q, %d requests admitted\n%s", tokenEnv, v.servers, admitted.Load()-before, v.out)
			}
			if provider == "codex" && !strings.Contains(v.out, "echo") {
				t.Errorf("Codex does not list the gateway's tools:\n%s", v.out)
			}
			if strings.Contains(v.out, token) {
				t.Errorf("the transcript shows the token:\n%s", v.out)
			}

			before = refused.Load()
			admittedBefore := admitted.Load()
			if v := validate(nil); v.err == nil {
				t.Errorf("without %s: the client's health check passed\n%s", tokenEnv, v.out)
			}
			if admitted.Load() != admittedBefore {
				t.Errorf("without %s: %d requests admitted", tokenEnv, admitted.Load()-admittedBefore)
			}
			t.Logf("without %s: %d requests refused", tokenEnv, refused.Load()-before)
		})
	}
}
