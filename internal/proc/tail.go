package proc

import "sync"

// A Tail keeps the last bytes written to it: enough of a server's or a
// build's output to show why it failed, in bounded memory. It is safe for
// concurrent use (a child's stdout and stderr write at once).
type Tail struct {
	mu  sync.Mutex
	buf []byte
	max int
}

// NewTail returns a Tail that keeps max bytes.
func NewTail(max int) *Tail { return &Tail{max: max} }

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max { // trim in batches, not at every write
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// Reset forgets what was written so far.
func (t *Tail) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = t.buf[:0]
}

// Bytes returns a copy of the last bytes written.
func (t *Tail) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	return append([]byte(nil), b...)
}
