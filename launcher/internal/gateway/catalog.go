// Package gateway is the workspace gateway: one MCP server whose tools,
// prompts and resources are those of every server of a workspace, each
// reached through its hub, so that ids, progress tokens, cancellations and
// the servers' own requests are remapped as the hub does for any client.
//
// Its catalog (catalog.go, naming.go) is pure: from the servers' catalogs,
// in manifest order, it builds what the gateway lists and the way back from
// an exposed name to a server and its own name. A name unique in the
// workspace is kept; names that several servers use are all exposed as
// SERVER__NAME; a name too long or with other characters than
// [A-Za-z0-9_-] is shortened with a hash. Resources are merged by URI, the
// first server in manifest order serving a URI that several offer.
package gateway

import (
	"bytes"
	"slices"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
	"github.com/mcpgen/mcpgen/mcp"
)

// The _meta keys of an exposed tool or prompt that say where it comes
// from: tools ls shows them, and a client may.
const (
	MetaServer = "io.github.mcpgen/server"
	MetaName   = "io.github.mcpgen/name"
)

// A Server is one server's part of the workspace, as its hub last saw it.
type Server struct {
	Name        string
	Description string // the manifest's, for search; "" takes the server's title
	// Init is the server's answer to initialize; nil when it was never
	// ready, and then the server has no part in the catalog yet.
	Init      *mcp.InitializeResult
	Tools     []*mcp.Tool
	Prompts   []json.RawMessage
	Resources []json.RawMessage
	Templates []json.RawMessage // resource templates
	// Exposes filters its tools (enabled_tools, disabled_tools); nil lets
	// every tool through.
	Exposes func(tool string) bool
	// Failed servers are not listed, but their names stay reserved, so
	// that the others' names do not change when it fails and recovers.
	Failed bool
}

// A Name is how the gateway exposes one tool or prompt.
type Name struct {
	Name     string `json:"name"`     // as the gateway lists it
	Server   string `json:"server"`   // the server that has it
	Original string `json:"original"` // the server's own name for it
	Failed   bool   `json:"failed,omitempty"`
}

// A Route leads a request to the server that answers it.
type Route struct {
	Server string
	Name   string // the server's own name (tools, prompts); the URI template (templates)
	Failed bool
}

// A Conflict is a resource URI (or a resource template) that several
// servers offer: the first one serves it.
type Conflict struct {
	URI      string   `json:"uri"`
	Template bool     `json:"template,omitempty"`
	Servers  []string `json:"servers"` // in manifest order; the first serves it
}

// A Catalog is what the gateway lists and how it routes, built once per
// change of the workspace (Build) and read by every request.
type Catalog struct {
	Tools     []Name // every named tool, in manifest order and the server's
	Prompts   []Name
	Conflicts []Conflict

	tools     map[string]Route
	prompts   map[string]Route
	resources map[string]Route
	templates []template

	toolsList, promptsList, resourcesList, templatesList json.RawMessage
	capabilities                                         json.RawMessage
	instructions                                         string
	logging                                              []string // servers that log
	tasks                                                bool     // a server has the tasks extension

	exposed map[string]json.RawMessage // a listed tool's JSON, by its name
	about   []about                    // the servers whose tools are listed, for search
	pin     []string                   // the tools search mode lists as themselves
	search  searchOnce                 // made at the first search (search.go)
}

// tasksExtension is the tasks extension's key among a server's
// capabilities' extensions (agent.TasksExtension).
const tasksExtension = "io.modelcontextprotocol/tasks"

// Tasks reports whether a server of the workspace issues tasks (the tasks
// extension): the gateway then advertises it to modern agents, and routes
// each task's requests to its server.
func (c *Catalog) Tasks() bool { return c.tasks }

type template struct {
	Route
	match func(string) bool
}

// Build builds the catalog of servers, in manifest order; always names
// every tool and prompt SERVER__NAME ([gateway] prefix = "always").
func Build(servers []Server, always bool) *Catalog {
	c := &Catalog{
		tools:     map[string]Route{},
		prompts:   map[string]Route{},
		resources: map[string]Route{},
		exposed:   map[string]json.RawMessage{},
	}
	known := slices.DeleteFunc(slices.Clone(servers), func(s Server) bool { return s.Init == nil })
	c.buildTools(known, always)
	c.buildAbout(known)
	c.buildPrompts(known, always)
	c.buildResources(known)
	c.buildInitialize(known)
	return c
}

func (c *Catalog) buildTools(servers []Server, always bool) {
	var keys []key
	var raws []json.RawMessage
	var failed []bool
	for _, s := range servers {
		seen := map[string]bool{}
		for _, t := range s.Tools {
			if seen[t.Name] || s.Exposes != nil && !s.Exposes(t.Name) {
				continue
			}
			seen[t.Name] = true
			raw := t.Raw
			if len(raw) == 0 {
				raw, _ = t.MarshalJSON()
			}
			keys, raws, failed = append(keys, key{s.Name, t.Name}), append(raws, raw), append(failed, s.Failed)
		}
	}
	c.Tools, c.toolsList = nameAll(keys, raws, failed, always, c.tools, c.exposed, "tools")
}

func (c *Catalog) buildPrompts(servers []Server, always bool) {
	var keys []key
	var raws []json.RawMessage
	var failed []bool
	for _, s := range servers {
		seen := map[string]bool{}
		for _, raw := range s.Prompts {
			var p struct {
				Name string `json:"name"`
			}
			if json.Unmarshal(raw, &p) != nil || seen[p.Name] {
				continue
			}
			seen[p.Name] = true
			keys, raws, failed = append(keys, key{s.Name, p.Name}), append(raws, raw), append(failed, s.Failed)
		}
	}
	c.Prompts, c.promptsList = nameAll(keys, raws, failed, always, c.prompts, nil, "prompts")
}

// nameAll names what servers offer (keys[i], described by raws[i]), records
// each name's route in routes (and what is listed in exposed, unless nil),
// and returns the names and the list result under field, which leaves out
// what failed servers offer.
func nameAll(keys []key, raws []json.RawMessage, failed []bool, always bool, routes map[string]Route, exposed map[string]json.RawMessage, field string) ([]Name, json.RawMessage) {
	names := assignNames(keys, always)
	var all []Name
	var list [][]byte
	for i, k := range keys {
		all = append(all, Name{Name: names[i], Server: k.server, Original: k.name, Failed: failed[i]})
		routes[names[i]] = Route{Server: k.server, Name: k.name, Failed: failed[i]}
		if failed[i] {
			continue
		}
		if raw, ok := expose(raws[i], names[i], k); ok {
			list = append(list, raw)
			if exposed != nil {
				exposed[names[i]] = raw
			}
		}
	}
	return all, listResult(field, list)
}

// buildResources merges resources by URI and templates by their text: the
// first server in manifest order serves each, and the others are noted.
func (c *Catalog) buildResources(servers []Server) {
	offered := map[string][]string{}     // by URI: the servers, in order
	tmplOffered := map[string][]string{} // by template
	var conflicts, tmplConflicts []string
	var resources, templates [][]byte
	for _, s := range servers {
		for _, raw := range s.Resources {
			var r struct {
				URI string `json:"uri"`
			}
			if json.Unmarshal(raw, &r) != nil || r.URI == "" || slices.Contains(offered[r.URI], s.Name) {
				continue
			}
			offered[r.URI] = append(offered[r.URI], s.Name)
			if len(offered[r.URI]) == 2 {
				conflicts = append(conflicts, r.URI)
			}
			if len(offered[r.URI]) > 1 {
				continue
			}
			c.resources[r.URI] = Route{Server: s.Name, Failed: s.Failed}
			if !s.Failed {
				resources = append(resources, raw)
			}
		}
		for _, raw := range s.Templates {
			var t struct {
				URITemplate string `json:"uriTemplate"`
			}
			if json.Unmarshal(raw, &t) != nil || t.URITemplate == "" || slices.Contains(tmplOffered[t.URITemplate], s.Name) {
				continue
			}
			tmplOffered[t.URITemplate] = append(tmplOffered[t.URITemplate], s.Name)
			if len(tmplOffered[t.URITemplate]) == 2 {
				tmplConflicts = append(tmplConflicts, t.URITemplate)
			}
			if len(tmplOffered[t.URITemplate]) > 1 {
				continue
			}
			tm := template{Route: Route{Server: s.Name, Name: t.URITemplate, Failed: s.Failed}}
			if re, err := compileTemplate(t.URITemplate); err == nil {
				tm.match = re.MatchString
			}
			c.templates = append(c.templates, tm)
			if !s.Failed {
				templates = append(templates, raw)
			}
		}
	}
	for _, uri := range conflicts {
		c.Conflicts = append(c.Conflicts, Conflict{URI: uri, Servers: offered[uri]})
	}
	for _, t := range tmplConflicts {
		c.Conflicts = append(c.Conflicts, Conflict{URI: t, Template: true, Servers: tmplOffered[t]})
	}
	c.resourcesList = listResult("resources", resources)
	c.templatesList = listResult("resourceTemplates", templates)
}

// buildInitialize makes the gateway's capabilities, the union of the
// servers' (tools always, with listChanged: the gateway sends it), and its
// instructions, each server's under its name.
func (c *Catalog) buildInitialize(servers []Server) {
	var prompts, resources, subscribe, logging, completions bool
	var instructions []string
	for _, s := range servers {
		var caps struct {
			Prompts   json.RawMessage `json:"prompts"`
			Resources *struct {
				Subscribe bool `json:"subscribe"`
			} `json:"resources"`
			Logging     json.RawMessage            `json:"logging"`
			Completions json.RawMessage            `json:"completions"`
			Extensions  map[string]json.RawMessage `json:"extensions"`
		}
		_ = json.Unmarshal(s.Init.Capabilities, &caps)
		prompts = prompts || present(caps.Prompts)
		if caps.Resources != nil {
			resources = true
			subscribe = subscribe || caps.Resources.Subscribe
		}
		if present(caps.Logging) {
			logging = true
			c.logging = append(c.logging, s.Name)
		}
		completions = completions || present(caps.Completions)
		if _, ok := caps.Extensions[tasksExtension]; ok && !s.Failed {
			c.tasks = true
		}
		if text := strings.TrimSpace(s.Init.Instructions); text != "" && !s.Failed {
			instructions = append(instructions, "## "+s.Name+"\n\n"+text)
		}
	}
	var b bytes.Buffer
	b.WriteString(`{"tools":{"listChanged":true}`)
	if prompts {
		b.WriteString(`,"prompts":{"listChanged":true}`)
	}
	if resources {
		b.WriteString(`,"resources":{"listChanged":true`)
		if subscribe {
			b.WriteString(`,"subscribe":true`)
		}
		b.WriteString(`}`)
	}
	if logging {
		b.WriteString(`,"logging":{}`)
	}
	if completions {
		b.WriteString(`,"completions":{}`)
	}
	b.WriteString(`}`)
	c.capabilities = b.Bytes()
	c.instructions = strings.Join(instructions, "\n\n")
}

func present(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

// expose rewrites a tool's or a prompt's JSON for the gateway's list: its
// exposed name, and where it comes from in _meta (added to the server's
// own _meta); every other member is copied as the server wrote it. An
// entry that is not a JSON object is left out.
func expose(raw json.RawMessage, name string, k key) (json.RawMessage, bool) {
	members, err := jsonwire.Members(raw, 0)
	if err != nil {
		return nil, false
	}
	b := make([]byte, 0, len(raw)+len(name)+len(k.server)+len(k.name)+64)
	b = append(b, '{')
	b = append(b, `"name":`...)
	b = jsonwire.AppendString(b, name)
	b = append(b, `,"_meta":{`...)
	b = append(b, `"`+MetaServer+`":`...)
	b = jsonwire.AppendString(b, k.server)
	b = append(b, `,"`+MetaName+`":`...)
	b = jsonwire.AppendString(b, k.name)
	for _, m := range members {
		if m.Key != "_meta" {
			continue
		}
		inner, err := jsonwire.Members(m.Value, 0)
		if err != nil {
			continue // not an object: replaced
		}
		for _, im := range inner {
			if im.Key != MetaServer && im.Key != MetaName {
				b = append(append(append(append(b, ','), im.RawKey...), ':'), im.Value...)
			}
		}
	}
	b = append(b, '}')
	for _, m := range members {
		if m.Key != "name" && m.Key != "_meta" {
			b = append(append(append(append(b, ','), m.RawKey...), ':'), m.Value...)
		}
	}
	return append(b, '}'), true
}

// listResult is the result of a list request: {"KEY":[...]}, one page.
func listResult(key string, items [][]byte) json.RawMessage {
	size := len(key) + 8
	for _, it := range items {
		size += len(it) + 1
	}
	var b bytes.Buffer
	b.Grow(size)
	b.WriteString(`{"`)
	b.WriteString(key)
	b.WriteString(`":[`)
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(it)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// Tool returns the route of an exposed tool name.
func (c *Catalog) Tool(name string) (Route, bool) {
	r, ok := c.tools[name]
	return r, ok
}

// Prompt returns the route of an exposed prompt name.
func (c *Catalog) Prompt(name string) (Route, bool) {
	r, ok := c.prompts[name]
	return r, ok
}

// Resource returns the server of a resource URI: the one that listed it,
// else the first whose template it fits.
func (c *Catalog) Resource(uri string) (Route, bool) {
	if r, ok := c.resources[uri]; ok {
		return r, true
	}
	for _, t := range c.templates {
		if t.match != nil && t.match(uri) {
			return Route{Server: t.Server, Failed: t.Failed}, true
		}
	}
	return Route{}, false
}

// Template returns the server of a resource template, named by its text
// (as completion/complete names it) or by a URI it fits.
func (c *Catalog) Template(uri string) (Route, bool) {
	for _, t := range c.templates {
		if t.Name == uri {
			return Route{Server: t.Server, Failed: t.Failed}, true
		}
	}
	return c.Resource(uri)
}

// ToolsList, PromptsList, ResourcesList and TemplatesList are the results
// of the list requests: every listed item, in one page. They must not be
// modified.
func (c *Catalog) ToolsList() json.RawMessage     { return c.toolsList }
func (c *Catalog) PromptsList() json.RawMessage   { return c.promptsList }
func (c *Catalog) ResourcesList() json.RawMessage { return c.resourcesList }
func (c *Catalog) TemplatesList() json.RawMessage { return c.templatesList }

// Capabilities are the gateway's capabilities in initialize.
func (c *Catalog) Capabilities() json.RawMessage { return c.capabilities }

// Instructions are the servers' instructions, each under its name.
func (c *Catalog) Instructions() string { return c.instructions }

// Logging returns the servers that declared the logging capability.
func (c *Catalog) Logging() []string { return c.logging }
