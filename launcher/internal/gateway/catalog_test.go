package gateway

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

// server returns a ready server with the given tools (names, or full JSON
// when a name starts with "{") and capabilities.
func server(name, caps string, tools ...string) Server {
	s := Server{Name: name, Init: &mcp.InitializeResult{Capabilities: json.RawMessage(caps)}}
	for _, t := range tools {
		raw := t
		if !strings.HasPrefix(t, "{") {
			raw = fmt.Sprintf(`{"name":%q,"description":"the %s tool of %s","inputSchema":{"type":"object"}}`, t, t, name)
		}
		var tool mcp.Tool
		if err := json.Unmarshal([]byte(raw), &tool); err != nil {
			panic(err)
		}
		s.Tools = append(s.Tools, &tool)
	}
	return s
}

func raws(items ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(items))
	for i, it := range items {
		out[i] = json.RawMessage(it)
	}
	return out
}

// listed returns the names a list result holds, and their servers.
func listed(t *testing.T, result json.RawMessage, key string) (names []string, servers []string) {
	t.Helper()
	var r map[string][]struct {
		Name string                     `json:"name"`
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		t.Fatalf("%s: %v", result, err)
	}
	for _, it := range r[key] {
		names = append(names, it.Name)
		var s string
		_ = json.Unmarshal(it.Meta[MetaServer], &s)
		servers = append(servers, s)
	}
	return names, servers
}

func TestBuildTools(t *testing.T) {
	only := func(names ...string) func(string) bool {
		return func(n string) bool { return slices.Contains(names, n) }
	}
	tests := []struct {
		name    string
		servers []Server
		always  bool
		want    []string // listed, in order
		routes  map[string]Route
		absent  []string // names with no route
	}{
		{name: "merged in manifest order",
			servers: []Server{server("b", `{}`, "y", "z"), server("a", `{}`, "x")},
			want:    []string{"y", "z", "x"},
			routes:  map[string]Route{"y": {Server: "b", Name: "y"}, "x": {Server: "a", Name: "x"}}},
		{name: "collision",
			servers: []Server{server("a", `{}`, "echo", "add"), server("b", `{}`, "echo")},
			want:    []string{"a__echo", "add", "b__echo"},
			routes:  map[string]Route{"a__echo": {Server: "a", Name: "echo"}, "b__echo": {Server: "b", Name: "echo"}},
			absent:  []string{"echo"}},
		{name: "always",
			servers: []Server{server("a", `{}`, "x"), server("b", `{}`, "y")},
			always:  true,
			want:    []string{"a__x", "b__y"},
			absent:  []string{"x", "y"}},
		{name: "enabled_tools hides the others",
			servers: []Server{func() Server { s := server("a", `{}`, "x", "y", "z"); s.Exposes = only("x", "z"); return s }()},
			want:    []string{"x", "z"},
			absent:  []string{"y"}},
		{name: "a hidden tool frees its name",
			servers: []Server{server("a", `{}`, "echo"), func() Server { s := server("b", `{}`, "echo", "pid"); s.Exposes = only("pid"); return s }()},
			want:    []string{"echo", "pid"},
			routes:  map[string]Route{"echo": {Server: "a", Name: "echo"}}},
		{name: "a failed server's tools leave the list, its names stay",
			servers: []Server{func() Server { s := server("a", `{}`, "echo", "mine"); s.Failed = true; return s }(), server("b", `{}`, "echo")},
			want:    []string{"b__echo"},
			routes:  map[string]Route{"a__echo": {Server: "a", Name: "echo", Failed: true}, "mine": {Server: "a", Name: "mine", Failed: true}},
			absent:  []string{"echo"}},
		{name: "a server never ready has no part",
			servers: []Server{{Name: "a"}, server("b", `{}`, "echo")},
			want:    []string{"echo"}},
		{name: "a server listing a tool twice",
			servers: []Server{server("a", `{}`, "x", "x")},
			want:    []string{"x"}},
		{name: "odd names shortened, routed to the original",
			servers: []Server{server("a", `{}`, "read.file")},
			routes:  map[string]Route{"read_file_" + shorten("read.file", key{"a", "read.file"}, 0)[len("read_file_"):]: {Server: "a", Name: "read.file"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Build(tt.servers, tt.always)
			got, _ := listed(t, c.ToolsList(), "tools")
			if tt.want != nil && !slices.Equal(got, tt.want) {
				t.Errorf("listed %q, want %q", got, tt.want)
			}
			for name, want := range tt.routes {
				if r, ok := c.Tool(name); !ok || r != want {
					t.Errorf("Tool(%q): got %+v, %v; want %+v", name, r, ok, want)
				}
			}
			for _, name := range tt.absent {
				if r, ok := c.Tool(name); ok {
					t.Errorf("Tool(%q): got %+v, want no route", name, r)
				}
			}
		})
	}
}

// TestExposedTool checks an exposed tool's JSON: the exposed name, where
// it comes from in _meta beside the server's own, every other field kept.
func TestExposedTool(t *testing.T) {
	tool := `{"name":"echo","title":"Echo <it>","description":"says it back","inputSchema":{"type":"object","properties":{"m":{"type":"string"}}},"annotations":{"readOnlyHint":true},"_meta":{"vendor/x":1},"future":"kept"}`
	c := Build([]Server{server("a", `{}`, tool), server("b", `{}`, "echo")}, false)
	var r struct {
		Tools []map[string]json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(c.ToolsList(), &r); err != nil {
		t.Fatal(err)
	}
	got := r.Tools[0]
	want := map[string]string{
		"name":        `"a__echo"`,
		"title":       `"Echo <it>"`,
		"description": `"says it back"`,
		"inputSchema": `{"type":"object","properties":{"m":{"type":"string"}}}`,
		"annotations": `{"readOnlyHint":true}`,
		"future":      `"kept"`,
		"_meta":       `{"io.github.mcpgen/server":"a","io.github.mcpgen/name":"echo","vendor/x":1}`,
	}
	if len(got) != len(want) {
		t.Errorf("fields: got %d, want %d: %s", len(got), len(want), c.ToolsList())
	}
	for k, w := range want {
		if string(got[k]) != w {
			t.Errorf("%s: got %s, want %s", k, got[k], w)
		}
	}
}

func TestBuildPrompts(t *testing.T) {
	a := server("a", `{"prompts":{}}`)
	a.Prompts = raws(`{"name":"greet","arguments":[{"name":"who"}]}`, `{"name":"solo"}`, `"not an object"`)
	b := server("b", `{"prompts":{}}`)
	b.Prompts = raws(`{"name":"greet"}`)
	c := Build([]Server{a, b}, false)
	got, servers := listed(t, c.PromptsList(), "prompts")
	if want := []string{"a__greet", "solo", "b__greet"}; !slices.Equal(got, want) {
		t.Errorf("prompts: got %q, want %q", got, want)
	}
	if want := []string{"a", "a", "b"}; !slices.Equal(servers, want) {
		t.Errorf("servers: got %q, want %q", servers, want)
	}
	if r, ok := c.Prompt("b__greet"); !ok || r.Server != "b" || r.Name != "greet" {
		t.Errorf("Prompt(b__greet): got %+v, %v", r, ok)
	}
	// Tools and prompts are named apart: a tool greet is not a collision.
	if r, ok := c.Prompt("solo"); !ok || r.Server != "a" {
		t.Errorf("Prompt(solo): got %+v, %v", r, ok)
	}
}

func TestBuildResources(t *testing.T) {
	a := server("a", `{"resources":{}}`)
	a.Resources = raws(`{"uri":"file:///shared","name":"a's"}`, `{"uri":"test://a/1","name":"one"}`, `{"name":"no uri"}`)
	a.Templates = raws(`{"uriTemplate":"test://a/{id}","name":"by id"}`, `{"uriTemplate":"test://both/{x}"}`)
	b := server("b", `{"resources":{"subscribe":true}}`)
	b.Resources = raws(`{"uri":"file:///shared","name":"b's"}`, `{"uri":"test://b/1"}`)
	b.Templates = raws(`{"uriTemplate":"test://both/{x}"}`, `{"uriTemplate":"docs://{+path}"}`, `{"uriTemplate":"bad://{x"}`)
	failed := server("f", `{"resources":{}}`)
	failed.Failed = true
	failed.Resources = raws(`{"uri":"test://f/1"}`)
	c := Build([]Server{a, b, failed}, false)

	var list struct {
		Resources []struct {
			URI  string `json:"uri"`
			Name string `json:"name"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(c.ResourcesList(), &list); err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range list.Resources {
		uris = append(uris, r.URI+" "+r.Name)
	}
	if want := []string{"file:///shared a's", "test://a/1 one", "test://b/1 "}; !slices.Equal(uris, want) {
		t.Errorf("resources: got %q, want %q", uris, want)
	}
	tmpls, _ := listed(t, c.TemplatesList(), "resourceTemplates")
	if len(tmpls) != 4 {
		t.Errorf("templates: got %d, want 4 (one per template text): %s", len(tmpls), c.TemplatesList())
	}
	for _, tt := range []struct {
		uri    string
		server string // "" for none
		failed bool
	}{
		{"file:///shared", "a", false},
		{"test://b/1", "b", false},
		{"test://a/7", "a", false},            // by template
		{"test://a/7/8", "", false},           // a simple expression is one segment
		{"test://both/q", "a", false},         // the first of two templates
		{"docs://guide/intro.md", "b", false}, // reserved expansion takes slashes
		{"test://f/1", "f", true},
		{"nobody://x", "", false},
	} {
		r, ok := c.Resource(tt.uri)
		if ok != (tt.server != "") || r.Server != tt.server || r.Failed != tt.failed {
			t.Errorf("Resource(%q): got %+v, %v; want server %q, failed %v", tt.uri, r, ok, tt.server, tt.failed)
		}
	}
	if r, ok := c.Template("docs://{+path}"); !ok || r.Server != "b" {
		t.Errorf("Template(docs://{+path}): got %+v, %v; want b", r, ok)
	}
	want := []Conflict{
		{URI: "file:///shared", Servers: []string{"a", "b"}},
		{URI: "test://both/{x}", Template: true, Servers: []string{"a", "b"}},
	}
	if fmt.Sprint(c.Conflicts) != fmt.Sprint(want) {
		t.Errorf("conflicts: got %+v, want %+v", c.Conflicts, want)
	}
	if caps := string(c.Capabilities()); caps != `{"tools":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true}}` {
		t.Errorf("capabilities: %s", caps)
	}
}

func TestBuildInitialize(t *testing.T) {
	a := server("a", `{"tools":{},"logging":{},"prompts":{"listChanged":false}}`)
	a.Init.Instructions = "Use a for apples."
	b := server("b", `{"completions":{},"logging":{}}`)
	b.Init.Instructions = "  \n"
	c := server("c", `{"tools":{}}`)
	c.Init.Instructions = "Use c for cherries.\nTwo lines."
	f := server("f", `{}`)
	f.Init.Instructions = "failed: not shown"
	f.Failed = true
	cat := Build([]Server{a, b, c, f}, false)
	if got, want := string(cat.Capabilities()), `{"tools":{"listChanged":true},"prompts":{"listChanged":true},"logging":{},"completions":{}}`; got != want {
		t.Errorf("capabilities: got %s, want %s", got, want)
	}
	if got, want := cat.Instructions(), "## a\n\nUse a for apples.\n\n## c\n\nUse c for cherries.\nTwo lines."; got != want {
		t.Errorf("instructions: got %q, want %q", got, want)
	}
	if got := cat.Logging(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("logging: got %q", got)
	}
	empty := Build(nil, false)
	if got := string(empty.ToolsList()); got != `{"tools":[]}` {
		t.Errorf("empty tools list: %s", got)
	}
}

func TestCompileTemplate(t *testing.T) {
	for _, tt := range []struct {
		tmpl  string
		match []string
		not   []string
	}{
		{"test://static/resource/{id}", []string{"test://static/resource/1", "test://static/resource/"}, []string{"test://static/resource/1/2", "test://static/resourc/1"}},
		{"file:///{+path}", []string{"file:///a/b/c.txt"}, []string{"file://x"}},
		{"api://items{?page,limit}", []string{"api://items", "api://items?page=2&limit=3"}, []string{"api://itemsx"}},
		{"a.b://{x}.{y}", []string{"a.b://1.2"}, []string{"aXb://1.2"}},
		{"repo://{owner}{/path*}", []string{"repo://me", "repo://me/a/b"}, nil},
	} {
		re, err := compileTemplate(tt.tmpl)
		if err != nil {
			t.Errorf("%s: %v", tt.tmpl, err)
			continue
		}
		for _, u := range tt.match {
			if !re.MatchString(u) {
				t.Errorf("%s does not match %s", tt.tmpl, u)
			}
		}
		for _, u := range tt.not {
			if re.MatchString(u) {
				t.Errorf("%s matches %s", tt.tmpl, u)
			}
		}
	}
	for _, bad := range []string{"x://{a", strings.Repeat("{a}", maxTemplate)} {
		if _, err := compileTemplate(bad); err == nil {
			t.Errorf("%.40s: compiled, want an error", bad)
		}
	}
}
