package gateway

import (
	"slices"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
	"github.com/mcpgen/mcpgen/launcher/internal/agent"
	"github.com/mcpgen/mcpgen/mcp"
)

// This file is which server a request of the agent's goes to: by the
// gateway's name of a tool or a prompt, by a resource's URI, by what a
// completion completes; the rest the session answers itself.

// Request answers or routes one of the agent's requests (see
// agent.Handler; the Conn answers ping).
func (s *session) Request(call *agent.Call) {
	switch call.Method() {
	case "initialize":
		s.initialize(call)
	case "tools/list":
		s.list(call, s.toolsList)
	case "prompts/list":
		s.list(call, (*Catalog).PromptsList)
	case "resources/list":
		s.list(call, (*Catalog).ResourcesList)
	case "resources/templates/list":
		s.list(call, (*Catalog).TemplatesList)
	case "tools/call":
		switch name := toolName(call.Params()); {
		case name == SearchTool && s.searchMode():
			s.searchTools(call)
		case name == CallTool && s.searchMode():
			s.callAny(call)
		default:
			s.callTool(call)
		}
	case "prompts/get":
		s.named(call, "prompt", (*Catalog).Prompt)
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		s.byURI(call)
	case "completion/complete":
		s.complete(call)
	case "logging/setLevel":
		s.setLevel(call)
	case "tasks/get", "tasks/update", "tasks/cancel":
		s.byTask(call)
	default:
		call.Answer(nil, mcp.NewError(mcp.CodeMethodNotFound, "method not found: %s", call.Method()))
	}
}

// callTool routes a tools/call to the server that owns the tool, under
// the server's own name for it. A server that cannot take it now gets the
// agent an error result that says why and when to call again.
func (s *session) callTool(call *agent.Call) {
	cat := s.cat.Load()
	name, params, ok := renamed(call.Params(), "name", func(name string) (string, bool) {
		r, ok := cat.Tool(name)
		return r.Name, ok
	})
	if !ok {
		call.Answer(nil, mcp.NewError(mcp.CodeInvalidParams, "unknown tool: %q (tools/list lists them)", name))
		return
	}
	r, _ := cat.Tool(name)
	call.SetParams(params)
	s.route(r.Server, r.Failed, call, true)
}

// named routes a request that names a prompt by the gateway's name.
func (s *session) named(call *agent.Call, what string, lookup func(*Catalog, string) (Route, bool)) {
	cat := s.cat.Load()
	name, params, ok := renamed(call.Params(), "name", func(name string) (string, bool) {
		r, ok := lookup(cat, name)
		return r.Name, ok
	})
	if !ok {
		call.Answer(nil, mcp.NewError(mcp.CodeInvalidParams, "unknown %s: %q", what, name))
		return
	}
	r, _ := lookup(cat, name)
	call.SetParams(params)
	s.route(r.Server, r.Failed, call, false)
}

// byURI routes resources/read, subscribe and unsubscribe to the server of
// the URI: the one that listed it, else the one whose template it fits.
// codeResourceNotFound is the legacy revisions' error for a resource that
// does not exist.
const codeResourceNotFound = -32002

func (s *session) byURI(call *agent.Call) {
	var p struct {
		URI string `json:"uri"`
	}
	if err := json.Unmarshal(call.Params(), &p); err != nil || p.URI == "" {
		call.Answer(nil, mcp.NewError(mcp.CodeInvalidParams, "%s: no uri", call.Method()))
		return
	}
	r, ok := s.cat.Load().Resource(p.URI)
	if !ok {
		// "Resource not found", naming the resource in data as the spec
		// asks: -32002 in the legacy revisions, -32602 in the modern one
		// (SEP-2164).
		code := int64(codeResourceNotFound)
		if call.Modern() {
			code = mcp.CodeInvalidParams
		}
		err := mcp.NewError(code, "resource not found: no server of the workspace offers %q", p.URI)
		err.Data = append(jsonwire.AppendString([]byte(`{"uri":`), p.URI), '}')
		call.Answer(nil, err)
		return
	}
	s.route(r.Server, r.Failed, call, false)
}

// complete routes completion/complete by what it completes: a prompt (by
// the gateway's name, renamed) or a resource template.
func (s *session) complete(call *agent.Call) {
	var p map[string]json.RawMessage
	var ref struct {
		Type string `json:"type"`
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	if json.Unmarshal(call.Params(), &p) != nil || json.Unmarshal(p["ref"], &ref) != nil {
		call.Answer(nil, mcp.NewError(mcp.CodeInvalidParams, "completion/complete: no ref"))
		return
	}
	cat := s.cat.Load()
	var r Route
	var ok bool
	switch ref.Type {
	case "ref/prompt":
		var refParams json.RawMessage
		_, refParams, ok = renamed(p["ref"], "name", func(name string) (string, bool) {
			r, ok := cat.Prompt(name)
			return r.Name, ok
		})
		if ok {
			r, _ = cat.Prompt(ref.Name)
			p["ref"] = refParams
		}
	case "ref/resource":
		r, ok = cat.Template(ref.URI)
	}
	if !ok {
		call.Answer(nil, mcp.NewError(mcp.CodeInvalidParams, "completion/complete: no server of the workspace has %s %q", ref.Type, ref.Name+ref.URI))
		return
	}
	params, err := jsonwire.Marshal(p)
	if err != nil {
		call.Answer(nil, mcp.NewError(mcp.CodeInvalidParams, "completion/complete: %v", err))
		return
	}
	call.SetParams(params)
	s.route(r.Server, r.Failed, call, false)
}

// setLevel passes logging/setLevel to every server that logs, and answers
// at once: the level is a wish, and a server that is down gets it when an
// agent asks again. An idle server is left idle: the wish would start it.
func (s *session) setLevel(call *agent.Call) {
	cat := s.cat.Load()
	s.mu.Lock()
	var targets []*member
	for _, name := range cat.Logging() {
		if m := s.members[name]; m != nil {
			targets = append(targets, m)
		}
	}
	s.mu.Unlock()
	targets = slices.DeleteFunc(targets, func(m *member) bool { return m.b.Hub.Catalog().Idle })
	for _, m := range targets {
		m.m.Forward(call.Method(), call.Params()) // its answer is dropped
	}
	call.Answer(json.RawMessage(`{}`), nil)
}

// renamed returns params with the string member key replaced by what
// rename makes of it, every other byte as the agent sent it; the name as
// sent; and whether rename knew it.
func renamed(params json.RawMessage, key string, rename func(string) (string, bool)) (string, json.RawMessage, bool) {
	members, err := jsonwire.Members(params, 0)
	if err != nil {
		return "", nil, false
	}
	for _, m := range members {
		if m.Key != key {
			continue
		}
		var name string
		if json.Unmarshal(m.Value, &name) != nil {
			return "", nil, false
		}
		original, ok := rename(name)
		if !ok {
			return name, nil, false
		}
		out := make([]byte, 0, len(params)+len(original)-len(m.Value)+2)
		out = append(out, params[:m.ValueAt]...)
		out = jsonwire.AppendString(out, original)
		out = append(out, params[m.ValueAt+len(m.Value):]...)
		return name, out, true
	}
	return "", nil, false
}
