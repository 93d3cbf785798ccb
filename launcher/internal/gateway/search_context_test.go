package gateway

import (
	"os"
	"path/filepath"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/toolsearch"
	"github.com/mcpgen/mcpgen/mcp"
)

// workspace20 is the catalog of toolsearch's twenty servers (the
// tools/list of three npm servers, and fixtures after public servers).
func workspace20(t testing.TB) *Catalog {
	t.Helper()
	paths, err := filepath.Glob("../../../internal/toolsearch/testdata/catalogs/*.json")
	if err != nil || len(paths) != 20 {
		t.Fatalf("the catalogs of internal/toolsearch/testdata: %d, %v", len(paths), err)
	}
	var servers []Server
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var c struct {
			Name         string            `json:"name"`
			Description  string            `json:"description"`
			Instructions string            `json:"instructions"`
			Tools        []json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		s := Server{Name: c.Name, Description: c.Description, Init: &mcp.InitializeResult{
			Capabilities: json.RawMessage(`{"tools":{}}`), Instructions: c.Instructions}}
		for _, raw := range c.Tools {
			var tool mcp.Tool
			if err := json.Unmarshal(raw, &tool); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			tool.Raw = raw
			s.Tools = append(s.Tools, &tool)
		}
		servers = append(servers, s)
	}
	return Build(servers, false)
}

// TestSearchContext: what an agent's context holds of the workspace
// (tools/list and the instructions) in search mode, against all mode, for
// twenty servers of about twenty-five tools: issue 23 asks for 20 times
// less at least.
func TestSearchContext(t *testing.T) {
	c := workspace20(t)
	all := len(c.ToolsList()) + len(c.Instructions())
	search := len(c.SearchList(nil)) + len(c.SearchInstructions())
	t.Logf("%d tools of %d servers", len(c.Tools), len(c.about))
	t.Logf("all mode: tools/list %d bytes + instructions %d bytes = %d bytes, about %d tokens", len(c.ToolsList()), len(c.Instructions()), all, all/4)
	t.Logf("search mode: tools/list %d bytes + instructions %d bytes = %d bytes, about %d tokens", len(c.SearchList(nil)), len(c.SearchInstructions()), search, search/4)
	t.Logf("%.1f times smaller", float64(all)/float64(search))
	if search*20 > all {
		t.Errorf("search mode: %d bytes, more than a twentieth of all mode's %d", search, all)
	}
}

// BenchmarkSearchCatalog: a search of the twenty servers' catalog as the
// gateway makes it (the index built once, at the first).
func BenchmarkSearchCatalog(b *testing.B) {
	c := workspace20(b)
	c.searched()
	for b.Loop() {
		c.Search("remember that Alice prefers tea", toolsearch.Options{})
	}
}
