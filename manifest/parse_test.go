package manifest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestEmptyManifest: a manifest cut to nothing (a save or a deploy that
// went wrong) is an error, so that a launcher following it keeps its
// servers; a manifest that says it has no servers is valid.
func TestEmptyManifest(t *testing.T) {
	const empty = "m.toml:1:1: m.toml is empty (nothing but whitespace and comments), which mcpgen takes for a save cut short rather than for no servers: write `version = 1` to run no servers"
	tests := []struct {
		name string
		in   string
		want string // "" when valid, with no servers
	}{
		{"zero bytes", "", empty},
		{"whitespace", " \n\t\r\n\n", empty},
		{"comments only", "# mcpgen.toml\n\n# [servers.x]\n", empty},
		{"version only", "version = 1\n", ""},
		{"an empty servers table", "[servers]\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse([]byte(tt.in), "m.toml", "/")
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("got %v, want a valid manifest", err)
			case tt.want == "" && len(m.Servers) != 0:
				t.Fatalf("got %d servers, want none", len(m.Servers))
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Fatalf("got  %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestBOM: a byte order mark is named as such, not as "invalid character
// U+00EF".
func TestBOM(t *testing.T) {
	_, err := Parse([]byte("\xEF\xBB\xBFversion = 1\n"), "m.toml", "/")
	const want = "m.toml:1:1: the file starts with a UTF-8 byte order mark (BOM), which TOML does not allow: save it as UTF-8 without a BOM"
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

// nest builds a manifest whose deepest key path has depth parts: the top
// key plus depth-1 levels of the given form.
func nest(form string, depth int) string {
	n := depth - 1
	switch form {
	case "inline table":
		return "x = " + strings.Repeat("{a = ", n) + "1" + strings.Repeat("}", n) + "\n"
	case "array":
		return "x = " + strings.Repeat("[", n) + "1" + strings.Repeat("]", n) + "\n"
	case "dotted key":
		return "x" + strings.Repeat(".a", n) + " = 1\n"
	case "table header":
		return "[x" + strings.Repeat(".a", n) + "]\n"
	case "keys": // depth keys in one table
		var b strings.Builder
		b.WriteString("[x]\n")
		for i := range depth {
			fmt.Fprintf(&b, "k%d = 1\n", i)
		}
		return b.String()
	case "header and inline table":
		h := n / 2
		return "[x" + strings.Repeat(".a", h) + "]\nb = " + strings.Repeat("{a = ", n-h-1) + "1" + strings.Repeat("}", n-h-1) + "\n"
	}
	panic(form)
}

// TestDepth: nesting beyond MaxDepth is refused with the place where it
// crosses the limit, before anything decodes it; at the limit, the
// manifest is merely wrong (an unknown key).
func TestDepth(t *testing.T) {
	tests := []struct {
		form string
		at   string // where depth MaxDepth+1 is reached
	}{
		{"inline table", fmt.Sprintf("1:%d", 4+5*(MaxDepth-1)+2)}, // the key a of the innermost table
		{"array", fmt.Sprintf("1:%d", 4+MaxDepth+1)},              // the innermost element
		{"dotted key", fmt.Sprintf("1:%d", 1+2*MaxDepth)},
		{"table header", fmt.Sprintf("1:%d", 2+2*MaxDepth)},
		{"header and inline table", ""},
	}
	for _, tt := range tests {
		for _, depth := range []int{MaxDepth, MaxDepth + 1, 10000} {
			t.Run(fmt.Sprintf("%s/%d", tt.form, depth), func(t *testing.T) {
				_, err := Parse([]byte(nest(tt.form, depth)), "m.toml", "/")
				var errs Errors
				if !errors.As(err, &errs) || len(errs) == 0 {
					t.Fatalf("got %v, want Errors", err)
				}
				deep := strings.Contains(errs[0].Msg, "levels deep")
				if deep != (depth > MaxDepth) {
					t.Fatalf("depth %d: got %v", depth, err)
				}
				if depth == MaxDepth+1 && tt.at != "" && !strings.HasPrefix(errs[0].Error(), "m.toml:"+tt.at+": nested more than 64 levels deep") {
					t.Errorf("got %v, want it at %s", err, tt.at)
				}
			})
		}
	}
}

// TestKeyLimits: go-toml's decoder takes time that grows with the square of
// the keys, so more than MaxTableKeys in one table, or MaxKeys in all, are
// refused before it runs, at the first key past the limit.
func TestKeyLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("an attack test: manifests of many thousand keys: run without -short")
	}
	table := func(name string, n int) string {
		var b strings.Builder
		fmt.Fprintf(&b, "[%s]\n", name)
		for i := range n {
			fmt.Fprintf(&b, "k%d = 1\n", i)
		}
		return b.String()
	}
	var many strings.Builder
	for i := range MaxKeys/MaxTableKeys + 1 {
		many.WriteString(table(fmt.Sprintf("t%d", i), MaxTableKeys-1))
	}
	tests := []struct {
		name, in, want string
	}{
		{"a table at the limit", table("x", MaxTableKeys), `m.toml:1:2: unknown key "x"`},
		{"one key too many", table("x", MaxTableKeys+1), fmt.Sprintf("m.toml:%d:1: more than %d keys in one table: mcpgen reads at most that many", MaxTableKeys+2, MaxTableKeys)},
		// A header and its keys take one line each: key MaxKeys+1 is the
		// header of the table after MaxKeys lines.
		{"too many in all", many.String(), fmt.Sprintf("m.toml:%d:2: more than %d keys in the manifest: mcpgen reads at most that many", MaxKeys+1, MaxKeys)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in), "m.toml", "/")
			var errs Errors
			if !errors.As(err, &errs) || errs[0].Error() != tt.want {
				t.Errorf("got  %.200v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestPositionsDeepestLegalPath: the positions of the deepest paths that a
// valid manifest writes are still found.
func TestPositionsDeepestLegalPath(t *testing.T) {
	_, err := Parse([]byte("[servers.g.tools.t]\nrun = [\"a\", \"{n}\"]\nargs.n = { type = \"integer\", enum = [1, \"two\"] }\n"), "m.toml", "/")
	const want = `m.toml:3:41: server "g": two is a string, but the argument's type is integer`
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

// Benchmarks of Parse on a deep manifest (refused at MaxDepth) and on a
// wide one (10,000 servers). Before the path tree, indexing the 10,000-level
// inline table cost 2 s and 1 GB, the 10,000-part dotted key 0.4 s.
func BenchmarkParse(b *testing.B) {
	var wide strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&wide, "[servers.s%d]\ncommand = \"srv\"\nargs = [\"--n\", \"%d\"]\nenv = { A = \"${B}\" }\n\n", i, i)
	}
	cases := []struct{ name, data string }{
		{"deep-inline-10000", nest("inline table", 10000)},
		{"deep-array-10000", nest("array", 10000)},
		{"deep-dotted-10000", nest("dotted key", 10000)},
		{"wide-10000-servers", wide.String()},
		{"wide-10000-keys", nest("keys", MaxTableKeys)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			data := []byte(c.data)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = Parse(data, "m.toml", "/")
			}
		})
	}
}

// TestProgramWarning: a tool whose program is an argument lets the model
// choose what runs; the manifest is valid, with a warning at run[0].
func TestProgramWarning(t *testing.T) {
	tests := []struct {
		name, run, args string
		want            []string
	}{
		{"argument as the program", `["{prog}", "--version"]`, `args.prog = {}`, []string{
			`m.toml:2:8: warning: server "x": tool "t": the program to run is {prog}, so the model chooses it: name the program in run[0], or give "prog" an enum of the programs allowed`}},
		{"argument inside the program's path", `["/usr/bin/{prog}"]`, `args.prog = {}`, []string{
			`m.toml:2:8: warning: server "x": tool "t": the program to run is {prog}, so the model chooses it: name the program in run[0], or give "prog" an enum of the programs allowed`}},
		{"an enum of programs", `["{prog}"]`, `args.prog = { enum = ["git", "hg"] }`, nil},
		{"argument after the program", `["git", "{rev}"]`, `args.rev = {}`, nil},
		{"braces around no name", `["{ x }", "{}"]`, ``, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := "[servers.x.tools.t]\nrun = " + tt.run + "\n" + tt.args + "\n"
			m, err := Parse([]byte(in), "m.toml", "/")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range m.Warnings {
				got = append(got, w.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
