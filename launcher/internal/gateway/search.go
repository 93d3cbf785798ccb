package gateway

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
	"github.com/mcpgen/mcpgen/internal/toolsearch"
	"github.com/mcpgen/mcpgen/launcher/internal/agent"
	"github.com/mcpgen/mcpgen/mcp"
)

// This file is the gateway's search mode ([gateway] tools = "search", or
// connect --tools search): a session lists two tools of the gateway's own,
// search_tools and call_tool, and the pinned tools, instead of every tool
// of the workspace, so that an agent's context holds a summary of the
// servers rather than every schema. search_tools ranks the workspace's
// tools for a task (package toolsearch); call_tool calls any of them as a
// direct call would, and so does a direct call by its name.

// The gateway's own tools in search mode.
const (
	SearchTool = "search_tools"
	CallTool   = "call_tool"
)

// maxLimit is the most tools one search returns.
const maxLimit = 50

// The summary of a server: at most aboutChars of its description, and
// aboutNames of its tools' names.
const (
	aboutChars = 80
	aboutNames = 3
)

// about is what search mode says of one server.
type about struct {
	name, description string
	tools             []string // its listed tools' names, in its order
}

// buildAbout notes what search mode says of each server whose tools are
// listed: its description (the manifest's, else its title), and its tools.
func (c *Catalog) buildAbout(servers []Server) {
	byServer := map[string]int{}
	for _, s := range servers {
		if s.Failed {
			continue
		}
		d := strings.TrimSpace(s.Description)
		if d == "" {
			d = strings.TrimSpace(s.Init.ServerInfo.Title)
		}
		byServer[s.Name] = len(c.about)
		c.about = append(c.about, about{name: s.Name, description: d})
	}
	for _, n := range c.Tools {
		if i, ok := byServer[n.Server]; ok && c.exposed[n.Name] != nil {
			c.about[i].tools = append(c.about[i].tools, n.Name)
		}
	}
}

// A searchOnce is what search mode makes of a catalog, at its first use:
// the index of its listed tools, and the texts and lists of its own tools.
type searchOnce struct {
	once         sync.Once
	index        *toolsearch.Index
	servers      string // the servers, a line each, as the texts say them
	list         [][]byte
	instructions string
}

func (c *Catalog) searched() *searchOnce {
	c.search.once.Do(func() {
		st := &c.search
		var servers []toolsearch.Server
		for _, a := range c.about {
			servers = append(servers, toolsearch.Server{Name: a.name, Description: a.description})
		}
		var tools []toolsearch.Tool
		for _, n := range c.Tools {
			raw := c.exposed[n.Name]
			if raw == nil || n.Failed {
				continue
			}
			t, err := toolsearch.Parse(raw)
			if err != nil {
				continue
			}
			t.Name, t.Server, t.Original = n.Name, n.Server, n.Original
			tools = append(tools, t)
		}
		st.index = toolsearch.New(servers, tools)
		st.servers = c.serverLines()
		st.list = [][]byte{searchToolJSON(st.servers), callToolJSON()}
		for _, name := range c.pin {
			if raw := c.exposed[name]; raw != nil && name != SearchTool && name != CallTool {
				st.list = append(st.list, raw)
			}
		}
		st.instructions = "This gateway lists few of its tools: search_tools finds the others by what they do, and call_tool calls them (so does a tool's own name, once found). Its servers:\n" + st.servers
	})
	return &c.search
}

// serverLines says each server in a line: its name, its tool count, its
// description cut short, and its first tools' names.
func (c *Catalog) serverLines() string {
	var b strings.Builder
	for _, a := range c.about {
		tools := "tools"
		if len(a.tools) == 1 {
			tools = "tool"
		}
		fmt.Fprintf(&b, "- %s (%d %s)", a.name, len(a.tools), tools)
		if a.description != "" {
			b.WriteString(": ")
			b.WriteString(cut(oneLineText(a.description), aboutChars))
		}
		if len(a.tools) > 0 {
			b.WriteString("; e.g. ")
			b.WriteString(strings.Join(a.tools[:min(len(a.tools), aboutNames)], ", "))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// oneLineText joins the lines of s with spaces.
func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }

// cut shortens s to at most n characters, at a space when it can, with
// "..." after.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)[:n]
	if i := strings.LastIndexByte(string(r), ' '); i > n/2 {
		return string(r)[:i] + "..."
	}
	return string(r) + "..."
}

// The definitions of search mode's tools, as tools/list gives them.
type toolDef struct {
	Name        string    `json:"name"`
	Title       string    `json:"title"`
	Description string    `json:"description"`
	InputSchema schemaDef `json:"inputSchema"`
	Annotations struct {
		ReadOnly bool `json:"readOnlyHint,omitempty"`
	} `json:"annotations"`
}

type schemaDef struct {
	Type       string      `json:"type"`
	Properties []propEntry `json:"-"`
	Required   []string    `json:"required"`
}

type propEntry struct {
	name string
	def  map[string]any
}

// MarshalJSON writes the properties in their order.
func (s schemaDef) MarshalJSON() ([]byte, error) {
	b := []byte(`{"type":"object","properties":{`)
	for i, p := range s.Properties {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonwire.AppendString(b, p.name)
		v, err := jsonwire.Marshal(p.def)
		if err != nil {
			return nil, err
		}
		b = append(append(b, ':'), v...)
	}
	b = append(b, `},"required":`...)
	v, err := jsonwire.Marshal(s.Required)
	if err != nil {
		return nil, err
	}
	return append(append(b, v...), '}'), nil
}

func searchToolJSON(servers string) []byte {
	d := toolDef{
		Name:  SearchTool,
		Title: "Search the workspace's tools",
		Description: "Finds the tools of this workspace by what they should do, best first: each with its name, server, description and input schema. " +
			"Call one with call_tool (or by its name). Search whenever a task needs a tool you do not see: these servers' tools are here.\n" + servers,
		InputSchema: schemaDef{Type: "object", Required: []string{"query"}, Properties: []propEntry{
			{"query", map[string]any{"type": "string", "description": "What the tool should do, in a few words: \"create an issue\", \"list pods\""}},
			{"server", map[string]any{"type": "string", "description": "Only this server's tools"}},
			{"limit", map[string]any{"type": "integer", "minimum": 1, "maximum": maxLimit, "description": fmt.Sprintf("How many tools at most (default %d)", toolsearch.DefaultLimit)}},
		}},
	}
	d.Annotations.ReadOnly = true
	b, _ := jsonwire.Marshal(d)
	return b
}

// callToolJSON is call_tool's definition, made at its first use (nothing
// is built at init: TestInitIsCheap).
var callToolJSON = sync.OnceValue(func() []byte {
	d := toolDef{
		Name:        CallTool,
		Title:       "Call a tool of the workspace",
		Description: "Calls a tool that search_tools found, by its name, with its arguments.",
		InputSchema: schemaDef{Type: "object", Required: []string{"name"}, Properties: []propEntry{
			{"name", map[string]any{"type": "string", "description": "The tool's name, as search_tools gave it"}},
			{"arguments", map[string]any{"type": "object", "description": "The tool's arguments, as its input schema says"}},
		}},
	}
	b, _ := jsonwire.Marshal(d)
	return b
})

// SearchList is what tools/list answers in search mode: search_tools,
// call_tool, the pinned tools, and then found (the tools a session found,
// when it reveals them), each once.
func (c *Catalog) SearchList(found []string) json.RawMessage {
	st := c.searched()
	items := slices.Clone(st.list)
	for _, name := range found {
		if raw := c.exposed[name]; raw != nil && !slices.Contains(c.pin, name) && name != SearchTool && name != CallTool {
			items = append(items, raw)
		}
	}
	return listResult("tools", items)
}

// SearchInstructions are the gateway's instructions in search mode: what
// lies behind search_tools. The servers' own instructions are left out, as
// their tools are.
func (c *Catalog) SearchInstructions() string { return c.searched().instructions }

// Search ranks the catalog's listed tools for query (see toolsearch).
func (c *Catalog) Search(query string, opts toolsearch.Options) []toolsearch.Tool {
	ix := c.searched().index
	var out []toolsearch.Tool
	for _, h := range ix.Search(query, opts) {
		out = append(out, ix.Tools()[h.Tool])
	}
	return out
}

// searchMode reports whether the session lists the search tools.
func (s *session) searchMode() bool {
	switch s.tools {
	case ToolsSearch:
		return true
	case ToolsAll:
		return false
	}
	return s.g.options().Search
}

// toolsList is what the session's tools/list answers from cat.
func (s *session) toolsList(cat *Catalog) json.RawMessage {
	if !s.searchMode() {
		return cat.ToolsList()
	}
	s.mu.Lock()
	found := slices.Clone(s.found)
	s.mu.Unlock()
	return cat.SearchList(found)
}

// instructions are what the session's initialize says.
func (s *session) instructions(cat *Catalog) string {
	if s.searchMode() {
		return cat.SearchInstructions()
	}
	return cat.Instructions()
}

// toolName returns the name a tools/call names, "" when it names none.
func toolName(params json.RawMessage) string {
	members, err := jsonwire.Members(params, 0)
	if err != nil {
		return ""
	}
	for _, m := range members {
		if m.Key == "name" {
			var name string
			_ = json.Unmarshal(m.Value, &name)
			return name
		}
	}
	return ""
}

// toolError answers a call of search mode's tools with an error result:
// the model reads it, and can do better.
func toolError(call *agent.Call, format string, args ...any) {
	res, _ := mcp.ErrorResult(format, args...).MarshalJSON()
	call.Answer(res, nil)
}

// searchTools answers search_tools: the best tools for the query, each
// with its name, server, description and input schema.
func (s *session) searchTools(call *agent.Call) {
	var p struct {
		Arguments json.RawMessage `json:"arguments"`
	}
	var args struct {
		Query  *string          `json:"query"`
		Server *string          `json:"server"`
		Limit  *json.RawMessage `json:"limit"`
	}
	if json.Unmarshal(call.Params(), &p) != nil || len(p.Arguments) > 0 && json.Unmarshal(p.Arguments, &args) != nil {
		toolError(call, "search_tools: the arguments are not an object of query (a string), server (a string) and limit (a number)")
		return
	}
	cat := s.cat.Load()
	query := ""
	if args.Query != nil {
		query = strings.TrimSpace(*args.Query)
	}
	switch {
	case query == "":
		toolError(call, "search_tools: query is empty; say in a few words what the tool should do, such as \"create an issue\"")
		return
	case len(query) > toolsearch.MaxQuery:
		toolError(call, "search_tools: query is %d bytes, more than %d; say in a few words what the tool should do", len(query), toolsearch.MaxQuery)
		return
	}
	limit := toolsearch.DefaultLimit
	if args.Limit != nil {
		var n float64
		if json.Unmarshal(*args.Limit, &n) != nil || n != float64(int(n)) || n < 1 || n > maxLimit {
			toolError(call, "search_tools: limit is %s; give a whole number from 1 to %d, or none for %d", cut(string(*args.Limit), 40), maxLimit, toolsearch.DefaultLimit)
			return
		}
		limit = int(n)
	}
	server := ""
	if args.Server != nil && *args.Server != "" {
		server = *args.Server
		var names []string
		for _, a := range cat.about {
			names = append(names, a.name)
		}
		if !slices.Contains(names, server) {
			toolError(call, "search_tools: no server %q in this workspace; its servers are: %s. Leave server out to search them all.", cut(server, 100), strings.Join(names, ", "))
			return
		}
	}
	found := cat.Search(query, toolsearch.Options{Server: server, Limit: limit})
	b := []byte(`{"tools":[`)
	var names []string
	for i, t := range found {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendFound(b, t, cat.exposed[t.Name])
		names = append(names, t.Name)
	}
	b = append(b, ']')
	if len(found) == 0 {
		b = append(b, `,"hint":`...)
		b = jsonwire.AppendString(b, "no tool matches; try other words, or fewer. The servers are:\n"+cat.searched().servers)
	}
	b = append(b, '}')
	res, err := (&mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(string(b))}}).MarshalJSON()
	if err != nil {
		toolError(call, "search_tools: %v", err)
		return
	}
	call.Answer(res, nil)
	s.reveal(names)
}

// appendFound appends a found tool as search_tools gives it: its name,
// server, description and input schema, as its server wrote them.
func appendFound(b []byte, t toolsearch.Tool, raw json.RawMessage) []byte {
	b = append(b, `{"name":`...)
	b = jsonwire.AppendString(b, t.Name)
	b = append(b, `,"server":`...)
	b = jsonwire.AppendString(b, t.Server)
	members, _ := jsonwire.Members(raw, 0)
	for _, m := range members {
		switch m.Key {
		case "title", "description", "inputSchema":
			b = append(append(append(append(b, ','), m.RawKey...), ':'), m.Value...)
		}
	}
	return append(b, '}')
}

// reveal remembers the tools the session found, and when the workspace
// asks for it (search_reveal), lists them from now on and tells the agent.
func (s *session) reveal(names []string) {
	if !s.g.options().Reveal || len(names) == 0 {
		return
	}
	s.mu.Lock()
	grew := false
	for _, n := range names {
		if !slices.Contains(s.found, n) && len(s.found) < maxFound {
			s.found = append(s.found, n)
			grew = true
		}
	}
	s.mu.Unlock()
	if grew {
		s.refreshList()
	}
}

// maxFound bounds the tools a session reveals: past it, found tools are
// still called by name, but its list grows no more.
const maxFound = 256

// callAny answers call_tool: it calls the tool it names, as a direct call
// of that tool would be made (callTool), its arguments and the call's
// other members (_meta, task) kept.
func (s *session) callAny(call *agent.Call) {
	members, err := jsonwire.Members(call.Params(), 0)
	if err != nil {
		toolError(call, "call_tool: the params are not a JSON object")
		return
	}
	var inner json.RawMessage
	out := []byte{'{'}
	for _, m := range members {
		switch m.Key {
		case "name":
		case "arguments":
			inner = m.Value
		default:
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = append(append(append(out, m.RawKey...), ':'), m.Value...)
		}
	}
	var args struct {
		Name      *string         `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if len(inner) == 0 || json.Unmarshal(inner, &args) != nil || args.Name == nil || *args.Name == "" {
		toolError(call, "call_tool: name the tool to call, as search_tools gave it, and give its arguments: {\"name\": \"...\", \"arguments\": {...}}")
		return
	}
	if len(args.Arguments) > 0 && !jsonwire.IsObject(args.Arguments) && string(args.Arguments) != "null" {
		toolError(call, "call_tool: the arguments of %q are not a JSON object", cut(*args.Name, 100))
		return
	}
	cat := s.cat.Load()
	if _, ok := cat.Tool(*args.Name); !ok {
		toolError(call, "call_tool: no tool %q in this workspace (a tool that its server's filters hide is not one); search_tools finds the tools there are", cut(*args.Name, 100))
		return
	}
	if len(out) > 1 {
		out = append(out, ',')
	}
	out = append(out, `"name":`...)
	out = jsonwire.AppendString(out, *args.Name)
	if len(args.Arguments) > 0 && string(args.Arguments) != "null" {
		out = append(append(out, `,"arguments":`...), args.Arguments...)
	}
	call.SetParams(append(out, '}'))
	s.callTool(call)
}
