package translate

import (
	"context"
	"fmt"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
	"github.com/mcpgen/mcpgen/mcp"
)

// This file is the other way: a modern server's input_required result, for
// a legacy agent, which knows only the server's requests of its revision.

// MaxRounds bounds the input_required results that one call of a legacy
// agent goes through: a modern server may ask again and again (the spec
// lets it, until it has what it needs), but not for ever.
const MaxRounds = 16

// An Asker is the legacy agent whom a modern server's input requests are
// put to.
type Asker interface {
	// Can reports whether the agent declared the capability that a
	// request of method needs.
	Can(method string) bool
	// Ask sends the agent a request and waits for its answer; a ctx done
	// first gives the request up (the agent is told).
	Ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *mcp.Error)
	// Roots is the answer to roots/list, which the launcher gives itself:
	// the workspace.
	Roots() json.RawMessage
}

// An InputError is why a modern server's input requests could not be put
// to the legacy agent: it cannot answer one of them, or refused to. The
// call fails with it (a tool call with an error result, which names what
// the server asked).
type InputError struct {
	Method string // the request that failed
	Asked  string // what it asked, as far as it says (its message)
	Reason string
}

func (e *InputError) Error() string {
	what := e.Method
	if e.Asked != "" {
		what += fmt.Sprintf(" (%q)", e.Asked)
	}
	return fmt.Sprintf("the server asked the client for input, %s, and %s", what, e.Reason)
}

// Answer puts the input requests of ir, a modern server's input_required
// result to a call whose params are params, to the agent, one after the
// other in the server's order (roots/list is answered by Roots), and
// returns the params of the retry: params with inputResponses and the
// server's requestState. A request that the agent cannot answer (it lacks
// the capability, or the method is not one of the revision's), or answers
// with an error, is an *InputError; ctx done is its error.
func Answer(ctx context.Context, agent Asker, params json.RawMessage, ir *mcp.InputRequiredResult) (json.RawMessage, error) {
	responses := []byte{'{'}
	for i, key := range ir.Keys {
		req := ir.InputRequests[key]
		var answer json.RawMessage
		switch req.Method {
		case "roots/list":
			answer = agent.Roots()
		case "elicitation/create", "sampling/createMessage":
			if !agent.Can(req.Method) {
				return nil, &InputError{Method: req.Method, Asked: asked(req), Reason: fmt.Sprintf("the client did not declare the %s capability that it needs: use a client that supports it, or a call that needs no input", capability(req.Method))}
			}
			var werr *mcp.Error
			answer, werr = agent.Ask(ctx, req.Method, req.Params)
			if err := ctx.Err(); err != nil {
				return nil, context.Cause(ctx)
			}
			if werr != nil {
				return nil, &InputError{Method: req.Method, Asked: asked(req), Reason: fmt.Sprintf("the client answered with an error: %s", werr.Message)}
			}
		default:
			return nil, &InputError{Method: req.Method, Asked: asked(req), Reason: "mcpgen knows no such request to put to the client (the revision has elicitation/create, sampling/createMessage and roots/list)"}
		}
		if i > 0 {
			responses = append(responses, ',')
		}
		responses = jsonwire.AppendString(responses, key)
		responses = append(responses, ':')
		responses = append(responses, answer...)
	}
	responses = append(responses, '}')
	state := mcp.ObjectMember{Key: "requestState"} // deleted, unless the server gave one
	if ir.HasState {
		state.Value = jsonwire.AppendString(nil, ir.RequestState)
	}
	return mcp.SetMembers(params, mcp.ObjectMember{Key: "inputResponses", Value: responses}, state)
}

// capability is the client capability that a server's request needs.
func capability(method string) string {
	name, _, _ := strings.Cut(method, "/")
	return name
}

// asked is what a request asks, as far as its params say: an
// elicitation's message; the last message of a sampling.
func asked(req mcp.InputRequest) string {
	var p struct {
		Message  string `json:"message"`
		Messages []struct {
			Content struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(req.Params, &p)
	s := p.Message
	if s == "" && len(p.Messages) > 0 {
		s = p.Messages[len(p.Messages)-1].Content.Text
	}
	const max = 200
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "") + "..."
	}
	return s
}
