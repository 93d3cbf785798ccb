//go:build unix

package launcher

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/mcp"
)

// The launcher with servers of either era: the test server's modern mode
// (the modern revision only), its legacy modes, and its dual mode
// (mcp.Server, which speaks both, as mcpgen's own servers do).

// methodsFile returns a file for a test server's notes of what it reads
// ($MCPGEN_TESTSERVER_METHODS: "METHOD VERSION CLIENT" a line), the
// variable that names it, and a function that reads its lines.
func methodsFile(t *testing.T, name string) (env string, read func() []string) {
	path := filepath.Join(t.TempDir(), name+".methods")
	return "MCPGEN_TESTSERVER_METHODS=" + path, func() []string {
		b, _ := os.ReadFile(path)
		if len(b) == 0 {
			return nil
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
}

// methodNames returns the methods of notes.
func methodNames(notes []string) []string {
	var out []string
	for _, n := range notes {
		method, _, _ := strings.Cut(n, " ")
		out = append(out, method)
	}
	return out
}

// waitNote polls read until a note satisfies ok; a hang guard.
func waitNote(t *testing.T, read func() []string, what string, ok func(string) bool) {
	t.Helper()
	for deadline := time.Now().Add(waitLong); ; time.Sleep(5 * time.Millisecond) {
		if slices.ContainsFunc(read(), ok) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server never read %s; it read:\n%s", what, strings.Join(read(), "\n"))
		}
	}
}

// callThrough calls a tool through c and returns the answer to it, skipping
// the notifications that come before.
func callThrough(t *testing.T, c *testserver.Client, id, tool, args string) *mcp.Message {
	t.Helper()
	return gatewayAnswer(t, c, id, "tools/call", `{"name":"`+tool+`","arguments":`+args+`}`)
}

// TestSessionModern: a server of the modern revision only is made ready
// (its era found by the probe), listed, and shown modern in status beside
// a legacy one; legacy agents call it through connect NAME and through the
// gateway, each named in the _meta of its requests; the server is never
// sent initialize or ping; its list change, told on the launcher's
// subscription, reaches the agents of both.
func TestSessionModern(t *testing.T) {
	env, notes := methodsFile(t, "new")
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, testServerTOML(t, "new", "modern", env)+
		testServerTOML(t, "old", "echo", "MCPGEN_TESTSERVER_TOOLS=roots"))
	ts := startSession(t, path, Options{})
	st := ts.wait("ready", allReady("new", "old"))
	if s := server(st, "new"); s.Era != "modern" || !slices.Equal(s.Tools, []string{"echo", "slow", "progress", "crash", "pid", "add", "elicit"}) {
		t.Errorf("new: era %q, tools %q; want modern, the modern mode's tools", s.Era, s.Tools)
	}
	if s := server(st, "old"); s.Era != "legacy" {
		t.Errorf("old: era %q, want legacy", s.Era)
	}
	var table strings.Builder
	st.WriteTable(&table, time.Now(), false)
	if !strings.Contains(table.String(), " ERA ") || !strings.Contains(table.String(), " modern ") || !strings.Contains(table.String(), " legacy ") {
		t.Errorf("the table shows no eras:\n%s", table.String())
	}
	if b, _ := json.Marshal(st); !strings.Contains(string(b), `"era":"modern"`) {
		t.Errorf("status JSON without the era: %s", b)
	}

	direct := ts.connect("new", "direct")
	if got := testserver.ResultText(t, callThrough(t, direct, "1", "echo", `{"text":"hi"}`)); got != "hi" {
		t.Errorf("echo through connect: got %q", got)
	}
	gw := ts.gatewayClient("gw")
	if got := gatewayTools(t, gw, "1"); !slices.Contains(got, "elicit") || !slices.Contains(got, "roots") {
		t.Errorf("gateway tools: got %q, want both servers'", got)
	}
	if got := testserver.ResultText(t, callThrough(t, gw, "2", "echo", `{"text":"through the gateway"}`)); got != "through the gateway" {
		t.Errorf("echo through the gateway: got %q", got)
	}
	waitNote(t, notes, "the call of connect's agent, named", func(n string) bool { return n == "tools/call 2026-07-28 direct" })
	waitNote(t, notes, "the call of the gateway's agent, named", func(n string) bool { return strings.HasPrefix(n, "tools/call 2026-07-28 gw") })

	// A change of its tools, told on the subscription, reaches both.
	direct.Call("3", "add", `{}`)
	for sawAnswer, sawChange := false, false; !sawAnswer || !sawChange; {
		m := direct.Next()
		sawAnswer = sawAnswer || m.IsResponse()
		sawChange = sawChange || m.Method == "notifications/tools/list_changed"
	}
	for m := gw.Next(); m.Method != "notifications/tools/list_changed"; m = gw.Next() {
	}
	ts.wait("the new tool listed", func(st *ctl.Status) bool { return slices.Contains(server(st, "new").Tools, "extra") })

	for i, n := range notes() {
		// Only the probe's hedge may be initialize (a server slower to
		// answer than the grace gets it): nothing else of the legacy era.
		if method, version, _ := strings.Cut(n, " "); method == "ping" || method == "notifications/initialized" ||
			!strings.HasPrefix(version, mcp.ModernVersion) && !(method == "initialize" && i == 1) {
			t.Errorf("the modern server read %q", n)
		}
	}
	if !slices.Contains(methodNames(notes()), "subscriptions/listen") {
		t.Error("the launcher never subscribed to the modern server's list changes")
	}
}

// TestSessionProtocol: the protocol key on a server of both eras
// (mcp.Server): "2025-11-25" makes it legacy, without a probe; auto finds
// it modern; "2026-07-28" makes it modern without one either. Each is
// reached through connect NAME. A legacy server pinned modern fails, with
// its refusal and the pin named.
func TestSessionProtocol(t *testing.T) {
	autoEnv, autoNotes := methodsFile(t, "auto")
	legacyEnv, legacyNotes := methodsFile(t, "legacy")
	modernEnv, modernNotes := methodsFile(t, "modern")
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, testServerTOML(t, "auto", "dual", autoEnv)+
		testServerTOML(t, "legacy", "dual", legacyEnv)+"protocol = \"2025-11-25\"\n\n"+
		testServerTOML(t, "modern", "dual", modernEnv)+"protocol = \"2026-07-28\"\n\n"+
		testServerTOML(t, "wrong", "echo")+"protocol = \"2026-07-28\"\n")
	ts := startSession(t, path, Options{Timing: Timing{FailureLimit: 1}})
	st := ts.wait("ready, and wrong failed", func(st *ctl.Status) bool {
		return server(st, "auto").State == ctl.Ready && server(st, "legacy").State == ctl.Ready && server(st, "modern").State == ctl.Ready && server(st, "wrong").State == ctl.Failed
	})
	// A legacy server pinned modern: its refusal, and what the pin has to do with it.
	if e := server(st, "wrong").LastError; !strings.Contains(e, "server/discover: no method server/discover") || !strings.Contains(e, `the manifest pins protocol = "2026-07-28", which the server may not speak: "auto" asks it`) {
		t.Errorf("wrong: last error %q", e)
	}
	for name, want := range map[string]string{"auto": "modern", "legacy": "legacy", "modern": "modern"} {
		if got := server(st, name).Era; got != want {
			t.Errorf("%s: era %q, want %q", name, got, want)
		}
		c := ts.connect(name, "agent")
		if got := testserver.ResultText(t, callThrough(t, c, "1", "echo", `{"text":"`+name+`"}`)); got != name {
			t.Errorf("%s: echo got %q", name, got)
		}
	}
	if got := methodNames(legacyNotes()); len(got) < 2 || got[0] != "initialize" || got[1] != "notifications/initialized" || slices.Contains(got, "server/discover") {
		t.Errorf("pinned legacy: the server read %q; want the handshake, no probe", got)
	}
	// Auto probes: server/discover first. (A server slower to answer than
	// the probe's grace gets initialize too, which it answers as well;
	// the probe's answer, read first, decides.)
	if got := methodNames(autoNotes()); len(got) == 0 || got[0] != "server/discover" {
		t.Errorf("auto: the server read %q; want server/discover first", got)
	}
	if got := methodNames(modernNotes()); len(got) == 0 || got[0] != "server/discover" || slices.Contains(got, "initialize") {
		t.Errorf("pinned modern: the server read %q; want server/discover, no initialize", got)
	}
}

// TestSessionLazyEraKept: lazy servers whose catalogs an earlier run kept,
// with their eras: they answer lists from the catalog, status shows their
// era while they are idle, and their first start asks nothing that is
// known: the legacy one gets initialize first (no server/discover), the
// modern one gets server/discover and no initialize, though it answers it
// later than a probe's grace (a probe would have sent initialize too).
func TestSessionLazyEraKept(t *testing.T) {
	newEnv, newNotes := methodsFile(t, "new")
	oldEnv, oldNotes := methodsFile(t, "old")
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	body := lazyTOML(t, "other", true, "")
	writeFile(t, path, body)
	ts := startSession(t, path, Options{})
	ts.wait("idle", serverIs("other", ctl.Idle))

	// Both join the manifest with the catalogs an earlier run kept, kept
	// before the manifest names them (see TestSessionGatewayLazyFails).
	body += testServerTOML(t, "new", "modern", newEnv, "MCPGEN_TESTSERVER_DISCOVER_DELAY_MS=1500") + "start = \"lazy\"\n\n" +
		lazyTOML(t, "old", true, "", oldEnv)
	next := filepath.Join(filepath.Dir(path), "next.toml")
	writeFile(t, next, body)
	m, err := manifest.Load(next)
	if err != nil {
		t.Fatal(err)
	}
	ts.s.mu.Lock()
	c := ts.s.ctx
	ts.s.mu.Unlock()
	stateDir, err := StateDir("ws")
	if err != nil {
		t.Fatal(err)
	}
	echo := &mcp.Tool{}
	if err := echo.UnmarshalJSON([]byte(`{"name":"echo","inputSchema":{"type":"object"}}`)); err != nil {
		t.Fatal(err)
	}
	d, err := mcp.ParseDiscoverResult(json.RawMessage(`{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"testserver-modern","version":"1"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	old := &mcp.InitializeResult{Raw: json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"testserver","version":"1"}}`), Era: mcp.EraLegacy}
	for name, init := range map[string]*mcp.InitializeResult{"new": d.InitializeResult(), "old": old} {
		cfg := ts.s.configure(m, c, m.Server(name))
		if err := saveCatalog(stateDir, name, cfg.catKey, &catalog{init: init, tools: []*mcp.Tool{echo}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(next, path); err != nil {
		t.Fatal(err)
	}
	st := ts.wait("idle", func(st *ctl.Status) bool {
		return server(st, "new").State == ctl.Idle && server(st, "old").State == ctl.Idle
	})
	if n, o := server(st, "new"), server(st, "old"); n.Era != "modern" || o.Era != "legacy" {
		t.Errorf("idle, from the catalogs: eras %q and %q, want modern and legacy", n.Era, o.Era)
	}

	clients := map[string]*testserver.Client{}
	for _, name := range []string{"new", "old"} {
		clients[name] = ts.connect(name, "agent")
		if got := listTools(t, clients[name], 1); !slices.Equal(got, []string{"echo"}) {
			t.Errorf("%s: tools/list while idle: got %q, want the catalog's", name, got)
		}
		noProcess(t, ts, name)
	}
	for name, cl := range clients {
		if got := testserver.ResultText(t, callThrough(t, cl, "2", "echo", `{"text":"first"}`)); got != "first" {
			t.Errorf("%s: the first call: got %q", name, got)
		}
	}
	if got := methodNames(oldNotes()); len(got) == 0 || got[0] != "initialize" || slices.Contains(got, "server/discover") {
		t.Errorf("old: its first start read %q; want initialize first, no server/discover", got)
	}
	if got := methodNames(newNotes()); len(got) == 0 || got[0] != "server/discover" || slices.Contains(got, "initialize") {
		t.Errorf("new: its first start read %q; want server/discover, no initialize", got)
	}
}

// TestSessionProbeEnded: a legacy server that exits on a request before
// initialize dies of the probe at its first start; its next start is
// legacy, asked nothing, and it is ready.
func TestSessionProbeEnded(t *testing.T) {
	env, notes := methodsFile(t, "fragile")
	path := filepath.Join(t.TempDir(), "mcpgen.toml")
	writeFile(t, path, testServerTOML(t, "fragile", "fragile", env))
	ts := startSession(t, path, Options{})
	st := ts.wait("ready", serverIs("fragile", ctl.Ready))
	if s := server(st, "fragile"); s.Era != "legacy" || s.Restarts != 1 {
		t.Errorf("got era %q, %d restarts; want legacy, 1", s.Era, s.Restarts)
	}
	if got := methodNames(notes()); len(got) < 2 || got[0] != "server/discover" || got[1] != "initialize" {
		t.Errorf("the server read %q; want the probe (its first process), then initialize (its second)", got)
	}
	if !ts.events.has("the server ended when asked its era (server/discover): its next start opens it as legacy (initialize)", "server", "fragile") {
		t.Errorf("the log does not say why the next start asks nothing:\n%s", ts.events)
	}
	c := ts.connect("fragile", "agent")
	if got := testserver.ResultText(t, callThrough(t, c, "1", "echo", `{"text":"alive"}`)); got != "alive" {
		t.Errorf("echo: got %q", got)
	}
}

// TestCatalogEra: a catalog keeps the server's era, and a modern server's
// discover result as it sent it (with its legacy form, which an earlier
// mcpgen reads); a file without an era (an earlier mcpgen's) is a catalog
// whose era is not known.
func TestCatalogEra(t *testing.T) {
	dir := t.TempDir()
	discover := `{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"instructions":"hi","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"m","version":"2"}},"ttlMs":0}`
	d, err := mcp.ParseDiscoverResult(json.RawMessage(discover))
	if err != nil {
		t.Fatal(err)
	}
	if err := saveCatalog(dir, "m", "k", &catalog{init: d.InitializeResult()}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(catalogPath(dir, "m"))
	var cf catalogFile
	if err := json.Unmarshal(data, &cf); err != nil || cf.Era != "modern" || string(cf.Discover) != discover || !strings.Contains(string(cf.Initialize), `"serverInfo":{"name":"m","version":"2"}`) {
		t.Errorf("the file: %s; want the era, the discover result as sent, and its legacy form", data)
	}
	cat, err := loadCatalog(dir, "m", "k")
	if err != nil || cat == nil {
		t.Fatalf("got %v, %v", cat, err)
	}
	if cat.init.Era != mcp.EraModern || cat.init.Discover == nil || string(cat.init.Discover.Raw) != discover || cat.init.Instructions != "hi" || cat.init.ServerInfo.Name != "m" {
		t.Errorf("read back: era %v, %s", cat.init.Era, cat.init.Raw)
	}

	legacy := `{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"l","version":"1"}}`
	if err := saveCatalog(dir, "l", "k", &catalog{init: &mcp.InitializeResult{Raw: json.RawMessage(legacy), Era: mcp.EraLegacy}}); err != nil {
		t.Fatal(err)
	}
	if cat, err := loadCatalog(dir, "l", "k"); err != nil || cat.init.Era != mcp.EraLegacy || string(cat.init.Raw) != legacy {
		t.Errorf("legacy: got %+v, %v", cat, err)
	}

	// An earlier mcpgen's file: no era.
	writeFile(t, catalogPath(dir, "e"), `{"version":1,"server":"e","key":"k","saved_at":"2026-01-01T00:00:00Z","initialize":`+legacy+`,"tools":[]}`)
	if cat, err := loadCatalog(dir, "e", "k"); err != nil || cat == nil || cat.init.Era != mcp.EraUnknown || cat.init.ServerInfo.Name != "l" {
		t.Errorf("an earlier file: got %+v, %v; want the catalog, era unknown", cat, err)
	}
	writeFile(t, catalogPath(dir, "x"), `{"version":1,"server":"x","key":"k","era":"medieval","initialize":{}}`)
	if _, err := loadCatalog(dir, "x", "k"); err == nil || !strings.Contains(err.Error(), `unknown era "medieval"`) {
		t.Errorf("an unknown era: got %v", err)
	}
}

// A modernHTTP transport says it speaks the modern revision's HTTP.
type modernHTTP bool

func (m modernHTTP) SpeaksModern() bool { return bool(m) }

// TestRemoteOpen: a url server is legacy, unasked, while its transport
// does not speak the modern HTTP; a pinned modern revision is an error
// that says so; a transport that speaks it is opened as the options say.
func TestRemoteOpen(t *testing.T) {
	for _, tt := range []struct {
		name      string
		transport any
		in, want  mcp.OpenOptions
		err       string
	}{
		{"auto", struct{}{}, mcp.OpenOptions{}, mcp.OpenOptions{Version: mcp.LatestVersion}, ""},
		{"known modern", struct{}{}, mcp.OpenOptions{Known: mcp.EraModern}, mcp.OpenOptions{Version: mcp.LatestVersion}, ""},
		{"pinned legacy", struct{}{}, mcp.OpenOptions{Version: "2025-06-18"}, mcp.OpenOptions{Version: "2025-06-18"}, ""},
		{"pinned modern", struct{}{}, mcp.OpenOptions{Version: mcp.ModernVersion}, mcp.OpenOptions{}, "legacy Streamable HTTP only"},
		{"not yet modern", modernHTTP(false), mcp.OpenOptions{}, mcp.OpenOptions{Version: mcp.LatestVersion}, ""},
		{"modern HTTP", modernHTTP(true), mcp.OpenOptions{Known: mcp.EraModern}, mcp.OpenOptions{Known: mcp.EraModern, Grace: -1}, ""},
		{"modern HTTP, auto", modernHTTP(true), mcp.OpenOptions{}, mcp.OpenOptions{Grace: -1}, ""},
	} {
		got, err := remoteOpen(tt.transport, tt.in)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: got %v, want an error with %q", tt.name, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("%s: got %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
}
