package hub

import (
	"bytes"
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
	"github.com/mcpgen/mcpgen/launcher/internal/agent"
	"github.com/mcpgen/mcpgen/mcp"
)

// This file is what a modern server (revision 2026-07-28 and later) needs
// of the hub beyond what a legacy one does: the agents' requests carry
// the revision's _meta, naming the agent (forAgent), and the list changes
// come on a subscription that the hub keeps open while the process runs
// (listen), not as notifications of the server's own. What the agents see
// does not change: a legacy agent still gets the server's answer to
// initialize (its discover result in that form: see
// mcp.DiscoverResult.InitializeResult) and notifications/*/list_changed.

// A subscription is the hub's subscriptions/listen on a modern server;
// guarded by the upstream's mu. One listen is sent at a time (see
// sendListens), each asking for all that the hub wants to hear of; it
// replaces the last one, which is cancelled once the new one is sent, so
// that the server always has one open that asks for all of it.
type subscription struct {
	filter  json.RawMessage // the notifications asked for
	gen     int             // counts the listens sent: the last one is the current one
	id      mcp.ID          // the current listen's id, once sent
	sending bool            // the current listen is being sent: its id is not known yet
	acked   bool            // the server acknowledged the current listen
	reopens int
	call    *mcp.AsyncCall // the current listen, once sent: the next one cancels it
	// replaced are the ids of the listens that later ones replaced, the
	// newest last (maxReplaced at most): a late acknowledgment of one is
	// not the current listen's.
	replaced []mcp.ID
	// want says that a listen is to be sent (again), and running that
	// sendListens is sending them.
	want, running bool
	// tasks are the tasks that the server issued to agents, whose
	// notifications/tasks the listen asks for (taskIds), the newest last.
	tasks []string
	// waiting are the answers that hand agents their tasks, which wait
	// for the server to acknowledge a listen that asks for the task (see
	// watchTask).
	waiting []*taskWait
	// resources says that the server tells of resource changes: the
	// listen asks for those that agents want (resourceSubscriptions).
	resources bool
}

// A taskWait is an answer that hands an agent its task, waiting for the
// server to acknowledge listen gen, the first to ask for the task.
type taskWait struct {
	gen   int
	once  sync.Once
	timer *time.Timer
	then  func()
}

// release gives the agent its answer, once.
func (w *taskWait) release() {
	w.once.Do(func() {
		w.timer.Stop()
		w.then()
	})
}

// takeWaitingLocked takes the tasks that wait for listen gen or an
// earlier one; release gives them their answers, once the upstream's mu
// is let go.
func (s *subscription) takeWaitingLocked(gen int) []*taskWait {
	var taken []*taskWait
	s.waiting = slices.DeleteFunc(s.waiting, func(w *taskWait) bool {
		if w.gen <= gen {
			taken = append(taken, w)
			return true
		}
		return false
	})
	return taken
}

func release(ws []*taskWait) {
	for _, w := range ws {
		w.release()
	}
}

// maxWatchedTasks bounds the tasks the hub's subscription asks about, the
// oldest dropped first.
const maxWatchedTasks = 256

// maxReplaced bounds subscription.replaced.
const maxReplaced = 16

// taskAckWait bounds how long an agent's task waits for the server to
// acknowledge the listen that asks for it: a server that never does delays
// its tasks by that, no more. (A variable for the tests.)
var taskAckWait = 3 * time.Second

// maxReopens bounds the listens sent again after the server ended one it
// had acknowledged, and reopenDelay spaces them: a server that ends every
// subscription at once is not asked forever.
const (
	maxReopens  = 10
	reopenDelay = time.Second
)

// errRelisten is why the hub cancels a listen that a newer one replaces:
// its end is not the server's doing.
var errRelisten = errors.New("the subscription asks for more")

// listen subscribes to the changes of the lists that the server says
// change (tools, prompts, resources with listChanged in init's
// capabilities), unless none does. The listen is sent before listen
// returns (Open lists the tools after it).
func (u *Upstream) listen(init *mcp.InitializeResult) {
	filter := listenFilter(init.Capabilities)
	resources := canSubscribe(init)
	if filter == nil && (!resources || len(u.hub.resourceURIs()) == 0) {
		return // nothing to hear of yet: the first resource an agent wants opens it (relisten)
	}
	u.mu.Lock()
	u.sub.filter, u.sub.resources = filter, resources
	start := u.sub.wantLocked()
	u.mu.Unlock()
	if start {
		u.sendListens()
	}
}

// listenFilter is the notifications filter of subscriptions/listen for a
// server with capabilities caps; nil when no list of it changes.
func listenFilter(caps json.RawMessage) json.RawMessage {
	var c map[string]struct {
		ListChanged bool `json:"listChanged"`
	}
	_ = json.Unmarshal(caps, &c)
	b := []byte{'{'}
	for _, f := range []struct{ capability, key string }{
		{"tools", "toolsListChanged"}, {"prompts", "promptsListChanged"}, {"resources", "resourcesListChanged"},
	} {
		if c[f.capability].ListChanged {
			if len(b) > 1 {
				b = append(b, ',')
			}
			b = jsonwire.AppendString(b, f.key)
			b = append(b, ":true"...)
		}
	}
	if len(b) == 1 {
		return nil
	}
	return append(b, '}')
}

// wantLocked asks for a listen to be sent, and reports whether the caller
// is to send it (sendListens): none is being sent.
func (s *subscription) wantLocked() bool {
	s.want = true
	if s.running {
		return false
	}
	s.running = true
	return true
}

// sendListens sends listens as long as one is wanted, one at a time: what
// is asked for while one is sent goes in the next, and an acknowledgment
// is the current listen's unless it names one sent before (replaced).
func (u *Upstream) sendListens() {
	for {
		u.mu.Lock()
		if !u.sub.want {
			u.sub.running = false
			u.mu.Unlock()
			return
		}
		u.sub.want = false
		u.mu.Unlock()
		u.openListen()
	}
}

// openListen sends subscriptions/listen, and cancels the listen it
// replaces once it is sent. The request lasts as long as the
// subscription: the server answers it only when it ends the subscription
// (listenEnded), and it fails when the process ends.
func (u *Upstream) openListen() {
	u.mu.Lock()
	u.sub.gen++
	gen, filter, tasks, resources := u.sub.gen, u.sub.filter, u.sub.tasks, u.sub.resources
	last := u.sub.call
	if last != nil {
		if len(u.sub.replaced) == maxReplaced {
			u.sub.replaced = slices.Delete(u.sub.replaced, 0, 1)
		}
		u.sub.replaced = append(u.sub.replaced, last.ID())
	}
	u.sub.id, u.sub.call, u.sub.sending, u.sub.acked = mcp.ID{}, nil, true, false
	u.mu.Unlock()
	if filter == nil {
		filter = json.RawMessage(`{}`)
	}
	var more []mcp.ObjectMember
	if len(tasks) > 0 {
		ids, _ := json.Marshal(tasks)
		more = append(more, mcp.ObjectMember{Key: "taskIds", Value: ids})
	}
	if resources {
		if uris := u.hub.resourceURIs(); len(uris) > 0 {
			raw, _ := json.Marshal(uris)
			more = append(more, mcp.ObjectMember{Key: "resourceSubscriptions", Value: raw})
		}
	}
	if len(more) > 0 {
		if f, err := mcp.SetMembers(filter, more...); err == nil {
			filter = f
		}
	}
	params := append(append([]byte(`{"notifications":`), filter...), '}')
	call, err := u.client.Go(context.Background(), "subscriptions/listen", json.RawMessage(params), func(result json.RawMessage, err error) {
		u.listenEnded(gen, err)
	})
	var waiting []*taskWait
	u.mu.Lock()
	u.sub.sending = false
	if call != nil {
		u.sub.id, u.sub.call = call.ID(), call
	} else {
		waiting = u.sub.takeWaitingLocked(math.MaxInt) // no listen: nothing to wait for
	}
	u.mu.Unlock()
	release(waiting)
	// After the new one is sent: the server reads it first, and hears of
	// everything on one or the other meanwhile.
	if last != nil {
		last.CancelNoWait(errRelisten)
	}
	if err != nil && !errors.Is(err, mcp.ErrNotSent) {
		u.hub.log.Warn("subscribing to the server's list changes", "server", u.name, "error", err)
	}
}

// watchTask has the hub's subscription ask for the notifications of a task
// that the server issued to an agent (see agent.Conn.TaskChanged, which
// routes them), and runs then, which hands the agent its task, once the
// server has acknowledged a listen that asks for it (or that listen
// failed, or taskAckWait passed): a subscription the agent opens for the
// task then hears all that the server tells of it. It runs on the
// upstream's read loop: nothing here waits for the server.
func (u *Upstream) watchTask(id string, then func()) {
	w := &taskWait{then: then}
	w.timer = time.AfterFunc(taskAckWait, func() {
		u.mu.Lock()
		u.sub.waiting = slices.DeleteFunc(u.sub.waiting, func(x *taskWait) bool { return x == w })
		u.mu.Unlock()
		w.release()
	})
	u.mu.Lock()
	if slices.Contains(u.sub.tasks, id) { // handed out before: asked for already
		u.mu.Unlock()
		w.release()
		return
	}
	if len(u.sub.tasks) >= maxWatchedTasks {
		u.sub.tasks = slices.Delete(u.sub.tasks, 0, 1)
	}
	u.sub.tasks = append(u.sub.tasks, id)
	w.gen = u.sub.gen + 1 // a listen sent from now on asks for it
	u.sub.waiting = append(u.sub.waiting, w)
	start := u.sub.wantLocked()
	u.mu.Unlock()
	if start {
		go u.sendListens() // not on the read loop: the write may wait for the server
	}
}

// relisten sends the hub's subscription again, asking for what it asks
// now (the tasks; the resources agents want, once resources says that the
// server tells of them); the last one is cancelled once it is sent. The
// listen goes on a goroutine: its write must not wait on the caller,
// which may be the upstream's read loop.
func (u *Upstream) relisten(resources bool) {
	u.mu.Lock()
	u.sub.resources = u.sub.resources || resources
	start := u.sub.wantLocked()
	u.mu.Unlock()
	if start {
		go u.sendListens()
	}
}

// taskIssued returns the id of the task that a result is the handle of
// (resultType "task"), if it is one.
func taskIssued(result json.RawMessage) (string, bool) {
	if !bytes.Contains(result, []byte(`"task"`)) || mcp.ResultType(result) != "task" {
		return "", false
	}
	var r struct {
		TaskID string `json:"taskId"`
	}
	if json.Unmarshal(result, &r) != nil || r.TaskID == "" {
		return "", false
	}
	return r.TaskID, true
}

// listenEnded hears the end of a subscription: the hub replaced it
// (nothing to do), the process ended (nothing to do: the next one
// subscribes anew), the server refused it (its lists' changes will not be
// heard), or the server ended it. One that the server had acknowledged is
// opened again, boundedly. The tasks that waited for the current one wait
// no more. It runs on the upstream's read loop, or on the goroutine that
// ends it.
func (u *Upstream) listenEnded(gen int, err error) {
	if errors.Is(err, errRelisten) {
		return
	}
	u.mu.Lock()
	current := u.sub.gen == gen
	var waiting []*taskWait
	if current {
		waiting = u.sub.takeWaitingLocked(math.MaxInt)
	}
	u.mu.Unlock()
	release(waiting)
	if !current || errors.Is(err, mcp.ErrClosed) || errors.Is(err, mcp.ErrNotSent) || u.refuses() {
		return // replaced meanwhile; or the process ends, or is being stopped
	}
	u.mu.Lock()
	again := u.sub.acked && u.sub.reopens < maxReopens
	if again {
		u.sub.reopens++
	}
	u.mu.Unlock()
	if err != nil {
		u.hub.log.Warn("the server refused to tell of its list changes: the hub lists again only when it restarts", "server", u.name, "error", err)
	} else {
		u.hub.log.Info("the server ended its subscription to its list changes", "server", u.name, "again", again)
	}
	if again && !u.refuses() {
		// The timer's goroutine ends once the listen is sent, or has failed
		// to be: the upstream ends, or it refuses requests.
		time.AfterFunc(reopenDelay, func() {
			if !u.refuses() {
				u.relisten(false)
			}
		})
	}
}

// subscribed sorts a modern server's notification: one on the hub's
// subscription is what a legacy server's list_changed is (passed on,
// without the subscription's tag, which the agents know nothing of), its
// acknowledgment is noted, and one of another subscription is dropped.
// Notifications without a tag (progress, log messages of a request) pass
// as they are.
func (u *Upstream) subscribed(msg *mcp.Message) (*mcp.Message, bool) {
	if !bytes.Contains(msg.Params, []byte(mcp.MetaSubscriptionID)) {
		return msg, true
	}
	tag, tagged := mcp.SubscriptionID(msg.Params)
	if !tagged {
		return msg, true
	}
	u.mu.Lock()
	// While the current listen is sent, its id is not known: a
	// notification of the one it replaces, or of itself, passes; an
	// acknowledgment is the current listen's unless it names a listen
	// sent before.
	ours := tag == u.sub.id && tag.IsValid() || u.sub.sending
	var released []*taskWait
	if ours && msg.Method == "notifications/subscriptions/acknowledged" && !(u.sub.sending && slices.Contains(u.sub.replaced, tag)) {
		u.sub.acked = true
		released = u.sub.takeWaitingLocked(u.sub.gen)
	}
	u.mu.Unlock()
	release(released)
	switch {
	case !ours:
		u.hub.log.Debug("dropping a notification of an unknown subscription", "server", u.name, "method", msg.Method, "subscription", tag)
		return nil, false
	case msg.Method == "notifications/subscriptions/acknowledged":
		u.hub.log.Debug("the server tells of its list changes", "server", u.name, "params", string(msg.Params))
		return nil, false
	}
	if strings.HasSuffix(msg.Method, "/list_changed") {
		return &mcp.Message{Method: msg.Method}, true
	}
	if msg.Method == "notifications/resources/updated" {
		// Without the hub's tag: the agents' subscriptions get their own.
		var p struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(msg.Params, &p) != nil || p.URI == "" {
			return nil, false
		}
		return &mcp.Message{Method: msg.Method, Params: append(jsonwire.AppendString([]byte(`{"uri":`), p.URI), '}')}, true
	}
	return msg, true
}

// forward sends a client's request to the server, as send does, in the
// form the server's era needs (forAgent). A legacy client's request to a
// modern server gets the _meta that the revision requires, and its answer
// loses what only the revision has (legacyResult): the client sees the
// server as a legacy one. modern says that the request is a modern
// agent's (agent.Call.Modern).
func (u *Upstream) forward(c *client, modern bool, method string, params json.RawMessage, then func(json.RawMessage, *mcp.Error), wait bool) (*mcp.AsyncCall, error) {
	params, stamped := u.forAgent(c, modern, params)
	// seam: translation. A modern server's input_required result to a
	// legacy agent's request (stamped) reaches then as it is, and then
	// (client.answered, translate.go) asks the agent and retries.
	if stamped {
		answer := then
		then = func(result json.RawMessage, err *mcp.Error) { answer(legacyResult(result), err) }
	} else if modern && u.client.Era() == mcp.EraModern {
		// A task issued to a modern agent: the hub's subscription asks
		// for its notifications.
		answer := then
		then = func(result json.RawMessage, err *mcp.Error) {
			if id, ok := taskIssued(result); ok && err == nil {
				u.watchTask(id, func() { answer(result, err) })
				return
			}
			answer(result, err)
		}
	}
	return u.send(c.ctx, method, params, then, wait)
}

// forAgent is the one place that decides what a client's request carries
// to the server; it returns the params as the server is to get them, and
// whether it added the modern _meta. Of the four cases:
//   - a legacy request to a legacy server, and a modern request to a
//     modern server, go as they are;
//   - a legacy request to a modern server gets the _meta that the revision
//     requires of every request, which names the client as its initialize
//     did (its capabilities, which the server may rely on, and its
//     clientInfo) and the revision the hub speaks to the server;
//   - a modern request to a legacy server loses the members of its _meta
//     that only the modern revision has (withoutModernMeta): a legacy
//     server sees a legacy request, its progress token and trace context
//     kept.
//
// A legacy request that names a version in its _meta already is left as
// it is, as are params that are not an object: the server says what is
// wrong with them.
func (u *Upstream) forAgent(c *client, modern bool, params json.RawMessage) (json.RawMessage, bool) {
	if u.client.Era() != mcp.EraModern {
		if modern {
			return withoutModernMeta(params), false
		}
		return params, false
	}
	if modern {
		return params, false
	}
	if bytes.Contains(params, []byte(mcp.MetaProtocolVersion)) {
		if m, err := mcp.ParseRequestMeta(params); err != nil || m.Modern() {
			return params, false
		}
	}
	caps, info := c.agentMeta()
	set := []mcp.ObjectMember{
		{Key: mcp.MetaProtocolVersion, Value: jsonwire.AppendString(nil, u.client.Version())},
		{Key: mcp.MetaClientCapabilities, Value: caps},
		{Key: mcp.MetaClientInfo, Value: info},
	}
	c.mu.Lock()
	level := c.logLevel
	c.mu.Unlock()
	if level == "" {
		// A legacy session that never set a level hears what a legacy
		// server would send it unasked: info and louder.
		level = defaultLegacyLogLevel
	}
	set = append(set, mcp.ObjectMember{Key: mcp.MetaLogLevel, Value: jsonwire.AppendString(nil, level)})
	out, err := mcp.SetMeta(params, set...)
	if err != nil {
		return params, false
	}
	return out, true
}

// modernOnlyMeta are the members of a request's _meta that only the
// modern revision has: what a legacy session said once in initialize (the
// version, the client's capabilities and identity) and the log level,
// which a legacy server is told with logging/setLevel.
var modernOnlyMeta = []string{mcp.MetaProtocolVersion, mcp.MetaClientCapabilities, mcp.MetaClientInfo, mcp.MetaLogLevel}

// withoutModernMeta returns a modern request's params without the members
// of _meta that only the modern revision has (modernOnlyMeta), and without
// _meta when nothing else was in it; the rest (the progress token, the
// trace context, what else the agent put there) as the agent wrote it.
func withoutModernMeta(params json.RawMessage) json.RawMessage {
	members, err := jsonwire.Members(params, 0)
	if err != nil {
		return params
	}
	for _, mb := range members {
		if mb.Key != "_meta" || !jsonwire.IsObject(mb.Value) {
			continue
		}
		drop := make([]mcp.ObjectMember, len(modernOnlyMeta))
		for i, k := range modernOnlyMeta {
			drop[i] = mcp.ObjectMember{Key: k}
		}
		meta, err := mcp.SetMembers(mb.Value, drop...)
		if err != nil {
			return params
		}
		if string(meta) == "{}" { // nothing else was there: no _meta
			out, err := mcp.SetMembers(params, mcp.ObjectMember{Key: "_meta"})
			if err != nil {
				return params
			}
			return out
		}
		// The new _meta in place of the old, the rest as written.
		out := make([]byte, 0, len(params)-len(mb.Value)+len(meta))
		out = append(out, params[:mb.ValueAt]...)
		out = append(out, meta...)
		return append(out, params[mb.ValueAt+len(mb.Value):]...)
	}
	return params
}

// legacyResult returns a modern server's result as a legacy client is to
// get it: without the members that only the modern revision has
// (resultType "complete", which a legacy result is; ttlMs and cacheScope;
// the server's identity in _meta, which a legacy client had from
// initialize), the rest as the server wrote it. A result that is not
// complete (input_required) is left as it is: turning it into the
// server's requests of the legacy revision is translation, not this.
func legacyResult(result json.RawMessage) json.RawMessage {
	if !bytes.Contains(result, []byte(`"resultType"`)) && !bytes.Contains(result, []byte(`"ttlMs"`)) &&
		!bytes.Contains(result, []byte(`"cacheScope"`)) && !bytes.Contains(result, []byte(mcp.MetaServerInfo)) {
		return result
	}
	members, err := jsonwire.Members(result, 0)
	if err != nil {
		return result
	}
	var drop []mcp.ObjectMember
	for _, mb := range members {
		switch mb.Key {
		case "resultType":
			if mcp.ResultType(result) != mcp.ResultComplete {
				return result
			}
			drop = append(drop, mcp.ObjectMember{Key: mb.Key})
		case "ttlMs", "cacheScope":
			drop = append(drop, mcp.ObjectMember{Key: mb.Key})
		case "_meta":
			if !bytes.Contains(mb.Value, []byte(mcp.MetaServerInfo)) {
				continue
			}
			meta, err := mcp.SetMembers(mb.Value, mcp.ObjectMember{Key: mcp.MetaServerInfo})
			if err != nil {
				continue
			}
			if string(meta) == "{}" {
				meta = nil // nothing else was there: no _meta
			}
			drop = append(drop, mcp.ObjectMember{Key: mb.Key, Value: meta})
		}
	}
	out, err := mcp.SetMembers(result, drop...)
	if err != nil {
		return result
	}
	return out
}

// agentMeta returns the client's capabilities and identity, for a modern
// server: what the agent's initialize said, as sent. A member (whose agent
// spoke to the gateway) is described by what the hub knows of it: its
// name, tagged, and whether it answers sampling and elicitation.
func (c *client) agentMeta() (caps, info json.RawMessage) {
	id := c.conn.Identity()
	if !c.member {
		caps, info = id.Capabilities, id.ClientInfo
	}
	if caps == nil {
		b := []byte{'{'}
		if id.Sampling {
			b = append(b, `"sampling":{}`...)
		}
		if id.Elicitation {
			if len(b) > 1 {
				b = append(b, ',')
			}
			b = append(b, `"elicitation":{}`...)
		}
		caps = append(b, '}')
	}
	if info == nil {
		info, _ = jsonwire.Marshal(c.info())
	}
	return caps, info
}

// defaultLegacyLogLevel is the log level a legacy session's calls to a
// modern server ask for until the session sets one (logging/setLevel).
const defaultLegacyLogLevel = "info"

// keepLogLevel keeps the level of a legacy session's logging/setLevel,
// which a modern server has no method for: each of the session's requests
// carries it in _meta instead (forAgent), and so the server logs at that
// level during them. It reports whether the server is modern, and so the
// request is answered here; a legacy server (or one not asked yet) gets it
// as well.
func (c *client) keepLogLevel(params json.RawMessage) bool {
	var p struct {
		Level string `json:"level"`
	}
	if json.Unmarshal(params, &p) == nil {
		if _, ok := agent.LogRank(p.Level); ok {
			c.mu.Lock()
			c.logLevel = p.Level
			c.mu.Unlock()
		}
	}
	return c.hub.era() == mcp.EraModern
}
