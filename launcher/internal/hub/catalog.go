package hub

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
	"github.com/mcpgen/mcpgen/mcp"
)

// A Catalog is what a hub knows of its server, for the workspace gateway:
// the answer to initialize and the lists of the server's last ready
// process (kept while it restarts, or preloaded from the launcher's cache
// while it is idle), and whether it takes requests now.
type Catalog struct {
	Init  *mcp.InitializeResult // nil until the server was first ready (or preloaded)
	Tools []*mcp.Tool           // every tool the server lists; Exposes filters them
	Lists                       // prompts, resources, templates
	// Exposes reports whether the hub's clients see a tool (SetFilter);
	// nil: every tool.
	Exposes func(tool string) bool
	// Ready is true while a process of the server takes requests.
	Ready bool
	// Idle is true while the server has no process and starts when a
	// request needs it (lazy start, idle stop): a request then waits for
	// it, and EnsureStarted starts it.
	Idle bool
	// Waking is true from the moment a request started an idle server
	// until it is ready or its start failed: a request may wait for it,
	// and learns why if the start fails.
	Waking bool
	// Failed says why the server will not be ready before a reload.
	Failed error
}

// Lists are what a server lists besides tools, each item as the server
// wrote it. A nil list is one not known (never listed, or the server
// does not have it); a known list that is empty is not nil.
type Lists struct {
	Prompts   []json.RawMessage
	Resources []json.RawMessage
	Templates []json.RawMessage // resource templates
}

// only returns the lists that are among these, the others not known.
func (l Lists) only(these []list) Lists {
	var out Lists
	for _, li := range these {
		*li.of(&out) = *li.of(&l)
	}
	return out
}

// Catalog returns what the hub knows of its server now. The slices must
// not be modified.
func (h *Hub) Catalog() Catalog {
	h.mu.Lock()
	c := Catalog{
		Init:    h.init,
		Tools:   h.tools,
		Lists:   h.lists,
		Exposes: h.exposes,
		Idle:    h.idle.on,
		Waking:  h.idle.woken,
	}
	up := h.up
	if h.failure != nil || h.closed {
		c.Failed = h.failure
		if c.Failed == nil {
			c.Failed = fmt.Errorf("server %q was removed from the workspace", h.name)
		}
	}
	h.mu.Unlock()
	c.Ready = up != nil && !up.refuses() // outside h.mu: the upstream's Conn calls the hub
	return c
}

// Watch calls f whenever the server's catalog or readiness changes: it
// became ready, stopped taking requests, failed, or its lists changed. f
// runs on the hub's goroutines: it must not block, nor call the hub. Watch
// returns a function that stops the calls.
//
// A watched hub also lists its server's prompts, resources and resource
// templates (what the gateway serves besides tools), and lists them again
// when the server says that they changed.
func (h *Hub) Watch(f func()) (stop func()) {
	h.mu.Lock()
	h.nextWatch++
	id := h.nextWatch
	h.watchers[id] = f
	first := !h.listsWanted
	h.listsWanted = true
	up, init := h.up, h.init
	h.mu.Unlock()
	if first && up != nil {
		h.listOthers(up, nil, otherLists(init)...)
	}
	return func() {
		h.mu.Lock()
		delete(h.watchers, id)
		h.mu.Unlock()
	}
}

// changed calls the watchers; the caller does not hold h.mu.
func (h *Hub) changed() {
	h.mu.Lock()
	fs := make([]func(), 0, len(h.watchers))
	for _, f := range h.watchers {
		fs = append(fs, f)
	}
	h.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// SetFilter sets which tools the hub's clients see: exposes reports
// whether a tool is (enabled_tools, disabled_tools); nil shows every tool.
// A hidden tool is not listed, and calling it is an error, as calling a
// tool that does not exist is. Clients are told (list_changed) when what
// they see changes.
func (h *Hub) SetFilter(exposes func(tool string) bool) {
	h.mu.Lock()
	before := exposedNames(h.tools, h.exposes)
	h.exposes = exposes
	changed := h.toolsJSON != nil && !slices.Equal(before, exposedNames(h.tools, exposes))
	clients := h.clientList()
	h.mu.Unlock()
	if changed {
		h.broadcast(clients, listChanged)
		h.changed()
	}
}

func exposedNames(tools []*mcp.Tool, exposes func(string) bool) []string {
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		if exposes == nil || exposes(t.Name) {
			names = append(names, t.Name)
		}
	}
	return names
}

// hiddenTool returns the tool a tools/call names, and whether the filter
// hides it.
func (h *Hub) hiddenTool(params json.RawMessage) (string, bool) {
	h.mu.Lock()
	exposes := h.exposes
	h.mu.Unlock()
	if exposes == nil {
		return "", false
	}
	var p struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(params, &p) != nil {
		return "", false // the server says what is wrong with it
	}
	return p.Name, !exposes(p.Name)
}

// filterTools removes the tools that the filter hides from a tools/list
// result.
func (h *Hub) filterTools(result json.RawMessage) json.RawMessage {
	h.mu.Lock()
	exposes := h.exposes
	h.mu.Unlock()
	if exposes == nil {
		return result
	}
	var r map[string]json.RawMessage
	var tools []json.RawMessage
	if json.Unmarshal(result, &r) != nil || json.Unmarshal(r["tools"], &tools) != nil {
		return result
	}
	kept := tools[:0]
	for _, raw := range tools {
		var t struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &t) == nil && exposes(t.Name) {
			kept = append(kept, raw)
		}
	}
	var b bytes.Buffer
	b.WriteString(`[`)
	for i, raw := range kept {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(raw)
	}
	b.WriteString(`]`)
	r["tools"] = b.Bytes()
	out, err := jsonwire.Marshal(r)
	if err != nil {
		return result
	}
	return out
}

// A list is one of the lists the hub keeps besides tools.
type list struct {
	method, key string
	of          func(l *Lists) *[]json.RawMessage
}

var (
	promptsList   = list{"prompts/list", "prompts", func(l *Lists) *[]json.RawMessage { return &l.Prompts }}
	resourcesList = list{"resources/list", "resources", func(l *Lists) *[]json.RawMessage { return &l.Resources }}
	templatesList = list{"resources/templates/list", "resourceTemplates", func(l *Lists) *[]json.RawMessage { return &l.Templates }}
	allLists      = []list{promptsList, resourcesList, templatesList}
)

// listOf returns the list that method lists, if the hub keeps it.
func listOf(method string) (list, bool) {
	for _, l := range allLists {
		if l.method == method {
			return l, true
		}
	}
	return list{}, false
}

// otherLists returns the lists a server's capabilities say it has.
func otherLists(init *mcp.InitializeResult) []list {
	if init == nil {
		return nil
	}
	var caps struct {
		Prompts   json.RawMessage `json:"prompts"`
		Resources json.RawMessage `json:"resources"`
	}
	_ = json.Unmarshal(init.Capabilities, &caps)
	var lists []list
	if len(caps.Prompts) > 0 && string(caps.Prompts) != "null" {
		lists = append(lists, promptsList)
	}
	if len(caps.Resources) > 0 && string(caps.Resources) != "null" {
		lists = append(lists, resourcesList, templatesList)
	}
	return lists
}

// listOthers lists prompts, resources or resource templates of the
// server, in a goroutine of its own that ends within readyWait (or when
// the upstream ends), tells the watchers when a list changed, and then
// closes done (if not nil). A server that fails to list one keeps the
// list it had: a list is extra.
func (h *Hub) listOthers(u *Upstream, done chan struct{}, lists ...list) {
	if len(lists) == 0 {
		if done != nil {
			close(done)
		}
		return
	}
	go func() {
		if done != nil {
			defer close(done)
		}
		ctx, cancel := context.WithTimeout(context.Background(), readyWait)
		defer cancel()
		changed := false
		for _, l := range lists {
			items, err := listAll(ctx, u, l.method, l.key)
			if err != nil {
				h.log.Warn("listing failed", "server", h.name, "method", l.method, "error", err)
				continue
			}
			if items == nil {
				items = []json.RawMessage{} // known, and empty
			}
			h.mu.Lock()
			if h.up == u {
				p := l.of(&h.lists)
				changed = changed || *p == nil || !slices.EqualFunc(*p, items, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) })
				*p = items
			}
			h.mu.Unlock()
		}
		if changed {
			h.changed()
		}
	}()
}

// Lists lists what the server of up has besides tools, as its capabilities
// in init say, within ctx: for a catalog kept without a hub (mcpgen
// build). A list that fails is left unknown (nil).
func (u *Upstream) Lists(ctx context.Context, init *mcp.InitializeResult) Lists {
	var out Lists
	for _, l := range otherLists(init) {
		items, err := listAll(ctx, u, l.method, l.key)
		if err != nil {
			continue
		}
		if items == nil {
			items = []json.RawMessage{}
		}
		*l.of(&out) = items
	}
	return out
}

// maxItems bounds a list of prompts, resources or templates, and maxPages
// its pages: a server is hostile input too.
const (
	maxItems = 10000
	maxPages = 1000
)

// listAll lists every page of a list method.
func listAll(ctx context.Context, u *Upstream, method, key string) ([]json.RawMessage, error) {
	var items []json.RawMessage
	var cursor string
	for range maxPages {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var page map[string]json.RawMessage
		if err := u.client.Call(ctx, method, params, &page); err != nil {
			return nil, err
		}
		var got []json.RawMessage
		if raw := page[key]; raw != nil && string(raw) != "null" && json.Unmarshal(raw, &got) != nil {
			return nil, fmt.Errorf("%s: %q is not a list", method, key)
		}
		items = append(items, got...)
		if len(items) > maxItems {
			return nil, fmt.Errorf("%s: more than %d items", method, maxItems)
		}
		var next string
		_ = json.Unmarshal(page["nextCursor"], &next)
		if next == "" {
			return items, nil
		}
		if next == cursor {
			return nil, fmt.Errorf("%s: the server repeats cursor %q", method, cursor)
		}
		cursor = next
	}
	return nil, fmt.Errorf("%s: more than %d pages", method, maxPages)
}
