package hub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
	"github.com/mcpgen/mcpgen/launcher/internal/agent"
	"github.com/mcpgen/mcpgen/launcher/internal/translate"
	"github.com/mcpgen/mcpgen/mcp"
)

// This file is the hub's part of translation between the eras (the unit
// itself is package translate), both ways. A modern server's
// input_required result to a legacy agent's call is answered by asking the
// agent the server's requests, and the call is retried upstream with the
// answers, until the server completes it (the agent sees one call). A
// legacy server's request during a modern agent's call becomes an
// input_required result to the call, which is held upstream until the
// agent's retry brings the input (further down). The gateway's sessions
// are the hub's clients: they get the same.

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
	// params are the call's params, kept as the hub sent them (before the
	// _meta of the server's era) while the call may need them again: a
	// legacy agent's call to a modern server, to retry it (nil when they
	// are larger than maxRetryParams); a modern agent's call to a legacy
	// server, to make its digest if it is held (see mayHold).
	params json.RawMessage
	rounds int // the input_required results answered so far
	// cancel stops the asking of the agent under way, if any.
	cancel context.CancelFunc

	// modern: a modern agent's call to a legacy server, which may be held
	// for the agent's input (see Hub.holdForInput), and its digest once
	// made. What its agent can answer is the call's _meta's
	// (agent.Call.Meta).
	modern bool
	digest *translate.Digest
	// held, while the call waits for the agent's retry: the agent's call
	// was answered input_required, and the server's request waits.
	held *translate.Held
}

// endLocked stops what translation has under way for the forward, which
// ends, and returns the call it held, which the caller drops (dropHeld)
// once it has let the client's mu go.
func (in *input) endLocked() *translate.Held {
	if in.cancel != nil {
		in.cancel()
		in.cancel = nil
	}
	in.params = nil
	held := in.held
	in.held = nil
	return held
}

// dropHeld lets a held call go, if it was held still: the server's request
// that waited for the agent's input is refused, saying why.
func dropHeld(h *translate.Held, why error) {
	if h != nil && h.Drop() {
		h.Value.(*heldCall).answer <- &mcp.Message{Error: mcp.NewError(CodeUnavailable, "the client's call ended before it gave its input: %v", why)}
	}
}

var errCallEnded = errors.New("the server answered it")

// maxRetryParams bounds the params kept to retry a call: a call with more
// that gets input_required fails, saying so.
const maxRetryParams = 1 << 20

// answered returns what takes the server's answer to a forward: the
// agent gets it (finish), unless it is an input_required result to a
// legacy agent's call, which the hub answers itself (inputRequired).
// params are what the hub sends (forward), before the modern _meta.
func (c *client) answered(up *Upstream, f *forward, method string, params json.RawMessage) func(json.RawMessage, *mcp.Error) {
	finish := func(result json.RawMessage, err *mcp.Error) { c.finish(f, result, err) }
	if !translate.Translatable(method) {
		return finish
	}
	modern := f.call.Modern()
	if up.Era() != mcp.EraModern {
		if modern {
			c.mayHold(f, method, params)
		}
		return finish
	}
	if modern {
		return finish // the same era: as it is
	}
	var sent json.RawMessage
	if len(params) <= maxRetryParams {
		sent = params // see mayHold
	}
	c.mu.Lock()
	f.input.params = sent
	c.mu.Unlock()
	return func(result json.RawMessage, err *mcp.Error) {
		if err == nil && mcp.ResultType(result) == mcp.ResultInputRequired {
			c.inputRequired(f, method, result)
			return
		}
		c.finish(f, result, err)
	}
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
	rounds, sent := f.input.rounds, f.input.params
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
		c.answerInput(ctx, f, method, sent, ir, rounds)
	}) {
		cancel() // the client is going: its end stops f
	}
}

// answerInput asks the agent what the server asked, and retries the call
// with the answers, to the server's process of now (a modern server keeps
// no state between the two: its requestState has it).
func (c *client) answerInput(ctx context.Context, f *forward, method string, sent json.RawMessage, ir *mcp.InputRequiredResult, round int) {
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
	c.resend(up, f, method, sent, retry, round, false)
}

// resend sends a legacy agent's call again, with the agent's input (retry;
// sent are the call's params without it), as forward sends it: unless
// wait, a retry that the server's input cannot take now is sent on a
// goroutine of its own, which the client's end does not wait for (it ends
// when its write does: the server reads, or its process ends), so that a
// server that reads nothing holds up no agent that goes.
func (c *client) resend(up *Upstream, f *forward, method string, sent, retry json.RawMessage, round int, wait bool) {
	call, err := up.forward(c, false, method, retry, c.answered(up, f, method, sent), wait)
	switch {
	case errors.Is(err, mcp.ErrWouldBlock):
		go c.resend(up, f, method, sent, retry, round, true)
		return
	case err != nil:
		c.finish(f, nil, up.wireError(err))
		return
	}
	c.mu.Lock()
	if f.input.rounds == round {
		f.up = call // else the server answered it already, asking again: the next round's is f.up
	}
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

// This is the other way: a legacy server's request, sent during a modern
// agent's call, becomes an input_required result to the call; the call
// upstream is held (package translate's Table) until the agent retries it
// with its input, which answers the server's request.

// A heldCall is what a held call's Held holds: the forward, and where the
// server's request gets its answer.
type heldCall struct {
	c      *client
	f      *forward
	answer chan *mcp.Message // buffered: one send, which never waits
}

// mayHold notes what a modern agent's call to a legacy server needs to be
// held. The digest of its params is made only if it is held: params up to
// maxDigestParams are kept until then, larger ones digested now. They are
// kept as they are, not copied: a line read from the agent is its own
// buffer, which nothing writes once read (what changes params makes new
// ones: the gateway's rename, the progress token's splice, the _meta a
// server of the other era gets), so keeping them keeps the line the call
// was read from alive, no more, while the call is.
func (c *client) mayHold(f *forward, method string, params json.RawMessage) {
	var kept json.RawMessage
	var digest *translate.Digest
	if len(params) <= maxDigestParams {
		kept = params
	} else {
		d, err := translate.DigestOf(method, params)
		if err != nil {
			return // the server says what is wrong with the params
		}
		digest = &d
	}
	c.mu.Lock()
	f.input.modern, f.input.params, f.input.digest = true, kept, digest
	c.mu.Unlock()
}

// maxDigestParams bounds the params of a call kept to make its digest if
// it is held.
const maxDigestParams = 64 << 10

// canAnswerLocked reports whether the forward's agent can answer a
// server's request of method: a modern call whose agent declared the
// capability in its _meta, or any request of a legacy agent that did in
// its initialize. The caller holds the client's mu.
func (c *client) canAnswerLocked(f *forward, method string) bool {
	if !f.input.modern {
		return c.conn.Can(method)
	}
	capability, _, _ := strings.Cut(method, "/")
	if capability != "elicitation" && capability != "sampling" {
		return false
	}
	members, err := jsonwire.Members(f.call.Meta().ClientCapabilities, 0)
	if err != nil {
		return false
	}
	for _, mb := range members {
		if mb.Key == capability {
			return true
		}
	}
	return false
}

// attribute chooses whom a server's request goes to (elicitation,
// sampling). On stdio a legacy server's request does not say which call it
// is for: the hub gives it to the oldest call in flight whose agent can
// answer it, of every client's, which is the call it is for whenever the
// server has one call under way (or asks for the oldest of them). A
// legacy agent's call gets the request itself (it returns that client,
// and nil); a modern agent's call is held, the request its input_required
// (it returns the client and the forward). When the calls in flight are
// all of agents that cannot answer, the request is refused: an agent with
// no call under way is not asked what another's call needs; and when the
// oldest of them is a modern agent's, that call is the one that needs what
// its agent did not declare, and it returns that client and forward with
// incapable set (see refuseIncapable). With no call in flight at all, it
// goes to a capable legacy agent (answerer), as it did before, or is
// refused.
func (h *Hub) attribute(method string) (_ *client, _ *forward, incapable bool) {
	h.mu.Lock()
	clients := h.clientList()
	h.mu.Unlock()
	var oldest, first *forward
	var owner, firstOwner *client
	modern := false
	for _, c := range clients {
		c.mu.Lock()
		for f := range c.forwards {
			if f.done || f.input.held != nil {
				continue
			}
			if first == nil || f.seq < first.seq {
				first, firstOwner = f, c
			}
			if oldest != nil && f.seq > oldest.seq || !c.canAnswerLocked(f, method) {
				continue
			}
			oldest, owner, modern = f, c, f.input.modern
		}
		c.mu.Unlock()
	}
	switch {
	case oldest == nil && first != nil:
		// The calls under way are of agents that cannot answer: no other
		// is asked.
		firstOwner.mu.Lock()
		incapable = first.input.modern
		firstOwner.mu.Unlock()
		if incapable {
			return firstOwner, first, true
		}
		return nil, nil, false
	case oldest == nil:
		return h.answerer(method), nil, false
	case modern:
		return owner, oldest, false
	}
	return owner, nil, false
}

// refuseIncapable ends a modern agent's call whose server asked for what
// the agent did not declare (method: elicitation, sampling) with the
// modern revision's MissingRequiredClientCapabilityError, naming the
// capability, as a modern server would answer it; the call is cancelled at
// the server.
func (c *client) refuseIncapable(f *forward, method string) {
	capability := map[string]string{"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}[method]
	if capability == "" {
		capability = method
	}
	c.mu.Lock()
	up := f.up
	c.mu.Unlock()
	c.finish(f, nil, mcp.MissingCapabilityError(capability))
	if up != nil {
		up.CancelNoWait(fmt.Errorf("the client did not declare the %s capability", capability))
	}
}

// holdForInput holds a modern agent's call for its input: the call is
// answered input_required, asking the server's request, and the request
// waits for the agent's retry (resume), its input_timeout, or the end of
// the call; the call upstream goes on meanwhile, and its answer, if it
// comes first, waits for the retry (finish). Like serverRequest, it runs
// on a goroutine of the upstream's Conn, which waits for it to end: it
// stops waiting when that Conn ends (the server exited), as its answer
// would go nowhere.
func (h *Hub) holdForInput(ctx context.Context, u *Upstream, c *client, f *forward, req *mcp.Request) (any, error) {
	h.mu.Lock()
	timeout := h.inputTimeout
	h.mu.Unlock()
	if timeout <= 0 {
		timeout = translate.DefaultInputTimeout
	}
	hc := &heldCall{c: c, f: f, answer: make(chan *mcp.Message, 1)}
	c.mu.Lock()
	if f.done || f.input.held != nil {
		c.mu.Unlock()
		return nil, mcp.NewError(CodeUnavailable, "the call that this request was for has ended")
	}
	if f.input.digest == nil {
		d, err := translate.DigestOf(f.call.Method(), f.input.params)
		if err != nil {
			c.mu.Unlock()
			return nil, mcp.NewError(CodeUnavailable, "mcpgen cannot hold the call for its client's input: %v", err)
		}
		f.input.digest, f.input.params = &d, nil
	}
	held, result, err := h.held.Hold(translate.Request{
		Agent:    c.serial,
		Method:   f.call.Method(),
		Digest:   *f.input.digest,
		Ask:      mcp.InputRequest{Method: req.Method, Params: req.Params},
		Timeout:  timeout,
		OnExpire: func(*translate.Held) { c.inputExpired(hc, timeout) },
	})
	if err != nil {
		c.mu.Unlock()
		return nil, mcp.NewError(CodeUnavailable, "mcpgen cannot hold the call for its client's input: %v", err)
	}
	held.Value = hc
	f.input.held = held
	call, bound, token := f.call, f.bound, f.token
	f.bound = nil // the call waits for the agent: input_timeout bounds it now
	c.mu.Unlock()
	if bound != nil {
		bound.Stop()
	}
	h.retoken(token, nil) // no progress for a call that was answered
	call.Answer(result, nil)
	select {
	case m := <-hc.answer:
		if m.Error != nil {
			return nil, m.Error
		}
		return m.Result, nil
	case <-ctx.Done():
		// The server gave its request up: the call stays held, and the
		// agent's input goes nowhere.
		return nil, context.Cause(ctx)
	case <-u.ended:
		// Likewise: the call's own answer (the upstream's end) waits
		// for the agent's retry.
		return nil, unavailable(h.name, errStopping)
	}
}

// inputExpired ends a held call that its agent did not retry within its
// input_timeout: the call is cancelled at the server, then the server's
// request refused. In that order: refused first, the server could answer
// the call before the cancellation was sent, and it would never be.
func (c *client) inputExpired(hc *heldCall, d time.Duration) {
	why := fmt.Errorf("the client did not give its input within the server's input_timeout (%s)", d)
	c.stop(hc.f, why)
	hc.answer <- &mcp.Message{Error: mcp.NewError(CodeTimeout, "%v", why)}
}

// resume takes a modern agent's retry of a call that a legacy server holds
// for its input, and reports whether it did (else the call is handled as
// any other): the agent's input answers the server's request, and the
// call's answer goes to the retry, now or when the server gives it. A
// retry that names no call of the agent's that is held (a forged, altered,
// replayed or expired requestState, an answer to a request never made) is
// answered with an error that says why. To a modern server, a retry goes
// as it is (its requestState is the server's).
func (c *client) resume(call *agent.Call) bool {
	method := call.Method()
	if !translate.Translatable(method) {
		return false
	}
	params := call.Params()
	if !bytes.Contains(params, []byte(`"requestState"`)) && !bytes.Contains(params, []byte(`"inputResponses"`)) {
		return false
	}
	if c.hub.era() == mcp.EraModern || !call.Modern() {
		return false
	}
	responses, state, hasState, _, err := mcp.RetryParams(params)
	if err != nil {
		call.Answer(nil, asWireError(err))
		return true
	}
	if !hasState {
		call.Answer(nil, mcp.NewError(mcp.CodeInvalidParams, "invalid params: inputResponses answers requests that were never made: this call was asked for no input (an input_required result of mcpgen's always has a requestState); call again without inputResponses"))
		return true
	}
	digest, err := translate.DigestOf(method, params)
	if err != nil {
		call.Answer(nil, asWireError(err))
		return true
	}
	_, token := requestToken(params)
	// The hand-over is under the client's mu, which finish holds to keep
	// the server's answer for the retry (Settle): the answer is the
	// retry's, either way.
	c.mu.Lock()
	r, werr := c.hub.held.Resume(c.serial, method, digest, state, responses)
	if werr != nil {
		c.mu.Unlock()
		call.Answer(nil, werr)
		return true
	}
	hc := r.Held.Value.(*heldCall)
	f := hc.f
	done, key := f.done, f.token
	if !done {
		f.input.held = nil
		f.call = call
	}
	c.mu.Unlock()
	call.Release()
	if done { // it was stopped as the retry came
		hc.answer <- &mcp.Message{Error: mcp.NewError(CodeUnavailable, "the client's call ended before it gave its input")}
		call.Answer(nil, mcp.NewError(CodeUnavailable, "server %q: the call ended while it waited for its input; call again", c.hub.name))
		return true
	}
	// The retry is the call's before the server has the input: the
	// server may answer, or ask again, at once.
	c.hub.retoken(key, token)
	if !call.OnCancel(func(why error) { c.stop(f, why) }) {
		c.stop(f, errCancelled)
		hc.answer <- &mcp.Message{Error: mcp.NewError(CodeUnavailable, "the client cancelled its call")}
		return true
	}
	if r.Answered {
		c.finish(f, r.Result, r.Err)
	} else {
		c.limit(f, method) // a new tool_timeout from now
	}
	hc.answer <- &mcp.Message{Result: r.Input}
	return true
}

// era is the server's era, as its last handshake found it.
func (h *Hub) era() mcp.Era {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.init == nil {
		return mcp.EraUnknown
	}
	return h.init.Era
}

// retoken routes the progress of the request whose hub token has key to
// token, the agent's (nil: the progress is dropped): a held call's retry
// has a token of its own, or none.
func (h *Hub) retoken(key string, token []byte) {
	if key == "" {
		return
	}
	h.mu.Lock()
	if r := h.progress[key]; r != nil {
		r.token = token
	}
	h.mu.Unlock()
}
