package httpface

import "net/http"

// A feed is the read side of a connection of lines that the face serves
// an agent connection on (a session, a stateless agent): Read gives the
// agent connection's read loop the lines handed to the feed, in order,
// until its owner ends it (closes ended).
type feed struct {
	in    chan []byte   // lines for Read
	ended chan struct{} // closed once the owner ends
	rest  []byte        // what Read has not given yet of a line; Read's only
}

func newFeed() feed {
	return feed{in: make(chan []byte), ended: make(chan struct{})}
}

// Read gives the agent connection's read loop the lines handed.
func (fd *feed) Read(p []byte) (int, error) {
	if len(fd.rest) == 0 {
		select {
		case fd.rest = <-fd.in:
		case <-fd.ended:
			// Not io.EOF: an agent whose session or connection ended is
			// owed no answer (see agent.Conn's drain).
			return 0, errEnded
		}
	}
	n := copy(p, fd.rest)
	fd.rest = fd.rest[n:]
	return n, nil
}

// hand gives a line to the read loop, and reports false when r's client
// went or the feed ended first.
func (fd *feed) hand(r *http.Request, line []byte) bool {
	select {
	case fd.in <- line:
		return true
	case <-r.Context().Done():
	case <-fd.ended:
	}
	return false
}

// over reports whether the feed has ended.
func (fd *feed) over() bool {
	select {
	case <-fd.ended:
		return true
	default:
		return false
	}
}
