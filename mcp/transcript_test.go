package mcp

import (
	"bytes"
	"context"
	stdjson "encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the out sections of testdata/*.txtar")

// TestTranscripts feeds the "in" section of each testdata/*.txtar file to a
// test Server (see testServer; tools/list pages hold 2 tools), then the end
// of the input, and compares what the server wrote with the "out" section.
//
// Lines are compared after sorting JSON object keys. The server answers
// requests concurrently, so the output is put in the order of the input
// line that caused it: a response, and the progress notifications before
// it, go where its request was; an error without an id goes where the bad
// line it answers was. In "in", $LONGSTRING stands for a string longer than
// MaxLineSize, and $DEEP for arrays nested deeper than a line may be.
func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			ar := txtar.Parse(data)
			in, want := section(t, ar, "in"), section(t, ar, "out")
			input := strings.ReplaceAll(string(in), "$LONGSTRING", strings.Repeat("x", MaxLineSize))
			input = strings.ReplaceAll(input, "$DEEP", strings.Repeat("[", deep)+strings.Repeat("]", deep))

			ctx, cancel := context.WithTimeout(t.Context(), hangGuard)
			defer cancel()
			var out bytes.Buffer
			if err := testServer(t, nil).Serve(ctx, strings.NewReader(input), &out); err != nil {
				t.Fatalf("Serve: %v", err)
			}
			got := orderOutput(t, input, out.String())

			if *update {
				for i := range ar.Files {
					if ar.Files[i].Name == "out" {
						ar.Files[i].Data = []byte(got)
					}
				}
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if want := canonicalLines(t, string(want)); got != want {
				t.Errorf("output differs (-want +got):\n%s", lineDiff(want, got))
			}
		})
	}
}

// deep is how deep $DEEP nests: one beyond jsonwire.MaxDepth.
const deep = 10001

func section(t *testing.T, ar *txtar.Archive, name string) []byte {
	for _, f := range ar.Files {
		if f.Name == name {
			return f.Data
		}
	}
	t.Fatalf("no %q section", name)
	return nil
}

// orderOutput canonicalises the output lines and orders them by the input
// line that caused each (see TestTranscripts).
func orderOutput(t *testing.T, input, output string) string {
	inLines := strings.Split(strings.TrimSuffix(input, "\n"), "\n")
	requestAt := make(map[ID]int) // request id -> input line
	tokenAt := make(map[ID]int)   // progress token -> input line
	var idlessErrorsAt []int      // input lines answered by an error without an id
	for i, line := range inLines {
		if len(line) > MaxLineSize {
			// Answered from what the server can read of it.
			if id, isRequest, _ := peekEnvelope([]byte(line[:MaxLineSize])); id.IsValid() {
				requestAt[id] = i
			} else if isRequest {
				idlessErrorsAt = append(idlessErrorsAt, i)
			}
			continue
		}
		msg, err := DecodeMessage([]byte(line))
		var derr *DecodeError
		switch {
		case errors.As(err, &derr) && derr.ServerResponse() != nil:
			if derr.ID.IsValid() {
				requestAt[derr.ID] = i
			} else {
				idlessErrorsAt = append(idlessErrorsAt, i)
			}
		case err != nil:
		case msg.IsRequest():
			if _, ok := requestAt[msg.ID]; !ok {
				requestAt[msg.ID] = i
			}
			var p struct {
				Meta struct {
					ProgressToken *ID `json:"progressToken"`
				} `json:"_meta"`
			}
			if stdjson.Unmarshal(msg.Params, &p) == nil && p.Meta.ProgressToken != nil {
				tokenAt[*p.Meta.ProgressToken] = i
			}
		}
	}

	type outLine struct {
		at   int
		text string
	}
	var lines []outLine
	idless := 0
	for _, line := range strings.Split(strings.TrimSuffix(output, "\n"), "\n") {
		if line == "" {
			continue
		}
		msg, err := DecodeMessage([]byte(line))
		if err != nil {
			t.Fatalf("the server wrote an invalid line %q: %v", line, err)
		}
		at := len(inLines)
		switch {
		case msg.ID.IsValid():
			if i, ok := requestAt[msg.ID]; ok {
				at = i
			}
		case msg.Method == "notifications/progress":
			var p struct {
				Token ID `json:"progressToken"`
			}
			if stdjson.Unmarshal(msg.Params, &p) == nil {
				if i, ok := tokenAt[p.Token]; ok {
					at = i
				}
			}
		case msg.Error != nil:
			if idless < len(idlessErrorsAt) {
				at = idlessErrorsAt[idless]
			}
			idless++
		}
		lines = append(lines, outLine{at, canonical(t, line)})
	}
	slices.SortStableFunc(lines, func(a, b outLine) int { return a.at - b.at })
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	return b.String()
}

// canonical re-encodes a JSON line with sorted object keys.
func canonical(t *testing.T, line string) string {
	d := stdjson.NewDecoder(strings.NewReader(line))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("canonical(%q): %v", line, err)
	}
	var b bytes.Buffer
	e := stdjson.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func canonicalLines(t *testing.T, text string) string {
	var b strings.Builder
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		b.WriteString(canonical(t, line))
		b.WriteByte('\n')
	}
	return b.String()
}

// lineDiff marks the lines of want missing from got with "-" and the lines
// of got missing from want with "+", in a simple longest-common-subsequence
// diff; transcripts are short.
func lineDiff(want, got string) string {
	a := strings.Split(strings.TrimSuffix(want, "\n"), "\n")
	b := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out.WriteString("  " + a[i] + "\n")
			i, j = i+1, j+1
		case j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]):
			out.WriteString("+ " + b[j] + "\n")
			j++
		default:
			out.WriteString("- " + a[i] + "\n")
			i++
		}
	}
	return out.String()
}
