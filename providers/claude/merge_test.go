package claude

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	json "github.com/goccy/go-json"
	"github.com/rogpeppe/go-internal/diff"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/mcpgen/mcpgen/providers"
)

var update = flag.Bool("update", false, "rewrite the want and error files of testdata/merge")

// A golden case, testdata/merge/NAME.txtar, holds these files:
//
//	existing  the file before the merge
//	entries   the entries: a "## NAME" line starts each one, its JSON value follows
//	force     present: merge with Force
//	owner     the manifest that merges (MergeOptions.Owner) on the first line, its aliases
//	          on the next ones
//	options   "crlf": existing and want use CRLF line endings
//	want      the merged file, or
//	error     the error
type mergeCase struct {
	archive  *txtar.Archive
	existing []byte
	entries  []Entry
	opts     MergeOptions
	crlf     bool
	want     []byte
	hasWant  bool
	wantErr  string
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
				if o != "crlf" {
					t.Fatalf("%s: unknown option %q", file, o)
				}
				c.crlf = true
			}
		case "want":
			c.want, c.hasWant = f.Data, true
		case "error":
			c.wantErr = strings.TrimSuffix(string(f.Data), "\n")
		default:
			t.Fatalf("%s: unknown file %q", file, f.Name)
		}
	}
	if c.crlf {
		c.existing = bytes.ReplaceAll(c.existing, []byte("\n"), []byte("\r\n"))
		c.want = bytes.ReplaceAll(c.want, []byte("\n"), []byte("\r\n"))
	}
	return c
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
		files = append(files, txtar.File{Name: "want", Data: bytes.ReplaceAll(got, []byte("\r\n"), []byte("\n"))})
	}
	c.archive.Files = files
	if err := os.WriteFile(file, txtar.Format(c.archive), 0o644); err != nil {
		t.Fatal(err)
	}
}

// parseEntries reads entries written as a "## NAME" line followed by the value.
func parseEntries(data []byte) []Entry {
	var entries []Entry
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if name, ok := strings.CutPrefix(line, "## "); ok {
			entries = append(entries, Entry{Name: strings.TrimRight(name, "\r\n")})
			continue
		}
		if len(entries) > 0 {
			e := &entries[len(entries)-1]
			e.Value = append(e.Value, line...)
		}
	}
	return entries
}

func readArchive(t testing.TB, file string) *txtar.Archive {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return txtar.Parse(data)
}

func assertValid(t *testing.T, b []byte) {
	t.Helper()
	if !json.Valid(b) {
		t.Fatalf("merged file is not valid JSON:\n%s", b)
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
	{Name: "github", Value: []byte(`{"type":"stdio","command":"npx","args":["-y","@modelcontextprotocol/server-github"],"env":{"GITHUB_TOKEN":"${GITHUB_TOKEN}"}}`)},
	{Name: "docs", Value: []byte(`{"type": "http", "url": "https://mcp.example.com/mcp?a=1&b=2"}`)},
}

func TestMergeEmptyIsFreshRender(t *testing.T) {
	want := `{
  "mcpServers": {
    "github": {
      "type": "stdio",
      "command": "npx",
      "args": [
        "-y",
        "@modelcontextprotocol/server-github"
      ],
      "env": {
        "GITHUB_TOKEN": "${GITHUB_TOKEN}"
      }
    },
    "docs": {
      "type": "http",
      "url": "https://mcp.example.com/mcp?a=1&b=2"
    }
  },
  "_mcpgen": {
    "managed": {
      "github": "` + fingerprintOf(t, sampleEntries[0]) + `",
      "docs": "` + fingerprintOf(t, sampleEntries[1]) + `"
    }
  }
}
`
	for _, existing := range [][]byte{nil, {}, []byte(" \n\t")} {
		got, err := Merge(existing, sampleEntries, MergeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("Merge(%q): (-want +got)\n%s", existing, diff.Diff("want", []byte(want), "got", got))
		}
	}
	got, err := Merge(nil, nil, MergeOptions{})
	if want := "{\n  \"mcpServers\": {}\n}\n"; err != nil || string(got) != want {
		t.Errorf("Merge(nil, nil) = %q, %v; want %q", got, err, want)
	}
}

// fingerprintOf returns the fingerprint of e's value.
func fingerprintOf(t *testing.T, e Entry) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(e.Value))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return providers.Fingerprint(v)
}

func TestMergeConflictError(t *testing.T) {
	existing := []byte(`{
  "mcpServers": {
    "github": {"command": "gh-mcp"},
    "old": {"command": "edited"},
    "docs": {"type": "http", "url": "https://example.com"}
  },
  "_mcpgen": {"managed": {"old": "sha256:000000000000"}}
}`)
	_, err := Merge(existing, sampleEntries, MergeOptions{})
	var ce *providers.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("Merge: error %v, want a *providers.ConflictError", err)
	}
	want := []providers.Conflict{
		{Name: "github", Reason: providers.ReasonHandWritten, Line: 3},
		{Name: "old", Reason: providers.ReasonEdited, Line: 4},
		{Name: "docs", Reason: providers.ReasonHandWritten, Line: 5},
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
		{"empty name", []Entry{{Name: "", Value: []byte(`{}`)}}, "entry with an empty name: give every server a name"},
		{"twice", []Entry{{Name: "a", Value: []byte(`{}`)}, {Name: "a", Value: []byte(`{}`)}}, `entry "a" appears twice: give each server its own name`},
		{"name not UTF-8", []Entry{{Name: "a\xff", Value: []byte(`{}`)}}, `entry "a\xff": the name is not valid UTF-8`},
		{"not an object", []Entry{{Name: "a", Value: []byte(`["npx"]`)}}, `entry "a": value is an array, want a JSON object`},
		{"invalid", []Entry{{Name: "a", Value: []byte("{\"command\": \"npx\",\n}")}}, `entry "a": value 2:1: invalid JSON: invalid character '}' looking for beginning of object key string`},
		{"empty", []Entry{{Name: "a"}}, `entry "a": value 1:1: invalid JSON: unexpected end of JSON input`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Merge([]byte(`{"numStartups": 3}`), tt.entries, MergeOptions{})
			if err == nil || err.Error() != tt.want {
				t.Errorf("Merge: error %v, want %q", err, tt.want)
			}
			if got != nil {
				t.Errorf("Merge returned output with its error: %q", got)
			}
		})
	}
}

// fuzzEntries are the entries FuzzMerge merges, chosen by the bits of a byte.
var fuzzEntries = []Entry{
	sampleEntries[0],
	sampleEntries[1],
	{Name: "a", Value: []byte(`{"command": "a", "n": 1.50}`)},
	{Name: "mcpServers", Value: []byte(`{"command":"<&>"}`)},
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

// benchMergeFile returns a ~/.claude.json of n servers that mcpgen owns, among other keys, and n
// entries for them with new values.
func benchMergeFile(b *testing.B, n int) ([]byte, []Entry) {
	b.Helper()
	old := make([]Entry, n)
	entries := make([]Entry, n)
	for i := range old {
		name := fmt.Sprintf("server-%03d", i)
		old[i] = Entry{Name: name, Value: fmt.Appendf(nil, `{"type":"stdio","command":"npx","args":["-y","@acme/server-%d"],"env":{"WORKSPACE_ID":"w1"}}`, i)}
		entries[i] = Entry{Name: name, Value: fmt.Appendf(nil, `{"type":"stdio","command":"npx","args":["-y","@acme/server-%d@2"],"env":{"WORKSPACE_ID":"w2"}}`, i)}
	}
	base := []byte(`{"numStartups": 42, "theme": "dark", "projects": {"/home/ana/src": {"allowedTools": [], "history": [{"display": "fix the build", "pastedContents": {}}], "mcpServers": {}}}, "tipsHistory": {"new-user-warmup": 1}}`)
	file, err := Merge(base, old, MergeOptions{})
	if err != nil {
		b.Fatal(err)
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

// TestMergeBOM: a file that starts with a UTF-8 byte order mark is merged
// past it; a file that changes is written without it (RFC 8259 lets JSON
// readers refuse it), one that does not change is left as it is.
func TestMergeBOM(t *testing.T) {
	bom := string(providers.UTF8BOM)
	plain := "{\"theme\": \"dark\"}\n"
	merged, err := Merge([]byte(plain), sampleEntries, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, existing string
		entries        []Entry
		want, wantErr  string
	}{
		{"entries added", bom + plain, sampleEntries, string(merged), ""},
		{"nothing to change", bom + string(merged), sampleEntries, bom + string(merged), ""},
		{"invalid after the mark", bom + "{\n\"a\": }\n", sampleEntries, "", "2:6: invalid JSON"},
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
