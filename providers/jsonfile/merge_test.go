package jsonfile

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/diff"

	"github.com/mcpgen/mcpgen/providers"
)

var (
	gemini = Format{Agent: "Gemini CLI", ServersKey: "mcpServers", JSONC: true}
	cursor = Format{Agent: "Cursor", ServersKey: "mcpServers"}
	vscode = Format{Agent: "VS Code", ServersKey: "servers", JSONC: true}
	// opencode refuses unknown top-level keys: its records are comments.
	opencode = Format{Agent: "opencode", ServersKey: "mcp", JSONC: true, CommentRecord: true}

	entryA = providers.Rendered{Name: "a", Value: []byte(`{"command":"a-mcp","args":["x"]}`)}
	entryB = providers.Rendered{Name: "b", Value: []byte(`{"httpUrl":"https://x/mcp?a=1&b=2"}`)}
	owner  = providers.MergeOptions{Owner: "/p/mcpgen.toml"}
)

// fp masks fingerprints, which the cases need not spell out.
func masked(b []byte) string {
	return fingerprintMask.ReplaceAllString(string(b), "sha256:X")
}

// TestEdit: a merge in place keeps every byte that is not mcpgen's: comments, trailing
// commas, the file's indentation and line endings, hand-written entries and their order.
func TestEdit(t *testing.T) {
	record := func(indent string, names ...string) string {
		var b strings.Builder
		b.WriteString("{\n" + indent + "  \"managed\": {")
		for i, n := range names {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("\n" + indent + "    \"" + n + "\": {\n" + indent + "      \"fingerprint\": \"sha256:X\",\n" + indent + "      \"owner\": \"/p/mcpgen.toml\"\n" + indent + "    }")
		}
		b.WriteString("\n" + indent + "  }\n" + indent + "}")
		return b.String()
	}
	tests := []struct {
		name     string
		f        Format
		existing string
		entries  []providers.Rendered
		want     string
	}{
		{"comments and trailing commas kept", gemini,
			"{\n  // my settings\n  \"theme\": \"dark\", // trailing\n}\n",
			[]providers.Rendered{entryA},
			"{\n  // my settings\n  \"theme\": \"dark\", // trailing\n  \"mcpServers\": {\n    \"a\": {\n      \"command\": \"a-mcp\",\n      \"args\": [\n        \"x\"\n      ]\n    }\n  },\n  \"_mcpgen\": " + record("  ", "a") + ",\n}\n"},
		{"hand entry and its comment kept, four spaces followed", vscode,
			"{\n    \"servers\": {\n        // mine\n        \"mine\": {\"command\": \"m\"}\n    },\n    \"inputs\": []\n}\n",
			[]providers.Rendered{entryB},
			"{\n    \"servers\": {\n        // mine\n        \"mine\": {\"command\": \"m\"},\n        \"b\": {\n            \"httpUrl\": \"https://x/mcp?a=1&b=2\"\n        }\n    },\n    \"_mcpgen\": {\n        \"managed\": {\n            \"b\": {\n                \"fingerprint\": \"sha256:X\",\n                \"owner\": \"/p/mcpgen.toml\"\n            }\n        }\n    },\n    \"inputs\": []\n}\n"},
		{"empty servers object filled", cursor,
			"{\n  \"mcpServers\": {}\n}\n",
			[]providers.Rendered{entryA},
			"{\n  \"mcpServers\": {\n    \"a\": {\n      \"command\": \"a-mcp\",\n      \"args\": [\n        \"x\"\n      ]\n    }\n  },\n  \"_mcpgen\": " + record("  ", "a") + "\n}\n"},
		{"one line stays one line", cursor,
			`{"theme":"dark"}`,
			[]providers.Rendered{entryA},
			`{"theme":"dark","mcpServers":{"a":{"command":"a-mcp","args":["x"]}},"_mcpgen":{"managed":{"a":{"fingerprint":"sha256:X","owner":"/p/mcpgen.toml"}}}}`},
		{"crlf", cursor,
			"{\r\n  \"theme\": \"dark\"\r\n}\r\n",
			[]providers.Rendered{{Name: "a", Value: []byte(`{"command":"a"}`)}},
			"{\r\n  \"theme\": \"dark\",\r\n  \"mcpServers\": {\r\n    \"a\": {\r\n      \"command\": \"a\"\r\n    }\r\n  },\r\n  \"_mcpgen\": " + strings.ReplaceAll(record("  ", "a"), "\n", "\r\n") + "\r\n}\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Merge(tt.f, []byte(tt.existing), tt.entries, owner)
			if err != nil {
				t.Fatal(err)
			}
			if masked(got) != tt.want {
				t.Errorf("(-want +got)\n%s", diff.Diff("want", []byte(tt.want), "got", []byte(masked(got))))
			}
			again, err := Merge(tt.f, got, tt.entries, owner)
			if err != nil || !bytes.Equal(again, got) {
				t.Errorf("a second merge changed the file (%v):\n%s", err, diff.Diff("first", got, "second", again))
			}
		})
	}
}

// TestEditRemoves: the entries a manifest no longer has go with their separators, in any
// position, and the file is what it was before mcpgen wrote to it.
func TestEditRemoves(t *testing.T) {
	c := providers.Rendered{Name: "c", Value: []byte(`{"command":"c"}`)}
	for _, existing := range []string{
		"{\n  \"theme\": \"dark\"\n}\n",
		"{\n  // hi\n  \"theme\": \"dark\", // trailing\n}\n",
		"{\n  \"mcpServers\": {\n    \"mine\": {\"command\": \"m\"} // my own\n  }\n}\n",
		"{\n  \"mcpServers\": {\n    \"mine\": {\"command\": \"m\"},\n  },\n  \"after\": 1,\n}\n",
		"{\"mcpServers\":{\"mine\":{\"command\":\"m\"}}}",
	} {
		for _, keep := range [][]providers.Rendered{nil, {entryA}, {entryB}, {c}, {entryA, c}, {entryB, c}} {
			first, err := Merge(gemini, []byte(existing), []providers.Rendered{entryA, entryB, c}, owner)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Merge(gemini, first, keep, owner)
			if err != nil {
				t.Fatalf("%q keeping %d: %v\n%s", existing, len(keep), err, first)
			}
			direct, err := Merge(gemini, []byte(existing), keep, owner)
			if err != nil {
				t.Fatal(err)
			}
			owned, err := Owners(gemini, got)
			if err != nil {
				t.Fatalf("%v\n%s", err, got)
			}
			if len(owned) != len(keep) {
				t.Errorf("%q keeping %d: owners %v\n%s", existing, len(keep), owned, got)
			}
			if len(keep) == 0 && !bytes.Equal(got, []byte(existing)) && !strings.Contains(string(got), `"mcpServers": {}`) && !strings.Contains(string(got), `"mcpServers":{}`) {
				t.Errorf("%q: removing every entry left\n%s", existing, got)
			}
			if len(keep) > 0 && !bytes.Equal(got, direct) && !sameJSON(t, got, direct) {
				t.Errorf("%q keeping %d: removing gives\n%s\nwriting at once gives\n%s", existing, len(keep), got, direct)
			}
		}
	}
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	pa, err1 := blankComments(a)
	pb, err2 := blankComments(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var ca, cb bytes.Buffer
	if err := compact(&ca, pa); err != nil {
		t.Fatalf("%v\n%s", err, a)
	}
	if err := compact(&cb, pb); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return ca.String() == cb.String()
}

// TestEditErrors: what the agent would refuse, or mcpgen cannot merge into, is an error at
// line:col, and nothing is written.
func TestEditErrors(t *testing.T) {
	tests := []struct {
		name     string
		f        Format
		existing string
		want     string
	}{
		{"comment in strict JSON", cursor, "{\n  // no\n  \"a\": 1\n}\n", "2:3: invalid JSON: invalid character '/' looking for beginning of object key string: Cursor reads strict JSON, without comments: remove them, then re-run"},
		{"unterminated comment", gemini, "{\n  /* open\n}\n", "2:3: invalid JSON: a comment that starts here has no end (*/)"},
		{"servers not an object", vscode, "{\n  \"servers\": []\n}\n", `2:3: "servers" is an array, but VS Code reads an object of servers: fix or remove it, then re-run`},
		{"top not an object", gemini, "[]", `1:1: the file holds an array, but Gemini CLI reads an object such as {"mcpServers": {}}: fix the file, then re-run`},
		{"broken", gemini, "{\n  \"a\": \n}\n", "3:1: invalid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Merge(tt.f, []byte(tt.existing), []providers.Rendered{entryA}, owner)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("got %q, %v; want error %q", got, err, tt.want)
			}
			if got != nil {
				t.Errorf("an error came with output %q", got)
			}
		})
	}
}

// TestEditConflicts: a hand-written entry under a manifest server's name is a conflict in
// a JSONC file too, and its comment does not make an entry of mcpgen's look edited.
func TestEditConflicts(t *testing.T) {
	hand := "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"mine\"}\n  }\n}\n"
	_, err := Merge(gemini, []byte(hand), []providers.Rendered{entryA}, owner)
	var ce *providers.ConflictError
	if !errors.As(err, &ce) || len(ce.Conflicts) != 1 || ce.Conflicts[0].Name != "a" {
		t.Fatalf("got %v, want a conflict on a", err)
	}
	first, err := Merge(gemini, nil, []providers.Rendered{entryA}, owner)
	if err != nil {
		t.Fatal(err)
	}
	commented := bytes.Replace(first, []byte(`"command": "a-mcp",`), []byte(`"command": "a-mcp", // why`), 1)
	if bytes.Equal(commented, first) {
		t.Fatal("the test's comment went nowhere")
	}
	got, err := Merge(gemini, commented, []providers.Rendered{entryA, entryB}, owner)
	if err != nil {
		t.Fatalf("a comment in mcpgen's entry: %v", err)
	}
	if !bytes.Contains(got, []byte("// why")) {
		t.Errorf("the comment in an entry that stays went:\n%s", got)
	}
}

// FuzzEdit: whatever the file, a merge that succeeds gives a file that reads back with the
// manifest's entries recorded, and a second merge changes nothing.
func FuzzEdit(f *testing.F) {
	for _, s := range []string{
		"", "{}", "{\n  // c\n  \"x\": 1,\n}\n", "{\"mcpServers\":{\"m\":{}}}",
		"{\n  \"mcpServers\": {\n    \"m\": {}, /* c */\n  },\n}",
		"{\r\n\t\"mcpServers\": {\r\n\t}\r\n}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, existing []byte) {
		for _, format := range []Format{gemini, cursor, opencode} {
			fuzzEdit(t, format, existing)
		}
	})
}

func fuzzEdit(t *testing.T, format Format, existing []byte) {
	out, err := Merge(format, existing, []providers.Rendered{entryA, entryB}, owner)
	if err != nil {
		return
	}
	owned, err := Owners(format, out)
	if err != nil {
		t.Fatalf("the merged file does not read back: %v\n%q", err, out)
	}
	mine := 0
	for _, o := range owned {
		if o.Owner == owner.Owner {
			mine++
		}
	}
	if mine != 2 {
		t.Fatalf("owners %v\n%q", owned, out)
	}
	again, err := Merge(format, out, []providers.Rendered{entryA, entryB}, owner)
	if err != nil || !bytes.Equal(again, out) {
		t.Fatalf("second merge: %v\n%q\n%q", err, out, again)
	}
	fewer, err := Merge(format, out, []providers.Rendered{entryB}, owner)
	if err != nil {
		t.Fatalf("removing a: %v\n%q", err, out)
	}
	if owned, err := Owners(format, fewer); err != nil || len(owned) == 0 {
		t.Fatalf("after removing a: %v %v\n%q", owned, err, fewer)
	}
	none, err := Merge(format, fewer, nil, owner)
	if err != nil {
		t.Fatalf("removing all: %v\n%q", err, fewer)
	}
	if owned, err := Owners(format, none); err != nil || len(owned) != len(owned[:0])+countOthers(owned) {
		t.Fatalf("after removing all: %v %v\n%q", owned, err, none)
	}
}

// countOthers counts the entries recorded for another owner than the test's.
func countOthers(owned []providers.Owned) int {
	n := 0
	for _, o := range owned {
		if o.Owner != owner.Owner {
			n++
		}
	}
	return n
}

// TestCommentRecord: with records in comments, no top-level key is added; another
// manifest's entry and its comment stay; an entry edited by hand is a conflict; a record
// of this manifest under an alias is written anew with its owner.
func TestCommentRecord(t *testing.T) {
	other := providers.MergeOptions{Owner: "/q/mcpgen.toml"}
	theirs, err := Merge(opencode, []byte("{\n  \"$schema\": \"https://opencode.ai/config.json\"\n}\n"), []providers.Rendered{{Name: "q", Value: []byte(`{"type":"local","command":["q"]}`)}}, other)
	if err != nil {
		t.Fatal(err)
	}
	both, err := Merge(opencode, theirs, []providers.Rendered{entryA}, owner)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(both, []byte(RecordKey)) {
		t.Errorf("a comment-record file got %s:\n%s", RecordKey, both)
	}
	owned, err := Owners(opencode, both)
	if err != nil || len(owned) != 2 || owned[0].Owner != other.Owner || owned[1].Owner != owner.Owner {
		t.Fatalf("owners %v, %v:\n%s", owned, err, both)
	}
	mine, err := Merge(opencode, both, nil, owner)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mine, theirs) {
		t.Errorf("removing this manifest's entries left (-want +got)\n%s", diff.Diff("want", theirs, "got", mine))
	}
	edited := bytes.Replace(both, []byte(`"a-mcp"`), []byte(`"b-mcp"`), 1)
	_, err = Merge(opencode, edited, []providers.Rendered{entryA}, owner)
	var ce *providers.ConflictError
	if !errors.As(err, &ce) || ce.Conflicts[0].Reason != providers.ReasonEdited {
		t.Errorf("an edited entry: got %v, want a conflict", err)
	}
	renamed, err := Merge(opencode, both, []providers.Rendered{entryA}, providers.MergeOptions{Owner: "app", Aliases: []string{owner.Owner}})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(renamed, []byte(`of "app" sha256:`)) || bytes.Contains(renamed, []byte(`of "/p/mcpgen.toml"`)) {
		t.Errorf("the alias's record was not written anew:\n%s", renamed)
	}
}
