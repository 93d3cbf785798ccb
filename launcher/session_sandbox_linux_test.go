package launcher

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgen/mcpgen/internal/sandbox"
	"github.com/mcpgen/mcpgen/launcher/ctl"
	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
	"github.com/mcpgen/mcpgen/manifest"
)

// TestSessionSandbox: a server whose manifest enables the sandbox cannot
// read what it was not granted (a key beside the workspace) and can read
// its workspace; the same server without the sandbox reads both, which
// shows the test can fail. Status says what confines it.
func TestSessionSandbox(t *testing.T) {
	r := sandbox.Inspect(&sandbox.Policy{Network: sandbox.Network{Mode: sandbox.NetNone}})
	if !strings.Contains(r.Platform, "landlock") {
		t.Skipf("no Landlock here: %s", r.Platform)
	}
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	key := filepath.Join(dir, "id_ed25519")
	notes := filepath.Join(ws, "notes")
	writeFile(t, key, "sk-not-a-real-key")
	writeFile(t, notes, "granted")
	path := filepath.Join(dir, "mcpgen.toml")
	writeFile(t, path, testServerTOML(t, "boxed", "echo")+"[servers.boxed.sandbox]\nenabled = true\n\n"+
		testServerTOML(t, "open", "echo"))
	ts := startSession(t, path, Options{Context: manifest.ContextOptions{Dir: ws}})
	st := ts.wait("both ready", allReady("boxed", "open"))

	if sb := server(st, "boxed").Sandbox; sb == nil || sb.Platform != r.Platform {
		t.Errorf("boxed: status sandbox %+v, want the platform's %q", sb, r.Platform)
	}
	if sb := server(st, "open").Sandbox; sb != nil {
		t.Errorf("open: status sandbox %+v, want none", sb)
	}
	read := func(server, file string) string {
		c := ts.connect(server, "tester")
		defer c.Close()
		c.Call("1", "read", fmt.Sprintf(`{"text":%q}`, file))
		return testserver.ResultText(t, c.Next())
	}
	if got := read("open", key); got != "sk-not-a-real-key" {
		t.Fatalf("open reads the key: %q (the test cannot tell a refusal from a broken case)", got)
	}
	if got := read("boxed", key); !strings.Contains(got, "permission denied") {
		t.Errorf("boxed reads the key: %q, want permission denied", got)
	}
	if got := read("boxed", notes); got != "granted" {
		t.Errorf("boxed reads its workspace: %q, want granted", got)
	}

	// [sandbox] at the top gives "open" one too: a reload restarts it in
	// it (the restart key holds the sandbox resolved), and then it cannot
	// read the key either.
	openPid := server(st, "open").Pid
	// boxed's start left a spare setup step of its kind, which open's
	// restart takes: waited for, so that the restart surely does.
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := ts.s.contain.spares.Ready(ctx, &sandbox.Policy{Network: sandbox.Network{Mode: sandbox.NetNone}}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, "[sandbox]\nenabled = true\n\n"+testServerTOML(t, "boxed", "echo")+"[servers.boxed.sandbox]\nenabled = true\n\n"+
		testServerTOML(t, "open", "echo"))
	boxedPid := server(st, "boxed").Pid
	st = ts.wait("open restarted in a sandbox", func(st *ctl.Status) bool {
		o := server(st, "open")
		return o.State == ctl.Ready && o.Pid != openPid && o.Sandbox != nil
	})
	if got := server(st, "boxed").Pid; got != boxedPid {
		t.Errorf("boxed restarted (pid %d, was %d): its sandbox did not change", got, boxedPid)
	}
	if got := read("open", key); !strings.Contains(got, "permission denied") {
		t.Errorf("open, now sandboxed, reads the key: %q, want permission denied", got)
	}
	if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", server(st, "open").Pid)); err != nil || !strings.Contains(string(cmdline), "__mcpgen_sandbox_spare") {
		t.Errorf("open restarted with the setup step %q (%v), want the spare", cmdline, err)
	}
	if ok := strings.Contains(r.Platform, "pid"); ok {
		// In a PID namespace of its own the server is its reaper's child.
		c := ts.connect("boxed", "tester")
		defer c.Close()
		if pid := c.CallPid("2"); pid == server(st, "boxed").Pid {
			t.Errorf("boxed: pid %d inside is the host's: no PID namespace", pid)
		}
	}
}
