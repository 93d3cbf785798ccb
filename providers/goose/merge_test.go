package goose

import (
	"bytes"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/mcpgen/mcpgen/providers"
)

// A config as Goose writes it, with what a person adds: comments, blank lines, another
// setting after the extensions, an extension of their own.
const existing = `# Goose, set up by hand
GOOSE_PROVIDER: anthropic  # the provider
GOOSE_MODEL: claude-sonnet-4

extensions:
  # Goose's own
  developer:
    bundled: true
    display_name: Developer
    enabled: true
    name: developer
    timeout: 300
    type: builtin
  mine:
    enabled: true
    type: stdio
    name: mine
    cmd: my-mcp   # keep me
    args: []
    envs: {}

# after the extensions
GOOSE_MODE: smart_approve
`

func rendered(name, cmd string) providers.Rendered {
	var m mapping
	m.add("enabled", boolNode(true))
	m.add("type", str("stdio"))
	m.add("name", str(name))
	m.add("description", str(""))
	m.add("cmd", str(cmd))
	m.add("args", strs([]string{"--stdio"}))
	m.add("envs", &yaml.Node{Kind: yaml.MappingNode})
	m.add("env_keys", strs([]string{"API_KEY"}))
	m.add("timeout", null())
	m.add("bundled", null())
	m.add("available_tools", strs(nil))
	return providers.Rendered{Name: name, Value: m.bytes()}
}

var mine = providers.MergeOptions{Owner: "/p/mcpgen.toml"}

func mustMerge(t *testing.T, in string, entries []providers.Rendered, o providers.MergeOptions) string {
	t.Helper()
	out, err := Merge([]byte(in), entries, o)
	if err != nil {
		t.Fatalf("Merge: %v", err)
	}
	return string(out)
}

// without removes what Merge adds: the blocks of the named entries and of _mcpgen, each
// from its key to the first blank line or line indented no deeper than the key.
func without(t *testing.T, s string, names ...string) string {
	t.Helper()
	var keep []string
	skipAt := -1 // the indentation of the key whose block is skipped
	for _, line := range strings.SplitAfter(s, "\n") {
		text := strings.TrimRight(line, "\r\n")
		indent := len(text) - len(strings.TrimLeft(text, " "))
		if skipAt >= 0 && strings.TrimSpace(text) != "" && indent > skipAt {
			continue
		}
		skipAt = -1
		key := strings.TrimSuffix(strings.TrimSpace(text), ":")
		if text == "_mcpgen:" || indent == 2 && slices.Contains(names, key) && strings.HasSuffix(text, ":") {
			skipAt = indent
			continue
		}
		keep = append(keep, line)
	}
	return strings.Join(keep, "")
}

func TestMergeKeepsTheFile(t *testing.T) {
	entries := []providers.Rendered{rendered("a", "a-mcp"), rendered("b", "b-mcp")}
	out := mustMerge(t, existing, entries, mine)
	if got := without(t, out, "a", "b"); got != existing {
		t.Errorf("everything but the new entries and the record must stay (-want +got):\nwant:\n%s\ngot:\n%s", existing, got)
	}
	// The new entries go after the last extension, before the comment that ends them.
	if i, j := strings.Index(out, "  a:\n"), strings.Index(out, "# after the extensions"); i < 0 || i > j || i < strings.Index(out, "cmd: my-mcp") {
		t.Errorf("entry a is not right after mine:\n%s", out)
	}
	if again := mustMerge(t, out, entries, mine); again != out {
		t.Errorf("a second merge changed the file:\n%s", again)
	}
	// Goose reads it: extensions holds the three, as ExtensionEntry values.
	var cfg struct {
		Extensions map[string]struct {
			Enabled bool     `yaml:"enabled"`
			Type    string   `yaml:"type"`
			Cmd     string   `yaml:"cmd"`
			EnvKeys []string `yaml:"env_keys"`
		} `yaml:"extensions"`
		Mode string `yaml:"GOOSE_MODE"`
	}
	if err := yaml.Unmarshal([]byte(out), &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Extensions) != 4 || cfg.Extensions["a"].Cmd != "a-mcp" || cfg.Extensions["b"].EnvKeys[0] != "API_KEY" || cfg.Mode != "smart_approve" {
		t.Errorf("read back: %+v\n%s", cfg, out)
	}
	owned, err := Owners([]byte(out))
	if err != nil || len(owned) != 2 || owned[0] != (providers.Owned{Name: "a", Owner: mine.Owner}) || owned[1].Name != "b" {
		t.Errorf("Owners = %v, %v", owned, err)
	}

	// Removing b, replacing a: mine, the comments and the settings stay.
	out2 := mustMerge(t, out, []providers.Rendered{rendered("a", "a2-mcp")}, mine)
	if got := without(t, out2, "a"); got != existing {
		t.Errorf("after removing b (-want +got):\nwant:\n%s\ngot:\n%s", existing, got)
	}
	if strings.Contains(out2, "b-mcp") || !strings.Contains(out2, "cmd: a2-mcp") {
		t.Errorf("b not removed or a not replaced:\n%s", out2)
	}
	// No entries at all: the file is back to what it was.
	if out3 := mustMerge(t, out2, nil, mine); out3 != existing {
		t.Errorf("without entries (-want +got):\nwant:\n%s\ngot:\n%s", existing, out3)
	}
}

// An extensions mapping whose every entry goes is left {}: Goose reads null there as no
// mapping, warns, and falls back to none.
func TestMergeRemovesAll(t *testing.T) {
	out := mustMerge(t, "GOOSE_MODEL: x\n", []providers.Rendered{rendered("a", "a-mcp")}, mine)
	got := mustMerge(t, out, nil, mine)
	if got != "GOOSE_MODEL: x\nextensions: {}\n" {
		t.Errorf("without entries:\n%s", got)
	}
}

func TestMergeEmptyAndNew(t *testing.T) {
	for name, in := range map[string]string{
		"empty":            "",
		"comments only":    "# nothing yet\n",
		"no extensions":    "GOOSE_PROVIDER: openai\n",
		"no final newline": "GOOSE_PROVIDER: openai",
		"null extensions":  "extensions:\nGOOSE_PROVIDER: openai\n",
		"flow empty":       "extensions: {}\nGOOSE_PROVIDER: openai\n",
	} {
		t.Run(name, func(t *testing.T) {
			out := mustMerge(t, in, []providers.Rendered{rendered("a", "a-mcp")}, mine)
			var cfg map[string]any
			if err := yaml.Unmarshal([]byte(out), &cfg); err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			ext, _ := cfg["extensions"].(map[string]any)
			if a, _ := ext["a"].(map[string]any); a["cmd"] != "a-mcp" {
				t.Errorf("no entry a:\n%s", out)
			}
			if strings.Contains(in, "GOOSE_PROVIDER") && cfg["GOOSE_PROVIDER"] != "openai" {
				t.Errorf("GOOSE_PROVIDER lost:\n%s", out)
			}
			if strings.HasPrefix(in, "#") && !strings.HasPrefix(out, in) {
				t.Errorf("the comment is lost:\n%s", out)
			}
			if again := mustMerge(t, out, []providers.Rendered{rendered("a", "a-mcp")}, mine); again != out {
				t.Errorf("a second merge changed the file:\n%s\n---\n%s", out, again)
			}
		})
	}
}

// Goose saves the whole file when it changes a setting: its own layout, key order and
// defaults, without comments. An entry of the manifest's that it saved again is the same
// entry: no conflict, and no rewrite.
func TestMergeAfterGooseSaved(t *testing.T) {
	entries := []providers.Rendered{rendered("a", "a-mcp")}
	out := mustMerge(t, "", entries, mine)
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(out), &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["GOOSE_MODEL"] = "gpt-5"
	saved, err := yaml.Marshal(cfg) // keys sorted, indented by 4, as another writer would
	if err != nil {
		t.Fatal(err)
	}
	if got := mustMerge(t, string(saved), entries, mine); got != string(saved) {
		t.Errorf("a file Goose saved again is rewritten:\n%s\n---\n%s", saved, got)
	}
	// And an edit of the manifest replaces the entry, in Goose's indentation.
	got := mustMerge(t, string(saved), []providers.Rendered{rendered("a", "a2-mcp")}, mine)
	if err := yaml.Unmarshal([]byte(got), &cfg); err != nil {
		t.Fatalf("%v:\n%s", err, got)
	}
	if a := cfg["extensions"].(map[string]any)["a"].(map[string]any); a["cmd"] != "a2-mcp" || cfg["GOOSE_MODEL"] != "gpt-5" {
		t.Errorf("after the edit: %v\n%s", cfg, got)
	}
}

func TestMergeConflicts(t *testing.T) {
	out := mustMerge(t, existing, []providers.Rendered{rendered("a", "a-mcp"), rendered("b", "b-mcp")}, mine)
	edited := strings.Replace(out, "cmd: a-mcp", "cmd: a-mcp-by-hand", 1)
	other := providers.MergeOptions{Owner: "/q/mcpgen.toml"}
	var ce *providers.ConflictError
	for name, tc := range map[string]struct {
		in      string
		entries []providers.Rendered
		o       providers.MergeOptions
		want    []providers.Conflict
	}{
		"written by hand": {existing, []providers.Rendered{rendered("mine", "x")}, mine,
			[]providers.Conflict{{Name: "mine", Reason: providers.ReasonHandWritten, Line: 14}}},
		"edited, replaced": {edited, []providers.Rendered{rendered("a", "a-mcp")}, mine,
			[]providers.Conflict{{Name: "a", Reason: providers.ReasonEdited, Line: 21}}},
		"edited, removed": {edited, []providers.Rendered{rendered("b", "b-mcp")}, mine,
			[]providers.Conflict{{Name: "a", Reason: providers.ReasonEdited, Line: 21}}},
		"another manifest's": {out, []providers.Rendered{rendered("a", "a-mcp")}, other,
			[]providers.Conflict{{Name: "a", Reason: providers.ReasonOtherManifest, Owner: mine.Owner, Line: 21}}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Merge([]byte(tc.in), tc.entries, tc.o)
			if !errors.As(err, &ce) {
				t.Fatalf("Merge: %v, want a conflict\n%s", err, got)
			}
			if len(ce.Conflicts) != len(tc.want) || ce.Conflicts[0] != tc.want[0] {
				t.Errorf("conflicts %+v, want %+v", ce.Conflicts, tc.want)
			}
			if got != nil {
				t.Errorf("output with an error:\n%s", got)
			}
			tc.o.Force = true
			forced := mustMerge(t, tc.in, tc.entries, tc.o)
			if strings.Contains(forced, "a-mcp-by-hand") {
				t.Errorf("--force kept the hand edit:\n%s", forced)
			}
		})
	}
	// Another manifest's entries stay when this one writes its own.
	both := mustMerge(t, out, []providers.Rendered{rendered("c", "c-mcp")}, other)
	for _, want := range []string{"cmd: a-mcp\n", "cmd: b-mcp\n", "cmd: c-mcp\n", "owner: /p/mcpgen.toml", "owner: /q/mcpgen.toml"} {
		if !strings.Contains(both, want) {
			t.Errorf("lacks %q:\n%s", want, both)
		}
	}
	if owned, _ := Owners([]byte(both)); len(owned) != 3 {
		t.Errorf("Owners = %v", owned)
	}
}

func TestMergeBOMAndCRLF(t *testing.T) {
	entries := []providers.Rendered{rendered("a", "a-mcp")}
	crlf := strings.ReplaceAll(existing, "\n", "\r\n")
	in := string(providers.UTF8BOM) + crlf
	out := mustMerge(t, in, entries, mine)
	if !strings.HasPrefix(out, string(providers.UTF8BOM)+"# Goose") {
		t.Errorf("the byte order mark is lost:\n%q", out[:20])
	}
	if n := strings.Count(out, "\n"); n != strings.Count(out, "\r\n") {
		t.Errorf("%d line breaks without CR:\n%q", n-strings.Count(out, "\r\n"), out)
	}
	if again := mustMerge(t, out, entries, mine); again != out {
		t.Errorf("a second merge changed the file")
	}
	if got := mustMerge(t, out, nil, mine); got != in {
		t.Errorf("without entries, the file is not what it was:\n%q", got)
	}
}

// Bad input is refused at LINE:COL, with nothing written.
func TestMergeBadInput(t *testing.T) {
	pos := regexp.MustCompile(`^\d+:\d+: `)
	for name, tc := range map[string]struct{ in, want string }{
		"broken YAML":           {"GOOSE_MODEL: x\nextensions:\n  a: [1, 2\n", "not valid YAML"},
		"tab indentation":       {"extensions:\n\ta: {}\n", "not valid YAML"},
		"extensions a list":     {"GOOSE_MODEL: x\nextensions:\n  - a\n", `3:3: "extensions" is a list, but Goose reads a mapping of extensions`},
		"extensions a string":   {"extensions: none\n", `1:13: "extensions" is a string`},
		"file a list":           {"- a\n", "1:1: the file holds a list"},
		"extensions twice":      {"extensions: {}\nextensions: {}\n", `2:1: "extensions" appears twice (also at 1:1)`},
		"extension twice":       {"extensions:\n  a: {}\n  a: {}\n", `3:3: extension "a" appears twice`},
		"flow with entries":     {"extensions: {a: {cmd: x}}\n", "1:13: \"extensions\" is one {...} mapping"},
		"two documents":         {"a: 1\n---\nb: 2\n", "a second YAML document"},
		"record a list":         {"_mcpgen: []\n", `1:10: "_mcpgen" is a list`},
		"record without print":  {"_mcpgen:\n  managed:\n    a: {owner: x}\n", "3:8: _mcpgen.managed.a is not the record mcpgen wrote"},
		"alias at extensions":   {"x: &x {}\nextensions: *x\n", `"extensions" is an alias`},
		"flow mapping for file": {"{extensions: {}}\n", "1:1: the file is one {...} mapping"},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := Merge([]byte(tc.in), []providers.Rendered{rendered("a", "a-mcp")}, mine)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !pos.MatchString(err.Error()) {
				t.Errorf("Merge: %v, want LINE:COL: ...%s...", err, tc.want)
			}
			if out != nil {
				t.Errorf("output with an error:\n%s", out)
			}
			if _, err := Import([]byte(tc.in), "config.yaml"); err == nil && !strings.Contains(name, "record") && name != "extension twice" {
				t.Errorf("Import read it")
			}
		})
	}
}

func TestImport(t *testing.T) {
	in := strings.Replace(existing, "\n# after the extensions", `  http:
    enabled: false
    type: streamable_http
    name: http
    description: Docs
    uri: https://mcp.example.com/mcp
    headers:
      Authorization: Bearer ${DOCS_TOKEN}
      X-Tenant: acme
    env_keys: [DOCS_TOKEN]
    timeout: 90
    available_tools: [search]
  keyed:
    enabled: true
    type: stdio
    name: keyed
    cmd: npx
    args: [-y, server-x]
    envs: {MODE: fast}
    env_keys: [API_KEY]
    timeout: 300
    custom: 1

# after the extensions`, 1)
	f, err := Import([]byte(in), "config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range f.Servers {
		names = append(names, s.Server.Name)
	}
	if strings.Join(names, ",") != "mine,http,keyed" {
		t.Fatalf("servers %v, want mine,http,keyed", names)
	}
	if len(f.Skipped) != 1 || f.Skipped[0].Name != "developer" {
		t.Errorf("skipped %+v, want developer", f.Skipped)
	}
	http := f.Servers[1].Server
	if http.Enabled || http.URL.String() != "https://mcp.example.com/mcp" || http.BearerTokenEnv != "DOCS_TOKEN" || http.ToolTimeout.Seconds() != 90 || len(http.EnabledTools) != 1 {
		t.Errorf("http: %+v", http)
	}
	keyed := f.Servers[2]
	var env []string
	for _, v := range keyed.Server.Env {
		env = append(env, v.Name+"="+v.Value.String())
	}
	if strings.Join(env, " ") != "MODE=fast API_KEY=${API_KEY}" {
		t.Errorf("keyed env %v", env)
	}
	if len(keyed.Notes) != 1 || !strings.Contains(keyed.Notes[0], "custom left out") {
		t.Errorf("keyed notes %v", keyed.Notes)
	}
	if !bytes.Contains([]byte(in), []byte("env_keys")) {
		t.Fatal("unreachable")
	}
}

// strs, boolNode and null make the nodes of an entry as Render writes it.

func strs(ss []string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode}
	if len(ss) == 0 {
		n.Style = yaml.FlowStyle // []
	}
	for _, s := range ss {
		n.Content = append(n.Content, str(s))
	}
	return n
}

func boolNode(b bool) *yaml.Node {
	v := "false"
	if b {
		v = "true"
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: v}
}

func null() *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
}
