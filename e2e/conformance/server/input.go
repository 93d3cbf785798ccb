package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

// This file holds the tools and the prompt that need the client's input
// (elicitation, sampling, roots). Each is written once, in the modern
// revision's terms (multi round-trip requests): a run gets what the
// client answered so far, by key, and the state it gave, and either
// completes or says what it still needs. The modern mode returns that
// need as an input_required result and runs the tool again on the retry;
// the legacy mode asks each request of the client itself (a server
// request) and runs the tool again with the answers (see fixture.drive).

// A run is one run of a tool or prompt that needs input.
type run struct {
	f    *fixture
	args map[string]any
	// caps are the client's capabilities, as a modern request's _meta
	// declares them; nil in the legacy mode, which asks whatever it needs
	// and lets the client refuse what it cannot answer (as legacy servers
	// do: mcpgen's hub, its client, declares only roots, and answers the
	// rest on its agents' behalf).
	caps      map[string]json.RawMessage
	responses map[string]json.RawMessage // inputResponses, by key
	state     string                     // requestState, as the client gave it back
	hasState  bool
}

// A need is what a run asks before it completes: the requests, by key,
// and the state that the retry must give back.
type need struct {
	keys     []string
	requests map[string]mcp.InputRequest
	state    string
}

// An inputTool runs with what the client gave so far: it returns a
// result, or what it still needs.
type inputTool func(r *run) (any, *need, error)

func (n *need) ask(key, method string, params any) *need {
	if n.requests == nil {
		n.requests = map[string]mcp.InputRequest{}
	}
	raw, _ := json.Marshal(params)
	n.keys = append(n.keys, key)
	n.requests[key] = mcp.InputRequest{Method: method, Params: raw}
	return n
}

func (n *need) withState(s string) *need { n.state = s; return n }

// The requests the tools ask.
func askName(n *need, key, message string) *need {
	return n.ask(key, "elicitation/create", obj{"message": message, "requestedSchema": obj{
		"type": "object", "properties": obj{"name": obj{"type": "string"}}, "required": []string{"name"}}})
}

func askConfirm(n *need, key, message string) *need {
	return n.ask(key, "elicitation/create", obj{"message": message, "requestedSchema": obj{
		"type": "object", "properties": obj{"ok": obj{"type": "boolean"}}, "required": []string{"ok"}}})
}

func askSample(n *need, key, prompt string, maxTokens int) *need {
	return n.ask(key, "sampling/createMessage", obj{"messages": []obj{{"role": "user", "content": text(prompt)}}, "maxTokens": maxTokens})
}

func askRoots(n *need, key string) *need { return n.ask(key, "roots/list", obj{}) }

// answer returns the client's answer to the request of key, if it gave
// one: an object, or an error that says what is wrong with it.
func (r *run) answer(key string) (map[string]any, bool, error) {
	raw, ok := r.responses[key]
	if !ok {
		return nil, false, nil
	}
	var a map[string]any
	if err := json.Unmarshal(raw, &a); err != nil || a == nil {
		return nil, false, mcp.NewError(mcp.CodeInvalidParams, "invalid params: inputResponses[%q] must be the result of the request it answers (an object), not %s", key, raw)
	}
	return a, true, nil
}

// elicited returns the content of an elicitation's answer, as its text
// shows it, and the action.
func elicited(a map[string]any) (action string, content string) {
	action, _ = a["action"].(string)
	c, _ := json.Marshal(a["content"])
	return action, string(c)
}

// sampled returns the text of a sampling answer.
func sampled(a map[string]any) string {
	c, _ := a["content"].(map[string]any)
	s, _ := c["text"].(string)
	return s
}

// can reports whether the client declared capability (always, in the
// legacy mode).
func (r *run) can(capability string) bool {
	if r.caps == nil {
		return true
	}
	_, ok := r.caps[capability]
	return ok
}

// missing is the modern error for a run that needs a capability the
// client did not declare.
func missing(capability string) error { return mcp.MissingCapabilityError(capability) }

// seal returns state with a MAC of the fixture's key, so that a retry's
// requestState is known to be one it gave; open checks one, and returns
// what was sealed.
func (f *fixture) seal(state string) string {
	m := hmac.New(sha256.New, f.key)
	m.Write([]byte(state))
	return base64.RawURLEncoding.EncodeToString([]byte(state)) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (f *fixture) open(sealed string) (string, error) {
	payload, mac, ok := strings.Cut(sealed, ".")
	state, err1 := base64.RawURLEncoding.DecodeString(payload)
	sum, err2 := base64.RawURLEncoding.DecodeString(mac)
	if ok && err1 == nil && err2 == nil {
		m := hmac.New(sha256.New, f.key)
		m.Write(state)
		if hmac.Equal(sum, m.Sum(nil)) {
			return string(state), nil
		}
	}
	return "", mcp.NewError(mcp.CodeInvalidParams, "invalid params: requestState %q is not one this server gave (it failed its integrity check): call again without it", sealed)
}

// stateIs checks that the retry gives back a state this server sealed,
// and returns it ("" when the run has none).
func (r *run) stateIs() (string, error) {
	if !r.hasState {
		return "", nil
	}
	return r.f.open(r.state)
}

var inputTools = map[string]inputTool{
	// The 2025-11-25 scenarios'.
	"test_sampling": func(r *run) (any, *need, error) {
		a, ok, err := r.answer("sample")
		if err != nil || !ok {
			prompt, _ := r.args["prompt"].(string)
			return nil, askSample(&need{}, "sample", prompt, 100), err
		}
		return content(text("LLM response: " + sampled(a))), nil, nil
	},
	"test_elicitation": func(r *run) (any, *need, error) {
		message, _ := r.args["message"].(string)
		return elicit(r, "User response", message, obj{
			"username": obj{"type": "string", "description": "User's response"},
			"email":    obj{"type": "string", "description": "User's email address"},
		}, []string{"username", "email"})
	},
	"test_elicitation_sep1034_defaults": func(r *run) (any, *need, error) {
		return elicit(r, "Elicitation completed", "Please review the defaults", obj{
			"name":     obj{"type": "string", "default": "John Doe"},
			"age":      obj{"type": "integer", "default": 30},
			"score":    obj{"type": "number", "default": 95.5},
			"status":   obj{"type": "string", "enum": []string{"active", "inactive", "pending"}, "default": "active"},
			"verified": obj{"type": "boolean", "default": true},
		}, nil)
	},
	"test_elicitation_sep1330_enums": func(r *run) (any, *need, error) {
		return elicit(r, "Elicitation completed", "Please choose", obj{
			"untitledSingle": obj{"type": "string", "enum": []string{"option1", "option2", "option3"}},
			"titledSingle": obj{"type": "string", "oneOf": []obj{
				{"const": "value1", "title": "First Option"}, {"const": "value2", "title": "Second Option"}, {"const": "value3", "title": "Third Option"},
			}},
			"legacyEnum":    obj{"type": "string", "enum": []string{"opt1", "opt2", "opt3"}, "enumNames": []string{"Option One", "Option Two", "Option Three"}},
			"untitledMulti": obj{"type": "array", "items": obj{"type": "string", "enum": []string{"option1", "option2", "option3"}}},
			"titledMulti": obj{"type": "array", "items": obj{"anyOf": []obj{
				{"const": "value1", "title": "First Choice"}, {"const": "value2", "title": "Second Choice"}, {"const": "value3", "title": "Third Choice"},
			}}},
		}, nil)
	},

	// The 2026-07-28 scenarios' (server-stateless and input-required-result-*).
	"test_missing_capability": func(r *run) (any, *need, error) {
		if !r.can("sampling") {
			return nil, nil, missing("sampling")
		}
		a, ok, err := r.answer("probe")
		if err != nil || !ok {
			return nil, askSample(&need{}, "probe", "Say anything", 10), err
		}
		return content(text("Sampled: " + sampled(a))), nil, nil
	},
	"test_streaming_elicitation": func(r *run) (any, *need, error) {
		if !r.can("elicitation") {
			return nil, nil, missing("elicitation")
		}
		a, ok, err := r.answer("confirm")
		if err != nil || !ok {
			return nil, askConfirm(&need{}, "confirm", "Go on?"), err
		}
		action, c := elicited(a)
		return content(text(fmt.Sprintf("Streamed elicitation: action=%s, content=%s", action, c))), nil, nil
	},
	"test_input_required_result_elicitation": func(r *run) (any, *need, error) {
		a, ok, err := r.answer("user_name")
		if err != nil || !ok {
			return nil, askName(&need{}, "user_name", "What is your name?"), err
		}
		c, _ := a["content"].(map[string]any)
		return content(text(fmt.Sprintf("Hello, %v!", c["name"]))), nil, nil
	},
	"test_input_required_result_sampling": func(r *run) (any, *need, error) {
		a, ok, err := r.answer("capital_question")
		if err != nil || !ok {
			return nil, askSample(&need{}, "capital_question", "What is the capital of France?", 100), err
		}
		return content(text("The model said: " + sampled(a))), nil, nil
	},
	"test_input_required_result_list_roots": func(r *run) (any, *need, error) {
		a, ok, err := r.answer("client_roots")
		if err != nil || !ok {
			return nil, askRoots(&need{}, "client_roots"), err
		}
		roots, _ := json.Marshal(a["roots"])
		return content(text("The client's roots: " + string(roots))), nil, nil
	},
	"test_input_required_result_request_state": func(r *run) (any, *need, error) {
		return confirmWithState(r, "request_state", "Please confirm")
	},
	"test_input_required_result_tampered_state": func(r *run) (any, *need, error) {
		return confirmWithState(r, "tampered_state", "Please confirm")
	},
	"test_input_required_result_multiple_inputs": func(r *run) (any, *need, error) {
		ask := func() *need {
			n := askName(&need{}, "user_name", "What is your name?")
			askSample(n, "greeting", "Generate a greeting", 50)
			return askRoots(n, "client_roots").withState(r.f.seal("multiple_inputs"))
		}
		state, err := r.stateIs()
		if err != nil {
			return nil, nil, err
		}
		if state != "multiple_inputs" {
			return nil, ask(), nil
		}
		name, ok1, err1 := r.answer("user_name")
		greeting, ok2, err2 := r.answer("greeting")
		_, ok3, err3 := r.answer("client_roots")
		if err := firstError(err1, err2, err3); err != nil {
			return nil, nil, err
		}
		if !ok1 || !ok2 || !ok3 {
			return nil, ask(), nil
		}
		_, c := elicited(name)
		return content(text(fmt.Sprintf("All three answered: name=%s, greeting=%q, roots given", c, sampled(greeting)))), nil, nil
	},
	"test_input_required_result_multi_round": func(r *run) (any, *need, error) {
		state, err := r.stateIs()
		if err != nil {
			return nil, nil, err
		}
		step1 := func() *need {
			return askName(&need{}, "step1", "Step 1: What is your name?").withState(r.f.seal("multi_round:1"))
		}
		switch {
		case state == "multi_round:1":
			a, ok, err := r.answer("step1")
			if err != nil || !ok {
				return nil, step1(), err
			}
			c, _ := a["content"].(map[string]any)
			name, _ := c["name"].(string)
			return nil, (&need{}).ask("step2", "elicitation/create", obj{"message": "Step 2: What is your favorite color?", "requestedSchema": obj{
				"type": "object", "properties": obj{"color": obj{"type": "string"}}, "required": []string{"color"}}}).
				withState(r.f.seal("multi_round:2:" + name)), nil
		case strings.HasPrefix(state, "multi_round:2:"):
			name := strings.TrimPrefix(state, "multi_round:2:")
			a, ok, err := r.answer("step2")
			if err != nil {
				return nil, nil, err
			}
			if !ok {
				return nil, (&need{}).ask("step2", "elicitation/create", obj{"message": "Step 2: What is your favorite color?", "requestedSchema": obj{
					"type": "object", "properties": obj{"color": obj{"type": "string"}}, "required": []string{"color"}}}).withState(r.state), nil
			}
			c, _ := a["content"].(map[string]any)
			return content(text(fmt.Sprintf("%s likes %v", name, c["color"]))), nil, nil
		}
		return nil, step1(), nil
	},
	"test_input_required_result_capabilities": func(r *run) (any, *need, error) {
		// It asks only what the client declared it can answer.
		n := &need{}
		if r.can("sampling") {
			if _, ok, err := r.answer("summary"); err != nil {
				return nil, nil, err
			} else if !ok {
				askSample(n, "summary", "Summarize the capabilities", 50)
			}
		}
		if r.can("elicitation") {
			if _, ok, err := r.answer("confirm"); err != nil {
				return nil, nil, err
			} else if !ok {
				askConfirm(n, "confirm", "Please confirm")
			}
		}
		if len(n.keys) > 0 {
			return nil, n, nil
		}
		return content(text("Asked only what the client can answer")), nil, nil
	},
}

// inputPrompts are the prompts that need input.
var inputPrompts = map[string]inputTool{
	"test_input_required_result_prompt": func(r *run) (any, *need, error) {
		a, ok, err := r.answer("user_context")
		if err != nil || !ok {
			return nil, (&need{}).ask("user_context", "elicitation/create", obj{"message": "What context should the prompt use?", "requestedSchema": obj{
				"type": "object", "properties": obj{"context": obj{"type": "string"}}, "required": []string{"context"}}}), err
		}
		c, _ := a["content"].(map[string]any)
		return obj{"messages": []obj{{"role": "user", "content": text(fmt.Sprintf("Use this context: %v", c["context"]))}}}, nil, nil
	},
}

// confirmWithState asks a confirmation with a sealed state, and completes
// with "state-ok" once the retry gives both back.
func confirmWithState(r *run, name, message string) (any, *need, error) {
	state, err := r.stateIs()
	if err != nil {
		return nil, nil, err
	}
	a, ok, err := r.answer("confirm")
	if err != nil {
		return nil, nil, err
	}
	if state != name || !ok {
		return nil, askConfirm(&need{}, "confirm", message).withState(r.f.seal(name)), nil
	}
	action, c := elicited(a)
	return content(text(fmt.Sprintf("state-ok: action=%s, content=%s", action, c))), nil, nil
}

// elicit asks the client for input of schema properties, and completes
// with what it said, after prefix.
func elicit(r *run, prefix, message string, properties obj, required []string) (any, *need, error) {
	a, ok, err := r.answer("input")
	if err != nil || !ok {
		schema := obj{"type": "object", "properties": properties}
		if required != nil {
			schema["required"] = required
		}
		return nil, (&need{}).ask("input", "elicitation/create", obj{"message": message, "requestedSchema": schema}), err
	}
	action, c := elicited(a)
	return content(text(fmt.Sprintf("%s: action=%s, content=%s", prefix, action, c))), nil, nil
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// maxRounds bounds the rounds of one call in the legacy mode: a client
// that keeps answering what the tool does not take ends the call.
const maxRounds = 8

// drive runs t in the legacy mode: each request it needs goes to the
// client as a request of the server's, and t runs again with the answers,
// until it completes.
func (f *fixture) drive(ctx context.Context, t inputTool, args map[string]any) (any, error) {
	r := &run{f: f, args: args, responses: map[string]json.RawMessage{}}
	for range maxRounds {
		result, n, err := t(r)
		if err != nil || n == nil {
			return result, err
		}
		for _, k := range n.keys {
			req := n.requests[k]
			var answer json.RawMessage
			if err := f.conn.Call(ctx, req.Method, req.Params, &answer); err != nil {
				return nil, err
			}
			r.responses[k] = answer
		}
		r.state, r.hasState = n.state, n.state != ""
	}
	return nil, mcp.NewError(mcp.CodeInternalError, "the call still needed input after %d rounds", maxRounds)
}
