//go:build unix

package e2e

import (
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	json "github.com/goccy/go-json"
)

// The secrets of the configs that TestImportRoundTrip imports: literal
// values that must never reach the manifest, the emitted files or import's
// output.
const (
	githubPAT   = "ghp_Q8cX2mV7rT4kL9zP1wN6bH3jF5sD0aYeUuIo"
	docsAPIKey  = "Zx8fK2pQ9mW4vR7tY1uBc3Nd"
	openAIKey   = "sk-proj-7hG2kP9xQ4mT8vL3nR6wZ1bY5cF0dJsA"
	searchToken = "sk-live-f4E8hJ2kM6nQ0rT3vX7zB1cG5"
	searchKey   = "Mq2Wn8Rt4Yv6Zx0Bc9Df7Gh5"
	// The keyed server's: an API key in its url's query and a short key
	// in a header, too plain to look generated, which import copied
	// literally before their names alone made them secrets.
	keyedQueryKey  = "kq-5521"
	keyedHeaderKey = "kh-7730"
)

// importCodexConfig is a user's Codex config.toml: a stdio server with a
// literal token, a passed-on variable, a cwd, timeouts, a tool filter and an
// approval table that Codex wrote; a streamable HTTP server with a bearer
// token variable, a literal secret header and a header from the
// environment, disabled.
const importCodexConfig = `# my codex config
model = "o3"

[mcp_servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]
env = { GITHUB_PERSONAL_ACCESS_TOKEN = "` + githubPAT + `", LOG_LEVEL = "info" }
env_vars = ["PATH_EXTRA"]
cwd = "/tmp"
startup_timeout_sec = 20
tool_timeout_sec = 90.5
enabled_tools = ["create_issue", "list_issues"]

[mcp_servers.github.tools.create_issue]
approval_mode = "approve"

[mcp_servers.docs]
url = "https://mcp.example.com/mcp"
bearer_token_env_var = "DOCS_TOKEN"
http_headers = { X-Tenant = "acme", X-Api-Key = "` + docsAPIKey + `" }
env_http_headers = { X-Org = "DOCS_ORG" }
startup_timeout_sec = 15
disabled_tools = ["delete_page"]
enabled = false
`

// importClaudeConfig is a project's .mcp.json: a stdio server with a literal
// API key, a ${VAR} reference (with a default) and a timeout; an http server
// with a literal bearer token, a literal secret header and a ${VAR} header;
// and an http server (KEYED_URL, a test's own) whose url holds an API key in
// its query and whose X-Api-Key header a short key.
const importClaudeConfig = `{
  "mcpServers": {
    "memory": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-memory", "${MEMDIR:-/tmp/memory}"],
      "env": {"MEMORY_FILE_PATH": "${HOME}/memory.json", "OPENAI_API_KEY": "` + openAIKey + `", "LEVEL": "debug"},
      "timeout": 45000
    },
    "search": {
      "type": "http",
      "url": "https://search.example.com/mcp",
      "headers": {"Authorization": "Bearer ` + searchToken + `", "X-Tenant": "${TENANT}", "X-Api-Key": "` + searchKey + `"}
    },
    "keyed": {
      "type": "http",
      "url": "KEYED_URL?api_key=` + keyedQueryKey + `&tenant=acme",
      "headers": {"X-Api-Key": "` + keyedHeaderKey + `"}
    }
  }
}
`

// importVars is what import must ask for: each variable, the server and key
// the secret was under, and the secret, which the test then sets.
var importVars = map[string]struct{ server, key, value string }{
	"GITHUB_PERSONAL_ACCESS_TOKEN": {"github", "env.GITHUB_PERSONAL_ACCESS_TOKEN", githubPAT},
	"DOCS_X_API_KEY":               {"docs", "headers.X-Api-Key", docsAPIKey},
	"OPENAI_API_KEY":               {"memory", "env.OPENAI_API_KEY", openAIKey},
	"SEARCH_TOKEN":                 {"search", "headers.Authorization", searchToken},
	"SEARCH_X_API_KEY":             {"search", "headers.X-Api-Key", searchKey},
	"KEYED_API_KEY":                {"keyed", "url", keyedQueryKey},
	"KEYED_X_API_KEY":              {"keyed", "headers.X-Api-Key", keyedHeaderKey},
}

// importEnv is the agents' environment for both views: the variables that
// the configs already referenced, and the secrets that import turned into
// variables.
func importEnv() map[string]string {
	env := map[string]string{"PATH_EXTRA": "/opt/extra", "DOCS_TOKEN": "docs-token-value", "DOCS_ORG": "org-7", "TENANT": "tenant-9"}
	for name, v := range importVars {
		env[name] = v.value
	}
	return env
}

// TestImportRoundTrip imports a realistic Codex config.toml and Claude
// .mcp.json, emits the manifest back into copies of both files (--force:
// the entries become mcpgen's), and asks the real Codex and Claude Code
// what each server is, before and after. With the variables that import
// asked for set to the secrets, every server must be the same: same
// command, args, effective environment, cwd, url, effective headers,
// timeouts, enabled flag and tool filters. No secret may reach the
// manifest, the emitted files, their backups where git sees them, or
// import's output, and Codex's approval table and the rest of the user's
// file must stay. The project's servers stay out of the user's Codex
// config (scope = "project"); the project's own Codex config gets the
// keyed server as mcpgen serve, and the real Codex and Claude Code both
// reach it with its keys, which only the environment holds.
func TestImportRoundTrip(t *testing.T) {
	sb := newSandbox(t)
	keyed := startKeyedServer(t)
	codexHome := sb.path("codex-home")
	project := sb.path("project")
	codexConfig := sb.write(filepath.Join(codexHome, "config.toml"), importCodexConfig)
	claudeConfig := sb.write(filepath.Join(project, ".mcp.json"), strings.ReplaceAll(importClaudeConfig, "KEYED_URL", keyed.url()))
	vars := importEnv()
	var env []string
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	codexEnv := append(slices.Clone(env), "CODEX_HOME="+codexHome)
	codexNames, claudeNames := []string{"github", "docs"}, []string{"memory", "search", "keyed"}

	before := map[string]string{}
	for _, name := range codexNames {
		before["codex/"+name] = sb.codexView(codexEnv, name, vars)
	}
	for _, name := range claudeNames {
		before["claude/"+name] = sb.claudeView(project, env, name, vars)
	}

	// The manifest is the project's, beside its .mcp.json: the project's
	// own configs find it from where the agent runs.
	manifest := filepath.Join(project, "mcpgen.toml")
	res := sb.must(run{args: []string{mcpgen, "import", codexConfig, claudeConfig, "-o", manifest}})
	asked := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^  ([A-Z0-9_]+): server ([a-z]+), ([A-Za-z0-9_.\[\]-]+) \(`).FindAllStringSubmatch(res.stderr, -1) {
		asked[m[1]] = m[2] + " " + m[3]
	}
	want := map[string]string{}
	for name, v := range importVars {
		want[name] = v.server + " " + v.key
	}
	if !maps.Equal(asked, want) {
		t.Errorf("import asks for the variables %v, want %v\n%s", asked, want, res.stderr)
	}
	sb.mcpgen("", "validate", "--manifest", manifest)

	// Back into the users' files: --force, since their entries were written
	// by hand. The old files are kept: the project's in the state dir, out
	// of the work tree, the user's beside it; each readable by its owner
	// alone, and emit says that they hold the secrets.
	state := sb.path("state")
	stateEnv := []string{"MCPGEN_STATE_DIR=" + state}
	codexEmit := sb.must(run{env: stateEnv, args: []string{mcpgen, "emit", "-p", "codex", "-m", manifest, "-o", codexConfig, "--force", "--mcpgen-path", mcpgen}})
	if !strings.Contains(codexEmit.stderr, `left out memory, search, keyed (scope = "project")`) {
		t.Errorf("emit into the user's Codex config does not say it left the project's servers out:\n%s", codexEmit.stderr)
	}
	claudeEmit := sb.must(run{env: stateEnv, args: []string{mcpgen, "emit", "-p", "claude", "-m", manifest, "-o", claudeConfig, "--force", "--mcpgen-path", mcpgen}})
	// The project's own Codex config: every server, keyed through mcpgen
	// serve, since Codex expands no ${VAR} in a url.
	projectCodex := filepath.Join(project, ".codex", "config.toml")
	sb.must(run{env: stateEnv, args: []string{mcpgen, "emit", "-p", "codex", "-m", manifest, "-o", projectCodex, "--mcpgen-path", mcpgen}})

	if _, err := os.Stat(claudeConfig + ".bak"); err == nil {
		t.Errorf("%s.bak is in the project, where git sees it", claudeConfig)
	}
	backups, _ := filepath.Glob(filepath.Join(state, "_backups", "project-*", ".mcp.json.bak"))
	codexBackup := codexConfig + ".bak"
	if len(backups) != 1 {
		t.Fatalf("no backup of .mcp.json in the state dir %s: %v\n%s", state, backups, claudeEmit.stderr)
	}
	for emitted, b := range map[string]string{claudeEmit.stderr: backups[0], codexEmit.stderr: codexBackup} {
		if !strings.Contains(emitted, "(previous content in "+b+")") || !strings.Contains(emitted, b+" holds ") {
			t.Errorf("emit does not say where the old file is and that it holds secrets (%s):\n%s", b, emitted)
		}
		if fi, err := os.Stat(b); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("the backup %s: %v, mode %v; want 0600", b, err, fi.Mode())
		}
	}

	for _, f := range []string{manifest, codexConfig, claudeConfig, projectCodex} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for name, v := range importVars {
			if strings.Contains(string(data), v.value) {
				t.Errorf("%s holds the secret of %s", f, name)
			}
			if strings.Contains(res.stderr, v.value) {
				t.Errorf("import's output shows the secret of %s", name)
			}
		}
	}
	codexAfter, err := os.ReadFile(codexConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, keep := range []string{"# my codex config\nmodel = \"o3\"\n", "[mcp_servers.github.tools.create_issue]\napproval_mode = \"approve\"\n"} {
		if !strings.Contains(string(codexAfter), keep) {
			t.Errorf("the emitted config.toml lost %q:\n%s", keep, codexAfter)
		}
	}
	// Codex's strict loader accepts the result, with the user's servers
	// and none of the project's.
	got, out := sb.validateCodex(nil, nil, codexConfig, codexNames...)
	if !sameSet(got, codexNames) {
		t.Errorf("codex mcp list sees %q, want %q\n%s", got, codexNames, out)
	}

	for _, name := range codexNames {
		after := sb.codexView(codexEnv, name, vars)
		if b := before["codex/"+name]; after != b {
			t.Errorf("codex mcp get %s: the server changed\nbefore: %s\nafter:  %s", name, b, after)
		}
	}
	for _, name := range claudeNames {
		after := sb.claudeView(project, env, name, vars)
		if b := before["claude/"+name]; after != b {
			t.Errorf("claude mcp get %s: the server changed\nbefore: %s\nafter:  %s", name, b, after)
		}
	}

	// The project's Codex config passes Codex's strict loader.
	sb.validateCodex(nil, []string{"--in-project", project}, projectCodex, "keyed", "memory", "github")

	// The keyed server, started by the real clients (on loopback: no
	// network namespace) from the emitted files, with the keys in their
	// environment only: Codex runs mcpgen serve, which resolves them from
	// the env_vars Codex passes; Claude Code expands its own ${VAR}s.
	codexKeyed := tomlTable(t, projectCodex, "keyed")
	sb.write("health/codex/.codex/config.toml", codexKeyed)
	if !strings.Contains(codexKeyed, `args = ["serve", "keyed"]`) || !strings.Contains(codexKeyed, `"KEYED_API_KEY"`) {
		t.Errorf("the project's Codex entry of keyed is not mcpgen serve with KEYED_API_KEY passed:\n%s", codexKeyed)
	}
	sb.write("health/codex/mcpgen.toml", mustRead(t, manifest))
	_, out = sb.validateCodex(env, []string{"--in-project", sb.path("health/codex"), "--health", "--no-netns"}, sb.path("health/codex/.codex/config.toml"), "keyed")
	if !strings.Contains(out, "OK keyed tools=[lookup]") {
		t.Errorf("Codex did not reach keyed through mcpgen serve:\n%s", out)
	}
	claudeKeyed := jsonServer(t, claudeConfig, "keyed")
	sb.write("health/claude/.mcp.json", claudeKeyed)
	if !strings.Contains(claudeKeyed, "api_key=${KEYED_API_KEY}") {
		t.Errorf("the Claude entry of keyed does not reference KEYED_API_KEY:\n%s", claudeKeyed)
	}
	sb.validateClaude(env, []string{"--health", "--no-netns"}, sb.path("health/claude/.mcp.json"))
	if inits, refused := keyed.counts(); inits < 2 || refused > 0 {
		t.Errorf("keyed got %d initialize requests with its keys (want one from each client at least) and %d without", inits, refused)
	}
}

// keyedServer is a Streamable HTTP MCP server on loopback that answers only
// requests that carry its keys: keyedQueryKey as the api_key of the url's
// query, keyedHeaderKey as X-Api-Key. It answers initialize, tools/list
// (one tool, lookup) and ping with JSON, accepts notifications, and has
// no GET stream.
type keyedServer struct {
	srv *httptest.Server

	mu      sync.Mutex
	inits   int // initialize requests with the keys
	refused int // requests to /mcp without them
}

func startKeyedServer(t *testing.T) *keyedServer {
	t.Helper()
	ks := &keyedServer{}
	ks.srv = httptest.NewServer(ks) // 127.0.0.1
	t.Cleanup(ks.srv.Close)
	return ks
}

func (ks *keyedServer) url() string { return ks.srv.URL + "/mcp" }

func (ks *keyedServer) counts() (inits, refused int) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	return ks.inits, ks.refused
}

func (ks *keyedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/mcp" {
		http.NotFound(w, r)
		return
	}
	if r.URL.Query().Get("api_key") != keyedQueryKey || r.Header.Get("X-Api-Key") != keyedHeaderKey {
		ks.mu.Lock()
		ks.refused++
		ks.mu.Unlock()
		http.Error(w, "missing or wrong key", http.StatusUnauthorized)
		return
	}
	switch r.Method {
	case http.MethodDelete:
		return
	case http.MethodPost:
	default:
		http.Error(w, "no stream", http.StatusMethodNotAllowed)
		return
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"params"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if len(req.ID) == 0 {
		w.WriteHeader(http.StatusAccepted) // a notification or a response
		return
	}
	var result any = map[string]any{}
	switch req.Method {
	case "initialize":
		ks.mu.Lock()
		ks.inits++
		ks.mu.Unlock()
		w.Header().Set("Mcp-Session-Id", "keyed-1")
		result = map[string]any{
			"protocolVersion": req.Params.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "keyed", "version": "1.0.0"},
		}
	case "tools/list":
		result = map[string]any{"tools": []any{map[string]any{
			"name": "lookup", "description": "Look a word up", "inputSchema": map[string]any{"type": "object"},
		}}}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
}

// tomlTable returns the [mcp_servers.NAME] table of a Codex config that
// mcpgen wrote, with its mark, as a file of its own.
func tomlTable(t *testing.T, file, name string) string {
	t.Helper()
	var out []string
	in := false
	for line := range strings.Lines(mustRead(t, file)) {
		switch {
		case strings.HasPrefix(line, "# mcpgen:") || strings.HasPrefix(line, "["):
			in = strings.TrimSpace(line) == "[mcp_servers."+name+"]" || in && strings.HasPrefix(line, "[mcp_servers."+name+".")
			if strings.HasPrefix(line, "# mcpgen:") {
				in = false
			}
		}
		if in {
			out = append(out, line)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s has no [mcp_servers.%s]", file, name)
	}
	return strings.Join(out, "")
}

// jsonServer returns a .mcp.json that holds the server NAME of file alone.
func jsonServer(t *testing.T, file, name string) string {
	t.Helper()
	var doc struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(mustRead(t, file)), &doc); err != nil || doc.MCPServers[name] == nil {
		t.Fatalf("%s: no server %s (%v)", file, name, err)
	}
	b, err := json.Marshal(map[string]any{"mcpServers": map[string]json.RawMessage{name: doc.MCPServers[name]}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustRead(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// codexView returns what the real Codex says of a server (codex mcp get
// --json), as a canonical JSON text of what the server gets: env and the
// env_vars that vars sets merged into one environment, and the literal
// headers, env_http_headers and bearer token merged into the headers sent.
func (sb *sandbox) codexView(env []string, name string, vars map[string]string) string {
	sb.t.Helper()
	res := sb.must(run{env: env, args: offline(os.Getenv("CODEX_BIN"), "mcp", "get", name, "--json")})
	var v struct {
		Enabled   bool `json:"enabled"`
		Transport struct {
			Type           string            `json:"type"`
			Command        string            `json:"command"`
			Args           []string          `json:"args"`
			Env            map[string]string `json:"env"`
			EnvVars        []any             `json:"env_vars"`
			Cwd            *string           `json:"cwd"`
			URL            string            `json:"url"`
			Bearer         *string           `json:"bearer_token_env_var"`
			HTTPHeaders    map[string]string `json:"http_headers"`
			EnvHTTPHeaders map[string]string `json:"env_http_headers"`
		} `json:"transport"`
		EnabledTools  []string `json:"enabled_tools"`
		DisabledTools []string `json:"disabled_tools"`
		Startup       *float64 `json:"startup_timeout_sec"`
		Tool          *float64 `json:"tool_timeout_sec"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &v); err != nil {
		sb.t.Fatalf("codex mcp get %s --json: %v\n%s", name, err, res.stdout)
	}
	tr := v.Transport
	view := map[string]any{
		"enabled": v.Enabled, "type": tr.Type, "command": tr.Command, "args": tr.Args, "cwd": tr.Cwd, "url": tr.URL,
		"enabled_tools": v.EnabledTools, "disabled_tools": v.DisabledTools, "startup": v.Startup, "tool": v.Tool,
	}
	effEnv := map[string]string{}
	maps.Copy(effEnv, tr.Env)
	for _, e := range tr.EnvVars {
		n, _ := e.(string)
		if val, ok := vars[n]; ok {
			effEnv[n] = val
		}
	}
	headers := map[string]string{}
	maps.Copy(headers, tr.HTTPHeaders)
	for h, n := range tr.EnvHTTPHeaders {
		headers[h] = vars[n]
	}
	if tr.Bearer != nil {
		headers["Authorization"] = "Bearer " + vars[*tr.Bearer]
	}
	view["env"], view["headers"] = effEnv, headers
	b, err := json.Marshal(view) // map keys sorted: canonical
	if err != nil {
		sb.t.Fatal(err)
	}
	return string(b)
}

// claudeView returns what the real Claude Code says of a server of the
// project (claude mcp get), as a canonical JSON text: its type, command,
// args, environment, timeout, url and headers, with every ${VAR} that vars
// sets expanded (Claude shows references unexpanded, and without their
// default).
func (sb *sandbox) claudeView(project string, env []string, name string, vars map[string]string) string {
	sb.t.Helper()
	res := sb.must(run{dir: project, env: env, args: offline(os.Getenv("CLAUDE_BIN"), "mcp", "get", name)})
	ref := regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}`)
	expand := func(s string) string {
		return ref.ReplaceAllStringFunc(s, func(m string) string {
			if v, ok := vars[ref.FindStringSubmatch(m)[1]]; ok {
				return v
			}
			return m
		})
	}
	view := map[string]any{}
	envs, headers := map[string]string{}, map[string]string{}
	block := ""
	for _, line := range strings.Split(res.stdout, "\n") {
		switch {
		case strings.HasPrefix(line, "    ") && block == "Environment":
			k, v, _ := strings.Cut(strings.TrimSpace(line), "=")
			envs[k] = expand(v)
		case strings.HasPrefix(line, "    ") && block == "Headers":
			k, v, _ := strings.Cut(strings.TrimSpace(line), ": ")
			headers[k] = expand(v)
		case strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   "):
			k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
			block = k
			switch k {
			case "Type", "Command", "Args", "Timeout", "URL", "Scope":
				view[k] = expand(strings.TrimSpace(v))
			}
		}
	}
	if view["Type"] == nil {
		sb.t.Fatalf("claude mcp get %s: no Type in\n%s", name, res.stdout)
	}
	view["Environment"], view["Headers"] = envs, headers
	b, err := json.Marshal(view)
	if err != nil {
		sb.t.Fatal(err)
	}
	return string(b)
}

// TestImportClaudeUserFile imports ~/.claude.json with --project: the
// user's servers and the project's local ones, where the local server wins
// over the user server of the same name, as in Claude Code. Emitted into the
// user config of a fresh home, the real Claude Code must see each server as
// it saw it before (its scope aside), with the secret now a variable.
func TestImportClaudeUserFile(t *testing.T) {
	sb := newSandbox(t)
	project := sb.path("project")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	claudeJSON := `{
  "numStartups": 7,
  "mcpServers": {
    "tools": {"command": "user-tools", "args": ["--stdio"]},
    "shared": {"command": "user-shared"}
  },
  "projects": {
    "` + project + `": {
      "allowedTools": [],
      "mcpServers": {
        "shared": {"type": "stdio", "command": "local-shared", "env": {"OPENAI_API_KEY": "` + openAIKey + `"}},
        "api": {"type": "http", "url": "https://api.example.com/mcp", "headers": {"Authorization": "Bearer ${API_TOKEN}"}}
      }
    },
    "/somewhere/else": {"mcpServers": {"other": {"command": "other"}}}
  }
}`
	userFile := sb.write(filepath.Join(sb.home, ".claude.json"), claudeJSON)
	vars := map[string]string{"OPENAI_API_KEY": openAIKey, "API_TOKEN": "api-token-value"}
	env := []string{"OPENAI_API_KEY=" + openAIKey, "API_TOKEN=api-token-value"}
	names := []string{"tools", "shared", "api"}
	before := map[string]string{}
	for _, name := range names {
		before[name] = withoutScope(t, sb.claudeView(project, env, name, vars))
	}
	if !strings.Contains(before["shared"], "local-shared") {
		t.Fatalf("the real Claude Code does not prefer the local server: %s", before["shared"])
	}

	manifest := sb.path("mcpgen.toml")
	res := sb.must(run{args: []string{mcpgen, "import", userFile, "--project", project, "-o", manifest}})
	if !strings.Contains(res.stderr, "  OPENAI_API_KEY: server shared, env.OPENAI_API_KEY") {
		t.Errorf("import does not ask for OPENAI_API_KEY:\n%s", res.stderr)
	}

	// A fresh home, as on another machine.
	fresh := sb.path("fresh-home")
	if err := os.Mkdir(fresh, 0o700); err != nil {
		t.Fatal(err)
	}
	freshEnv := append(slices.Clone(env), "HOME="+fresh)
	sb.must(run{env: freshEnv, args: []string{mcpgen, "emit", "-p", "claude", "-m", manifest, "--write", "--scope", "user", "--mcpgen-path", mcpgen}})
	data, err := os.ReadFile(filepath.Join(fresh, ".claude.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), openAIKey) {
		t.Errorf("the emitted ~/.claude.json holds the secret:\n%s", data)
	}
	for _, name := range names {
		after := withoutScope(t, sb.claudeView(project, freshEnv, name, vars))
		if after != before[name] {
			t.Errorf("claude mcp get %s: the server changed\nbefore: %s\nafter:  %s", name, before[name], after)
		}
	}
}

// withoutScope drops the scope from a claudeView: a local server comes back
// as a user server.
func withoutScope(t *testing.T, view string) string {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(view), &v); err != nil {
		t.Fatal(err)
	}
	delete(v, "Scope")
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
