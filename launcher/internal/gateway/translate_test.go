package gateway

import (
	"strings"
	"testing"

	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/mcp"
)

// TestGatewayTranslation: translation between the eras through the
// gateway, both ways: a modern agent's call to a legacy server that
// elicits gets input_required, and its retry the server's result; a legacy
// agent's call to a modern server that returns input_required is asked
// elicitation/create, and gets the server's result.
func TestGatewayTranslation(t *testing.T) {
	w := newWorld(t)
	w.addMode("old", "echo", "MCPGEN_TESTSERVER_TOOLS=echo,elicit")
	w.addMode("new", "modern")

	modern := w.statelessClient()
	meta := testserver.ModernMeta("m", `{"elicitation":{}}`)
	call := func(id, extra string) {
		modern.Send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"old__elicit","arguments":{"text":"g"}` + extra + `,"_meta":{` + meta + `}}}`)
	}
	call("1", "")
	m := next(t, modern, "1")
	ir, err := mcp.ParseInputRequired(m.Result)
	if err != nil || len(ir.Keys) != 1 || ir.InputRequests[ir.Keys[0]].Method != "elicitation/create" || !strings.HasPrefix(ir.RequestState, "mcpgen1.") {
		t.Fatalf("the modern agent's call: got %s, want input_required with mcpgen's state", m.AppendJSON(nil))
	}
	call("2", `,"inputResponses":{"`+ir.Keys[0]+`":{"action":"accept","content":{"ok":true}}},"requestState":"`+ir.RequestState+`"`)
	m = next(t, modern, "2")
	if got := testserver.ResultText(t, m); got != `g: {"action":"accept","content":{"ok":true}}` || mcp.ResultType(m.Result) != mcp.ResultComplete || !strings.Contains(string(m.Result), `"resultType":"complete"`) {
		t.Errorf("the retry: got %s", m.AppendJSON(nil))
	}

	legacy := w.client("legacy", `{"elicitation":{}}`)
	legacy.Call("3", "new__elicit", `{"text":"h"}`)
	ask := legacy.Next()
	if ask.Method != "elicitation/create" || !strings.Contains(string(ask.Params), "Confirm h?") {
		t.Fatalf("the legacy agent got %s, want elicitation/create", ask.AppendJSON(nil))
	}
	legacy.Send(`{"jsonrpc":"2.0","id":` + ask.ID.String() + `,"result":{"action":"accept"}}`)
	m = next(t, legacy, "3")
	if got := testserver.ResultText(t, m); got != `h: confirm={"action":"accept"}` || strings.Contains(string(m.Result), "resultType") {
		t.Errorf("the legacy agent's call: got %s", m.AppendJSON(nil))
	}
	modern.Quiet()
}
