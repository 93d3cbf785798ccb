//go:build unix

package launcher

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
)

// gatewayClient connects to the session's gateway through the control
// socket, as mcpgen connect without a server does, and initializes.
func (ts *testSession) gatewayClient(name string, servers ...string) *testserver.Client {
	ts.t.Helper()
	conn, _, err := ctl.ConnectGateway(context.Background(), ts.ws, servers, "", nil, nil)
	if err != nil {
		ts.t.Fatal(err)
	}
	return testserver.NewClient(ts.t, conn, name, "")
}

func gatewayTools(t *testing.T, c *testserver.Client, id string) []string {
	t.Helper()
	c.Send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list"}`)
	for {
		m := c.Next()
		if !m.IsResponse() {
			continue
		}
		var r struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(m.Result, &r); err != nil {
			t.Fatalf("tools/list: %s", m.AppendJSON(nil))
		}
		var names []string
		for _, tool := range r.Tools {
			names = append(names, tool.Name)
		}
		return names
	}
}

// TestSessionGateway: the launcher's gateway over its servers, reached
// through the control socket; its name mapping in status, the same after
// a server restarts; [gateway] prefix followed on reload; an unknown
// server in --servers refused.
func TestSessionGateway(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpgen.toml")
	body := testServerTOML(t, "a", "echo", "MCPGEN_TESTSERVER_TOOLS=echo,pid,crash") +
		testServerTOML(t, "b", "echo", "MCPGEN_TESTSERVER_TOOLS=echo,add")
	body = strings.Replace(body, "[servers.b]\n", "[servers.b]\ndisabled_tools = [\"add\"]\n", 1)
	writeFile(t, path, body)
	ts := startSession(t, path, Options{})
	ts.wait("a and b ready", allReady("a", "b"))

	c := ts.gatewayClient("agent")
	if got, want := gatewayTools(t, c, "1"), []string{"a__echo", "pid", "crash", "b__echo"}; !slices.Equal(got, want) {
		t.Errorf("tools: got %q, want %q (b's add is disabled)", got, want)
	}
	st := ts.status()
	if st.Gateway == nil || len(st.Gateway.Tools) != 4 || st.Gateway.Prefix != "conflicts" || st.Gateway.Clients.Count != 1 {
		t.Fatalf("status: gateway %+v", st.Gateway)
	}
	if _, _, clients := st.Counts(); clients != 1 || server(st, "a").Clients.Gateway != 1 {
		t.Errorf("one gateway agent over two servers: ps counts %d clients, a's gateway clients %d; want 1 and 1", clients, server(st, "a").Clients.Gateway)
	}
	want := []ctl.GatewayName{
		{Name: "a__echo", Server: "a", Original: "echo"},
		{Name: "pid", Server: "a", Original: "pid"},
		{Name: "crash", Server: "a", Original: "crash"},
		{Name: "b__echo", Server: "b", Original: "echo"},
	}
	if !slices.Equal(st.Gateway.Tools, want) {
		t.Errorf("status tools: got %+v, want %+v", st.Gateway.Tools, want)
	}
	var table bytes.Buffer
	st.WriteTable(&table, time.Now(), false)
	for _, line := range []string{`gateway: 4 tools (2 renamed), 0 prompts, 1 clients; prefix = "conflicts" (SERVER__ only on names that several servers share)`, "a__echo  a       tool echo"} {
		if !strings.Contains(table.String(), line) {
			t.Errorf("the status table lacks %q:\n%s", line, table.String())
		}
	}

	// a crashes: restarted, its names stay.
	c.Call("2", "crash", `{}`)
	ts.wait("a restarted", func(st *ctl.Status) bool { s := server(st, "a"); return s.State == ctl.Ready && s.Restarts > 0 })
	if got := ts.status().Gateway.Tools; !slices.Equal(got, want) {
		t.Errorf("status tools after a restart: %+v", got)
	}
	c.Call("3", "pid", `{}`)
	for {
		m := c.Next()
		if m.IsResponse() && m.ID.String() == "3" {
			if m.Error != nil {
				t.Errorf("pid after the restart: %s", m.AppendJSON(nil))
			}
			break
		}
	}

	// [gateway] prefix = "always", on reload: the agent is told.
	writeFile(t, path, "[gateway]\nprefix = \"always\"\n\n"+body)
	if _, err := ctl.Reload(context.Background(), ts.ws); err != nil {
		t.Fatal(err)
	}
	for {
		if m := c.Next(); m.Method == "notifications/tools/list_changed" {
			break
		}
	}
	if got, want := gatewayTools(t, c, "4"), []string{"a__echo", "a__pid", "a__crash", "b__echo"}; !slices.Equal(got, want) {
		t.Errorf("tools, always: got %q, want %q", got, want)
	}

	if _, _, err := ctl.ConnectGateway(context.Background(), ts.ws, []string{"a", "nope"}, "", nil, nil); err == nil || !strings.Contains(err.Error(), `no server "nope"`) {
		t.Errorf("--servers a,nope: %v", err)
	}
	only := ts.gatewayClient("only-b", "b")
	if got := gatewayTools(t, only, "1"); !slices.Equal(got, []string{"b__echo"}) {
		t.Errorf("--servers b: %q", got)
	}
	only.Call("2", "b__echo", `{"text":"through the gateway"}`)
	for {
		m := only.Next()
		if m.IsResponse() {
			if got := testserver.ResultText(t, m); got != "through the gateway" {
				t.Errorf("b__echo: %q", got)
			}
			break
		}
	}
}
