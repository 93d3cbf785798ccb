package providers

import (
	"strings"
	"testing"

	"github.com/mcpgen/mcpgen/manifest"
)

func TestIsSecret(t *testing.T) {
	tests := []struct {
		key, value string
		want       bool
	}{
		// A token of a known service, under any key, or none.
		{"GITHUB_PERSONAL_ACCESS_TOKEN", "ghp_Q8cX2mV7rT4kL9zP1wN6bH3jF5sD0aYeUuIo", true},
		{"GH", "github_pat_11ABCDEFG0123456789_abcdefghij", true},
		{"", "sk-proj-7hG2kP9xQ4mT8vL3nR6wZ1bY5cF0dJsA", true},
		{"SLACK", "xoxb-123456789012-abcdefghijkl", true},
		{"AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE", true},
		{"PACKAGE", "sk-learn", false}, // a prefix, but not a token
		{"JWT", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", true},
		// A URL that carries a password, whatever the key.
		{"DATABASE_URL", "postgres://app:s3cret@db.internal/app", true},
		{"HOME_PAGE_URL", "https://example.com/a?b=c", false},
		{"DATABASE_URL", "postgres://app@db.internal/app", false},
		// A name that says secret outright: any value but a number or a boolean.
		{"DB_PASSWORD", "hunter2", true},
		{"Authorization", "Bearer abc", true},
		{"client_secret", "short", true},
		{"Cookie", "session=abc", true},
		{"SESSION_SECRET", "123", false},
		{"ENABLE_PASSWORD_LOGIN", "true", false},
		// A name that may: the value must look generated.
		{"OPENAI_API_KEY", "d41d8cd98f00b204e9800998ecf8427e", true},
		{"X-Api-Key", "Zx8fK2pQ9mW4vR7tY1uB", true},
		{"apiKey", "Zx8fK2pQ9mW4vR7tY1uB", true},
		{"API_KEY", "changeme", false},
		{"API_KEY", "aaaaaaaaaaaaaaaaaaaaaaaa", false},
		{"API_KEY", "/run/secrets/api-key-file", false},
		{"AUTH_HEADER_VALUE", "Basic dXNlcjpwYXNzd29yZDEyMzQ1", true},
		// Names about a secret, not holding one.
		{"MAX_TOKENS", "4096", false},
		{"TOKEN_FILE", "/run/secrets/t0kenF1leXyz123456", false},
		{"PASSWORD_FILE", "/run/secrets/pw", false},
		{"SECRET_NAME", "prod-db-credentials-v2", false},
		{"KEY_ID", "k-7f3a9c2e1b4d6f8a", false},
		// Plain settings.
		{"LOG_LEVEL", "debug", false},
		{"X-Tenant", "acme", false},
		{"OPENAI_API_KEY", "", false},
	}
	for _, tc := range tests {
		if got := IsSecret(tc.key, tc.value); got != tc.want {
			t.Errorf("IsSecret(%q, %q) = %v, want %v", tc.key, tc.value, got, tc.want)
		}
	}
}

func lit(s string) manifest.Template { return manifest.Template{{Text: s}} }

// TestHideSecrets: every literal secret becomes a reference, no value
// reaches the manifest, and two different secrets never share a variable.
func TestHideSecrets(t *testing.T) {
	const (
		pat1  = "ghp_Q8cX2mV7rT4kL9zP1wN6bH3jF5sD0aYeUuIo"
		pat2  = "ghp_Different0123456789abcdefghijklmnop"
		key   = "sk-proj-7hG2kP9xQ4mT8vL3nR6wZ1bY5cF0dJsA"
		token = "Zx8fK2pQ9mW4vR7tY1uBc3Nd"
	)
	cmd := func(name string, args []string, env ...manifest.Var) *ImportedServer {
		s := &manifest.Server{Name: name, Kind: manifest.KindCommand, Enabled: true, Command: lit("run"), Env: env}
		for _, a := range args {
			s.Args = append(s.Args, lit(a))
		}
		return &ImportedServer{Server: s, File: "in.json", Line: 1}
	}
	remote := func(name, url string, headers ...manifest.Var) *ImportedServer {
		return &ImportedServer{Server: &manifest.Server{Name: name, Kind: manifest.KindRemote, Enabled: true, URL: lit(url), Headers: headers}, File: "in.json", Line: 2}
	}
	servers := []*ImportedServer{
		cmd("one", []string{"--api-key=" + key, "--token", pat1, "plain"},
			manifest.Var{Name: "GITHUB_TOKEN", Value: lit(pat1)},
			manifest.Var{Name: "LOG_LEVEL", Value: lit("debug")},
			manifest.Var{Name: "REF", Value: manifest.Template{{Ref: "ALREADY"}}}),
		cmd("two", nil, manifest.Var{Name: "GITHUB_TOKEN", Value: lit(pat2)}),
		cmd("three", nil, manifest.Var{Name: "GITHUB_TOKEN", Value: lit(pat1)}),
		remote("docs", "https://u:"+token+"@docs.example.com/mcp?tenant=acme&api_key="+token+"#top",
			manifest.Var{Name: "Authorization", Value: lit("Bearer " + token)},
			manifest.Var{Name: "X-Tenant", Value: lit("acme")}),
		remote("basic", "https://basic.example.com/mcp",
			manifest.Var{Name: "Authorization", Value: lit("Basic dXNlcjpwYXNzd29yZDEyMzQ1")}),
	}
	hidden := HideSecrets(servers)

	want := []HiddenSecret{
		{"GITHUB_TOKEN", "one", "env.GITHUB_TOKEN", "in.json:1"},
		{"ONE_API_KEY", "one", "args[0]", "in.json:1"},
		{"ONE_TOKEN", "one", "args[2]", "in.json:1"},
		{"TWO_GITHUB_TOKEN", "two", "env.GITHUB_TOKEN", "in.json:1"}, // another value: its own variable
		{"GITHUB_TOKEN", "three", "env.GITHUB_TOKEN", "in.json:1"},   // the same value: shared
		{"DOCS_PASSWORD", "docs", "url", "in.json:2"},
		{"DOCS_API_KEY", "docs", "url", "in.json:2"},
		{"DOCS_TOKEN", "docs", "headers.Authorization", "in.json:2"},
		{"BASIC_AUTHORIZATION", "basic", "headers.Authorization", "in.json:2"},
	}
	if len(hidden) != len(want) {
		t.Fatalf("got %d secrets, want %d:\n%+v", len(hidden), len(want), hidden)
	}
	for i := range want {
		if hidden[i] != want[i] {
			t.Errorf("secret %d: got %+v, want %+v", i, hidden[i], want[i])
		}
	}

	m := &manifest.Manifest{Version: 1}
	for _, s := range servers {
		m.Servers = append(m.Servers, s.Server)
	}
	out, err := manifest.Format(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{pat1, pat2, key, token, "dXNlcjpwYXNzd29yZDEyMzQ1"} {
		if strings.Contains(string(out), secret) {
			t.Errorf("the manifest holds a secret:\n%s", out)
		}
	}
	for _, line := range []string{
		`args = ["--api-key=${ONE_API_KEY}", "--token", "${ONE_TOKEN}", "plain"]`,
		`env.GITHUB_TOKEN = "${GITHUB_TOKEN}"`,
		`env.LOG_LEVEL = "debug"`,
		`env.REF = "${ALREADY}"`,
		`env.GITHUB_TOKEN = "${TWO_GITHUB_TOKEN}"`,
		`url = "https://u:${DOCS_PASSWORD}@docs.example.com/mcp?tenant=acme&api_key=${DOCS_API_KEY}#top"`,
		`bearer_token_env = "DOCS_TOKEN"`,
		`headers.X-Tenant = "acme"`,
		`headers.Authorization = "${BASIC_AUTHORIZATION}"`,
	} {
		if !strings.Contains(string(out), line+"\n") {
			t.Errorf("the manifest has no line %s:\n%s", line, out)
		}
	}
	if strings.Contains(string(out), `headers.Authorization = "${DOCS`) {
		t.Errorf("the bearer token stayed a header too:\n%s", out)
	}
	if _, err := manifest.Parse(out, "out.toml", "/"); err != nil {
		t.Errorf("the manifest does not parse: %v\n%s", err, out)
	}
}

func TestEnvName(t *testing.T) {
	for in, want := range map[string]string{
		"docs_X-Api-Key": "DOCS_X_API_KEY",
		"my.server__tok": "MY_SERVER_TOK",
		"9lives":         "V_9LIVES",
		"--":             "V_",
	} {
		if got := envName(in); got != want {
			t.Errorf("envName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestHideSecretsByName: a header or a query parameter whose name says it
// holds a key, a token, a secret or a signature is hidden whatever its
// value looks like (short, plain, numeric), as a URL's password is.
func TestHideSecretsByName(t *testing.T) {
	const shortKey = "k-12345" // too short and plain to look generated
	remote := func(name, url string, headers ...manifest.Var) *ImportedServer {
		return &ImportedServer{Server: &manifest.Server{Name: name, Kind: manifest.KindRemote, Enabled: true, URL: lit(url), Headers: headers}, File: ".mcp.json", Line: 3}
	}
	servers := []*ImportedServer{
		remote("a", "https://u:pw12345@mcp.example.com/mcp?api_key=abc123def456&tenant=acme",
			manifest.Var{Name: "X-Api-Key", Value: lit(shortKey)},
			manifest.Var{Name: "X-Tenant", Value: lit("acme")}),
		remote("b", "https://mcp.example.com/mcp?apikey=1234&key=hello&token=t0k3n&access_token=at-1&secret=s3&sig=abcdef&signature=sg&X-Amz-Signature=deadbeef&X-Amz-Credential=cred&page=2",
			manifest.Var{Name: "X-Auth-Token", Value: lit("short1")},
			manifest.Var{Name: "X-Client-Secret", Value: lit("xx")},
			manifest.Var{Name: "Cookie", Value: lit("s=1")},
			manifest.Var{Name: "Proxy-Authorization", Value: lit("Basic eA==")},
			manifest.Var{Name: "X-Key-Id", Value: lit("kid-7")},
			manifest.Var{Name: "X-Token-Type", Value: lit("bearer")}),
	}
	HideSecrets(servers)
	m := &manifest.Manifest{Version: 1}
	for _, s := range servers {
		m.Servers = append(m.Servers, s.Server)
	}
	out, err := manifest.Format(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"pw12345", "abc123def456", shortKey, "1234", "hello", "t0k3n", "at-1", "s3", "abcdef", "sg", "deadbeef", "cred", "short1", `"xx"`, "s=1", "eA=="} {
		if strings.Contains(string(out), secret) {
			t.Errorf("the manifest holds the secret %q:\n%s", secret, out)
		}
	}
	for _, line := range []string{
		`url = "https://u:${A_PASSWORD}@mcp.example.com/mcp?api_key=${A_API_KEY}&tenant=acme"`,
		`headers.X-Api-Key = "${A_X_API_KEY}"`,
		`headers.X-Tenant = "acme"`,
		`url = "https://mcp.example.com/mcp?apikey=${B_APIKEY}&key=${B_KEY}&token=${B_TOKEN}&access_token=${B_ACCESS_TOKEN}&secret=${B_SECRET}&sig=${B_SIG}&signature=${B_SIGNATURE}&X-Amz-Signature=${B_X_AMZ_SIGNATURE}&X-Amz-Credential=${B_X_AMZ_CREDENTIAL}&page=2"`,
		`headers.X-Auth-Token = "${B_X_AUTH_TOKEN}"`,
		`headers.Proxy-Authorization = "${B_PROXY_AUTHORIZATION}"`,
		`headers.X-Key-Id = "kid-7"`,
		`headers.X-Token-Type = "bearer"`,
	} {
		if !strings.Contains(string(out), line+"\n") {
			t.Errorf("the manifest has no line %s:\n%s", line, out)
		}
	}
}
