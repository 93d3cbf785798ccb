package agent

import (
	"slices"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
	"github.com/mcpgen/mcpgen/mcp"
)

// This file is subscriptions/listen, the modern agents' way to hear of
// changes, answered by the Conn for every face: a subscription is one of
// the agent's requests that lasts until the agent cancels it, or goes (or
// closes its input: then it ends gracefully, answered), never a call to a
// server (no tool_timeout bounds it). The face tells the Conn what changed
// (ListChanged); the Conn tells the legacy session (list_changed, as ever)
// and each subscription that asked, its notifications tagged with the
// subscription's id.

// A subscription is one subscriptions/listen of the agent's, by its id.
type subscription struct {
	call  *Call
	lists []string // the lists whose changes it hears: "tools", "prompts", "resources"
	tasks []string // the tasks whose notifications it hears (taskIds)
	uris  []string // the resources whose changes it hears (resourceSubscriptions)
	acked bool     // its acknowledgment is written: notifications may follow
}

// A ResourceSubscriber is a face that tells of changes of resources
// (resources/updated) to the subscriptions that ask for them: its Handler
// implements it, or no resource subscription is honoured.
type ResourceSubscriber interface {
	// SubscribeResources has the servers of uris tell of their changes,
	// and returns those whose changes the face will tell of (Conn.
	// ResourceUpdated): a server that cannot tell of them is not asked.
	// It must not block: what it asks of a server is asked on a goroutine
	// of the face's.
	SubscribeResources(uris []string) []string
	// UnsubscribeResources undoes a SubscribeResources of uris (the
	// subscription ended), on the same terms.
	UnsubscribeResources(uris []string)
}

// listFilters are the filter's members that ask for a list's changes, and
// the list each names.
var listFilters = []struct{ key, list string }{
	{"toolsListChanged", "tools"}, {"promptsListChanged", "prompts"}, {"resourcesListChanged", "resources"},
}

// readFilter reads a subscriptions/listen request's notifications filter:
// the lists it asks for, and the resources (whose subscriptions a face may
// honour). What is not of the right type is an error naming the member;
// members it does not know are left out of the acknowledgment.
func readFilter(params json.RawMessage) (lists, uris, tasks []string, err *mcp.Error) {
	var p struct {
		Notifications json.RawMessage `json:"notifications"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil, nil, nil, mcp.NewError(mcp.CodeInvalidParams, "invalid params: subscriptions/listen: params must be an object")
	}
	if len(p.Notifications) == 0 || string(p.Notifications) == "null" {
		return nil, nil, nil, mcp.NewError(mcp.CodeInvalidParams, "invalid params: subscriptions/listen: notifications is required (the filter of what to hear: toolsListChanged, promptsListChanged, resourcesListChanged, resourceSubscriptions)")
	}
	members, werr := jsonwire.Members(p.Notifications, 0)
	if werr != nil || !jsonwire.IsObject(p.Notifications) {
		return nil, nil, nil, mcp.NewError(mcp.CodeInvalidParams, "invalid params: subscriptions/listen: notifications must be an object")
	}
	for _, m := range members {
		switch m.Key {
		case "toolsListChanged", "promptsListChanged", "resourcesListChanged":
			var on bool
			if json.Unmarshal(m.Value, &on) != nil {
				return nil, nil, nil, mcp.NewError(mcp.CodeInvalidParams, "invalid params: subscriptions/listen: notifications.%s must be a boolean", m.Key)
			}
			if on {
				for _, f := range listFilters {
					if f.key == m.Key && !slices.Contains(lists, f.list) {
						lists = append(lists, f.list)
					}
				}
			}
		case "taskIds":
			if json.Unmarshal(m.Value, &tasks) != nil {
				return nil, nil, nil, mcp.NewError(mcp.CodeInvalidParams, "invalid params: subscriptions/listen: notifications.taskIds must be an array of task ids (strings)")
			}
		case "resourceSubscriptions":
			if json.Unmarshal(m.Value, &uris) != nil {
				return nil, nil, nil, mcp.NewError(mcp.CodeInvalidParams, "invalid params: subscriptions/listen: notifications.resourceSubscriptions must be an array of URIs (strings)")
			}
		}
	}
	return lists, uris, tasks, nil
}

// listChanges returns the lists whose changes a face tells of: those its
// capabilities say change (listChanged).
func listChanges(caps json.RawMessage) []string {
	var c map[string]struct {
		ListChanged bool `json:"listChanged"`
	}
	_ = json.Unmarshal(caps, &c)
	var out []string
	for _, f := range listFilters {
		if c[f.list].ListChanged {
			out = append(out, f.list)
		}
	}
	return out
}

// listen opens a subscription: the lists asked for that the face tells
// of are acknowledged, and the tasks asked for that the agent was issued
// (resource subscriptions are not honoured: none is acknowledged), and the call stays under way until the agent cancels it
// or goes. A face that does not know yet is waited for, as discover does.
func (c *Conn) listen(call *Call) {
	lists, uris, tasks, err := readFilter(call.Params())
	call.Release()
	if err != nil {
		call.Answer(nil, err)
		return
	}
	c.described(call, func(d *Description) {
		can := listChanges(d.Capabilities)
		lists = slices.DeleteFunc(lists, func(l string) bool { return !slices.Contains(can, l) })
		var honoured []string
		if rs, ok := c.h.(ResourceSubscriber); ok && len(uris) > 0 {
			slices.Sort(uris)
			honoured = rs.SubscribeResources(slices.Compact(uris))
		}
		c.subscribe(call, lists, c.ownTasks(tasks), honoured)
	})
}

// subscribe keeps a subscription, and acknowledges it.
func (c *Conn) subscribe(call *Call, lists, tasks, uris []string) {
	s := &subscription{call: call, lists: lists, tasks: tasks, uris: uris}
	c.mu.Lock()
	if c.subs == nil {
		c.subs = map[mcp.ID]*subscription{}
	}
	c.subs[call.id] = s
	c.mu.Unlock()
	if !call.OnCancel(func(error) { c.unsubscribe(call.id) }) {
		c.unsubscribe(call.id) // cancelled meanwhile
		return
	}
	b := append([]byte(`{"_meta":{"`+mcp.MetaSubscriptionID+`":`), call.id.String()...)
	b = append(b, `},"notifications":{`...)
	for i, l := range lists {
		if i > 0 {
			b = append(b, ',')
		}
		for _, f := range listFilters {
			if f.list == l {
				b = jsonwire.AppendString(b, f.key)
			}
		}
		b = append(b, ":true"...)
	}
	if len(tasks) > 0 {
		if len(lists) > 0 {
			b = append(b, ',')
		}
		ids, _ := json.Marshal(tasks)
		b = append(b, `"taskIds":`...)
		b = append(b, ids...)
	}
	if len(uris) > 0 {
		if len(lists) > 0 || len(tasks) > 0 {
			b = append(b, ',')
		}
		list, _ := json.Marshal(uris)
		b = append(b, `"resourceSubscriptions":`...)
		b = append(b, list...)
	}
	b = append(b, "}}"...)
	c.Send(&mcp.Message{Method: "notifications/subscriptions/acknowledged", Params: b})
	c.mu.Lock()
	s.acked = true
	c.mu.Unlock()
	c.log.Debug("client subscribed", "client", c.DisplayName(), "subscription", call.id.String(), "lists", lists)
}

func (c *Conn) unsubscribe(id mcp.ID) {
	c.mu.Lock()
	s := c.subs[id]
	delete(c.subs, id)
	c.mu.Unlock()
	c.unsubscribed(s)
}

// unsubscribed undoes what a subscription that ended asked of the face.
func (c *Conn) unsubscribed(s *subscription) {
	if s == nil || len(s.uris) == 0 {
		return
	}
	if rs, ok := c.h.(ResourceSubscriber); ok {
		rs.UnsubscribeResources(s.uris)
	}
}

// ResourceUpdated gives the agent a server's notifications/resources/
// updated of uri: to each of its subscriptions that asked for the
// resource, tagged with the subscription's id.
func (c *Conn) ResourceUpdated(uri string, msg *mcp.Message) {
	c.mu.Lock()
	var ids []mcp.ID
	for id, s := range c.subs {
		if s.acked && slices.Contains(s.uris, uri) {
			ids = append(ids, id)
		}
	}
	c.mu.Unlock()
	for _, id := range ids {
		params, err := mcp.SetMeta(msg.Params, mcp.ObjectMember{Key: mcp.MetaSubscriptionID, Value: json.RawMessage(id.String())})
		if err != nil {
			continue
		}
		c.Send(&mcp.Message{Method: msg.Method, Params: params})
	}
}

// ListChanged tells the agent that a list of the face's changed ("tools",
// "prompts" or "resources"): its legacy session, if it has one, with
// notifications/LIST/list_changed, and each of its subscriptions that asked
// for that list with the same, tagged with the subscription's id.
func (c *Conn) ListChanged(list string) {
	method := "notifications/" + list + "/list_changed"
	c.mu.Lock()
	session := c.initialized
	var ids []mcp.ID
	for id, s := range c.subs {
		if s.acked && slices.Contains(s.lists, list) {
			ids = append(ids, id)
		}
	}
	c.mu.Unlock()
	if session {
		c.Send(&mcp.Message{Method: method})
	}
	for _, id := range ids {
		params := append([]byte(`{"_meta":{"`+mcp.MetaSubscriptionID+`":`), id.String()...)
		c.Send(&mcp.Message{Method: method, Params: append(params, "}}"...)})
	}
}

// listening reports whether the agent listens for the changes of a list
// of the face's ("tools", "prompts", "resources"): then its lists may be
// cached until told otherwise (see complete).
func (c *Conn) listening(list string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.subs {
		if slices.Contains(s.lists, list) {
			return true
		}
	}
	return false
}

// endSubscriptions ends the agent's subscriptions gracefully, as a server
// does: each is answered, a complete result tagged with its id. An agent
// that closed its input is owed no more of them: the drain then waits for
// its other answers only.
func (c *Conn) endSubscriptions() {
	c.mu.Lock()
	subs := c.subs
	c.subs = nil
	c.mu.Unlock()
	for id, s := range subs {
		result := append([]byte(`{"_meta":{"`+mcp.MetaSubscriptionID+`":`), id.String()...)
		s.call.Answer(append(result, "}}"...), nil)
		c.unsubscribed(s)
	}
}

// described runs f with the face's description, at once when it is known,
// else on a goroutine of the Conn's once the face is ready; a face that
// does not become so answers the call with why.
func (c *Conn) described(call *Call, f func(*Description)) {
	if d := c.h.Describe(); d != nil {
		f(d)
		return
	}
	c.Go(func() {
		if err := c.h.Ready(c.ctx); err != nil {
			call.Answer(nil, asWireError(err))
			return
		}
		d := c.h.Describe()
		if d == nil {
			call.Answer(nil, mcp.NewError(CodeUnavailable, "the server's capabilities are not known yet; retry"))
			return
		}
		f(d)
	})
}
