package agent

import (
	"sync"
	"time"
)

// What an agent may lose of the servers' notifications when it reads them
// more slowly than they come, rather than be disconnected: log messages
// are dropped, and progress is coalesced (a newer notification of the same
// token replaces one that still waits). Answers, the servers' requests and
// every other notification are never lost: an agent too far behind on
// those is dropped. Each loss is counted on the Source whose notification
// it was (a server's hub, for status), and logged.

// A Loss is what became of a notification for an agent that is behind.
type Loss int

const (
	Kept      Loss = iota // it goes out: written, or queued
	Dropped               // dropped: a log message
	Coalesced             // it replaced an older one of the same token, still queued: progress
)

// A Source is what sends an agent notifications that it may lose: a
// server's hub.
type Source interface {
	// Lost counts a notification of its that an agent lost.
	Lost(Loss)
	// LogLosses says in the log what the agent named client lost of its
	// notifications since it last did.
	LogLosses(client string, dropped, coalesced int64)
}

// lossLogEvery is how often, at most, the log hears of what one agent
// loses, with the counts since the line before.
const lossLogEvery = 10 * time.Second

// A lossLog counts what one agent loses of the servers' notifications: on
// each Source, and in the log, in a line at its first loss, then at most
// one every lossLogEvery with the counts since the line before, and one at
// its end (flush) with what is left. The zero value is ready to use.
type lossLog struct {
	mu     sync.Mutex
	logged time.Time          // when the last line was written
	counts map[Source]*counts // since then, by source
}

type counts struct{ dropped, coalesced int64 }

// add counts a loss of a notification of src for the agent named by who.
func (l *lossLog) add(src Source, loss Loss, who func() string) {
	if loss == Kept || src == nil {
		return
	}
	src.Lost(loss)
	l.mu.Lock()
	if l.counts == nil {
		l.counts = map[Source]*counts{}
	}
	c := l.counts[src]
	if c == nil {
		c = &counts{}
		l.counts[src] = c
	}
	if loss == Dropped {
		c.dropped++
	} else {
		c.coalesced++
	}
	now := time.Now()
	if !l.logged.IsZero() && now.Sub(l.logged) < lossLogEvery {
		l.mu.Unlock()
		return
	}
	l.logged = now
	all := l.takeLocked()
	l.mu.Unlock()
	logLosses(all, who())
}

// flush logs what the agent lost since the last line: it is going.
func (l *lossLog) flush(who func() string) {
	l.mu.Lock()
	all := l.takeLocked()
	l.mu.Unlock()
	if len(all) > 0 {
		logLosses(all, who())
	}
}

func (l *lossLog) takeLocked() map[Source]*counts {
	all := l.counts
	l.counts = nil
	return all
}

func logLosses(all map[Source]*counts, client string) {
	for src, c := range all {
		src.LogLosses(client, c.dropped, c.coalesced)
	}
}
