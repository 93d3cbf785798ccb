package testserver

import (
	"io"
	"strconv"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

// Hang guards: generous, never a timing assertion.
const (
	WaitLong  = 20 * time.Second
	WaitQuiet = 300 * time.Millisecond // how long "nothing arrives" is watched
)

// A Client speaks MCP to a hub line by line, so that tests choose ids and
// tokens freely and see every message. Its reading goroutine ends when the
// connection does; the test's cleanup closes it.
type Client struct {
	t    testing.TB
	conn io.ReadWriteCloser
	w    *mcp.Writer
	in   chan *mcp.Message // everything the hub sends; closed at the end
}

// NewStatelessClient starts reading conn, and sends nothing: a modern
// agent, whose requests carry ModernMeta, or one that opens its session
// later (Initialize). The test's cleanup closes conn.
func NewStatelessClient(t testing.TB, conn io.ReadWriteCloser) *Client {
	c := &Client{t: t, conn: conn, w: mcp.NewWriter(conn), in: make(chan *mcp.Message, 1000)}
	go func() {
		defer close(c.in)
		r := mcp.NewReader(conn)
		for {
			msg, err := r.Read()
			if err != nil {
				return
			}
			c.in <- msg
		}
	}()
	t.Cleanup(func() { conn.Close() })
	return c
}

// ModernMeta is the members of a modern request's _meta of client name
// (no braces: other members may follow), with the capabilities caps (JSON;
// "" for none).
func ModernMeta(name, caps string) string {
	if caps == "" {
		caps = "{}"
	}
	return `"io.modelcontextprotocol/protocolVersion":"` + mcp.ModernVersion + `","io.modelcontextprotocol/clientCapabilities":` + caps +
		`,"io.modelcontextprotocol/clientInfo":{"name":"` + name + `","version":"1.0"}`
}

// Initialize opens a legacy session as client name, as NewClient does.
func (c *Client) Initialize(name, caps string) {
	c.t.Helper()
	if caps == "" {
		caps = "{}"
	}
	c.Send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":` + caps + `,"clientInfo":{"name":"` + name + `","version":"1.0"}}}`)
	// A server may send log messages before its answer (and over HTTP a
	// GET stream's messages may overtake the POST's answer).
	m := c.Next()
	for !m.IsResponse() {
		m = c.Next()
	}
	if m.Error != nil {
		c.t.Fatalf("initialize: %v", m.Error)
	}
	c.Send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// NewClient starts reading conn, and initializes as client name with the
// capabilities caps (JSON; "" for none). The test's cleanup closes conn.
func NewClient(t testing.TB, conn io.ReadWriteCloser, name, caps string) *Client {
	t.Helper()
	c := NewStatelessClient(t, conn)
	c.Initialize(name, caps)
	return c
}

// Close disconnects the client.
func (c *Client) Close() { c.conn.Close() }

// Send writes one line, which must hold one JSON message.
func (c *Client) Send(line string) {
	c.t.Helper()
	if err := c.w.WriteLine([]byte(line)); err != nil {
		c.t.Fatal(err)
	}
}

// SendLines writes lines ("\n" included) as they are, and returns the
// error of the write: it may run on a goroutine of the test's, for a write
// that the hub may hold up.
func (c *Client) SendLines(lines string) error {
	_, err := io.WriteString(c.conn, lines)
	return err
}

// Call calls a tool; args is JSON.
func (c *Client) Call(id, tool, args string) {
	c.t.Helper()
	c.Send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`)
}

// Next returns the next message from the hub.
func (c *Client) Next() *mcp.Message {
	c.t.Helper()
	select {
	case m, ok := <-c.in:
		if !ok {
			c.t.Fatal("the hub closed the connection")
		}
		return m
	case <-time.After(WaitLong):
		c.t.Fatal("nothing from the hub")
	}
	return nil
}

// Quiet fails if the hub sends anything within WaitQuiet.
func (c *Client) Quiet() {
	c.t.Helper()
	select {
	case m := <-c.in:
		c.t.Errorf("unexpected message: %s", m.AppendJSON(nil))
	case <-time.After(WaitQuiet):
	}
}

// Closed waits up to WaitLong for the hub to close the connection, and
// reports whether it did, and how many messages came before.
func (c *Client) Closed() (before int, closed bool) {
	timeout := time.After(WaitLong)
	for {
		select {
		case _, ok := <-c.in:
			if !ok {
				return before, true
			}
			before++
		case <-timeout:
			return before, false
		}
	}
}

// CallPid asks a test server for its pid.
func (c *Client) CallPid(id string) int {
	c.t.Helper()
	c.Call(id, "pid", `{}`)
	pid, err := strconv.Atoi(ResultText(c.t, c.Next()))
	if err != nil {
		c.t.Fatalf("pid: %v", err)
	}
	return pid
}

// ResultText returns the first text of a tool's result, failing the test
// when m is no such result.
func ResultText(t testing.TB, m *mcp.Message) string {
	t.Helper()
	if m.Error != nil {
		t.Fatalf("error response: %v", m.Error)
	}
	var r mcp.CallToolResult
	if err := json.Unmarshal(m.Result, &r); err != nil || len(r.Content) == 0 {
		t.Fatalf("not a tool result: %s", m.Result)
	}
	return r.Content[0].Text
}
