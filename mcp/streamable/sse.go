package streamable

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"
)

// errEventTooLarge is returned by sseReader.next for an event whose data is
// longer than the reader's cap. The event was read to its end and dropped:
// the next call reads the event after it.
var errEventTooLarge = errors.New("event longer than the limit")

// An sseReader reads Server-Sent Events (the WHATWG event stream format) with
// a cap on the size of an event, so that a server cannot make us buffer
// without end. It keeps what the stream says about reconnecting: the id of
// the last event dispatched and the retry delay.
//
// Lines end in "\n" or "\r\n". A lone "\r", which the format also allows and
// no MCP server uses, is not a line end here.
type sseReader struct {
	br  *bufio.Reader
	max int // the longest event data, in bytes

	started bool // the byte order mark, if any, is behind us

	// lastID is the id of the last event dispatched (empty or not), which
	// is what Last-Event-ID resumes from; idSeen says whether the stream
	// has set one at all.
	lastID string
	idSeen bool
	// retry is the delay the server asked for before reconnecting (0: it
	// did not say).
	retry time.Duration

	idBuf    string // the id field of the event being read
	idBufSet bool
}

// maxRetry caps the delay a server may ask for: a server that says "wait a
// day" is broken, and a request waiting on it would wait as long.
const maxRetry = time.Minute

func newSSEReader(r io.Reader, max int) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, 4<<10), max: max}
}

// An sseEvent is an event with data. Type is "message" unless the event
// named another.
type sseEvent struct {
	Type string
	Data []byte
}

// next returns the next event that has a data field (its data may be
// empty: the priming event of MCP streams has "data:" and an id). Events
// without one update lastID and retry and are not returned. At the end of the stream it
// returns io.EOF; an event cut short by the end is dropped, as the format
// says. An event longer than the cap returns errEventTooLarge, after it has
// been skipped.
func (r *sseReader) next() (sseEvent, error) {
	var (
		typ      string
		data     []byte
		hasData  bool
		tooLarge bool
	)
	for {
		line, long, err := r.readLine()
		if err != nil {
			if err == io.EOF {
				return sseEvent{}, io.EOF
			}
			return sseEvent{}, err
		}
		if long {
			// A line over the cap can only be a field too large to keep.
			tooLarge = true
			continue
		}
		if len(line) == 0 {
			// Dispatch: the id buffer becomes the last event id, even for
			// an event without data.
			if r.idBufSet {
				r.lastID, r.idSeen = r.idBuf, true
			}
			switch {
			case tooLarge:
				return sseEvent{}, errEventTooLarge
			case !hasData:
				typ = ""
				continue
			}
			if typ == "" {
				typ = "message"
			}
			return sseEvent{Type: typ, Data: data[:len(data)-1]}, nil
		}
		if line[0] == ':' {
			continue // a comment, often a keep-alive
		}
		name, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			name, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(name) {
		case "event":
			typ = string(value)
		case "data":
			hasData = true
			if tooLarge || len(data)+len(value)+1 > r.max+1 {
				tooLarge, data = true, nil
				continue
			}
			data = append(data, value...)
			data = append(data, '\n')
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				r.idBuf, r.idBufSet = string(value), true
			}
		case "retry":
			if d, ok := parseRetry(value); ok {
				r.retry = d
			}
		}
	}
}

// parseRetry reads a retry field: milliseconds, ASCII digits only.
func parseRetry(v []byte) (time.Duration, bool) {
	if len(v) == 0 {
		return 0, false
	}
	var ms int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		if ms < int64(maxRetry/time.Millisecond) {
			ms = ms*10 + int64(c-'0')
		}
	}
	return min(time.Duration(ms)*time.Millisecond, maxRetry), true
}

// readLine returns the next line without its line end. A line longer than
// the cap (plus room for a field name) is skipped to its end without being
// kept, and reported with long set.
func (r *sseReader) readLine() (line []byte, long bool, err error) {
	limit := r.max + 64
	for {
		chunk, err := r.br.ReadSlice('\n')
		if !r.started && (len(chunk) > 0 || err == nil) {
			r.started = true
			chunk = bytes.TrimPrefix(chunk, []byte("\xef\xbb\xbf"))
		}
		switch {
		case err == nil:
			if long {
				return nil, true, nil
			}
			line = append(line, chunk...)
			return bytes.TrimSuffix(line[:len(line)-1], []byte("\r")), false, nil
		case errors.Is(err, bufio.ErrBufferFull):
			if !long && len(line)+len(chunk) > limit {
				long, line = true, nil
			}
			if !long {
				line = append(line, chunk...)
			}
		case err == io.EOF:
			// The end of the stream ends any line and event cut short.
			return nil, false, io.EOF
		default:
			return nil, false, fmt.Errorf("read event stream: %w", err)
		}
	}
}
