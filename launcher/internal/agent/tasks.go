package agent

import (
	"slices"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

// This file is the tasks extension (io.modelcontextprotocol/tasks) as the
// Conn sees it: a server that answers a modern request with a task
// (resultType "task") issued it to this agent, and the task's later
// requests (tasks/get, tasks/update, tasks/cancel) and notifications
// (notifications/tasks) go to that server: the Conn keeps which (the
// call's Owner, as the face set it) for the face's routing (TaskOwner), and
// tells the agent's subscriptions that asked of the task's changes
// (TaskChanged).

// TasksExtension is the tasks extension's key among capabilities'
// extensions.
const TasksExtension = "io.modelcontextprotocol/tasks"

// ResultTask is the resultType of a task's handle (CreateTaskResult).
const ResultTask = "task"

// maxTasks bounds the tasks a Conn remembers, the oldest forgotten first:
// an agent that keeps asking must not grow it without end. (A task is
// polled for minutes, not for ever; its server's ttlMs says how long.)
const maxTasks = 1024

// A task is one the agent was issued.
type task struct {
	id    string
	owner any // the call's Owner: who answered it (a server of the gateway's)
}

// noteTask keeps the task that a server issued in answer to call.
func (c *Conn) noteTask(call *Call, result json.RawMessage) {
	var r struct {
		TaskID string `json:"taskId"`
	}
	if json.Unmarshal(result, &r) != nil || r.TaskID == "" {
		return
	}
	owner := call.Owner()
	c.mu.Lock()
	defer c.mu.Unlock()
	if i := slices.IndexFunc(c.tasks, func(t task) bool { return t.id == r.TaskID }); i >= 0 {
		c.tasks = slices.Delete(c.tasks, i, i+1)
	}
	if len(c.tasks) >= maxTasks {
		c.tasks = slices.Delete(c.tasks, 0, 1)
	}
	c.tasks = append(c.tasks, task{id: r.TaskID, owner: owner})
}

// TaskOwner returns who issued the agent's task id (the Owner of the call
// it answered), and false for a task the agent was not issued through
// this Conn.
func (c *Conn) TaskOwner(id string) (owner any, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.tasks {
		if t.id == id {
			return t.owner, true
		}
	}
	return nil, false
}

// TaskChanged gives the agent a server's notifications/tasks, if the task
// is the agent's: to each of its subscriptions that asked for the task
// (taskIds), tagged with the subscription's id. It reports whether the
// task is the agent's.
func (c *Conn) TaskChanged(id string, msg *mcp.Message) bool {
	c.mu.Lock()
	mine := slices.ContainsFunc(c.tasks, func(t task) bool { return t.id == id })
	var subs []mcp.ID
	if mine {
		for sid, s := range c.subs {
			if s.acked && slices.Contains(s.tasks, id) {
				subs = append(subs, sid)
			}
		}
	}
	c.mu.Unlock()
	for _, sid := range subs {
		params, err := mcp.SetMeta(msg.Params, mcp.ObjectMember{Key: mcp.MetaSubscriptionID, Value: json.RawMessage(sid.String())})
		if err != nil {
			continue
		}
		c.Send(&mcp.Message{Method: msg.Method, Params: params})
	}
	return mine
}

// ownTasks returns those of ids that the agent was issued.
func (c *Conn) ownTasks(ids []string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, id := range ids {
		if slices.ContainsFunc(c.tasks, func(t task) bool { return t.id == id }) && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// TaskID reads the taskId of a tasks/get, tasks/update or tasks/cancel.
func TaskID(params json.RawMessage) (string, *mcp.Error) {
	var p struct {
		TaskID string `json:"taskId"`
	}
	if json.Unmarshal(params, &p) != nil || p.TaskID == "" {
		return "", mcp.NewError(mcp.CodeInvalidParams, "invalid params: taskId (a string) is required")
	}
	return p.TaskID, nil
}
