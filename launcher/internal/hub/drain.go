package hub

import "time"

// A Drain holds the end of a client that closed its input (EOF) until it
// has the answers to what it asked before, as MCP asks of a server that
// reaches the end of its input: a hub's client connection, and a session
// of the workspace gateway. The wait is bounded: each answer owed is
// bounded by its own timeouts (the wait for the server to be ready, then
// its tool_timeout: see Hub.AnswerBound), which all began before the EOF,
// so the longest of them from the EOF bounds them all.
type Drain struct {
	kick chan struct{}
}

// NewDrain returns a Drain.
func NewDrain() *Drain { return &Drain{kick: make(chan struct{}, 1)} }

// Kick says that an answer owed may have gone out: Wait looks again. It
// never blocks.
func (d *Drain) Kick() {
	select {
	case d.kick <- struct{}{}:
	default: // one is pending: Wait looks once more anyway
	}
}

// Wait returns once owes reports false (it reports true), or when gone is
// closed (the client went, or was dropped) or bound has passed (false).
// owes is called again after each Kick.
func (d *Drain) Wait(gone <-chan struct{}, bound time.Duration, owes func() bool) bool {
	t := time.NewTimer(bound)
	defer t.Stop()
	for owes() {
		select {
		case <-d.kick:
		case <-gone:
			return false
		case <-t.C:
			return false
		}
	}
	return true
}
