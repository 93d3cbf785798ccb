//go:build unix

package launcher

import (
	"context"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/mcp"
)

// TestSessionEras: the launcher's two faces, reached through the control
// socket as mcpgen connect reaches them, over a legacy server and a
// modern-only one: a modern agent's server/discover is answered by
// mcpgen (the hub's from the server's catalog, the gateway's from the
// merged one), its tools/call answered as a modern result, beside a legacy
// agent; status tells which era each agent speaks.
func TestSessionEras(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpgen.toml")
	writeFile(t, path, testServerTOML(t, "old", "echo", "MCPGEN_TESTSERVER_TOOLS=echo")+testServerTOML(t, "new", "modern"))
	ts := startSession(t, path, Options{})
	ts.wait("old and new ready", allReady("old", "new"))
	meta := testserver.ModernMeta("modern-agent", "")

	modernClient := func(server string) *testserver.Client {
		t.Helper()
		var conn net.Conn
		var err error
		if server == "" {
			conn, _, err = ctl.ConnectGateway(context.Background(), ts.ws, nil, "", nil, nil)
		} else {
			conn, err = connect(ts.ws, server)
		}
		if err != nil {
			t.Fatal(err)
		}
		return testserver.NewStatelessClient(t, conn)
	}
	for _, face := range []struct {
		server, info, tool string
	}{{"old", "testserver", "echo"}, {"new", "testserver-modern", "echo"}, {"", "mcpgen", "old__echo"}} {
		c := modernClient(face.server)
		c.Send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{` + meta + `}}}`)
		m := c.Next()
		var r struct {
			SupportedVersions []string        `json:"supportedVersions"`
			ResultType        string          `json:"resultType"`
			Meta              json.RawMessage `json:"_meta"`
		}
		if m.Error != nil || json.Unmarshal(m.Result, &r) != nil || !slices.Equal(r.SupportedVersions, mcp.AllVersions()) ||
			r.ResultType != "complete" || !strings.Contains(string(r.Meta), `"name":"`+face.info+`"`) {
			t.Errorf("%q: server/discover: %s", face.server, m.AppendJSON(nil))
		}
		c.Send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + face.tool + `","arguments":{"text":"hi"},"_meta":{` + meta + `}}}`)
		m = c.Next()
		if testserver.ResultText(t, m) != "hi" || !strings.Contains(string(m.Result), `"resultType":"complete"`) {
			t.Errorf("%q: tools/call: %s", face.server, m.AppendJSON(nil))
		}
	}
	legacy := ts.connect("old", "legacy-agent")
	legacy.Call("1", "echo", `{"text":"yo"}`)
	if m := legacy.Next(); testserver.ResultText(t, m) != "yo" || strings.Contains(string(m.Result), "resultType") {
		t.Errorf("legacy tools/call: %s", m.AppendJSON(nil))
	}

	st := ts.status()
	eras := server(st, "old").Clients.Eras
	want := []ctl.ClientEra{{Name: "legacy-agent 1.0", Session: true, Legacy: 2}, {Name: "modern-agent 1.0", Modern: 2}}
	if !slices.Equal(eras, want) {
		t.Errorf("old's clients' eras: %+v, want %+v", eras, want)
	}
	if g := st.Gateway.Clients.Eras; len(g) != 1 || g[0] != (ctl.ClientEra{Name: "modern-agent 1.0", Modern: 2}) {
		t.Errorf("the gateway's clients' eras: %+v", g)
	}
	if r := server(st, "old").Clients.Requests; r != (ctl.EraRequests{Modern: 2, Legacy: 2}) {
		t.Errorf("old's requests: %+v", r)
	}
	if r := st.Gateway.Clients.Requests; r != (ctl.EraRequests{Modern: 2}) {
		t.Errorf("the gateway's requests: %+v", r)
	}
}
