package commands

import (
	"slices"
	"strings"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/manifest"
)

// FuzzArguments feeds arbitrary call arguments to a declared tool: checking
// them never panics, and an accepted call builds an argv whose elements come
// from run, with each argument's value substituted as is, never expanded.
func FuzzArguments(f *testing.F) {
	m, err := manifest.Parse([]byte(`
[servers.t.tools.x]
run = ["cmd", "--n={n}", "{s}", "${HOME}/{b}", "{f}", "{e}"]
args.n = { type = "integer", default = 3 }
args.s = { type = "string", required = false }
args.b = { type = "boolean", required = false }
args.f = { type = "number", required = false }
args.e = { type = "string", enum = ["a", "b"], default = "a" }
`), "f.toml", "/")
	if err != nil {
		f.Fatal(err)
	}
	tool := m.Server("t").Tools[0]
	for _, seed := range []string{
		`{}`, `{"n":1,"s":"x","b":true,"f":1.5,"e":"b"}`, `{"n":"1"}`, `{"s":"${HOME}{n}"}`,
		`null`, `[]`, `{"n":1e3}`, `{"n":9223372036854775807}`, `{"zz":1}`, `{"s":"\u0000"}`, `{`,
	} {
		f.Add([]byte(seed))
	}
	lookup := func(name string) (string, bool) { return "/home/u", name == "HOME" }
	f.Fuzz(func(t *testing.T, raw []byte) {
		values, err := Values(tool, json.RawMessage(raw))
		if err != nil {
			if _, ok := err.(*ArgError); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		argv, err := Argv(tool, values, lookup)
		if err != nil {
			t.Fatal(err)
		}
		if len(argv) == 0 || argv[0] != "cmd" || len(argv) > len(tool.Run) {
			t.Fatalf("argv %q", argv)
		}
		if s, ok := values["s"]; ok && !slices.Contains(argv, s) {
			t.Fatalf("the string %q was not passed as is: %q", s, argv)
		}
		if !strings.HasPrefix(argv[1], "--n=") {
			t.Fatalf("the integer with a default was dropped: %q", argv)
		}
	})
}
