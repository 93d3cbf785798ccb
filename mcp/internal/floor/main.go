// Command floor is the smallest stdio MCP server that a TypeScript SDK client
// accepts: ping and one echo tool, answered on its read loop with
// goccy/go-json. It is not part of mcpgen. mcp/testdata/bench.sh measures
// mcpgen serve against it, so that a round trip's cost is read as a ratio
// to what the machine and the client cost anyway.
package main

import (
	"bufio"
	"os"

	json "github.com/goccy/go-json"
)

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		ProtocolVersion string `json:"protocolVersion"`
		Name            string `json:"name"`
		Arguments       struct {
			Message string `json:"message"`
		} `json:"arguments"`
	} `json:"params"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   any             `json:"error,omitempty"`
}

var tools = json.RawMessage(`{"tools":[{"name":"echo","description":"Returns its message.",` +
	`"inputSchema":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}}]}`)

func main() {
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	for {
		line, err := in.ReadSlice('\n')
		if err != nil {
			return // the client closed stdin: exit, as MCP asks
		}
		var req request
		if json.Unmarshal(line, &req) != nil || len(req.ID) == 0 {
			continue // notifications and junk need no answer here
		}
		resp := response{JSONRPC: "2.0", ID: req.ID}
		switch req.Method {
		case "initialize":
			resp.Result = map[string]any{
				"protocolVersion": req.Params.ProtocolVersion,
				"capabilities":    map[string]any{"tools": map[string]any{}},
				"serverInfo":      map[string]string{"name": "floor", "version": "1.0.0"},
			}
		case "ping":
			resp.Result = json.RawMessage(`{}`)
		case "tools/list":
			resp.Result = tools
		case "tools/call":
			resp.Result = map[string]any{"content": []map[string]string{{"type": "text", "text": req.Params.Arguments.Message}}}
		default:
			resp.Error = map[string]any{"code": -32601, "message": "method not found"}
		}
		out, _ := json.Marshal(resp)
		_, _ = os.Stdout.Write(append(out, '\n'))
	}
}
