// Package wire is the control socket's protocol, which both of its
// halves speak: the session's (package launcher), which answers, and the
// client's (package ctl), which mcpgen's commands call. A request is one
// JSON line, and so is its answer; after a connect or gateway request that
// succeeds, the connection carries the agent's MCP messages (or, when the
// client handed its stdio over, only says when either side is done).
//
// An answer carries the session's status, whose type is ctl's: S in
// Answer[S], which the two halves fix to ctl.Status. This package knows
// nothing of it, so that ctl, which imports it, can define it.
package wire

import (
	"errors"
	"fmt"
	"io"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/internal/jsonwire"
)

// A Request is the line a client sends first.
type Request struct {
	Op     string `json:"op"`               // status, connect, reload, stop, restart, wait, gateway
	Server string `json:"server,omitempty"` // connect, restart
	// Servers, on a gateway request, limits the gateway to some servers.
	Servers []string `json:"servers,omitempty"`
	// Tools, on a gateway request, is how the agent sees the tools: "all"
	// or "search" ([gateway] tools); "": as the workspace says.
	Tools string `json:"tools,omitempty"`
	// Force, on a stop, skips the servers' grace periods, as a second
	// signal does.
	Force bool `json:"force,omitempty"`
	// Stdio, on a connect, offers the client's stdin and stdout: when the
	// answer says Stdio too, the client sends them (SCM_RIGHTS, with one
	// byte) and the hub reads and writes the agent's pipes itself, so that
	// no bridge copies every message through one more process. The
	// connection then stays open only to tell each side that the other
	// ended.
	Stdio bool `json:"stdio,omitempty"`
}

// An Answer is the line the session answers a request with; S is the
// session's status (ctl.Status).
type Answer[S any] struct {
	OK     bool   `json:"ok"`
	Error  string `json:"error,omitempty"`
	Status *S     `json:"status,omitempty"`
	Stdio  bool   `json:"stdio,omitempty"` // the launcher takes the stdio offered
	// Exiting, on a refused connect, says that the launcher exits for
	// idleness: a new launcher is to be started once it has.
	Exiting bool `json:"exiting,omitempty"`
	// Starting, on a wait or a restart, names the servers still starting
	// when the wait's bound passed.
	Starting []string `json:"starting,omitempty"`
}

// MaxRequestLine bounds the request line.
const MaxRequestLine = 4 << 10

// ExitingMessage is why a launcher that exits for idleness refuses a
// connect, and what its client then says.
const ExitingMessage = "the launcher is exiting (idle): connect again to start a new one"

// WriteAnswer writes a as one line, as the session answers.
func WriteAnswer[S any](w io.Writer, a Answer[S]) error {
	// As the hub does: what a server or a manifest wrote reads as written.
	b, err := json.MarshalWithOption(a, json.DisableHTMLEscape())
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ReadLine reads a line of at most max bytes, without its newline. It
// reads a byte at a time: what follows the line (the client's first MCP
// message, after a request) must not be swallowed by a buffer.
func ReadLine(r io.Reader, max int) ([]byte, error) {
	var line []byte
	var b [1]byte
	for len(line) <= max {
		if _, err := r.Read(b[:]); err != nil {
			return nil, err
		}
		if b[0] == '\n' {
			return line, nil
		}
		line = append(line, b[0])
	}
	return nil, errors.New("request line too long")
}

// The client's side of the control protocol writes its request and reads
// the answer by hand, not through go-json, which compiles an encoder or a
// decoder for each type on its first use in a process: for one line each
// way, that cost mcpgen connect, which every agent starts once per server,
// more than the rest of its work. The launcher's side, which lives long,
// uses go-json; TestControlWire holds the two to agree.

// AppendJSON appends r as one JSON object, as go-json writes it.
func (r Request) AppendJSON(b []byte) []byte {
	b = append(b, `{"op":`...)
	b = jsonwire.AppendString(b, r.Op)
	if r.Server != "" {
		b = append(b, `,"server":`...)
		b = jsonwire.AppendString(b, r.Server)
	}
	if len(r.Servers) > 0 {
		b = append(b, `,"servers":[`...)
		for i, s := range r.Servers {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonwire.AppendString(b, s)
		}
		b = append(b, ']')
	}
	if r.Tools != "" {
		b = append(b, `,"tools":`...)
		b = jsonwire.AppendString(b, r.Tools)
	}
	if r.Force {
		b = append(b, `,"force":true`...)
	}
	if r.Stdio {
		b = append(b, `,"stdio":true`...)
	}
	return append(b, '}')
}

// ParseAnswer reads an answer line, which must be one JSON object. Members
// it does not know are ignored, and null leaves a member unset, as go-json
// does; names match exactly, as the launcher writes them. The status, and
// the servers still starting, which only the requests that ask for them
// carry, go through go-json.
func ParseAnswer[S any](line []byte) (*Answer[S], error) {
	if !jsonwire.IsObject(line) {
		return nil, fmt.Errorf("the answer is not a JSON object: %q", truncate(line, 200))
	}
	members, err := jsonwire.Members(line, 0)
	if err != nil {
		return nil, err // not after IsObject
	}
	var a Answer[S]
	for _, m := range members {
		if string(m.Value) == "null" {
			continue
		}
		var ok bool
		switch m.Key {
		case "ok":
			a.OK, ok = wireBool(m.Value)
		case "error":
			a.Error, ok = wireString(m.Value)
		case "stdio":
			a.Stdio, ok = wireBool(m.Value)
		case "exiting":
			a.Exiting, ok = wireBool(m.Value)
		case "status":
			a.Status = new(S)
			ok = json.Unmarshal(m.Value, a.Status) == nil
		case "starting":
			ok = json.Unmarshal(m.Value, &a.Starting) == nil
		default:
			ok = true
		}
		if !ok {
			return nil, fmt.Errorf("the answer's %q is not what it should be: %s", m.Key, truncate(m.Value, 200))
		}
	}
	return &a, nil
}

func wireBool(v []byte) (b, ok bool) {
	switch string(v) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

func wireString(v []byte) (string, bool) {
	if v[0] != '"' {
		return "", false
	}
	return jsonwire.Unquote(v, true), true
}

// truncate shortens b for a message.
func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
