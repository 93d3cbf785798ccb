//go:build unix

package e2e

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// 7. Translation between the eras, with the official TypeScript SDK's
// clients: the v2 client (@modelcontextprotocol/client, modern, pinned to
// 2026-07-28) through the gateway and connect NAME to a legacy server whose
// tool elicits (testdata/share/elicit.mjs): it gets input_required, which
// it fulfils itself, and its retry the server's result; the v1 client
// (legacy) to a modern server whose tool answers input_required
// (testdata/share/modern.mjs): it is asked elicitation/create, and gets the
// server's result. Each client is asked once, sees one call, and gets the
// server's answer; a modern client of the modern server gets the server's
// input_required as it is.
func shareTranslation(t *testing.T, bin string) {
	w := newShareWorld(t, bin)
	w.writeManifest("[servers.old]\ncommand = \"node\"\nargs = [" + quote(shareTestdata(t, "elicit.mjs")) + "]\n\n" +
		"[servers.new]\ncommand = \"node\"\nargs = [" + quote(shareTestdata(t, "modern.mjs")) + "]\nenv = { MODERN_CONFIRM = \"1\" }\n")
	w.launch()
	w.readyPid("old")
	w.readyPid("new")
	if st, i := w.server("new"); st.Servers[i].Era != "modern" {
		t.Fatalf("new: era %q, want modern", st.Servers[i].Era)
	}
	gateway := []string{w.bin, "connect", "--workspace", w.ws, "--manifest", w.manifest}
	for _, tc := range []struct {
		name, sdk, tool string
		connect         []string
		era             string
	}{
		{"v2 through the gateway to the legacy server", "v2", "old__confirm", gateway, "modern"},
		{"v2 through connect old", "v2", "confirm", w.connectCmd("old"), "modern"},
		{"v1 through the gateway to the modern server", "v1", "new__confirm", gateway, "legacy"},
		{"v1 through connect new", "v1", "confirm", w.connectCmd("new"), "legacy"},
		{"v2 through connect new (the same era)", "v2", "confirm", w.connectCmd("new"), "modern"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{shareTestdata(t, "input.mjs"), tc.sdk, tc.tool, "deploy", "--"}, tc.connect...)
			cmd := exec.Command("node", args...)
			cmd.Env, cmd.Dir = w.env, w.dir
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			var got struct {
				Era    string   `json:"era"`
				Asked  []string `json:"asked"`
				Error  string   `json:"error"`
				Result struct {
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
					IsError bool `json:"isError"`
				} `json:"result"`
			}
			if jerr := json.Unmarshal(out, &got); err != nil || jerr != nil {
				t.Fatalf("input.mjs: %v %v\nstdout: %s\nstderr: %s", err, jerr, out, stderr.Bytes())
			}
			t.Logf("%s", out)
			if got.Era != tc.era {
				t.Errorf("the client's era: %q, want %q", got.Era, tc.era)
			}
			if !slices.Equal(got.Asked, []string{"Confirm deploy?"}) {
				t.Errorf("the client was asked %q, want once, the server's question", got.Asked)
			}
			if got.Error != "" || got.Result.IsError || len(got.Result.Content) == 0 || got.Result.Content[0].Text != "confirmed: accept deploy" {
				t.Errorf("the call: %s", out)
			}
			if strings.Contains(stderr.String(), "WARNING: DATA RACE") {
				t.Errorf("a race in connect:\n%s", stderr.Bytes())
			}
		})
	}
}
