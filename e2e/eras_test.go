//go:build unix

package e2e

// The eras test has the real Claude Code (of the modern revision: it
// probes with server/discover, and stays stateless when answered) and the
// real Codex (legacy: initialize) reach a workspace through the hub
// (emit --launcher) and the gateway (emit --gateway), to a legacy server
// (the project's test server, and the reference server-everything) and to
// a server of the modern revision only, and reads from the launcher's
// status which era each agent spoke:
//
//	eval "$(e2e/clients/install.sh)"
//	MCPGEN_E2E=1 go test -count=1 -v -run Eras ./e2e/

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// eraSeen is what status showed of one agent's era at most, while it was
// connected.
type eraSeen struct {
	Session        bool
	Modern, Legacy int64
}

// watchEras polls the status while agents run and returns a function that
// stops, and returns, per face ("gateway" or a server's name) and agent
// name, the most that status showed.
func watchEras(t *testing.T, w *shareWorld) func() map[string]map[string]eraSeen {
	type era struct {
		Name    string `json:"name"`
		Session bool   `json:"session"`
		Modern  int64  `json:"modern"`
		Legacy  int64  `json:"legacy"`
	}
	type clients struct {
		Eras []era `json:"eras"`
	}
	stop, done := make(chan struct{}), make(chan map[string]map[string]eraSeen, 1)
	go func() { // ends when stopped
		seen := map[string]map[string]eraSeen{}
		note := func(face string, eras []era) {
			if seen[face] == nil {
				seen[face] = map[string]eraSeen{}
			}
			for _, e := range eras {
				s := seen[face][e.Name]
				s.Session = s.Session || e.Session
				s.Modern, s.Legacy = max(s.Modern, e.Modern), max(s.Legacy, e.Legacy)
				seen[face][e.Name] = s
			}
		}
		for {
			select {
			case <-stop:
				done <- seen
				return
			case <-time.After(10 * time.Millisecond):
			}
			out, err := w.run("status", "--workspace", w.ws, "--json")
			if err != nil {
				continue
			}
			var st struct {
				Servers []struct {
					Name    string  `json:"name"`
					Clients clients `json:"clients"`
				} `json:"servers"`
				Gateway *struct {
					Clients clients `json:"clients"`
				} `json:"gateway"`
			}
			if json.Unmarshal(out, &st) != nil {
				continue
			}
			for _, s := range st.Servers {
				note(s.Name, s.Clients.Eras)
			}
			if st.Gateway != nil {
				note("gateway", st.Gateway.Clients.Eras)
			}
		}
	}()
	return func() map[string]map[string]eraSeen { close(stop); return <-done }
}

// eraRequests returns how many requests of each era a face's agents sent
// since the launcher started, as status counts them.
func eraRequests(t *testing.T, w *shareWorld, face string) (modern, legacy int64) {
	t.Helper()
	out, err := w.run("status", "--workspace", w.ws, "--json")
	if err != nil {
		t.Fatal(err)
	}
	type requests struct {
		Modern int64 `json:"modern"`
		Legacy int64 `json:"legacy"`
	}
	var st struct {
		Servers []struct {
			Name    string `json:"name"`
			Clients struct {
				Requests requests `json:"requests"`
			} `json:"clients"`
		} `json:"servers"`
		Gateway *struct {
			Clients struct {
				Requests requests `json:"requests"`
			} `json:"clients"`
		} `json:"gateway"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if face == "gateway" && st.Gateway != nil {
		return st.Gateway.Clients.Requests.Modern, st.Gateway.Clients.Requests.Legacy
	}
	for _, s := range st.Servers {
		if s.Name == face {
			return s.Clients.Requests.Modern, s.Clients.Requests.Legacy
		}
	}
	t.Fatalf("status has no %s", face)
	return 0, 0
}

// TestEras: Claude Code stays modern through mcpgen's hub and gateway
// (it fell back to a legacy session when the gateway answered
// server/discover with -32601), and Codex keeps its legacy session: each
// face's status counts the requests of each era its agents sent, and
// shows the agents it catches connected.
func TestEras(t *testing.T) {
	if !enabled {
		t.Skip(howToRun)
	}
	for _, v := range []string{"CODEX_BIN", "CLAUDE_BIN", "SERVER_EVERYTHING"} {
		if os.Getenv(v) == "" {
			t.Fatalf("%s is not set: run eval \"$(e2e/clients/install.sh)\" first", v)
		}
	}
	bin := shareBinary(t)
	// Each server alone behind the launcher, so that the gateway's tool
	// keeps its name: the project's test server (legacy), the reference
	// server-everything (legacy), and a server of the modern revision
	// only. Each has an echo tool.
	servers := []struct{ name, toml string }{
		{"echo", ""},
		{"everything", fmt.Sprintf("[servers.everything]\ncommand = \"node\"\nargs = [%q, \"stdio\"]\n", os.Getenv("SERVER_EVERYTHING"))},
		{"modern", "[servers.modern]\ncommand = \"node\"\nargs = [" + quote(shareTestdata(t, "modern.mjs")) + "]\n"},
	}
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) { erasThrough(t, bin, srv.name, srv.toml) })
	}
}

// erasThrough is TestEras for one server, named name and declared by toml
// (the project's test server when empty).
func erasThrough(t *testing.T, bin, name, toml string) {
	w := newShareWorld(t, bin)
	if toml == "" {
		toml = w.echoServer(name, nil)
	}
	w.writeManifest(toml)
	files := map[string]string{}
	for _, provider := range []string{"codex", "claude"} {
		for _, face := range []string{"--launcher", "--gateway"} {
			file := filepath.Join(w.dir, provider+face)
			if _, err := w.run("emit", "--provider", provider, face, "--manifest", w.manifest,
				"--workspace", w.ws, "--dir", w.wsDir, "-o", file); err != nil {
				t.Fatal(err)
			}
			files[provider+face] = file
		}
	}
	l := w.launch()
	w.readyPid(name)

	for _, tc := range []struct {
		provider, face, where string
	}{
		{"claude", "--launcher", name}, {"claude", "--gateway", "gateway"},
		{"codex", "--launcher", name}, {"codex", "--gateway", "gateway"},
	} {
		modern0, legacy0 := eraRequests(t, w, tc.where)
		watch := watchEras(t, w)
		var v validation
		if tc.provider == "claude" {
			if tc.face == "--gateway" {
				if tools := claudeGatewayTools(t, w, files[tc.provider+tc.face]); !slices.Contains(tools, "echo") {
					t.Errorf("claude through the gateway lists %q, want echo among them", tools)
				}
			}
			v = validateClaudeFile(w.dir, w.env, []string{"--health"}, files[tc.provider+tc.face])
		} else if tc.face == "--gateway" {
			v = validateCodexFile(w.dir, w.env, []string{"--health"}, files[tc.provider+tc.face], "mcpgen")
		} else {
			v = validateCodexFile(w.dir, w.env, []string{"--health"}, files[tc.provider+tc.face])
		}
		if v.err != nil {
			t.Errorf("%s %s --health: %v\n%s", tc.provider, tc.face, v.err, v.out)
		}
		seen := watch()[tc.where]
		modern1, legacy1 := eraRequests(t, w, tc.where)
		modern, legacy := modern1-modern0, legacy1-legacy0
		t.Logf("%s %s: %d modern and %d legacy requests at %s; agents seen connected: %+v", tc.provider, tc.face, modern, legacy, tc.where, seen)
		if tc.provider == "claude" && (modern == 0 || legacy != 0) || tc.provider == "codex" && (legacy == 0 || modern != 0) {
			t.Errorf("%s %s: %d modern and %d legacy requests at %s; want %s only", tc.provider, tc.face, modern, legacy, tc.where,
				map[string]string{"claude": "modern ones (Claude Code stays modern)", "codex": "legacy ones"}[tc.provider])
		}
		var agents []string
		for name, e := range seen {
			if !strings.Contains(strings.ToLower(name), tc.provider) {
				continue
			}
			agents = append(agents, name)
			modern := e.Modern > 0 && !e.Session && e.Legacy == 0
			legacy := e.Session && e.Modern == 0
			if tc.provider == "claude" && !modern {
				t.Errorf("%s %s: %s spoke %+v at %s; want the modern revision only (stateless: no session)", tc.provider, tc.face, name, e, tc.where)
			}
			if tc.provider == "codex" && !legacy {
				t.Errorf("%s %s: %s spoke %+v at %s; want a legacy session", tc.provider, tc.face, name, e, tc.where)
			}
		}
		if len(agents) == 0 {
			// A short connection may come and go between two polls.
			t.Logf("%s %s: status never caught the agent connected at %s (it showed %v)", tc.provider, tc.face, tc.where, slices.Collect(maps.Keys(seen)))
		}
	}
	l.stop()
	w.nothingLeft()
}
