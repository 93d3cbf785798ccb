package hub

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/mcpgen/mcpgen/mcp"
)

// clientQueue is how many messages may wait to be written to a client. A
// client that falls this far behind is disconnected, rather than slow down
// the server's other clients.
const clientQueue = 512

// clientReadBuffer is the read buffer of a client connection: small, since
// a launcher may hold many idle ones; longer lines are still read whole.
const clientReadBuffer = 4 << 10

// A conn is the connection of a client that Serve runs, typically `mcpgen
// connect` run by an agent: the client's sender. It has two goroutines,
// both ended by close: the read loop (run, on Serve's goroutine), which
// feeds the client, and the write loop.
type conn struct {
	c    *client
	rwc  io.ReadWriteCloser
	r    *mcp.Reader
	out  chan []byte
	done chan struct{}
	once sync.Once
}

func newConn(h *Hub, rwc io.ReadWriteCloser) *conn {
	k := &conn{
		rwc:  rwc,
		r:    mcp.NewReaderSize(rwc, clientReadBuffer),
		out:  make(chan []byte, clientQueue),
		done: make(chan struct{}),
	}
	k.c = newClient(h, k)
	return k
}

func newClient(h *Hub, out sender) *client {
	return &client{hub: h, out: out, inflight: make(map[mcp.ID]*forward)}
}

// run reads the client's messages until it disconnects or is closed, then
// cancels what it left in flight.
func (k *conn) run(ctx context.Context) {
	writer := make(chan struct{})
	go func() { defer close(writer); k.writeLoop() }()
	for {
		msg, err := k.r.Read()
		if err != nil {
			var de *mcp.DecodeError
			if errors.As(err, &de) {
				if resp := de.Response(); resp != nil {
					k.send(resp)
				}
				continue
			}
			break
		}
		k.c.handle(ctx, msg)
	}
	k.close()
	<-writer
	k.c.abandon()
}

// close ends the client: the write loop flushes what is queued (the errors
// of its last requests, say), then closes the connection, which ends the
// read loop.
func (k *conn) close() {
	k.once.Do(func() { close(k.done) })
}

// flushTimeout bounds the last writes to a closing client.
const flushTimeout = time.Second

func (k *conn) writeLoop() {
	defer k.rwc.Close()
	for {
		select {
		case line := <-k.out:
			if _, err := k.rwc.Write(line); err != nil {
				k.close()
				return
			}
		case <-k.done:
			if d, ok := k.rwc.(interface{ SetWriteDeadline(time.Time) error }); ok {
				_ = d.SetWriteDeadline(time.Now().Add(flushTimeout))
			}
			for {
				select {
				case line := <-k.out:
					if _, err := k.rwc.Write(line); err != nil {
						return
					}
				default:
					return
				}
			}
		}
	}
}

// send queues a message for the client; a client too far behind is
// disconnected.
func (k *conn) send(msg *mcp.Message) {
	line := append(msg.AppendJSON(nil), '\n')
	select {
	case k.out <- line:
	case <-k.done:
	default:
		k.c.hub.log.Warn("client too slow, disconnected", "server", k.c.hub.name, "client", k.c.displayName())
		k.close()
	}
}
