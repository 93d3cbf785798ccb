package agent

import "time"

// A drain holds the end of an agent that closed its input (EOF) until it
// has the answers to what it asked before, as MCP asks of a server that
// reaches the end of its input. The wait is bounded: each answer owed is
// bounded by its own timeouts (for a server, the wait for it to be ready,
// then its tool_timeout: see Options.AnswerBound), which all began before
// the EOF, so the longest of them from the EOF bounds them all.
type drain struct {
	kicks chan struct{}
}

func newDrain() *drain { return &drain{kicks: make(chan struct{}, 1)} }

// kick says that an answer owed may have gone out: wait looks again. It
// never blocks.
func (d *drain) kick() {
	select {
	case d.kicks <- struct{}{}:
	default: // one is pending: wait looks once more anyway
	}
}

// wait returns once owes reports false (it reports true), or when gone is
// closed (the agent went, or was dropped) or bound has passed (false).
// owes is called again after each kick.
func (d *drain) wait(gone <-chan struct{}, bound time.Duration, owes func() bool) bool {
	t := time.NewTimer(bound)
	defer t.Stop()
	for owes() {
		select {
		case <-d.kicks:
		case <-gone:
			return false
		case <-t.C:
			return false
		}
	}
	return true
}
