//go:build unix

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The validators must fail where the real clients do not take a config:
// without these cases, a validator that passes everything would leave the
// whole suite green.

// hangingServer is a node command line that starts and never answers,
// marked so that the test can see whether it is left running.
func hangingServer(marker string) (command string, args []string) {
	return node, []string{"-e", "setInterval(() => {}, 1000)", marker}
}

// noneLeft fails the test if a process marked with marker outlives the
// validator (a bounded wait: a killed process takes a moment to go).
func noneLeft(t *testing.T, marker string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		pids := sharePids(marker)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("left running after the validator: %s", describePids(pids))
			return
		}
	}
}

func TestValidateCodex(t *testing.T) {
	sb := newSandbox(t)
	marker := fmt.Sprintf("mcpgen-e2e-hang-%d", os.Getpid())
	hangCmd, hangArgs := hangingServer(marker)
	everything := fmt.Sprintf("[mcp_servers.everything]\ncommand = %q\nargs = [%q]\nstartup_timeout_sec = 30\n", node, os.Getenv("SERVER_EVERYTHING"))
	project := sb.path("committed")
	inProject := sb.write("committed/.codex/config.toml", everything)
	for _, tc := range []struct {
		name    string
		config  string // the file's text; "" for inProject
		flags   []string
		names   []string
		servers []string // what codex mcp list must see, when valid
		wantErr string   // in the error; "" when the file is valid
		tools   []string // --health: tools everything must list
	}{
		{name: "stdio server", config: everything, names: []string{"everything"}, servers: []string{"everything"}},
		{name: "stdio server, project layer", config: everything, flags: []string{"--project"}, names: []string{"everything"}, servers: []string{"everything"}},
		{name: "committed project", flags: []string{"--in-project", project}, names: []string{"everything"}, servers: []string{"everything"}},
		{name: "http server", config: "[mcp_servers.remote]\nurl = \"http://127.0.0.1:9/mcp\"\n", servers: []string{"remote"}},
		{name: "no servers", config: "model = \"o3\"\n"},
		{name: "unknown key", config: "[mcp_servers.a]\ncommand = \"x\"\n\nbogus = 1\n", wantErr: "at line 4, column 1: unknown configuration field `mcp_servers.a.bogus`"},
		{name: "args not an array", config: "[mcp_servers.a]\ncommand = \"x\"\nargs = \"y\"\n", wantErr: "at line 3, column 8: invalid type"},
		{name: "url and command", config: "[mcp_servers.a]\ncommand = \"x\"\nurl = \"http://127.0.0.1:9/\"\n", wantErr: "url is not supported for stdio"},
		{name: "not TOML", config: "[mcp_servers.a\n", wantErr: "at line 1, column 15"},
		{name: "named server missing", config: everything, names: []string{"everything", "absent"}, wantErr: "codex mcp get absent: Codex has no such server"},
		{name: "another file as the committed project's", config: everything, flags: []string{"--in-project", project}, wantErr: "--in-project"},
		{name: "unknown flag", config: everything, flags: []string{"--desktop"}, wantErr: `unknown validator flag "--desktop"`},
		{name: "health, server-everything", config: everything, flags: []string{"--health"}, servers: []string{"everything"}, tools: []string{"echo", "get-sum"}},
		{name: "health, a server that exits", config: everything + "[mcp_servers.exits]\ncommand = \"false\"\n", flags: []string{"--health"}, wantErr: "server exits did not start in Codex"},
		{name: "health, project layer", config: everything, flags: []string{"--project", "--health"}, servers: []string{"everything"}, tools: []string{"echo", "get-sum"}},
		{name: "health, project layer, a server that exits", config: everything + "[mcp_servers.exits]\ncommand = \"false\"\n", flags: []string{"--project", "--health"}, wantErr: "server exits did not start in Codex"},
		{name: "health, committed project", flags: []string{"--in-project", project, "--health"}, servers: []string{"everything"}, tools: []string{"echo", "get-sum"}},
		{name: "health, a server that never answers", config: fmt.Sprintf("[mcp_servers.hangs]\ncommand = %q\nargs = [%q, %q, %q]\nstartup_timeout_sec = 3\n", hangCmd, hangArgs[0], hangArgs[1], hangArgs[2]), flags: []string{"--health"}, wantErr: "server hangs did not start in Codex"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := inProject
			if tc.config != "" {
				file = sb.write(filepath.Join(strings.ReplaceAll(tc.name, " ", "-"), "config.toml"), tc.config)
			}
			v := validateCodexFile(sb.dir, sb.env, tc.flags, file, tc.names...)
			if tc.wantErr != "" {
				if v.err == nil || !strings.Contains(v.err.Error(), tc.wantErr) {
					t.Errorf("got error %v, want one with %q\n%s", v.err, tc.wantErr, v.out)
				}
				noneLeft(t, marker)
				return
			}
			if v.err != nil {
				t.Fatalf("got error %v, want the file valid\n%s", v.err, v.out)
			}
			if !sameSet(v.servers, tc.servers) {
				t.Errorf("got servers %q, want %q\n%s", v.servers, tc.servers, v.out)
			}
			if tc.tools != nil {
				checkCodexHealth(t, v.out, tc.servers, map[string][]string{"everything": tc.tools})
			}
		})
	}
}

func TestValidateClaude(t *testing.T) {
	sb := newSandbox(t)
	marker := fmt.Sprintf("mcpgen-e2e-hang-claude-%d", os.Getpid())
	hangCmd, hangArgs := hangingServer(marker)
	everything := fmt.Sprintf(`"everything": {"command": %q, "args": [%q]}`, node, os.Getenv("SERVER_EVERYTHING"))
	servers := func(entries ...string) string { return `{"mcpServers": {` + strings.Join(entries, ", ") + `}}` }
	project := sb.path("committed")
	inProject := sb.write("committed/.mcp.json", servers(everything))
	for _, tc := range []struct {
		name    string
		file    string // the file's text; "" for inProject
		flags   []string
		env     []string
		servers []string // what claude mcp get must accept, when valid
		wantErr string   // in the error; "" when the file is valid
		wantOut string   // in the transcript
	}{
		{name: "stdio server", file: servers(everything), servers: []string{"everything"}},
		{name: "http server", file: servers(`"remote": {"type": "http", "url": "http://127.0.0.1:9/mcp"}`), servers: []string{"remote"}},
		{name: "committed project", flags: []string{"--in-project", project}, servers: []string{"everything"}},
		{name: "not JSON", file: `{"mcpServers": `, wantErr: "Claude Code reports an error"},
		{name: "mcpServers an array", file: `{"mcpServers": []}`, wantErr: "Claude Code reports an error"},
		{name: "url without type", file: servers(everything, `"remote": {"url": "http://127.0.0.1:9/mcp"}`), wantErr: "claude mcp get remote: Claude Code did not load"},
		{name: "command not a string", file: servers(`"bad": {"command": ["x"]}`), wantErr: "claude mcp get bad"},
		{name: "missing variable", file: servers(`"vars": {"command": "x", "env": {"A": "${MCPGEN_E2E_UNSET}"}}`), servers: []string{"vars"}, wantOut: "MCPGEN_E2E_UNSET"},
		{name: "missing variable, strict", file: servers(`"vars": {"command": "x", "env": {"A": "${MCPGEN_E2E_UNSET}"}}`), flags: []string{"--strict-warnings"}, wantErr: "warns"},
		{name: "variable set", file: servers(`"vars": {"command": "x", "env": {"A": "${MCPGEN_E2E_SET}"}}`), flags: []string{"--strict-warnings"}, env: []string{"MCPGEN_E2E_SET=1"}, servers: []string{"vars"}},
		{name: "ignored key", file: servers(`"cwd": {"command": "x", "cwd": "/tmp"}`), servers: []string{"cwd"}, wantOut: "LINT: cwd: keys Claude Code ignores for type stdio: cwd"},
		{name: "ignored key, strict", file: servers(`"cwd": {"command": "x", "cwd": "/tmp"}`), flags: []string{"--strict-warnings"}, wantErr: "keys Claude Code ignores"},
		{name: "name with a space, strict", file: servers(`"a b": {"command": "x"}`), flags: []string{"--strict-warnings"}, wantErr: "a name outside"},
		{name: "relative url, strict", file: servers(`"remote": {"type": "http", "url": "/mcp"}`), flags: []string{"--strict-warnings"}, wantErr: "not an absolute"},
		{name: "desktop, stdio", file: servers(everything), flags: []string{"--desktop"}, servers: []string{"everything"}},
		{name: "desktop, http", file: servers(everything, `"remote": {"type": "http", "url": "http://127.0.0.1:9/mcp"}`), flags: []string{"--desktop"}, wantErr: "remote: not a stdio command"},
		{name: "unknown flag", file: servers(everything), flags: []string{"--project"}, wantErr: `unknown validator flag "--project"`},
		{name: "health, server-everything", file: servers(everything), flags: []string{"--health"}, servers: []string{"everything"}},
		{name: "health, a server that exits", file: servers(everything, `"exits": {"command": "false"}`), flags: []string{"--health"}, wantErr: "server exits did not connect"},
		{name: "health, a server that never answers", file: servers(fmt.Sprintf(`"hangs": {"command": %q, "args": [%q, %q, %q]}`, hangCmd, hangArgs[0], hangArgs[1], hangArgs[2])),
			flags: []string{"--health"}, env: []string{"MCP_TIMEOUT=3000"}, wantErr: "server hangs did not connect"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := inProject
			if tc.file != "" {
				file = sb.write(filepath.Join(strings.ReplaceAll(tc.name, " ", "-"), "mcp.json"), tc.file)
			}
			v := validateClaudeFile(sb.dir, slices.Concat(sb.env, tc.env), tc.flags, file)
			if !strings.Contains(v.out, tc.wantOut) {
				t.Errorf("the transcript lacks %q:\n%s", tc.wantOut, v.out)
			}
			if tc.wantErr != "" {
				if v.err == nil || !strings.Contains(v.err.Error(), tc.wantErr) {
					t.Errorf("got error %v, want one with %q\n%s", v.err, tc.wantErr, v.out)
				}
				noneLeft(t, marker)
				return
			}
			if v.err != nil {
				t.Fatalf("got error %v, want the file valid\n%s", v.err, v.out)
			}
			if !sameSet(v.servers, tc.servers) {
				t.Errorf("got servers %q, want %q\n%s", v.servers, tc.servers, v.out)
			}
			if slices.Contains(tc.flags, "--health") {
				checkClaudeHealth(t, v.out, tc.servers)
			}
		})
	}
}
