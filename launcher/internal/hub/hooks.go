package hub

import (
	"bytes"
	"errors"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

// This file is what the hub tells its owner of the requests it forwards:
// how many are under way (what a drain waits for, and may refuse more
// of), and how each tool call ended (what /metrics counts). The hooks run
// on the requests' own goroutines, so they must be cheap and never block:
// the launcher's are atomic counters and Prometheus' lock-free ones.

// Hooks hear of the requests the hub forwards to its server. Each is
// optional.
type Hooks struct {
	// Begin is called before a request is forwarded; false refuses it
	// (the launcher drains): the agent gets CodeUnavailable with
	// ErrDraining. Each Begin that reported true is followed by one End.
	Begin func() bool
	End   func()
	// ToolCall hears how a tools/call ended and how long it took, from
	// the hub's taking it to its answer. tool is the name the agent asked
	// for: a label of any bound is the hook's to keep.
	ToolCall func(tool string, outcome Outcome, d time.Duration)
}

// An Outcome is how a tools/call ended.
type Outcome uint8

const (
	OutcomeOK        Outcome = iota // a result
	OutcomeToolError                // a result with isError: the tool failed
	OutcomeError                    // a JSON-RPC error: the server, or the hub, refused or failed it
	OutcomeTimeout                  // the server's tool_timeout ended it
	OutcomeCancelled                // the agent cancelled it, or went
	Outcomes                        // how many there are
)

var outcomeNames = [Outcomes]string{"ok", "tool_error", "error", "timeout", "cancelled"}

func (o Outcome) String() string { return outcomeNames[o] }

// ErrDraining is why a request is refused once the launcher drains.
var ErrDraining = errors.New("the launcher is draining (it is stopping): it takes no new request; try again on another instance, or once it has restarted")

// SetHooks sets the hub's hooks: the requests forwarded from then on
// hear of them (each keeps the hooks it began with).
func (h *Hub) SetHooks(hooks Hooks) { h.hooks.Store(&hooks) }

// A callMeter follows one forwarded request for the hooks: the hooks it
// began with, whether Begin counted it, and, for a tools/call that
// ToolCall hears of, the tool and when it began.
type callMeter struct {
	hooks   *Hooks
	counted bool
	tool    string
	start   time.Time // zero: not a tool call, or nobody hears of it
}

// beginMeter counts f's request under way, unless the hooks refuse it.
func (h *Hub) beginMeter(f *forward, tool string) bool {
	hooks := h.hooks.Load()
	if hooks == nil {
		return true
	}
	f.meter.hooks = hooks
	if hooks.Begin != nil {
		if !hooks.Begin() {
			return false
		}
		f.meter.counted = true
	}
	if hooks.ToolCall != nil && f.call.Method() == "tools/call" {
		f.meter.tool, f.meter.start = tool, time.Now() // tool read once, by Request
	}
	return true
}

// endMeter tells the hooks how f's request ended; it runs once, by whoever
// marked f done.
func (h *Hub) endMeter(f *forward, outcome Outcome) {
	hooks := f.meter.hooks
	if hooks == nil {
		return
	}
	if f.meter.counted && hooks.End != nil {
		hooks.End()
	}
	if !f.meter.start.IsZero() {
		hooks.ToolCall(f.meter.tool, outcome, time.Since(f.meter.start))
	}
}

// outcomeOf is how a request answered with result or err ended.
func outcomeOf(result json.RawMessage, err *mcp.Error) Outcome {
	switch {
	case err != nil:
		return OutcomeError
	case isErrorResult(result):
		return OutcomeToolError
	}
	return OutcomeOK
}

var isErrorKey = []byte(`"isError"`)

// isErrorResult reports whether a tool call's result says the tool
// failed. Most results do not name isError: those are not decoded.
func isErrorResult(result json.RawMessage) bool {
	if !bytes.Contains(result, isErrorKey) {
		return false
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(result, &r) == nil && r.IsError
}

// toolOf is the name a tools/call's params ask for; "" when they name
// none.
func toolOf(params json.RawMessage) string {
	var p struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	return p.Name
}

// Queued returns how many bytes wait to be written to the hub's own
// agents (connect NAME, and a server's HTTP sessions); the gateway's
// agents are counted by the gateway.
func (h *Hub) Queued() int {
	h.mu.Lock()
	clients := h.clientList()
	h.mu.Unlock()
	n := 0
	for _, c := range clients {
		if !c.member && c.conn != nil {
			n += c.conn.Stats().Queued
		}
	}
	return n
}
