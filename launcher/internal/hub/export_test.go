package hub

import (
	"testing"

	"github.com/mcpgen/mcpgen/mcp"
)

// BenchCaller returns a function that makes one echo call through a hub
// with a test server behind it, over a unix socket as connect does, and
// the hub: for the benchmark of the hooks (hooks_bench_test.go), in
// package hub_test because it imports the metrics package, which imports
// hub.
func BenchCaller(tb testing.TB) (func() error, *Hub) {
	tb.Helper()
	h := benchHub(tb)
	c := h.unixClient(tb)
	reply := make(chan *mcp.Message, 1)
	var buf []byte
	return func() error {
		var err error
		buf, err = c.echo(buf, reply)
		return err
	}, h.hub
}
