package gateway

import (
	"fmt"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

// benchServers is a workspace of n servers of m tools each, every fifth
// tool name shared by all the servers (so named SERVER__TOOL), with
// schemas the size of real ones.
func benchServers(n, m int) []Server {
	servers := make([]Server, n)
	for i := range servers {
		s := Server{Name: fmt.Sprintf("server-%02d", i), Init: &mcp.InitializeResult{Capabilities: json.RawMessage(`{"tools":{}}`)}}
		for j := range m {
			name := fmt.Sprintf("s%d_tool_%d", i, j)
			if j%5 == 0 {
				name = fmt.Sprintf("common_%d", j)
			}
			raw := fmt.Sprintf(`{"name":%q,"title":"Tool %d","description":"Does thing %d of server %d, with a description of a realistic length that tells the model when to use it.","inputSchema":{"type":"object","properties":{"path":{"type":"string","description":"a path"},"count":{"type":"integer","default":10}},"required":["path"]},"annotations":{"readOnlyHint":true}}`, name, j, j, i)
			var t mcp.Tool
			if err := json.Unmarshal([]byte(raw), &t); err != nil {
				panic(err)
			}
			s.Tools = append(s.Tools, &t)
		}
		servers[i] = s
	}
	return servers
}

// BenchmarkToolsList answers tools/list for 20 servers of 50 tools from
// the catalog, as the gateway's read loop does: decode the request, write
// the response line. The target is under 1 ms (issue 11).
//
//	go test -run x -bench ToolsList ./launcher/internal/gateway/
func BenchmarkToolsList(b *testing.B) {
	c := Build(benchServers(20, 50), false)
	req := []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/list","params":{}}`)
	var line []byte
	b.ReportAllocs()
	for b.Loop() {
		msg, err := mcp.DecodeMessage(req)
		if err != nil {
			b.Fatal(err)
		}
		line = (&mcp.Message{ID: msg.ID, Result: c.ToolsList()}).AppendJSON(line[:0])
		line = append(line, '\n')
	}
	b.ReportMetric(float64(len(line)), "bytes/answer")
}

// BenchmarkBuild rebuilds the catalog of 20 servers of 50 tools: what a
// change in the workspace (a server ready, failed, its tools changed)
// costs once, before every client's next tools/list.
func BenchmarkBuild(b *testing.B) {
	servers := benchServers(20, 50)
	b.ReportAllocs()
	for b.Loop() {
		Build(servers, false)
	}
}
