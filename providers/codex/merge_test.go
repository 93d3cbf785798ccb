package codex

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"github.com/rogpeppe/go-internal/diff"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/providers"
)

var update = flag.Bool("update", false, "rewrite the want and error files of testdata/merge")

// A golden case, testdata/merge/NAME.txtar, holds these files:
//
//	existing  the file before the merge
//	entries   the entries: a "## NAME" line starts each one, its body follows
//	force     present: merge with Force
//	owner     the manifest that merges (MergeOptions.Owner) on the first line, its aliases
//	          on the next ones
//	options   one per line: "crlf" (existing and want use CRLF line endings),
//	          "existing-no-eol", "want-no-eol" (the file has no final line ending)
//	want      the merged file, or
//	error     the error
type mergeCase struct {
	archive   *txtar.Archive
	existing  []byte
	entries   []Entry
	opts      MergeOptions
	crlf      bool
	wantNoEOL bool
	want      []byte
	wantErr   string
	hasWant   bool
}

func TestMergeGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/merge/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			c := loadMergeCase(t, file)
			got, err := Merge(c.existing, c.entries, c.opts)
			if *update {
				c.save(t, file, got, err)
				return
			}
			if err != nil {
				if !c.hasWant && err.Error() == c.wantErr {
					return
				}
				t.Fatalf("Merge: error %q, want %s", err, c.describeWant())
			}
			if got == nil {
				t.Fatalf("Merge returned nil bytes and no error")
			}
			if c.crlf {
				assertCRLF(t, got)
			}
			if !c.hasWant {
				t.Fatalf("Merge succeeded, want error %q; got:\n%s", c.wantErr, got)
			}
			if !bytes.Equal(got, c.want) {
				t.Errorf("Merge: (-want +got)\n%s", diff.Diff("want", c.want, "got", got))
			}
			assertValid(t, got)
			assertFixedPoint(t, got, c.entries, c.opts)
		})
	}
}

func loadMergeCase(t *testing.T, file string) *mergeCase {
	t.Helper()
	a := readArchive(t, file)
	c := &mergeCase{archive: a}
	var existingNoEOL bool
	for _, f := range a.Files {
		switch f.Name {
		case "existing":
			c.existing = f.Data
		case "entries":
			c.entries = parseEntries(f.Data)
		case "force":
			c.opts.Force = true
		case "owner":
			lines := strings.Split(strings.TrimSpace(string(f.Data)), "\n")
			c.opts.Owner, c.opts.Aliases = lines[0], lines[1:]
		case "options":
			for _, o := range strings.Fields(string(f.Data)) {
				switch o {
				case "crlf":
					c.crlf = true
				case "existing-no-eol":
					existingNoEOL = true
				case "want-no-eol":
					c.wantNoEOL = true
				default:
					t.Fatalf("%s: unknown option %q", file, o)
				}
			}
		case "want":
			c.want, c.hasWant = f.Data, true
		case "error":
			c.wantErr = strings.TrimSuffix(string(f.Data), "\n")
		default:
			t.Fatalf("%s: unknown file %q", file, f.Name)
		}
	}
	c.existing = c.fromGolden(c.existing, existingNoEOL)
	c.want = c.fromGolden(c.want, c.wantNoEOL)
	return c
}

// fromGolden turns the text of a golden file into the bytes it stands for.
func (c *mergeCase) fromGolden(b []byte, noEOL bool) []byte {
	if noEOL {
		b = bytes.TrimSuffix(b, []byte("\n"))
	}
	if c.crlf {
		b = bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n"))
	}
	return b
}

// toGolden is the inverse of fromGolden.
func (c *mergeCase) toGolden(b []byte) []byte {
	if c.crlf {
		b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
	}
	if len(b) > 0 && !bytes.HasSuffix(b, []byte("\n")) {
		b = append(b, '\n')
	}
	return b
}

func (c *mergeCase) describeWant() string {
	if c.hasWant {
		return "success"
	}
	return fmt.Sprintf("error %q", c.wantErr)
}

// save rewrites the case's want or error file with what Merge returned.
func (c *mergeCase) save(t *testing.T, file string, got []byte, err error) {
	t.Helper()
	var files []txtar.File
	for _, f := range c.archive.Files {
		if f.Name != "want" && f.Name != "error" {
			files = append(files, f)
		}
	}
	if err != nil {
		files = append(files, txtar.File{Name: "error", Data: []byte(err.Error() + "\n")})
	} else {
		files = append(files, txtar.File{Name: "want", Data: c.toGolden(got)})
	}
	c.archive.Files = files
	if err := os.WriteFile(file, txtar.Format(c.archive), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readArchive(t testing.TB, file string) *txtar.Archive {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return txtar.Parse(data)
}

// parseEntries reads entries written as a "## NAME" line followed by the body.
func parseEntries(data []byte) []Entry {
	var entries []Entry
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if name, ok := strings.CutPrefix(line, "## "); ok {
			entries = append(entries, Entry{Name: strings.TrimRight(name, "\r\n")})
			continue
		}
		if len(entries) > 0 {
			e := &entries[len(entries)-1]
			e.Body = append(e.Body, line...)
		}
	}
	return entries
}

func assertCRLF(t *testing.T, b []byte) {
	t.Helper()
	for i, c := range b {
		if c == '\n' && (i == 0 || b[i-1] != '\r') {
			line, _ := position(b, i)
			t.Fatalf("line %d ends in LF, want CRLF:\n%q", line, b)
		}
	}
}

func assertValid(t *testing.T, b []byte) {
	t.Helper()
	var v map[string]any
	// Codex reads past a byte order mark, which go-toml refuses.
	if err := toml.Unmarshal(bytes.TrimPrefix(b, providers.UTF8BOM), &v); err != nil {
		t.Fatalf("merged file does not parse: %v\n%s", err, b)
	}
}

func assertFixedPoint(t *testing.T, first []byte, entries []Entry, opts MergeOptions) {
	t.Helper()
	second, err := Merge(first, entries, opts)
	if err != nil {
		t.Fatalf("second Merge: %v\ninput:\n%s", err, first)
	}
	if !bytes.Equal(first, second) {
		t.Fatalf("second Merge changed the file:\n%s", diff.Diff("first", first, "second", second))
	}
}

var sampleEntries = []Entry{
	{Name: "github", Body: []byte("command = \"npx\"\nargs = [\"-y\", \"@modelcontextprotocol/server-github\"]\nenv_vars = [\"GITHUB_TOKEN\"]\n")},
	{Name: "docs", Body: []byte("url = \"https://mcp.example.com/mcp\"\nbearer_token_env_var = \"DOCS_TOKEN\"\n")},
}

func TestMergeEmptyIsFreshRender(t *testing.T) {
	want := "# mcpgen: managed entry sha256:" + fingerprintOf(t, sampleEntries[0]) + "; edit the manifest and re-run mcpgen emit\n" +
		"[mcp_servers.github]\n" + string(sampleEntries[0].Body) + "\n" +
		"# mcpgen: managed entry sha256:" + fingerprintOf(t, sampleEntries[1]) + "; edit the manifest and re-run mcpgen emit\n" +
		"[mcp_servers.docs]\n" + string(sampleEntries[1].Body)
	for _, existing := range [][]byte{nil, {}} {
		got, err := Merge(existing, sampleEntries, MergeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("Merge(%q): (-want +got)\n%s", existing, diff.Diff("want", []byte(want), "got", got))
		}
	}
	got, err := Merge(nil, nil, MergeOptions{})
	if err != nil || len(got) != 0 {
		t.Errorf("Merge(nil, nil) = %q, %v; want empty", got, err)
	}
}

// fingerprintOf returns the 12 hex digits of the fingerprint of e's body.
func fingerprintOf(t *testing.T, e Entry) string {
	t.Helper()
	var v map[string]any
	if err := toml.Unmarshal(e.Body, &v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(providers.Fingerprint(v), providers.FingerprintPrefix)
}

func TestMergeUnchangedReturnsInput(t *testing.T) {
	merged, err := Merge([]byte("model = \"o3\"\n"), sampleEntries, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		existing []byte
		entries  []Entry
	}{
		{"merged before", merged, sampleEntries},
		{"nothing of mcpgen", []byte("# hand-written\r\nmodel = 'o3'"), nil},
		{"nil", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Merge(tt.existing, tt.entries, MergeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.existing) {
				t.Errorf("Merge changed a file it had nothing to change: (-want +got)\n%s", diff.Diff("want", tt.existing, "got", got))
			}
		})
	}
}

func TestMergeConflictError(t *testing.T) {
	existing := []byte(`model = "o3"

[mcp_servers.github]
command = "gh-mcp"

# mcpgen: managed entry sha256:000000000000; edit the manifest and re-run mcpgen emit
[mcp_servers.old]
command = "edited"

[mcp_servers.docs]
url = "https://example.com"
`)
	_, err := Merge(existing, sampleEntries, MergeOptions{})
	var ce *providers.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("Merge: error %v, want a *providers.ConflictError", err)
	}
	want := []providers.Conflict{
		{Name: "github", Reason: providers.ReasonHandWritten, Line: 3},
		{Name: "old", Reason: providers.ReasonEdited, Line: 6},
		{Name: "docs", Reason: providers.ReasonHandWritten, Line: 10},
	}
	if fmt.Sprint(ce.Conflicts) != fmt.Sprint(want) {
		t.Errorf("conflicts:\n got %v\nwant %v", ce.Conflicts, want)
	}
	got, err := Merge(existing, sampleEntries, MergeOptions{Force: true})
	if err != nil {
		t.Fatalf("Merge with Force: %v", err)
	}
	if bytes.Contains(got, []byte("old")) || bytes.Contains(got, []byte("gh-mcp")) {
		t.Errorf("Merge with Force kept a server it should have replaced or removed:\n%s", got)
	}
	assertFixedPoint(t, got, sampleEntries, MergeOptions{})
}

func TestMergeBadEntries(t *testing.T) {
	tests := []struct {
		name    string
		entries []Entry
		want    string
	}{
		{"empty name", []Entry{{Name: "", Body: []byte("command = \"x\"\n")}}, "entry with an empty name: give every server a name"},
		{"twice", []Entry{{Name: "a", Body: []byte("command = \"x\"")}, {Name: "a"}}, `entry "a" appears twice: give each server its own name`},
		{"name not UTF-8", []Entry{{Name: "a\xff", Body: []byte("command = \"x\"")}}, `entry "a\xff": the name is not valid UTF-8`},
		{"header", []Entry{{Name: "a", Body: []byte("command = \"x\"\n[env]\nA = \"b\"\n")}}, `entry "a": body 2:1: a table header cannot be part of a body: write the table's key/values only`},
		{"trailing comment", []Entry{{Name: "a", Body: []byte("command = \"x\"\n# the end\n")}}, `entry "a": body ends with a comment, which would read as part of the next table: end it with a key/value`},
		{"tools", []Entry{{Name: "a", Body: []byte("command = \"x\"\ntools.t.approval_mode = \"approve\"\n")}}, `entry "a": body sets tools, which belong to Codex's approval tables: leave them out`},
		{"syntax", []Entry{{Name: "a", Body: []byte("command = \"x\"\nargs = [\n")}}, `entry "a": body 2:9: invalid TOML: array is incomplete`},
		{"duplicate key", []Entry{{Name: "a", Body: []byte("command = \"x\"\ncommand = \"y\"\n")}}, `entry "a": body 2:1: invalid TOML: key command is already defined`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Merge([]byte("model = \"o3\"\n"), tt.entries, MergeOptions{})
			if err == nil || err.Error() != tt.want {
				t.Errorf("Merge: error %v, want %q", err, tt.want)
			}
			if got != nil {
				t.Errorf("Merge returned output with its error: %q", got)
			}
		})
	}
}

func TestTOMLKey(t *testing.T) {
	tests := map[string]string{
		"github":    "github",
		"my-srv_2":  "my-srv_2",
		"my server": `"my server"`,
		"a.b":       `"a.b"`,
		`q"\`:       `"q\"\\"`,
		"tab\there": `"tab\there"`,
		"é":         `"é"`,
	}
	for name, want := range tests {
		if got := manifest.TOMLKey(name); got != want {
			t.Errorf("manifest.TOMLKey(%q) = %s, want %s", name, got, want)
		}
	}
}

// fuzzEntries are the entries FuzzMerge merges, chosen by the bits of a byte.
var fuzzEntries = []Entry{
	sampleEntries[0],
	sampleEntries[1],
	{Name: "my server", Body: []byte("command = 'srv'\nenv = { A = \"1\" }\n")},
	{Name: "fs", Body: []byte("# the files server\ncommand = \"mcpgen\"\nargs = [\"serve\", \"files\"]\n")},
}

func FuzzMerge(f *testing.F) {
	files, _ := filepath.Glob("testdata/merge/*.txtar")
	for _, file := range files {
		for _, file := range readArchive(f, file).Files {
			if file.Name == "existing" {
				f.Add(file.Data, false, uint8(0xff))
				f.Add(file.Data, true, uint8(0x05))
				f.Add(append(bytes.Clone(providers.UTF8BOM), file.Data...), false, uint8(0xff))
			}
		}
	}
	f.Fuzz(func(t *testing.T, existing []byte, force bool, pick uint8) {
		var entries []Entry
		for i, e := range fuzzEntries {
			if pick&(1<<i) != 0 {
				entries = append(entries, e)
			}
		}
		opts := MergeOptions{Force: force}
		got, err := Merge(existing, entries, opts)
		if err != nil {
			if got != nil {
				t.Fatalf("Merge returned output with its error %v", err)
			}
			if strings.Contains(err.Error(), "internal error") {
				t.Fatalf("Merge: %v\ninput: %q", err, existing)
			}
			return
		}
		assertValid(t, got)
		assertFixedPoint(t, got, entries, opts)
	})
}

// benchMergeFile returns a config of n servers that mcpgen owns, each with an approval table, and
// n entries for them with new bodies.
func benchMergeFile(b *testing.B, n int) ([]byte, []Entry) {
	b.Helper()
	old := make([]Entry, n)
	entries := make([]Entry, n)
	for i := range old {
		name := fmt.Sprintf("server-%03d", i)
		old[i] = Entry{Name: name, Body: fmt.Appendf(nil, "command = \"npx\"\nargs = [\"-y\", \"@acme/server-%d\"]\nenv = { WORKSPACE_ID = \"w1\" }\n", i)}
		entries[i] = Entry{Name: name, Body: fmt.Appendf(nil, "command = \"npx\"\nargs = [\"-y\", \"@acme/server-%d@2\"]\nenv = { WORKSPACE_ID = \"w2\" }\n", i)}
	}
	file, err := Merge([]byte("# Codex config\nmodel = \"o3\"\n\n[profiles.fast]\nmodel = \"o4-mini\"\n"), old, MergeOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i += 2 {
		file = fmt.Appendf(file, "\n[mcp_servers.server-%03d.tools.search]\napproval_mode = \"approve\"\n", i)
	}
	return file, entries
}

func BenchmarkMerge(b *testing.B) {
	file, entries := benchMergeFile(b, 100)
	b.Run("changed", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(file)))
		for b.Loop() {
			if _, err := Merge(file, entries, MergeOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	merged, err := Merge(file, entries, MergeOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("unchanged", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(merged)))
		for b.Loop() {
			if _, err := Merge(merged, entries, MergeOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestMergeBOM: a file that starts with a UTF-8 byte order mark (which
// Codex reads) is merged past it, and keeps it, as it keeps every byte;
// errors point where they would without it.
func TestMergeBOM(t *testing.T) {
	bom := string(providers.UTF8BOM)
	plain := "# mine\nmodel = \"o3\"\n"
	merged, err := Merge([]byte(plain), sampleEntries, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, existing string
		entries        []Entry
		want, wantErr  string
	}{
		{"entries added", bom + plain, sampleEntries, bom + string(merged), ""},
		{"nothing to change", bom + string(merged), sampleEntries, bom + string(merged), ""},
		{"only the mark", bom, nil, bom, ""},
		{"invalid after the mark", bom + "model = \"o3\"\nx = [1,\n", sampleEntries, "", "2:8: invalid TOML: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Merge([]byte(tt.existing), tt.entries, MergeOptions{})
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Errorf("got error %v, want %q...", err, tt.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case string(got) != tt.want:
				t.Errorf("(-want +got)\n%s", diff.Diff("want", []byte(tt.want), "got", got))
			}
		})
	}
}
