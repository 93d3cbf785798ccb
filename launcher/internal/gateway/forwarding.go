package gateway

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgen/mcpgen/launcher/internal/agent"
	"github.com/mcpgen/mcpgen/launcher/internal/hub"
	"github.com/mcpgen/mcpgen/mcp"
)

// This file is how a request of the agent's reaches its server: at once
// through the server's hub, after a start when the server is idle, or not
// at all, with a reason the agent can act on.

// A member is the session's membership of one server's hub.
type member struct {
	name   string
	b      Backend
	m      *hub.Member
	closed atomic.Bool // the hub dropped it (its server left)
	left   sync.Once
}

// leave ends the membership, on a goroutine that ends once the hub's
// goroutines for it have (each waits for the server at most its bounds,
// or for a write to it that ends with its process): the session does not
// wait for a server that does not read. The session answers what it had
// under way there (see session.refresh).
func (m *member) leave() {
	m.left.Do(func() { go m.m.Leave() })
}

// route hands a request to its server as the server is now: at once when
// it takes requests; through a start when it is idle, or starting for a
// request (forwardStarted); else the agent is told why not, and when to
// try again: a tool call in an error result (asResult), which the model
// reads, anything else in an error.
func (s *session) route(server string, failed bool, call *agent.Call, asResult bool) {
	how, why := s.reach(server, failed)
	switch how {
	case reachNow:
		s.forward(server, call)
	case reachStart:
		s.forwardStarted(server, call, asResult)
	default:
		refuse(call, why, asResult)
	}
}

// refuse answers a request that its server cannot take.
func refuse(call *agent.Call, why string, asResult bool) {
	if asResult {
		res, _ := mcp.ErrorResult("%s", why).MarshalJSON()
		call.Answer(res, nil)
		return
	}
	call.Answer(nil, mcp.NewError(CodeUnavailable, "%s", why))
}

// A reach is how a request can reach its server now.
type reach int

const (
	reachNow   reach = iota // it takes requests
	reachStart              // it is idle, or starting for a request: the request starts it and waits
	reachNot                // it cannot take requests now
)

// reach says how a request reaches a server now, and why not when it
// cannot.
func (s *session) reach(server string, failed bool) (reach, string) {
	s.mu.Lock()
	m := s.members[server]
	s.mu.Unlock()
	if m == nil {
		return reachNot, fmt.Sprintf("server %q is not running in the workspace now", server)
	}
	c := m.b.Hub.Catalog()
	if !failed && c.Failed == nil {
		switch {
		case c.Ready:
			return reachNow, ""
		case c.Idle || c.Waking:
			return reachStart, ""
		}
	}
	var st State
	if m.b.State != nil {
		st = m.b.State()
	}
	if c.Failed != nil || failed || st.State == "failed" {
		why := st.LastError
		if why == "" && c.Failed != nil {
			why = c.Failed.Error()
		}
		return reachNot, fmt.Sprintf("server %q failed and is not running: %s. It is tried again at the next reload (mcpgen reload --workspace ID); the other servers' tools work meanwhile.", server, oneLine(why))
	}
	switch {
	case st.State == "backoff" && !st.RetryAt.IsZero():
		wait := max(time.Until(st.RetryAt), 0).Round(time.Second)
		return reachNot, fmt.Sprintf("server %q is restarting after it stopped (%s); mcpgen starts it again at %s (in %s). Call the tool again then; the other servers' tools work meanwhile.",
			server, oneLine(st.LastError), st.RetryAt.Format("15:04:05"), wait)
	case st.State == "starting" || st.State == "backoff" || st.State == "ready":
		return reachNot, fmt.Sprintf("server %q is starting; call the tool again in a few seconds. The other servers' tools work meanwhile.", server)
	}
	return reachNot, fmt.Sprintf("server %q is not running (%s)", server, st.State)
}

func oneLine(s string) string {
	if s == "" {
		return "no reason given"
	}
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// forwardStarted hands a request to a server that is idle, or starting
// for a request: off the read loop, it starts the server (the hub bounds
// the wait by the server's startup_timeout) and then forwards the
// request. A start that fails answers it with why (see refuse), as the
// hub says it. A cancellation meanwhile drops it unsent.
func (s *session) forwardStarted(server string, call *agent.Call, asResult bool) {
	s.mu.Lock()
	m := s.members[server]
	s.mu.Unlock()
	if m == nil {
		refuse(call, fmt.Sprintf("server %q is not running in the workspace now", server), asResult)
		return
	}
	call.SetOwner(m) // refresh answers it if the server leaves meanwhile
	call.Hold()
	s.conn.Go(func() { // ends when the start does (bounded by the hub), or with the Conn
		err := m.b.Hub.EnsureStarted(s.conn.Context())
		s.mu.Lock()
		current := s.members[server] == m
		s.mu.Unlock()
		if call.Over() || !current {
			return // cancelled, or its server left (refresh answers it)
		}
		if err != nil {
			why := err.Error()
			var we *mcp.Error
			if errors.As(err, &we) {
				why = we.Message
			}
			refuse(call, fmt.Sprintf("%s. The other servers' tools work meanwhile; a later call tries again (mcpgen status and mcpgen logs %s say more).", oneLine(why), server), asResult)
			return
		}
		m.m.Request(call)
	})
}

// forward hands a request to a server's hub.
func (s *session) forward(server string, call *agent.Call) {
	s.mu.Lock()
	m := s.members[server]
	s.mu.Unlock()
	if m == nil {
		call.Answer(nil, mcp.NewError(CodeUnavailable, "server %q is not running in the workspace now", server))
		return
	}
	call.SetOwner(m) // refresh answers it if the server leaves meanwhile
	m.m.Request(call)
}
