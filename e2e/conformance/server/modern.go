package main

import (
	"context"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

// This file is the fixture's modern mode (-modern): a server of the
// modern revision only (2026-07-28), as one that never heard of the
// legacy revision would be. It answers server/discover; every request
// must carry the revision's _meta (its version and the client's
// capabilities), else it gets the revision's errors; initialize is
// refused with an error that names the version it speaks, as the spec
// advises, and the methods the revision removed (ping, logging/setLevel,
// resources/subscribe...) are unknown. A tool or prompt that needs input
// returns input_required and takes the retry with the answers
// (input.go); a log message goes out only when the request's _meta asks
// for its level; subscriptions/listen is acknowledged first, then hears
// the list changes it asked for, tagged with its id, until cancelled. It
// sends no request of its own.

var serverInfo = json.RawMessage(`{"name":"mcpgen-conformance-fixture","version":"1.0.0"}`)

// A listen is an open subscriptions/listen: its request's id and what it
// asked to hear.
type listen struct {
	id    mcp.ID
	lists map[string]bool // "tools", "prompts", "resources": their list_changed
}

func (f *fixture) handleModern(ctx context.Context, req *mcp.Request) (any, error) {
	if req.Method == "initialize" {
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(req.Params, &p)
		err := mcp.UnsupportedVersionError(p.ProtocolVersion, mcp.ModernVersions)
		err.Message = "Unsupported protocol version: this server speaks " + mcp.ModernVersion + " only, which has no initialize (send server/discover)"
		return nil, err
	}
	meta, err := mcp.ParseRequestMeta(req.Params)
	if err != nil {
		return nil, err
	}
	if err := mcp.CheckModernRequest(&meta, mcp.ModernVersions); err != nil {
		return nil, err
	}
	var p struct {
		Name      string            `json:"name"`
		URI       string            `json:"uri"`
		Arguments map[string]any    `json:"arguments"`
		Ref       map[string]string `json:"ref"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return nil, mcp.NewError(mcp.CodeInvalidParams, "invalid params: %v", err)
	}
	var result any
	cacheable := false
	switch req.Method {
	case "server/discover":
		result = obj{
			"supportedVersions": mcp.ModernVersions,
			"capabilities": obj{
				"tools":       obj{"listChanged": true},
				"prompts":     obj{"listChanged": true},
				"resources":   obj{"subscribe": true, "listChanged": true},
				"logging":     obj{},
				"completions": obj{},
			},
		}
		cacheable = true
	case "subscriptions/listen":
		return f.listen(ctx, req)
	case "tools/list":
		result, cacheable = obj{"tools": f.listTools()}, true
	case "prompts/list":
		result, cacheable = obj{"prompts": f.listPrompts()}, true
	case "resources/list":
		result, cacheable = obj{"resources": resources}, true
	case "resources/templates/list":
		result, cacheable = obj{"resourceTemplates": templates}, true
	case "resources/read":
		if result, err = read(p.URI); err != nil {
			return nil, err
		}
		cacheable = true
	case "completion/complete":
		result = complete(p.Ref)
	case "tools/call":
		if t := inputTools[p.Name]; t != nil {
			return f.runModern(req, &meta, t, p.Arguments)
		}
		if result, err = f.call(ctx, req, p.Name, p.Arguments); err != nil {
			return nil, err
		}
	case "prompts/get":
		if t := inputPrompts[p.Name]; t != nil {
			return f.runModern(req, &meta, t, p.Arguments)
		}
		if result, err = prompt(p.Name, p.Arguments); err != nil {
			return nil, err
		}
	default:
		return nil, mcp.ErrMethodNotFound
	}
	raw, err := json.Marshal(result)
	if err != nil {
		return nil, err
	}
	if cacheable {
		if raw, err = mcp.Cacheable(raw, 0, mcp.CachePrivate); err != nil {
			return nil, err
		}
	}
	return mcp.CompleteResult(raw, serverInfo)
}

// runModern runs a tool or prompt that needs input: with the answers the
// request carries (inputResponses) and the state it gives back, if it is
// a retry; what it still needs is an input_required result.
func (f *fixture) runModern(req *mcp.Request, meta *mcp.RequestMeta, t inputTool, args map[string]any) (any, error) {
	responses, state, hasState, _, err := mcp.RetryParams(req.Params)
	if err != nil {
		return nil, err
	}
	caps := map[string]json.RawMessage{}
	if err := json.Unmarshal(meta.ClientCapabilities, &caps); err != nil {
		return nil, mcp.NewError(mcp.CodeInvalidParams, "invalid params: _meta[%q]: %v", mcp.MetaClientCapabilities, err)
	}
	r := &run{f: f, args: args, caps: caps, responses: responses, state: state, hasState: hasState}
	result, n, err := t(r)
	if err != nil {
		return nil, err
	}
	if n == nil {
		raw, err := json.Marshal(result)
		if err != nil {
			return nil, err
		}
		return mcp.CompleteResult(raw, serverInfo)
	}
	ir := &mcp.InputRequiredResult{InputRequests: n.requests, Keys: n.keys, RequestState: n.state, HasState: n.state != ""}
	raw, err := ir.MarshalJSON()
	return json.RawMessage(raw), err
}

// listen acknowledges a subscription, says what it will hear, and keeps
// it until the client cancels it or the fixture's input ends: its request
// is not answered before (and not at all when cancelled).
func (f *fixture) listen(ctx context.Context, req *mcp.Request) (any, error) {
	var p struct {
		Notifications struct {
			Tools     bool     `json:"toolsListChanged"`
			Prompts   bool     `json:"promptsListChanged"`
			Resources bool     `json:"resourcesListChanged"`
			Resource  []string `json:"resourceSubscriptions"`
		} `json:"notifications"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return nil, mcp.NewError(mcp.CodeInvalidParams, "invalid params: %v", err)
	}
	n := p.Notifications
	l := &listen{id: req.ID, lists: map[string]bool{"tools": n.Tools, "prompts": n.Prompts, "resources": n.Resources}}
	honored := obj{}
	for list, key := range map[string]string{"tools": "toolsListChanged", "prompts": "promptsListChanged", "resources": "resourcesListChanged"} {
		if l.lists[list] {
			honored[key] = true
		}
	}
	if len(n.Resource) > 0 {
		// Its resources never change: the subscription is taken, and
		// stays silent.
		honored["resourceSubscriptions"] = n.Resource
	}
	// The acknowledgement goes before the listen is known to the triggers:
	// it is the first thing the subscription hears.
	if err := f.conn.Notify(ctx, "notifications/subscriptions/acknowledged", tagged(l, obj{"notifications": honored})); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.listens[l] = struct{}{}
	f.mu.Unlock()
	select {
	case <-ctx.Done():
	case <-f.ended:
	}
	f.mu.Lock()
	delete(f.listens, l)
	f.mu.Unlock()
	// Answered at last, as a server that exits ends its subscriptions.
	raw, err := json.Marshal(tagged(l, obj{}))
	if err != nil {
		return nil, err
	}
	return mcp.CompleteResult(raw, serverInfo)
}

// notifyListens tells the subscriptions that asked for it that list
// changed.
func (f *fixture) notifyListens(list string) {
	f.mu.Lock()
	var tell []*listen
	for l := range f.listens {
		if l.lists[list] {
			tell = append(tell, l)
		}
	}
	f.mu.Unlock()
	for _, l := range tell {
		_ = f.conn.Notify(context.Background(), "notifications/"+list+"/list_changed", tagged(l, obj{}))
	}
}

// tagged returns params with the subscription's id in _meta.
func tagged(l *listen, params obj) obj {
	params["_meta"] = obj{mcp.MetaSubscriptionID: l.id}
	return params
}
