package hub

import (
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// Bounds on what waits to be written to one client. A client's answers
// hold the slots of its requests (see client.take), so at most
// maxInFlight of them wait; what the server sends on its own
// (notifications, its requests) is bounded here.
const (
	// maxNotes is how many lines that are not answers may wait for a
	// client: a client that falls this far behind the server's
	// notifications is dropped, since holding more would be unbounded and
	// waiting for it would hold up the server's other clients.
	maxNotes = 512
	// softQueued is how many bytes may wait before the client's requests
	// stop being started: what it reads no faster than it asks waits in
	// its own socket, not in the launcher.
	softQueued = 1 << 20
	// maxQueued is how many bytes may wait at most, answers included:
	// beyond, the client is dropped. It lets a few answers of the longest
	// line that the hub reads (mcp.MaxLineSize) wait at once.
	maxQueued = 64 << 20
)

// flushTimeout bounds the last writes to a client that is being closed:
// the answers queued for it, the errors of its last requests.
const flushTimeout = time.Second

var (
	errTooSlow   = errors.New("the client reads too slowly: its queue is full")
	errOutClosed = errors.New("the client's connection is closing")
)

// An outbox holds what waits to be written to one client, and writes it.
// A line goes out at once, on the goroutine that puts it, when nothing is
// queued and the connection takes it without blocking (see tryWrite): the
// upstream's read loop then writes a server's answer straight to the
// client's socket, without waking another goroutine. Otherwise the line
// waits, in order, for the outbox's writer goroutine (run), which blocks
// on the connection for as long as the client takes to read, so that no
// one else ever does.
type outbox struct {
	w        io.Writer
	raw      syscall.RawConn       // nil: every line goes through the writer goroutine
	deadline func(time.Time) error // the connection's SetWriteDeadline, if it has one
	written  func(answers int)     // after lines are written: their answers free their slots

	mu      sync.Mutex
	queue   []outLine
	bytes   int  // queued, including a batch being written
	notes   int  // queued lines that are not answers, likewise
	busy    bool // a write is under way: inline, or the writer goroutine's
	closing bool // nothing more is taken; the writer flushes the queue and ends
	wake    chan struct{}
	done    chan struct{} // closed when the writer goroutine has ended
}

// An outLine is one line for the client, with its "\n".
type outLine struct {
	b      []byte
	answer bool // an answer to one of the client's requests
}

func newOutbox(conn io.Writer, written func(answers int)) *outbox {
	o := &outbox{
		w:       conn,
		written: written,
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	if d, ok := conn.(interface{ SetWriteDeadline(time.Time) error }); ok {
		o.deadline = d.SetWriteDeadline
	}
	o.raw = rawWriter(conn)
	return o
}

// put queues a line for the client, or writes it at once (see outbox). It
// fails with errTooSlow when the client is too far behind (the caller drops
// it), and with errOutClosed once the outbox is closing, or the connection
// failed: the line is dropped then, as the client is going.
func (o *outbox) put(line []byte, answer bool) error {
	o.mu.Lock()
	switch {
	case o.closing:
		o.mu.Unlock()
		return errOutClosed
	case o.bytes+len(line) > maxQueued && o.bytes > 0, !answer && o.notes >= maxNotes:
		o.mu.Unlock()
		return errTooSlow
	}
	if o.busy || o.raw == nil {
		o.queueLocked(outLine{line, answer}, false)
		o.mu.Unlock()
		return nil
	}
	o.busy = true
	o.mu.Unlock()

	n, err := tryWrite(o.raw, line)
	if err != nil {
		// The client is gone: the writer closes the connection, which
		// ends the client's read loop too.
		o.mu.Lock()
		o.closing = true
		o.signal()
		o.mu.Unlock()
		return nil
	}
	if n == len(line) && answer {
		o.written(1)
	}
	o.mu.Lock()
	if n < len(line) {
		// The socket is full: the rest goes first, by the writer.
		o.queueLocked(outLine{line[n:], answer}, true)
	}
	if len(o.queue) > 0 {
		o.signal() // the writer takes over; busy stays set for it
	} else {
		o.busy = false
	}
	o.mu.Unlock()
	return nil
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
			lines, o.queue = o.queue, lines[:0]
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
