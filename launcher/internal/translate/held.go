package translate

import (
	"fmt"
	"sync"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

// Bounds of what a Table holds. A modern agent that never retries holds a
// call of the server's for input_timeout at most, and only so many at once:
// beyond, the server's request is refused (the agent's call goes on).
const (
	// MaxHeldPerAgent bounds one agent's held calls.
	MaxHeldPerAgent = 16
	// MaxHeld bounds the held calls of a Table (one server's: see the hub).
	MaxHeld = 256
	// MaxHeldAnswerBytes bounds the bytes of the answers that servers gave
	// to held calls, kept until the agent retries: beyond, an answer is
	// replaced by an error that says so.
	MaxHeldAnswerBytes = 16 << 20
	// DefaultInputTimeout is the manifest's default input_timeout: how
	// long a held call waits for its retry.
	DefaultInputTimeout = 5 * time.Minute
)

// inputKey is the key of the one input request that a held call asks:
// the server's request, which it sent for this call.
const inputKey = "mcpgen"

// A Table holds the calls of a legacy server that wait for a modern
// agent's input: the server sent a request during the call, the agent was
// answered input_required, and its retry will answer the server's request
// (Resume). A held call that is not retried within its timeout expires: its
// OnExpire runs (the face cancels the call upstream and refuses the
// server's request). Its methods may be called from any goroutine.
type Table struct {
	signer *Signer
	now    func() time.Time // tests set it

	mu     sync.Mutex
	next   uint64
	held   map[uint64]*Held
	agents map[uint64]int // held calls by agent
	bytes  int            // of the servers' answers kept (Held.Settle)
}

// NewTable returns an empty Table with a new key.
func NewTable() *Table {
	return &Table{signer: NewSigner(), now: time.Now, held: map[uint64]*Held{}, agents: map[uint64]int{}}
}

// A Held is one held call: the server's request that waits for the
// agent's input, and, once the server answered the call itself (it did
// without the input, or failed), that answer.
type Held struct {
	t       *Table
	id      uint64
	agent   uint64
	method  string // the call's
	digest  Digest
	request mcp.InputRequest // the server's
	timer   *time.Timer

	// Guarded by t.mu.
	gone   bool // taken (Resume, Drop) or expired
	answer *answer
	// Value is the face's: what it resumes (the hub's forward).
	Value any
}

// An answer is a server's answer to a held call, kept for the retry.
type answer struct {
	result json.RawMessage
	err    *mcp.Error
	size   int
}

// A Request is what the face knows of a call that a legacy server asks
// input for, and of the request it sent.
type Request struct {
	Agent   uint64           // who made the call, unique in the session
	Method  string           // the call's method
	Digest  Digest           // of its params (DigestOf)
	Ask     mcp.InputRequest // the server's request
	Timeout time.Duration    // the server's input_timeout; 0: DefaultInputTimeout
	// OnExpire runs on a goroutine of its own when the call was not
	// retried within Timeout (and not dropped before). It must cancel the
	// call upstream and answer the server's request.
	OnExpire func(h *Held)
}

// Hold holds a call, and returns the input_required result that the agent
// is to be answered, whose requestState names it. An agent, or a Table,
// that holds as many as it may gets an error that says so.
func (t *Table) Hold(r Request) (*Held, json.RawMessage, error) {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultInputTimeout
	}
	t.mu.Lock()
	switch {
	case t.agents[r.Agent] >= MaxHeldPerAgent:
		t.mu.Unlock()
		return nil, nil, fmt.Errorf("the client has %d calls waiting for its input already (at most %d): answer or cancel them first", MaxHeldPerAgent, MaxHeldPerAgent)
	case len(t.held) >= MaxHeld:
		t.mu.Unlock()
		return nil, nil, fmt.Errorf("%d calls of the server's clients wait for their input already (at most %d)", MaxHeld, MaxHeld)
	}
	t.next++
	h := &Held{t: t, id: t.next, agent: r.Agent, method: r.Method, digest: r.Digest, request: r.Ask}
	t.held[h.id] = h
	t.agents[r.Agent]++
	expires := t.now().Add(timeout)
	h.timer = time.AfterFunc(timeout, func() {
		if t.take(h) && r.OnExpire != nil {
			r.OnExpire(h)
		}
	})
	t.mu.Unlock()
	state := t.signer.Seal(State{Held: h.id, Agent: r.Agent, Method: r.Method, Digest: r.Digest, Expires: expires})
	result, err := (&mcp.InputRequiredResult{
		InputRequests: map[string]mcp.InputRequest{inputKey: r.Ask},
		Keys:          []string{inputKey},
		RequestState:  state,
		HasState:      true,
	}).MarshalJSON()
	if err != nil {
		h.Drop()
		return nil, nil, err
	}
	return h, result, nil
}

// take takes h out of the table, and reports whether it was there.
func (t *Table) take(h *Held) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.takeLocked(h)
}

func (t *Table) takeLocked(h *Held) bool {
	if h.gone {
		return false
	}
	h.gone = true
	delete(t.held, h.id)
	if t.agents[h.agent]--; t.agents[h.agent] <= 0 {
		delete(t.agents, h.agent)
	}
	if h.answer != nil {
		t.bytes -= h.answer.size
	}
	return true
}

// Drop takes h out without a retry: the agent went, the call ended. It
// reports whether h was held still (the caller then answers the server's
// request, and ends the call).
func (h *Held) Drop() bool {
	h.timer.Stop()
	return h.t.take(h)
}

// Settle keeps the server's answer to the held call for the retry, and
// reports false when h is held no more (the caller has nothing to keep it
// for). An answer that would take the Table beyond MaxHeldAnswerBytes is
// replaced by an error that says so.
func (h *Held) Settle(result json.RawMessage, err *mcp.Error) bool {
	t := h.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if h.gone || h.answer != nil {
		return !h.gone
	}
	size := len(result)
	if err != nil {
		size = len(err.Message) + len(err.Data)
	}
	if t.bytes+size > MaxHeldAnswerBytes {
		result, size = nil, 0
		err = mcp.NewError(mcp.CodeInternalError, "the server answered the call while it waited for the client's input, and its answer was dropped: the answers held for retries are too large (%d bytes at most)", MaxHeldAnswerBytes)
	}
	h.answer = &answer{result: result, err: err, size: size}
	t.bytes += size
	return true
}

// Request is the server's request that h holds.
func (h *Held) Request() mcp.InputRequest { return h.request }

// Method is the held call's method.
func (h *Held) Method() string { return h.method }

// A Retry is a modern agent's retry of a held call, as Resume finds it.
type Retry struct {
	Held *Held
	// Input is the agent's answer to the server's request.
	Input json.RawMessage
	// Result and Err are the server's answer to the call, when it came
	// while the call was held (Answered).
	Result   json.RawMessage
	Err      *mcp.Error
	Answered bool
}

// Resume takes the held call that a retry names, for agent, which sent a
// request of method with params (its digest is digest). The state must be
// one of the Table's signer, for this agent and request, not expired, and
// its call held still (a state is good for one retry); inputResponses must
// answer the server's request, and nothing else. A retry that fails these
// gets an error (-32602) that says why, and holds nothing.
func (t *Table) Resume(agent uint64, method string, digest Digest, state string, responses map[string]json.RawMessage) (*Retry, *mcp.Error) {
	st, err := t.signer.Open(state)
	if err == nil {
		err = st.Check(agent, method, digest, t.now())
	}
	if err != nil {
		return nil, mcp.NewError(mcp.CodeInvalidParams, "invalid params: requestState: %v; call again without inputResponses and requestState", err)
	}
	for k := range responses {
		if k != inputKey {
			return nil, mcp.NewError(mcp.CodeInvalidParams, "invalid params: inputResponses[%q] answers a request that was never made (the call asked for %q only)", k, inputKey)
		}
	}
	t.mu.Lock()
	h := t.held[st.Held]
	t.mu.Unlock()
	if h == nil {
		return nil, mcp.NewError(mcp.CodeInvalidParams, "invalid params: requestState: its call is over (it was retried already, cancelled, or its server restarted); call again without inputResponses and requestState")
	}
	input, ok := responses[inputKey]
	if !ok {
		return nil, mcp.NewError(mcp.CodeInvalidParams, "invalid params: inputResponses has no answer to %q (%s): answer it, or cancel the call", inputKey, h.request.Method)
	}
	t.mu.Lock()
	ans := h.answer
	taken := t.takeLocked(h)
	t.mu.Unlock()
	if !taken {
		return nil, mcp.NewError(mcp.CodeInvalidParams, "invalid params: requestState: its call is over (it was retried already, or expired); call again without inputResponses and requestState")
	}
	h.timer.Stop()
	r := &Retry{Held: h, Input: input}
	if ans != nil {
		r.Result, r.Err, r.Answered = ans.result, ans.err, true
	}
	return r, nil
}

// Stats are what a Table holds now.
type Stats struct {
	Held  int // calls
	Bytes int // of the servers' answers kept
}

// Stats returns what the Table holds now.
func (t *Table) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return Stats{Held: len(t.held), Bytes: t.bytes}
}
