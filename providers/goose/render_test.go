package goose

import (
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/providers"
)

// The text Render writes is read back by a YAML parser to the values it fingerprinted:
// every string, however it must be quoted.
func TestScalarsReadBack(t *testing.T) {
	for _, s := range []string{
		"", " ", "a", "a b", " a", "a ", "true", "True", "no", "Off", "y", "null", "~", "-", "--",
		"---", "-y", "--stdio", "-1", "-.5", "12", "0x1F", "1e3", "1_000", "2026-11-27", ".inf",
		"@scope/pkg", "'q'", `"q"`, "a: b", "a:b", "a:", "a #b", "a#b", "#a", "&a", "*a", "!a",
		"%a", "|a", ">a", "{a}", "[a]", "a,b", "?a", "? a", "a\nb", "a\tb", "\x00", "\x7f",
		"é", "a\u2028b", "\u0085", "\ufeff", "日本", "\xff", "${SECRET}", "$HOME/x", "Bearer ${T}",
		"https://mcp.example.com/mcp?tenant=acme&v=2", "<<", "=", "a'b", `a\b`, "\U0001F600",
	} {
		m := ymap{{"k", s}, {"x" + s, "v"}}
		text := m.text(nil, 0)
		var got map[string]any
		if err := yaml.Unmarshal(text, &got); err != nil {
			t.Errorf("%q: %v\n%s", s, err, text)
			continue
		}
		want := m.generic()
		if strings.Contains(s, "\xff") { // invalid UTF-8 is written as U+FFFD
			want = map[string]any{"k": strings.ReplaceAll(s, "\xff", "\ufffd"), "x" + strings.ReplaceAll(s, "\xff", "\ufffd"): "v"}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: read back %q, want %q\n%s", s, got, want, text)
		}
	}
}

// The fingerprint Render computes is the one Merge computes from the text: else every
// entry would read as edited by hand.
func TestRenderFingerprint(t *testing.T) {
	m, err := manifest.Parse([]byte(`[workspace]
dir = "/srv/${WORKSPACE_ID}"

[servers.a]
description = "yes: it's \"quoted\""
command = "npx"
args = ["-y", "@scope/pkg", "--port", "8080", "true"]
env = { API_KEY = "${API_KEY}", MODE = "on" }
tool_timeout = "90s"
enabled_tools = ["search"]

[servers.web]
url = "https://mcp.example.com/mcp"
bearer_token_env = "TOKEN"
headers = { X-Tenant = "acme" }

[servers.files]
builtin = "files"
`), "/p/mcpgen.toml", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []providers.Options{
		{Mcpgen: "/usr/bin/mcpgen"},
		{Mcpgen: "/usr/bin/mcpgen", Launcher: true},
	} {
		entries, _, err := Provider.Render(m, o)
		if err != nil || len(entries) != 3 {
			t.Fatalf("Render: %v, %d entries", err, len(entries))
		}
		for _, e := range entries {
			var n yaml.Node
			if err := yaml.Unmarshal(e.Value, &n); err != nil {
				t.Fatalf("%s: %v\n%s", e.Name, err, e.Value)
			}
			if fp := fingerprint(n.Content[0]); fp != e.Fingerprint || fp == "" {
				t.Errorf("%s: Render's fingerprint %s, the text's %s\n%s", e.Name, e.Fingerprint, fp, e.Value)
			}
		}
	}
}
