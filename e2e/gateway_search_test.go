//go:build unix

package e2e

// The gateway's search mode against the real Codex and Claude Code: each,
// given one emit --gateway entry of a workspace whose [gateway] tools is
// "search", lists exactly search_tools, call_tool and the pinned tools.
//
//	eval "$(e2e/clients/install.sh)"
//	MCPGEN_E2E=1 go test -count=1 -v -run GatewaySearch ./e2e/

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestGatewaySearch(t *testing.T) {
	if !enabled {
		t.Skip(howToRun)
	}
	bin := shareBinary(t)
	w := newShareWorld(t, bin)
	w.writeManifest("[gateway]\ntools = \"search\"\npin = [\"get-sum\", \"shell__echo\"]\n\n" +
		w.echoServer("echo", nil) +
		fmt.Sprintf("[servers.everything]\ncommand = \"node\"\nargs = [%q, \"stdio\", %q]\nstartup_timeout = \"30s\"\n\n", os.Getenv("SERVER_EVERYTHING"), w.marker("everything")) +
		"[servers.shell.tools.echo]\nrun = [\"echo\", \"{text}\"]\nargs.text = { type = \"string\" }\n")
	files := map[string]string{}
	for _, provider := range []string{"codex", "claude"} {
		files[provider] = filepath.Join(w.dir, provider+"-gateway")
		if _, err := w.run("emit", "--provider", provider, "--gateway", "--manifest", w.manifest,
			"--workspace", w.ws, "--dir", w.wsDir, "-o", files[provider]); err != nil {
			t.Fatal(err)
		}
	}
	l := w.launch()
	for _, s := range []string{"echo", "everything", "shell"} {
		w.readyPid(s)
	}
	want := []string{"call_tool", "get-sum", "search_tools", "shell__echo"}
	if got := sorted(w.gatewayTools()); !slices.Equal(got, want) {
		t.Fatalf("tools ls: %q, want %q", got, want)
	}
	if got := sorted(codexGatewayTools(t, w, files["codex"])); !slices.Equal(got, want) {
		t.Errorf("codex lists %q through the gateway, want %q", got, want)
	}
	if got := sorted(claudeGatewayTools(t, w, files["claude"])); !slices.Equal(got, want) {
		t.Errorf("claude lists %q through the gateway, want %q", got, want)
	}
	// What the agents would do next: a search, and a call through call_tool.
	out, err := w.run("tools", "search", "--workspace", w.ws, "--limit", "3", "add two numbers")
	if err != nil || !slices.Contains(fieldsOf(string(out)), "get-sum") {
		t.Errorf("tools search: %s, %v; want get-sum among the tools", out, err)
	}
	out, err = w.run("tools", "call", "--workspace", w.ws, "call_tool", `--args`, `{"name":"get-sum","arguments":{"a":2,"b":3}}`)
	if err != nil || string(out) != "The sum of 2 and 3 is 5.\n" {
		t.Errorf("tools call call_tool get-sum: %q, %v", out, err)
	}
	l.stop()
	w.nothingLeft()
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// fieldsOf returns the first word of each line of s: the names of a table.
func fieldsOf(s string) []string {
	var out []string
	for line := range strings.Lines(s) {
		if f := strings.Fields(line); len(f) > 0 {
			out = append(out, f[0])
		}
	}
	return out
}
