package hub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/internal/translate"
	"github.com/mcpgen/mcpgen/mcp"
)

// This file is the hub's part of translation between the eras (the unit
// itself is package translate): a modern server's input_required result to
// a legacy agent's call is answered by asking the agent the server's
// requests, and the call is retried upstream with the answers, until the
// server completes it (the agent sees one call).

// SetInputTimeout says how long a call of the server's that waits for a
// modern agent's input is held for the agent's retry (its input_timeout);
// zero: the manifest's default. A call held before keeps its bound.
func (h *Hub) SetInputTimeout(d time.Duration) {
	if d <= 0 {
		d = translate.DefaultInputTimeout
	}
	h.mu.Lock()
	h.inputTimeout = d
	h.mu.Unlock()
}

// input is what a forward needs for translation; guarded by the client's
// mu.
type input struct {
	// sent are the params of a legacy agent's call to a modern server, as
	// the hub sent them before the revision's _meta (see forAgent): what
	// a retry is made of. nil when the call cannot be retried (not such a
	// call, or its params are larger than maxRetryParams).
	sent   json.RawMessage
	rounds int // the input_required results answered so far
	// cancel stops the asking of the agent under way, if any.
	cancel context.CancelFunc
}

// endLocked stops what translation has under way for the forward, which
// ends.
func (in *input) endLocked() {
	if in.cancel != nil {
		in.cancel()
		in.cancel = nil
	}
	in.sent = nil
}

// maxRetryParams bounds the params kept to retry a call: a call with more
// that gets input_required fails, saying so.
const maxRetryParams = 1 << 20

// answered returns what takes the server's answer to a forward: the
// agent gets it (finish), unless it is an input_required result to a
// legacy agent's call, which the hub answers itself (inputRequired).
// params are what the hub sends (forward), before the modern _meta.
func (c *client) answered(up *Upstream, f *forward, method string, params json.RawMessage) func(json.RawMessage, *mcp.Error) {
	if up.Era() != mcp.EraModern || !translate.Translatable(method) || namesVersion(params) {
		return func(result json.RawMessage, err *mcp.Error) { c.finish(f, result, err) }
	}
	var sent json.RawMessage
	if len(params) <= maxRetryParams {
		sent = bytes.Clone(params) // params may be the agent's line, which is let go
	}
	c.mu.Lock()
	f.input.sent = sent
	c.mu.Unlock()
	return func(result json.RawMessage, err *mcp.Error) {
		if err == nil && mcp.ResultType(result) == mcp.ResultInputRequired {
			c.inputRequired(f, method, result)
			return
		}
		c.finish(f, result, err)
	}
}

// namesVersion reports whether a request's params name a protocol version
// in _meta, as a modern agent's do (or whose _meta cannot be read: the
// server says what is wrong with it).
func namesVersion(params json.RawMessage) bool {
	if !bytes.Contains(params, []byte(mcp.MetaProtocolVersion)) {
		return false
	}
	m, err := mcp.ParseRequestMeta(params)
	return err != nil || m.Modern()
}

// inputRequired takes a modern server's input_required result to a legacy
// agent's call: the agent is asked the server's requests on a goroutine of
// the client's (this runs on the upstream's read loop), and the call is
// retried with the answers. The asking ends with the forward (the agent
// cancels, goes, or the call reaches its tool_timeout, which bounds the
// whole call).
func (c *client) inputRequired(f *forward, method string, result json.RawMessage) {
	ir, err := mcp.ParseInputRequired(result)
	if err != nil {
		c.finish(f, nil, mcp.NewError(mcp.CodeInternalError, "server %q answered %s with an input_required result that mcpgen cannot read: %v", c.hub.name, method, err))
		return
	}
	c.mu.Lock()
	if f.done {
		c.mu.Unlock()
		return
	}
	f.input.rounds++
	rounds, sent := f.input.rounds, f.input.sent
	ctx, cancel := context.WithCancel(c.ctx)
	f.input.cancel = cancel
	c.mu.Unlock()
	switch {
	case sent == nil:
		cancel()
		c.finish(f, nil, mcp.NewError(mcp.CodeInternalError, "server %q asked for input on a %s whose params are larger than mcpgen keeps to retry it (%d bytes at most)", c.hub.name, method, maxRetryParams))
		return
	case rounds > translate.MaxRounds:
		cancel()
		c.finish(f, nil, mcp.NewError(mcp.CodeInternalError, "server %q asked for input on a %s more than %d times: the call was given up", c.hub.name, method, translate.MaxRounds))
		return
	}
	if !c.spawn(func() {
		defer cancel()
		c.answerInput(ctx, f, method, sent, ir)
	}) {
		cancel() // the client is going: its end stops f
	}
}

// answerInput asks the agent what the server asked, and retries the call
// with the answers, to the server's process of now (a modern server keeps
// no state between the two: its requestState has it).
func (c *client) answerInput(ctx context.Context, f *forward, method string, sent json.RawMessage, ir *mcp.InputRequiredResult) {
	retry, err := translate.Answer(ctx, agentAsker{c}, sent, ir)
	if ctx.Err() != nil {
		return // the forward ended: whoever ended it answered the agent
	}
	var ie *translate.InputError
	switch {
	case errors.As(err, &ie):
		c.inputFailed(f, method, ie)
		return
	case err != nil:
		c.finish(f, nil, mcp.NewError(mcp.CodeInternalError, "server %q: %v", c.hub.name, err))
		return
	}
	up, _, err := c.hub.ready(ctx)
	if err != nil {
		c.finish(f, nil, asWireError(err))
		return
	}
	call, err := up.forward(c, method, retry, c.answered(up, f, method, sent), true)
	if err != nil {
		c.finish(f, nil, up.wireError(err))
		return
	}
	c.mu.Lock()
	f.up = call
	done := f.done
	c.mu.Unlock()
	if done {
		call.CancelNoWait(errCancelled)
	}
}

// inputFailed ends a call whose server asked for input that the agent
// could not give: a tool call with an error result, which names what was
// asked (the model reads it), another request with an error.
func (c *client) inputFailed(f *forward, method string, ie *translate.InputError) {
	why := fmt.Sprintf("server %q: %v", c.hub.name, ie)
	if method == "tools/call" {
		res, _ := mcp.ErrorResult("%s", why).MarshalJSON()
		c.finish(f, res, nil)
		return
	}
	c.finish(f, nil, mcp.NewError(mcp.CodeInternalError, "%s", why))
}

// agentAsker is a client as the legacy agent whom a modern server's input
// requests are put to.
type agentAsker struct{ c *client }

func (a agentAsker) Can(method string) bool { return a.c.conn.Can(method) }

func (a agentAsker) Roots() json.RawMessage { return a.c.hub.roots() }

func (a agentAsker) Ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *mcp.Error) {
	type answer struct {
		result json.RawMessage
		err    *mcp.Error
	}
	ch := make(chan answer, 1) // the Conn's answer never waits
	ask := a.c.conn.Ask(method, params, func(result json.RawMessage, err *mcp.Error) { ch <- answer{result, err} })
	select {
	case ans := <-ch:
		return ans.result, ans.err
	case <-ctx.Done():
		ask.Cancel("the call that asked it ended")
		return nil, mcp.NewError(CodeUnavailable, "%v", context.Cause(ctx))
	}
}
