package hub

import (
	"sync"
	"time"

	"github.com/mcpgen/mcpgen/mcp"
)

// This file is what the hub, and the workspace gateway, may lose of a
// server's notifications for a client that reads them more slowly than the
// server sends them, rather than disconnect it: log messages are dropped,
// and progress is coalesced (a newer notification of the same token
// replaces one that still waits). Answers, the server's requests and every
// other notification are never lost: a client too far behind on those is
// dropped, as before. Each server's hub counts what its clients lost, for
// status.

// Shed counts what the clients of a server lost of its notifications
// because they read too slowly.
type Shed struct {
	Dropped   int64 `json:"dropped"`   // log messages dropped
	Coalesced int64 `json:"coalesced"` // progress replaced by a newer one of the same request
}

// A Loss is what became of a notification for a client that is behind.
type Loss int

const (
	Kept      Loss = iota // it goes out: written, or queued
	Dropped               // dropped: a log message
	Coalesced             // it replaced an older one of the same token, still queued: progress
)

// MayLose reports whether a server's notification may be lost for a
// client that reads too slowly: a log message, or progress, for which key
// is its token (as tokenKey makes it; "" when it has none that reads,
// and then it is dropped as a log message is).
func MayLose(msg *mcp.Message) (lossy bool, key string) {
	switch msg.Method {
	case "notifications/message":
		return true, ""
	case "notifications/progress":
		_, raw := memberSpans(msg.Params, "progressToken")
		key, _ := tokenKey(raw)
		return true, key
	}
	return false, ""
}

// Shed returns what the server's clients lost of its notifications so far
// (see MayLose), the workspace gateway's agents included.
func (h *Hub) Shed() Shed {
	return Shed{Dropped: h.dropped.Load(), Coalesced: h.coalesced.Load()}
}

// lossLogEvery is how often, at most, the log hears of what one client
// loses, with the counts since the line before.
const lossLogEvery = 10 * time.Second

// A LossLog counts what one client (a connection of a hub, an agent of the
// gateway) loses of the servers' notifications: on each server's hub, for
// status, and in the log, in a line at its first loss, then at most one
// every lossLogEvery with the counts since the line before, and one at its
// end (Flush) with what is left. The zero value is ready to use.
type LossLog struct {
	mu     sync.Mutex
	logged time.Time      // when the last line was written
	counts map[*Hub]*Shed // since then, by server
}

// Add counts a loss of a notification of h's server for the client named
// by who (called when a line is written).
func (l *LossLog) Add(h *Hub, loss Loss, who func() string) {
	switch loss {
	case Dropped:
		h.dropped.Add(1)
	case Coalesced:
		h.coalesced.Add(1)
	default:
		return
	}
	l.mu.Lock()
	if l.counts == nil {
		l.counts = map[*Hub]*Shed{}
	}
	c := l.counts[h]
	if c == nil {
		c = &Shed{}
		l.counts[h] = c
	}
	if loss == Dropped {
		c.Dropped++
	} else {
		c.Coalesced++
	}
	now := time.Now()
	if !l.logged.IsZero() && now.Sub(l.logged) < lossLogEvery {
		l.mu.Unlock()
		return
	}
	l.logged = now
	counts := l.takeLocked()
	l.mu.Unlock()
	logLosses(counts, who())
}

// Flush logs what the client lost since the last line: it is going.
func (l *LossLog) Flush(who func() string) {
	l.mu.Lock()
	counts := l.takeLocked()
	l.mu.Unlock()
	if len(counts) > 0 {
		logLosses(counts, who())
	}
}

func (l *LossLog) takeLocked() map[*Hub]*Shed {
	counts := l.counts
	l.counts = nil
	return counts
}

func logLosses(counts map[*Hub]*Shed, client string) {
	for h, c := range counts {
		h.log.Warn("client reads the server's notifications too slowly: its log messages are dropped and its progress coalesced",
			"server", h.name, "client", client, "dropped", c.Dropped, "coalesced", c.Coalesced)
	}
}
