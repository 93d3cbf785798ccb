package agent

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/mcpgen/mcpgen/internal/trywrite"
)

// Bounds on what waits to be written to one agent. An agent's answers
// hold the slots of its requests (see Conn.take), so at most MaxInFlight
// of them wait; what the servers send on their own (notifications, their
// requests) is bounded here.
const (
	// MaxNotes is how many lines that are not answers may wait for an
	// agent: one that falls this far behind the servers' notifications is
	// dropped, since holding more would be unbounded and waiting for it
	// would hold up the servers' other clients.
	MaxNotes = 512
	// SoftQueued is how many bytes may wait, by default, before the
	// agent's requests stop being started: what it reads no faster than
	// it asks waits in its own socket, not in the launcher (see
	// Limits.SoftQueued).
	SoftQueued = 1 << 20
	// MaxQueued is how many bytes may wait at most, by default, answers
	// included: beyond, the agent is dropped. It lets a few answers of the
	// longest line that is read (mcp.MaxLineSize) wait at once.
	MaxQueued = 64 << 20

	// ShedNotes and ShedQueued mark an agent that falls behind the
	// servers' notifications: beyond either, those that may be lost (a
	// log message, progress) are shed rather than queued, so that an
	// agent that reads, if slowly, is not dropped for a flood of log
	// messages.
	ShedNotes  = MaxNotes / 2
	ShedQueued = SoftQueued / 2
	// MaxUnread is how many notifications an agent may lose in a row
	// while nothing at all is written to it: one that loses more reads
	// nothing, and is dropped.
	MaxUnread = 8192
	// writeChunk bounds one write of the writer goroutine, so that an
	// agent that reads, however slowly, is seen to (see MaxUnread).
	writeChunk = 64 << 10
)

// flushTimeout bounds the last writes to a client that is being closed:
// the answers queued for it, the errors of its last requests.
const flushTimeout = time.Second

var (
	errTooSlow   = errors.New("the client reads too slowly: its queue is full")
	errNoReading = fmt.Errorf("the client reads nothing: it lost %d notifications in a row, and nothing was written to it meanwhile", MaxUnread+1)
	errOutClosed = errors.New("the client's connection is closing")
)

// An outbox holds what waits to be written to one agent's connection, and
// writes it: the outlet of a Conn that speaks lines (Serve). A line goes
// out at once, on the goroutine that puts it, when nothing is queued and
// the connection takes it without blocking (see trywrite.Write): a server's
// upstream read loop then writes its answer straight to the agent's
// socket, without waking another goroutine. Otherwise the line
// waits, in order, for the outbox's writer goroutine (run), which blocks
// on the connection for as long as the client takes to read, so that no
// one else ever does.
type outbox struct {
	w         io.Writer
	raw       syscall.RawConn       // nil: every line goes through the writer goroutine
	deadline  func(time.Time) error // the connection's SetWriteDeadline, if it has one
	written   func(answers int)     // after lines are written: their answers free their slots
	maxQueued int                   // see Limits

	mu      sync.Mutex
	queue   []outLine
	bytes   int  // queued, including a batch being written
	notes   int  // queued lines that are not answers, likewise
	unread  int  // notifications lost since something was last written (see MaxUnread)
	busy    bool // a write is under way: inline, or the writer goroutine's
	closing bool // nothing more is taken; the writer flushes the queue and ends
	wake    chan struct{}
	done    chan struct{} // closed when the writer goroutine has ended
}

// An outLine is one line for the client, with its "\n".
type outLine struct {
	b      []byte
	answer bool // an answer to one of the client's requests
	// lossy: a notification that a client that is behind may lose (see
	// MayLose); token, for progress, is its token's key: a newer line of
	// the same token replaces it while it waits.
	lossy bool
	token string
	rest  bool // the rest of a line partly written: it is never replaced
}

func newOutbox(conn io.Writer, maxQueued int, written func(answers int)) *outbox {
	o := &outbox{
		w:         conn,
		written:   written,
		maxQueued: maxQueued,
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
	if d, ok := conn.(interface{ SetWriteDeadline(time.Time) error }); ok {
		o.deadline = d.SetWriteDeadline
	}
	o.raw = trywrite.Raw(conn)
	return o
}

// finished is closed when the outbox's writer has ended.
func (o *outbox) finished() <-chan struct{} { return o.done }

// put queues a line for the client, or writes it at once (see outbox). A
// notification that may be lost is shed instead when the client is behind
// (shedLocked), and put says what became of it. It fails with errTooSlow
// when the client is too far behind, or errNoReading when it has lost
// MaxUnread notifications in a row and read nothing (the caller drops
// it), and with errOutClosed once the outbox is closing, or the connection
// failed: the line is dropped then, as the client is going.
func (o *outbox) put(l outLine) (Loss, error) {
	o.mu.Lock()
	switch {
	case o.closing:
		o.mu.Unlock()
		return Kept, errOutClosed
	case l.lossy && o.behindLocked():
		loss := o.shedLocked(l)
		var err error
		if loss != Kept {
			o.unread++
			if o.unread > MaxUnread {
				err = errNoReading
			}
		}
		o.mu.Unlock()
		return loss, err
	case o.bytes+len(l.b) > o.maxQueued && o.bytes > 0, !l.answer && o.notes >= MaxNotes:
		o.mu.Unlock()
		return Kept, errTooSlow
	}
	if o.busy || o.raw == nil {
		o.queueLocked(l, false)
		o.mu.Unlock()
		return Kept, nil
	}
	o.busy = true
	o.mu.Unlock()

	n, err := trywrite.Write(o.raw, l.b)
	if err != nil {
		// The client is gone: the writer closes the connection, which
		// ends the client's read loop too.
		o.mu.Lock()
		o.closing = true
		o.signal()
		o.mu.Unlock()
		return Kept, nil
	}
	if n == len(l.b) && l.answer {
		o.written(1)
	}
	o.mu.Lock()
	if n > 0 {
		o.unread = 0
	}
	if n < len(l.b) {
		// The socket is full: the rest goes first, by the writer.
		l.b, l.rest = l.b[n:], true
		o.queueLocked(l, true)
	}
	if len(o.queue) > 0 {
		o.signal() // the writer takes over; busy stays set for it
	} else {
		o.busy = false
	}
	o.mu.Unlock()
	return Kept, nil
}

// behindLocked reports whether the agent is behind what it is sent: the
// notifications that may be lost are shed.
func (o *outbox) behindLocked() bool { return o.notes >= ShedNotes || o.bytes >= ShedQueued }

// shed loses l, a notification that may be lost, if the agent is behind,
// as put would; ok is false, and nothing was done, when it is not.
func (o *outbox) shed(l outLine) (loss Loss, err error, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closing || !o.behindLocked() || l.token != "" {
		return Kept, nil, false // a progress line may wait: it must be made
	}
	loss = o.shedLocked(l)
	if loss != Kept {
		o.unread++
		if o.unread > MaxUnread {
			err = errNoReading
		}
	}
	return loss, err, true
}

// shedLocked takes a notification that may be lost, for a client that is
// behind: progress replaces the line of its token that waits, or waits
// itself when none does (a client has few requests under way, each with
// one token, so these are few); a log message is dropped, and so is
// progress once as many notifications wait as may.
func (o *outbox) shedLocked(l outLine) Loss {
	if l.token != "" {
		for i := len(o.queue) - 1; i >= 0; i-- {
			if q := &o.queue[i]; q.token == l.token && !q.rest {
				o.bytes += len(l.b) - len(q.b)
				q.b = l.b
				return Coalesced
			}
		}
		if o.notes < MaxNotes {
			o.queueLocked(l, false)
			return Kept
		}
	}
	return Dropped
}

// queueLocked queues l (at the front: the rest of a line under way) and
// makes sure the writer goroutine will write it.
func (o *outbox) queueLocked(l outLine, front bool) {
	if front {
		o.queue = append(o.queue, outLine{})
		copy(o.queue[1:], o.queue)
		o.queue[0] = l
	} else {
		o.queue = append(o.queue, l)
	}
	o.bytes += len(l.b)
	if !l.answer {
		o.notes++
	}
	if !o.busy {
		o.busy = true
		o.signal()
	}
}

func (o *outbox) signal() {
	select {
	case o.wake <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// size is how many bytes wait.
func (o *outbox) size() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.bytes
}

// close makes the outbox take nothing more: the writer goroutine writes
// what is queued within flushTimeout, then closes the connection. A write
// that blocks (the client does not read) is cut short by the deadline.
func (o *outbox) close() {
	o.mu.Lock()
	if o.closing {
		o.mu.Unlock()
		return
	}
	o.closing = true
	o.signal()
	o.mu.Unlock()
	if o.deadline != nil {
		_ = o.deadline(time.Now().Add(flushTimeout))
	}
}

// run is the outbox's writer goroutine: it writes what is queued, in
// order, until the outbox is closed and flushed or a write fails; then it
// calls closeConn, which ends the client's read loop too. A connection
// without write deadlines is closed when the flush takes longer than
// flushTimeout, which ends a blocked write as surely.
func (o *outbox) run(closeConn func() error) {
	defer close(o.done)
	defer func() { _ = closeConn() }()
	var batch net.Buffers
	var lines []outLine
	var flushing *time.Timer
	defer func() {
		if flushing != nil {
			flushing.Stop()
		}
	}()
	for range o.wake {
		for {
			o.mu.Lock()
			if len(o.queue) == 0 {
				o.busy = false
				closing := o.closing
				o.mu.Unlock()
				if closing {
					return
				}
				break
			}
			if n := chunk(o.queue); n == len(o.queue) {
				lines, o.queue = o.queue, lines[:0]
			} else {
				lines = append(lines[:0], o.queue[:n]...)
				left := copy(o.queue, o.queue[n:])
				clear(o.queue[left:])
				o.queue = o.queue[:left]
			}
			closing := o.closing
			o.mu.Unlock()

			if closing && o.deadline == nil && flushing == nil {
				flushing = time.AfterFunc(flushTimeout, func() { _ = closeConn() })
			}
			batch = batch[:0]
			size, notes, answers := 0, 0, 0
			for _, l := range lines {
				batch = append(batch, l.b)
				size += len(l.b)
				if l.answer {
					answers++
				} else {
					notes++
				}
			}
			_, err := batch.WriteTo(o.w)
			clear(lines) // the lines are written: let them go
			o.mu.Lock()
			o.bytes -= size
			o.notes -= notes
			o.unread = 0
			o.mu.Unlock()
			if err != nil {
				o.mu.Lock()
				o.closing = true
				o.mu.Unlock()
				return
			}
			if answers > 0 {
				o.written(answers)
			}
		}
	}
}

// chunk returns how many lines, from the first, the writer writes at once:
// writeChunk bytes at most, one line at least.
func chunk(queue []outLine) int {
	size := 0
	for i, l := range queue {
		size += len(l.b)
		if size > writeChunk {
			return max(i, 1)
		}
	}
	return len(queue)
}
