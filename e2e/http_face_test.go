//go:build unix

package e2e

// The HTTP face against real clients: a launcher run with --listen and a
// bearer token in [session.auth], reached over Streamable HTTP by the real
// Claude Code (which speaks the modern revision first, and is served so)
// and Codex (legacy) through the entries of emit --gateway-url, and by the
// official TypeScript SDK clients, v1 (legacy, a session) and v2 (modern,
// stateless: a legacy server's elicitation comes back input_required,
// which it fulfils and retries), with the token and without.
//
//	eval "$(e2e/clients/install.sh)"
//	MCPGEN_E2E=1 go test -count=1 -v -run HTTPFace ./e2e/

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestHTTPFace(t *testing.T) {
	if !enabled {
		t.Skip(howToRun)
	}
	bin := shareBinary(t)
	w := newShareWorld(t, bin)
	const token = "e2e-http-face-0123456789abcdef"
	const tokenEnv = "MCPGEN_E2E_HTTP_TOKEN"
	w.writeManifest(fmt.Sprintf("[session.auth]\ntoken_env = %q\n\n", tokenEnv) + w.echoServer("echo", nil) +
		"[servers.old]\ncommand = \"node\"\nargs = [" + quote(shareTestdata(t, "elicit.mjs")) + "]\n\n" +
		"[servers.shell.tools.say]\nrun = [\"echo\", \"said:\", \"{text}\"]\nargs.text = { type = \"string\" }\n")
	clientEnv := w.env
	w.env = append(slices.Clip(clientEnv), tokenEnv+"="+token) // the launcher's
	l := w.launch("--listen", "127.0.0.1:0")
	w.env = clientEnv
	w.readyPid("echo")
	w.readyPid("shell")
	w.readyPid("old")
	url := httpURL(t, w)
	t.Logf("the gateway at %s", url)

	withToken := append(slices.Clip(clientEnv), tokenEnv+"="+token)
	t.Run("ClaudeCodex", func(t *testing.T) {
		for _, provider := range []string{"claude", "codex"} {
			file := filepath.Join(w.dir, provider+"-http")
			if _, err := w.run("emit", "--manifest", w.manifest, "--provider", provider, "--gateway-url", url, "--gateway-token-env", tokenEnv, "-o", file); err != nil {
				t.Fatal(err)
			}
			validate := func(env []string) validation {
				flags := []string{"--health", "--no-netns"} // the launcher is on this machine's loopback
				if provider == "codex" {
					return validateCodexFile(w.dir, env, flags, file, "mcpgen")
				}
				return validateClaudeFile(w.dir, env, flags, file)
			}
			modernBefore, _ := eraRequests(t, w, "gateway")
			v := validate(withToken)
			if v.err != nil || !slices.Equal(v.servers, []string{"mcpgen"}) {
				t.Errorf("%s with the token: servers %q, %v\n%s", provider, v.servers, v.err, v.out)
			}
			if modern, _ := eraRequests(t, w, "gateway"); provider == "claude" && modern == modernBefore {
				t.Errorf("claude sent the gateway no modern request: the HTTP face did not serve it statelessly")
			}
			if provider == "codex" {
				m := codexStatusTools.FindStringSubmatch(v.out)
				if m == nil || !slices.Contains(strings.Fields(m[1]), "say") || !slices.Contains(strings.Fields(m[1]), "echo") {
					t.Errorf("codex does not list the gateway's tools:\n%s", v.out)
				}
			}
			if strings.Contains(v.out, token) {
				t.Errorf("%s's transcript shows the token:\n%s", provider, v.out)
			}
			if v := validate(clientEnv); v.err == nil {
				t.Errorf("%s without the token: the health check passed\n%s", provider, v.out)
			}
		}
	})

	t.Run("TypeScriptSDK", func(t *testing.T) {
		calls := `[{"tool":"say","arguments":{"text":"over http"}},{"tool":"echo","arguments":{"message":"hi"}}]`
		// The clients above need not have ended their sessions (they
		// expire); this one does (DELETE).
		before := httpSessions(t, w)
		out, err := httpSDKClient(t, url, calls, withToken, token, "v1")
		if err != nil {
			t.Fatalf("the SDK client with the token: %v\n%s", err, out)
		}
		var got struct {
			Tools   []string `json:"tools"`
			Results []struct {
				IsError bool   `json:"isError"`
				Text    string `json:"text"`
				Error   string `json:"error"`
			} `json:"results"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if !slices.Contains(got.Tools, "say") || len(got.Results) != 2 ||
			got.Results[0].Text != "said: over http\n" || got.Results[1].Text != "hi" {
			t.Errorf("the SDK client: %s", out)
		}
		if after := httpSessions(t, w); after != before {
			t.Errorf("HTTP sessions: %d before the SDK client, %d after it ended its own", before, after)
		}
		if out, err := httpSDKClient(t, url, "[]", clientEnv, "", "v1"); err == nil || !strings.Contains(out, "needs a bearer token") {
			t.Errorf("the SDK client without the token: %v\n%s", err, out)
		}
	})

	t.Run("TypeScriptSDKv2", func(t *testing.T) {
		calls := `[{"tool":"say","arguments":{"text":"stateless"}},{"tool":"confirm","arguments":{"message":"deploy"}}]`
		before := httpSessions(t, w)
		out, err := httpSDKClient(t, url, calls, withToken, token, "v2")
		if err != nil {
			t.Fatalf("the v2 client with the token: %v\n%s", err, out)
		}
		var got struct {
			Era     string   `json:"era"`
			Tools   []string `json:"tools"`
			Asked   []string `json:"asked"`
			Results []struct {
				IsError bool   `json:"isError"`
				Text    string `json:"text"`
				Error   string `json:"error"`
			} `json:"results"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		t.Logf("%s", out)
		if got.Era != "modern" || !slices.Contains(got.Tools, "confirm") || len(got.Results) != 2 ||
			got.Results[0].Text != "said: stateless\n" || got.Results[1].Text != "confirmed: accept deploy" ||
			!slices.Equal(got.Asked, []string{"Confirm deploy?"}) {
			t.Errorf("the v2 client: %s", out)
		}
		if after := httpSessions(t, w); after != before {
			t.Errorf("HTTP sessions: %d before the v2 client, %d after: a stateless client opened one", before, after)
		}
		if out, err := httpSDKClient(t, url, "[]", clientEnv, "", "v2"); err == nil {
			t.Errorf("the v2 client without the token was served:\n%s", out)
		}
	})

	l.stop()
	if strings.Contains(l.log.String(), token) {
		t.Errorf("the launcher's log holds the token:\n%s", l.log)
	}
	w.nothingLeft()
}

// httpURL returns the gateway's URL that status --json shows.
func httpURL(t *testing.T, w *shareWorld) string {
	t.Helper()
	out, err := w.run("status", "--workspace", w.ws, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		HTTP *struct {
			URL string `json:"url"`
		} `json:"http"`
	}
	if err := json.Unmarshal(out, &st); err != nil || st.HTTP == nil || !strings.HasPrefix(st.HTTP.URL, "http://127.0.0.1:") {
		t.Fatalf("status --json has no HTTP URL: %v\n%s", err, out)
	}
	return st.HTTP.URL
}

func httpSessions(t *testing.T, w *shareWorld) int {
	t.Helper()
	out, err := w.run("status", "--workspace", w.ws, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		HTTP struct {
			Sessions int `json:"sessions"`
		} `json:"http"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatal(err)
	}
	return st.HTTP.Sessions
}

// httpSDKClient runs testdata/http-client.mjs against url, with token as
// its bearer token ("" for none), as the SDK's client sdk ("v1" or "v2"),
// and returns its output (stdout, then stderr).
func httpSDKClient(t *testing.T, url, calls string, env []string, token, sdk string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	script, err := filepath.Abs(filepath.Join("testdata", "http-client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "node", script, url, calls)
	cmd.Env = append(slices.Clip(env), "MCP_NODE_MODULES="+os.Getenv("MCP_NODE_MODULES"), "MCP_SDK="+sdk)
	if token != "" {
		cmd.Env = append(cmd.Env, "MCP_TOKEN="+token)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	return string(out) + stderr.String(), err
}
