//go:build unix

package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// 6. A server of the modern revision only (testdata/share/modern.mjs, which
// refuses initialize), shared through connect NAME: the real Codex, a
// legacy client (it opens with initialize), and the real Claude Code
// reach it through configs of emit --launcher, and their health checks
// list and start it; the launcher shows it modern and speaks nothing else
// to it.
func shareModernServer(t *testing.T, bin string) {
	for _, v := range []string{"CODEX_BIN", "CLAUDE_BIN"} {
		if os.Getenv(v) == "" {
			t.Fatalf("%s is not set: run eval \"$(e2e/clients/install.sh)\" first", v)
		}
	}
	w := newShareWorld(t, bin)
	serverLog := filepath.Join(w.dir, "modern.log")
	w.writeManifest("[servers.modern]\ncommand = \"node\"\nargs = [" + quote(shareTestdata(t, "modern.mjs")) + "]\nenv = { SHARE_LOG = " + quote(serverLog) + " }\n")
	w.launch()
	w.readyPid("modern")
	if st, i := w.server("modern"); st.Servers[i].Era != "modern" || !slices.Equal(st.Servers[i].Tools, []string{"echo"}) {
		t.Fatalf("modern: era %q, tools %q; want modern, [echo]", st.Servers[i].Era, st.Servers[i].Tools)
	}

	for _, client := range []string{"codex", "claude"} {
		file := filepath.Join(w.dir, client+"-config")
		if _, err := w.run("emit", "--provider", client, "--launcher", "--manifest", w.manifest, "-o", file, "--workspace", w.ws, "--dir", w.wsDir); err != nil {
			t.Fatal(err)
		}
		var v validation
		if client == "codex" {
			v = validateCodexFile(w.dir, w.env, []string{"--health"}, file)
		} else {
			v = validateClaudeFile(w.dir, w.env, []string{"--health"}, file)
		}
		if v.err != nil {
			t.Errorf("%s --health: %v\n%s", client, v.err, v.out)
			continue
		}
		// Codex reports the tools it listed; Claude Code, that it connected.
		if want := map[string]string{"codex": "OK modern tools=[echo]", "claude": "- ✔ Connected"}[client]; !strings.Contains(v.out, want) {
			t.Errorf("%s --health: the modern server is not reported as %q:\n%s", client, want, v.out)
		}
		t.Logf("%s:\n%s", client, v.out)
	}

	// What the server read: modern requests only, each with its _meta;
	// the agents' requests named after them.
	b, err := os.ReadFile(serverLog)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the modern server read:\n%s", b)
	clients := map[string]bool{}
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 {
			continue
		}
		method, version, client := f[1], f[2], f[3]
		if method == "initialize" && i == 1 {
			continue // the probe's hedge: a server slower to answer than its grace gets it
		}
		if method == "initialize" || method == "ping" || method == "notifications/initialized" {
			t.Errorf("the modern server read %s", method)
		}
		if strings.HasPrefix(method, "notifications/") {
			continue
		}
		if version != "2026-07-28" {
			t.Errorf("the modern server read %s at version %s", method, version)
		}
		clients[client] = true
	}
	if len(clients) < 2 {
		t.Errorf("the requests came from %v; want the launcher's and the agents'", clients)
	}
}

// quote writes s as a TOML basic string.
func quote(s string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) + `"`
}
