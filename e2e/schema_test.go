//go:build unix

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	json "github.com/goccy/go-json"
	"github.com/pelletier/go-toml/v2"
)

// ajvVersion is the JSON Schema validator that checks mcpgen schema: a
// third-party implementation of draft 2020-12, in strict mode.
const ajvVersion = "8.20.0"

// ajvModules installs ajv, pinned, into a cache beside the other clients'
// (npm, like e2e/clients/install.sh), and returns its node_modules.
func ajvModules(t *testing.T) string {
	t.Helper()
	base := os.Getenv("MCPGEN_CLIENTS_DIR")
	if base == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			t.Fatalf("no cache directory for ajv: %v (set MCPGEN_CLIENTS_DIR)", err)
		}
		base = filepath.Join(cache, "mcpgen-clients")
	}
	dir := filepath.Join(base, "ajv-"+ajvVersion)
	nm := filepath.Join(dir, "node_modules")
	if _, err := os.Stat(filepath.Join(nm, "ajv", "package.json")); err == nil {
		return nm
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"mcpgen-ajv","private":true}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "ajv@"+ajvVersion)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install ajv@%s: %v\n%s", ajvVersion, err, out)
	}
	return nm
}

// ajvScript compiles the schema with Ajv's draft 2020-12 class in strict
// mode (unknown keywords, ambiguous types and the like are errors) and
// prints, for each document, whether it is valid and the first error.
const ajvScript = `
const path = require("path");
const fs = require("fs");
const [nm, schemaFile, docsFile] = process.argv.slice(2);
const Ajv2020 = require(path.join(nm, "ajv", "dist", "2020")).default;
const ajv = new Ajv2020({ strict: true, allErrors: true });
const validate = ajv.compile(JSON.parse(fs.readFileSync(schemaFile, "utf8")));
const docs = JSON.parse(fs.readFileSync(docsFile, "utf8"));
const out = {};
for (const [name, doc] of Object.entries(docs)) {
  const ok = validate(doc);
  out[name] = { valid: ok, error: ok ? "" : ajv.errorsText(validate.errors) };
}
console.log(JSON.stringify(out));
`

// invalidManifests are manifests that mcpgen validate refuses and whose
// problem is one of shape, which the schema must refuse too.
var invalidManifests = map[string]string{
	"misspelled key":        "[servers.git]\ncomand = \"git\"\n",
	"no kind":               "[servers.git]\ndescription = \"x\"\n",
	"two kinds":             "[servers.x]\ncommand = \"a\"\nurl = \"https://x.example/mcp\"\n",
	"key of another kind":   "[servers.docs]\nurl = \"https://x.example/mcp\"\nargs = [\"a\"]\n",
	"run as a string":       "[servers.g.tools.s]\nrun = \"git status\"\n",
	"duration as a number":  "[servers.x]\ncommand = \"a\"\nstartup_timeout = 30\n",
	"reserved name":         "[servers.workspace]\ncommand = \"a\"\n",
	"unknown builtin":       "[servers.f]\nbuiltin = \"file\"\n",
	"env not a string":      "[servers.x]\ncommand = \"a\"\nenv = { PORT = 8080 }\n",
	"bad prefix":            "prefix = \"a.b\"\n",
	"version 2":             "version = 2\n",
	"default of wrong type": "[servers.g.tools.l]\nrun = [\"ls\", \"{n}\"]\nargs.n = { type = \"integer\", default = \"ten\" }\n",
	"unknown top-level key": "verison = 1\n",
	"tls_cert alone":        "[session]\nlisten = \"127.0.0.1:0\"\ntls_cert = \"c.pem\"\n",
	"auth admits no one":    "[session]\nidle_exit = \"1m\"\n[session.auth]\n",
	"audience alone":        "[session.auth]\ntoken_env = \"T\"\naudience = \"https://mcp.example.com/mcp\"\n",
	"listen as a number":    "[session]\nlisten = 8080\n",
}

// validManifests are manifests that mcpgen validate accepts, besides the
// repository's examples: the schema must accept them too.
var validManifests = map[string]string{
	"the workspace over HTTP": `[session]
listen = "127.0.0.1:8080"
tls_cert = "tls/cert.pem"
tls_key = "tls/key.pem"
session_timeout = "1h"
[session.auth]
token_env = "MCPGEN_TOKEN"
tokens_file = "tokens"
issuer = "https://auth.example.com"
audience = "https://mcp.example.com/mcp"
jwks_url = "https://auth.example.com/jwks"
required_scopes = ["mcp:tools"]
`,
	"auth by an issuer alone": "[session.auth]\nissuer = \"https://auth.example.com\"\n",
}

// TestSchemaAcceptedByAjv checks mcpgen schema with a JSON Schema
// validator nobody here wrote: it must compile in strict mode, accept the
// repository's example manifests, and refuse manifests whose shape mcpgen
// validate refuses, each for the same reason.
func TestSchemaAcceptedByAjv(t *testing.T) {
	sb := newSandbox(t)
	nm := ajvModules(t)
	schema := sb.write("mcpgen.schema.json", sb.mcpgen("", "schema").stdout)

	examples := map[string]string{
		"manifest/testdata/full.toml":            filepath.Join("..", "manifest", "testdata", "full.toml"),
		"cmd/mcpgen/testdata/golden/mcpgen.toml": filepath.Join("..", "cmd", "mcpgen", "testdata", "golden", "mcpgen.toml"),
		"templates/starter.toml":                 filepath.Join("..", "templates", "starter.toml"),
		"templates/demo.toml":                    filepath.Join("..", "templates", "demo.toml"),
	}
	docs := map[string]any{}
	for name, path := range examples {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// mcpgen accepts it, so the schema must.
		sb.mcpgen("", "validate", "--manifest", sb.write("examples/"+filepath.Base(path), string(data)))
		docs[name] = tomlToJSON(t, name, data)
	}
	for name, text := range validManifests {
		sb.mcpgen("", "validate", "--manifest", sb.write("valid/"+strings.ReplaceAll(name, " ", "-")+".toml", text))
		docs[name] = tomlToJSON(t, name, []byte(text))
	}
	for name, text := range invalidManifests {
		file := sb.write("invalid/"+strings.ReplaceAll(name, " ", "-")+".toml", text)
		if res := sb.try(run{args: []string{mcpgen, "validate", "--manifest", file}}); res.err == nil {
			t.Errorf("mcpgen validate accepts %q, which the test takes for invalid:\n%s", name, text)
		}
		docs["invalid: "+name] = tomlToJSON(t, name, []byte(text))
	}
	docsFile := sb.path("docs.json")
	b, err := json.Marshal(docs)
	if err != nil {
		t.Fatal(err)
	}
	sb.write(docsFile, string(b))
	script := sb.write("ajv-check.cjs", ajvScript)
	res := sb.must(run{args: []string{node, script, nm, schema, docsFile}})
	var got map[string]struct {
		Valid bool   `json:"valid"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &got); err != nil {
		t.Fatalf("ajv-check: %v\n%s", err, res)
	}
	names := make([]string, 0, len(docs))
	for name := range docs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		r, ok := got[name]
		want := !strings.HasPrefix(name, "invalid: ")
		switch {
		case !ok:
			t.Errorf("ajv did not check %s", name)
		case r.Valid != want && want:
			t.Errorf("ajv refuses %s, which mcpgen validate accepts: %s", name, r.Error)
		case r.Valid != want:
			t.Errorf("ajv accepts %s, which mcpgen validate refuses", name)
		}
	}
}

// tomlToJSON decodes a manifest as the editors do: TOML tables become JSON
// objects.
func tomlToJSON(t *testing.T, name string, data []byte) any {
	t.Helper()
	var v map[string]any
	if err := toml.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}
