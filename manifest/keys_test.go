package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// sampleOverrides are values for keys whose type alone does not make a
// valid one: a form, or a value that other keys must agree with.
var sampleOverrides = map[string]string{
	"name":             `"acme"`,
	"prefix":           `"acme-"`,
	"bearer_token_env": `"DOCS_TOKEN"`,
	"url":              `"https://mcp.example.com/mcp"`,
	"command":          `"node"`,
	"builtin":          `"files"`,
	"version":          `1`,
	"enabled_tools":    `["t"]`,
	"disabled_tools":   `["t"]`,
	"run":              `["echo", "{a}"]`,
	"listen":           `"127.0.0.1:8080"`,
	"auth":             `{ token_env = "MCPGEN_TOKEN" }`,
	"issuer":           `"https://auth.example.com"`,
	"audience":         `"https://mcp.example.com/mcp"`,
	"jwks_url":         `"https://auth.example.com/jwks"`,
	"required_scopes":  `["mcp:tools"]`,
	"read":             `["/usr", "~/.npm", "{workspace}/src", "${HOME}/x"]`,
	"write":            `["{workspace}"]`,
}

// companions are the lines that a key of tables needs beside it: the keys
// it requires, each with a valid value, and, in a table that must set one
// of some keys (needsOne), the first of them unless k is one.
func companions(k keySpec, table []keySpec) string {
	var lines []string
	for _, r := range k.requires {
		for _, o := range table {
			if o.name == r {
				valid, _ := samples(o)
				lines = append(lines, r+" = "+valid)
			}
		}
	}
	return strings.Join(lines, "\n")
}

// samples returns a TOML value of the type that k states, which the
// decoder must accept, and a value of another type, which it must refuse.
func samples(k keySpec) (valid, invalid string) {
	pair := map[valueType][2]string{
		typeString:   {`"x"`, `1`},
		typeTemplate: {`"x"`, `1`},
		typeBool:     {`true`, `"yes"`},
		typeInteger:  {`1`, `"1"`},
		typeNumber:   {`0.5`, `"0.5"`},
		typeDuration: {`"1m30s"`, `true`},
		typeSize:     {`"512M"`, `true`},
		typeStrings:  {`["x"]`, `1`},
		typeArgv:     {`["make", "-C", "${WORKSPACE_DIR}"]`, `1`},
		typeGlobs:    {`["src/**/*.go"]`, `1`},
		typeVars:     {`{ A_1 = "b" }`, `1`},
		typeContext:  {`["WORKSPACE_ID"]`, `"x"`},
		typeTable:    {`{}`, `1`},
		typeMap:      {`{}`, `1`},
		typeScalar:   {`"x"`, `[1]`},
		typeScalars:  {`["x"]`, `"x"`},
		typeNetwork:  {`["api.github.com:443"]`, `1`},
	}[k.typ]
	valid, invalid = pair[0], pair[1]
	if v, ok := sampleOverrides[k.name]; ok {
		valid = v
	}
	if k.enum != nil {
		valid = fmt.Sprintf("%q", k.enum[0])
		if k.typ == typeStrings {
			valid = fmt.Sprintf("[%q]", k.enum[0])
		}
	}
	switch k.name {
	case "headers":
		valid = `{ X-Tenant = "acme" }`
	case "tools":
		if k.typ == typeMap { // a server's; [gateway]'s is a string
			valid = `{ t = { run = ["echo"] } }`
		}
	case "args":
		if k.typ == typeMap {
			valid = `{ a = { type = "string" } }`
		}
	}
	return valid, invalid
}

// placement is where a key of one table is written in a manifest: the
// text before it, the text after it, and the path of the table.
type placement struct {
	before, after string
	path          []string
}

// serverBases are a minimal server of each kind, without the key that
// makes its kind (added unless the key tested is that one).
var serverBases = map[Kind]string{
	KindCommand:  `command = "node"`,
	KindBuiltin:  `builtin = "files"`,
	KindDeclared: `tools.t = { run = ["echo"] }`,
	KindRemote:   `url = "https://mcp.example.com/mcp"`,
}

// TestKeyTablesAgree checks, for every key of every table, that the
// decoder takes a value of the type that the table (and so the schema)
// states, and refuses a value of another type at that key; and, for
// server keys, that each kind allows exactly the keys the table says.
// A decode function that reads another type than its table states, or a
// table that names a key no function decodes, fails here.
func TestKeyTablesAgree(t *testing.T) {
	check := func(t *testing.T, k keySpec, doc string, keyPath []string, wantOK bool) {
		t.Helper()
		_, err := Parse([]byte(doc), "m.toml", "/")
		var errs Errors
		if err != nil && !errors.As(err, &errs) {
			t.Fatalf("%s: got %v, want Errors", doc, err)
		}
		at := dotted(keyPath)
		var here []string
		for _, e := range errs {
			if e.Path == at || strings.HasPrefix(e.Path, at+".") || strings.HasPrefix(e.Path, at+"[") {
				here = append(here, e.Error())
			}
		}
		switch {
		case wantOK && err != nil:
			t.Errorf("key %s: the decoder refuses a value of the type the table states:\n%s\ngot: %v", at, doc, err)
		case !wantOK && len(here) == 0:
			t.Errorf("key %s: the decoder takes a value of another type than the table states:\n%s\ngot errors: %v", at, doc, err)
		}
	}
	tables := []struct {
		name  string
		keys  []keySpec
		place placement
	}{
		{"top", topKeys.specs(), placement{"", "", nil}},
		{"workspace", workspaceKeys.specs(), placement{"[workspace]\n", "", []string{"workspace"}}},
		{"session", sessionKeys.specs(), placement{"[session]\n", "", []string{"session"}}},
		// Every key of [session.auth] but tokens_file beside one that
		// admits agents, which the table needs.
		{"session.auth", authKeys.specs(), placement{"[session.auth]\n", "tokens_file = \"tokens\"\n", []string{"session", "auth"}}},
		{"gateway", gatewayKeys.specs(), placement{"[gateway]\n", "", []string{"gateway"}}},
		{"sandbox", sandboxKeys.specs(), placement{"[sandbox]\n", "", []string{"sandbox"}}},
		{"server sandbox", sandboxKeys.specs(), placement{"[servers.s]\ncommand = \"node\"\n[servers.s.sandbox]\n", "", []string{"servers", "s", "sandbox"}}},
		{"arg", argKeys.specs(), placement{"[servers.g.tools.t]\nrun = [\"echo\", \"{a}\"]\n[servers.g.tools.t.args.a]\n", "", []string{"servers", "g", "tools", "t", "args", "a"}}},
	}
	for _, tb := range tables {
		for _, k := range tb.keys {
			t.Run(tb.name+"/"+k.name, func(t *testing.T) {
				valid, invalid := samples(k)
				path := append(slices.Clone(tb.place.path), k.name)
				after := tb.place.after
				if k.name == "tokens_file" {
					after = ""
				}
				if c := companions(k, tb.keys); c != "" {
					after += c + "\n"
				}
				check(t, k, tb.place.before+k.name+" = "+valid+"\n"+after, path, true)
				check(t, k, tb.place.before+k.name+" = "+invalid+"\n"+after, path, false)
			})
		}
	}
	for _, k := range toolKeys.specs() {
		t.Run("tool/"+k.name, func(t *testing.T) {
			valid, invalid := samples(k)
			base := map[string]string{"run": `run = ["echo", "{a}"]`, "args": `args.a = { type = "string" }`}
			var lines []string
			for _, other := range []string{"run", "args"} {
				if other != k.name {
					lines = append(lines, base[other])
				}
			}
			doc := func(v string) string {
				return "[servers.g.tools.t]\n" + strings.Join(append(lines, k.name+" = "+v), "\n") + "\n"
			}
			path := []string{"servers", "g", "tools", "t", k.name}
			check(t, k, doc(valid), path, true)
			check(t, k, doc(invalid), path, false)
		})
	}
	for _, k := range serverKeys.specs() {
		for _, kind := range []Kind{KindCommand, KindBuiltin, KindDeclared, KindRemote} {
			t.Run(fmt.Sprintf("server/%s/%s", kind, k.name), func(t *testing.T) {
				valid, invalid := samples(k)
				base := serverBases[kind]
				if k.kind && k.allows(kind) {
					base = "" // the key tested makes the kind
				}
				doc := func(v string) string {
					return "[servers.s]\n" + strings.TrimPrefix(base+"\n", "\n") + k.name + " = " + v + "\n"
				}
				path := []string{"servers", "s", k.name}
				check(t, k, doc(valid), path, k.allows(kind))
				check(t, k, doc(invalid), path, false)
			})
		}
	}
}

// TestSchemaFollowsTables checks the schema's shape against the tables:
// every key, at its place, with the type the table states.
func TestSchemaFollowsTables(t *testing.T) {
	var schema map[string]any
	if err := json.Unmarshal(Schema(), &schema); err != nil {
		t.Fatalf("the schema is not JSON: %v", err)
	}
	if schema["$schema"] != SchemaDialect {
		t.Errorf("$schema: got %v, want %s", schema["$schema"], SchemaDialect)
	}
	props := func(s map[string]any) []string {
		p, _ := s["properties"].(map[string]any)
		var names []string
		for n := range p {
			names = append(names, n)
		}
		slices.Sort(names)
		return names
	}
	sorted := func(names []string) []string {
		names = slices.Clone(names)
		slices.Sort(names)
		return names
	}
	if got, want := props(schema), sorted(topKeys.names()); !slices.Equal(got, want) {
		t.Errorf("top-level properties: got %v, want %v", got, want)
	}
	servers := schema["properties"].(map[string]any)["servers"].(map[string]any)["additionalProperties"].(map[string]any)
	kinds := servers["oneOf"].([]any)
	if len(kinds) != 4 {
		t.Fatalf("server kinds in the schema: got %d, want 4", len(kinds))
	}
	for i, kind := range []Kind{KindCommand, KindBuiltin, KindDeclared, KindRemote} {
		var want []string
		for _, k := range serverKeys {
			if k.allows(kind) {
				want = append(want, k.name)
			}
		}
		if got := props(kinds[i].(map[string]any)); !slices.Equal(got, sorted(want)) {
			t.Errorf("%s server properties: got %v, want %v", kind, got, sorted(want))
		}
	}
	cmd := kinds[0].(map[string]any)["properties"].(map[string]any)
	for name, want := range map[string]string{"command": "string", "args": "array", "env": "object", "enabled": "boolean", "cpu_max": "number"} {
		if got := cmd[name].(map[string]any)["type"]; got != want {
			t.Errorf("command server key %s: schema type %v, want %s", name, got, want)
		}
	}
}
