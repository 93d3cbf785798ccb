//go:build unix

package e2e

// The validators: what the real Codex and Claude Code make of a config file.
// Each runs the real client in a throwaway home (and project), offline inside
// unshare -n where that works, and returns what it saw, a transcript of every
// step for failure messages, and an error naming each problem. They check:
//
// Codex (validateCodexFile):
//   - strict load: codex app-server --strict-config --print-startup-config
//     must exit 0 with its startup JSON; a rejection is reported with the
//     line, column and detail of Codex's configLoad error;
//   - codex mcp list --json: the servers Codex sees;
//   - codex mcp get NAME --json for every name asked for;
//   - --project: the file as a trusted project's .codex/config.toml;
//     --in-project DIR: DIR itself is the trusted project;
//   - --health: a real codex app-server asked mcpServerStatus/list over
//     JSON-RPC: every server must answer with its serverInfo and tools, and
//     no toolsError.
//
// Claude Code (validateClaudeFile), the file as a project's .mcp.json:
//   - claude mcp list must report no [Error] (with --strict-warnings, no
//     [Warning] and no lint finding either);
//   - claude mcp get NAME must accept every key of mcpServers;
//   - --desktop: every entry is a stdio command, as Claude Desktop wants;
//   - --health: with the project's servers approved, claude mcp list must
//     say "✔ Connected" for each;
//   - --in-project DIR: run in DIR, whose .mcp.json the file must be.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpgen/mcpgen/manifest"
)

// Hang guards for the clients, never timing assertions.
const (
	clientWait = 3 * time.Minute // one client command, or one health check
	exitWait   = 15 * time.Second
)

// A validation is what a validator found.
type validation struct {
	servers []string // the servers the client accepted
	out     string   // the transcript: every step and what the client said
	err     error    // every problem, nil if the file is valid
}

// A transcript collects a validator's steps and problems.
type transcript struct {
	out      strings.Builder
	problems []string
}

func (tr *transcript) step(format string, args ...any) {
	fmt.Fprintf(&tr.out, "## "+format+"\n", args...)
}

func (tr *transcript) print(text string) {
	if text = strings.TrimRight(text, "\n"); text != "" {
		tr.out.WriteString(text + "\n")
	}
}

func (tr *transcript) problem(format string, args ...any) {
	p := fmt.Sprintf(format, args...)
	tr.problems = append(tr.problems, p)
	tr.out.WriteString("PROBLEM: " + p + "\n")
}

func (tr *transcript) result(servers []string) validation {
	v := validation{servers: servers, out: tr.out.String()}
	if len(tr.problems) > 0 {
		v.err = errors.New(strings.Join(tr.problems, "; "))
	}
	return v
}

// validatorFlags are the flags of both validators.
type validatorFlags struct {
	project   bool   // codex: the file as a trusted project's config
	inProject string // the file is DIR's own project config; DIR, absolute
	health    bool   // start every server
	desktop   bool   // claude: a Claude Desktop config
	strict    bool   // claude: warnings and lint findings are problems
	netns     bool   // run the client inside unshare -n, where it works
}

// parseValidatorFlags reads flags; allowed are the ones this validator has.
func parseValidatorFlags(flags []string, allowed ...string) (validatorFlags, error) {
	f := validatorFlags{netns: true}
	for i := 0; i < len(flags); i++ {
		flag := flags[i]
		if !slices.Contains(allowed, flag) && flag != "--health" && flag != "--no-netns" && flag != "--in-project" {
			return f, fmt.Errorf("unknown validator flag %q", flag)
		}
		switch flag {
		case "--project":
			f.project = true
		case "--in-project":
			if i+1 == len(flags) {
				return f, errors.New("--in-project needs the project's directory")
			}
			i++
			dir, err := filepath.Abs(flags[i])
			if err != nil {
				return f, err
			}
			f.inProject = dir
		case "--health":
			f.health = true
		case "--desktop":
			f.desktop = true
		case "--strict-warnings":
			f.strict = true
		case "--no-netns":
			f.netns = false
		}
	}
	return f, nil
}

// validateCodexFile checks file with the real Codex, in a scratch directory
// made under base, and returns the servers codex mcp list sees. env is the
// environment the client and its servers get; CODEX_HOME is set here.
func validateCodexFile(base string, env, flags []string, file string, names ...string) validation {
	var tr transcript
	f, err := parseValidatorFlags(flags, "--project")
	if err != nil {
		tr.problem("%v", err)
		return tr.result(nil)
	}
	scratch, err := os.MkdirTemp(base, "codex-")
	if err != nil {
		tr.problem("%v", err)
		return tr.result(nil)
	}
	defer os.RemoveAll(scratch)
	codexHome, work := filepath.Join(scratch, "codex-home"), filepath.Join(scratch, "work")
	if err := mkdirs(codexHome, work); err != nil {
		tr.problem("%v", err)
		return tr.result(nil)
	}
	config, err := os.ReadFile(file)
	if err != nil {
		tr.problem("%v", err)
		return tr.result(nil)
	}
	// Where the file goes: the user layer, or a project's layer, which
	// Codex reads only once the project is trusted in the user's config.
	var trust string
	switch {
	case f.inProject != "":
		abs, err := filepath.Abs(file)
		if want := filepath.Join(f.inProject, ".codex", "config.toml"); err != nil || abs != want {
			tr.problem("--in-project %s: the file must be %s, not %s", f.inProject, want, file)
			return tr.result(nil)
		}
		work, trust = f.inProject, f.inProject
	case f.project:
		trust = work
		err = writeFile(filepath.Join(work, ".codex", "config.toml"), config)
	default:
		err = writeFile(filepath.Join(codexHome, "config.toml"), config)
	}
	if err == nil && trust != "" {
		// Codex compares the trust entry with its working directory as
		// the kernel reports it: symbolic links resolved.
		if real, rerr := filepath.EvalSymlinks(trust); rerr == nil {
			trust = real
		}
		err = writeFile(filepath.Join(codexHome, "config.toml"), []byte("[projects."+manifest.TOMLString(trust)+"]\ntrust_level = \"trusted\"\n"))
	}
	if err != nil {
		tr.problem("%v", err)
		return tr.result(nil)
	}
	c := client{dir: work, env: withEnv(env, nil, "CODEX_HOME="+codexHome), netns: f.netns}
	codex := os.Getenv("CODEX_BIN")
	fmt.Fprintf(&tr.out, "# codex %s, in %s (offline: %s)\n", file, work, c.offlineBy())

	tr.step("strict load: codex app-server --strict-config --print-startup-config")
	res := c.run(false, codex, "app-server", "--strict-config", "--print-startup-config")
	tr.print(res.stdout)
	tr.print(codexNoise(res.stderr))
	if res.err != nil {
		tr.problem("Codex's strict load rejects %s %s", file, codexLoadError(res))
		return tr.result(nil)
	}
	var startup struct {
		Version string `json:"appServerVersion"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &startup); err != nil || startup.Version == "" {
		tr.problem("the strict load printed no startup config (%v)", err)
		return tr.result(nil)
	}

	tr.step("codex mcp list --json")
	res = c.run(false, codex, "mcp", "list", "--json")
	tr.print(res.stdout)
	tr.print(codexNoise(res.stderr))
	var listed []struct {
		Name    string `json:"name"`
		Enabled bool   `json:"enabled"`
	}
	if res.err != nil {
		tr.problem("codex mcp list: %v", res.err)
		return tr.result(nil)
	}
	if err := json.Unmarshal([]byte(res.stdout), &listed); err != nil {
		tr.problem("codex mcp list --json: %v", err)
		return tr.result(nil)
	}
	var servers, enabled []string
	for _, s := range listed {
		servers = append(servers, s.Name)
		if s.Enabled {
			enabled = append(enabled, s.Name)
		}
	}

	for _, name := range names {
		tr.step("codex mcp get %s --json", name)
		res := c.run(false, codex, "mcp", "get", name, "--json")
		tr.print(res.stdout)
		var got struct {
			Name string `json:"name"`
		}
		if res.err != nil || json.Unmarshal([]byte(res.stdout), &got) != nil || got.Name != name {
			tr.print(codexNoise(res.stderr))
			tr.problem("codex mcp get %s: Codex has no such server (%v)", name, res.err)
		}
	}

	if f.health {
		tr.step("health: codex app-server, mcpServerStatus/list")
		// A project's layer is read only for a session in the project:
		// without a thread, the app-server reports the user layer alone,
		// and a project config would pass without a server started.
		status, err := c.codexStatus(codex, trust != "")
		reported := map[string]bool{}
		for _, s := range status {
			reported[s.Name] = true
		}
		for _, name := range enabled {
			if !reported[name] {
				tr.problems = append(tr.problems, fmt.Sprintf("server %s is configured but Codex's live status does not report it", name))
			}
		}
		for _, s := range status {
			if s.ok() {
				fmt.Fprintf(&tr.out, "OK %s tools=[%s]\n", s.Name, strings.Join(slices.Sorted(maps.Keys(s.Tools)), " "))
			} else {
				fmt.Fprintf(&tr.out, "FAIL %s: %s\n", s.Name, s.failure())
				tr.problems = append(tr.problems, fmt.Sprintf("server %s did not start in Codex: %s", s.Name, s.failure()))
			}
		}
		if err != nil {
			tr.problem("codex app-server: %v", err)
		}
	}
	return tr.result(servers)
}

// codexLoadError says why Codex refused a config: the line and column of
// its configLoad error when it printed one, else what it said.
func codexLoadError(res clientResult) string {
	var doc struct {
		Error struct {
			Message string `json:"message"`
			Data    struct {
				FilePath string `json:"filePath"`
				Line     int    `json:"line"`
				Column   int    `json:"column"`
				Detail   string `json:"detail"`
			} `json:"data"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(res.stdout), &doc) == nil && doc.Error.Message != "" {
		if d := doc.Error.Data; d.Line > 0 {
			// The detail starts with the place in Codex's copy of the file.
			detail := strings.TrimPrefix(d.Detail, fmt.Sprintf("%s:%d:%d: ", d.FilePath, d.Line, d.Column))
			return fmt.Sprintf("at line %d, column %d: %s", d.Line, d.Column, detail)
		}
		return doc.Error.Message
	}
	return fmt.Sprintf("%v: %s", res.err, codexNoise(res.stderr))
}

// codexNoise drops what Codex always says on stderr here: that it will not
// make PATH aliases under /tmp, and backtraces of unknown frames.
func codexNoise(stderr string) string {
	var kept []string
	for line := range strings.Lines(stderr) {
		line = strings.TrimRight(line, "\n")
		t := strings.TrimSpace(line)
		if t == "" || t == "Stack backtrace:" || strings.Contains(t, "PATH aliases") || strings.HasSuffix(t, ": <unknown>") {
			continue
		}
		kept = append(kept, line)
	}
	return strings.Join(kept, "\n")
}

// A serverStatus is one server of mcpServerStatus/list.
type serverStatus struct {
	Name       string                     `json:"name"`
	ServerInfo json.RawMessage            `json:"serverInfo"`
	Tools      map[string]json.RawMessage `json:"tools"`
	ToolsError *string                    `json:"toolsError"`
	AuthStatus string                     `json:"authStatus"`
}

func (s serverStatus) ok() bool {
	return len(s.ServerInfo) > 0 && string(s.ServerInfo) != "null" && s.ToolsError == nil
}

func (s serverStatus) failure() string {
	if s.ToolsError != nil {
		return *s.ToolsError
	}
	return "no serverInfo"
}

// An rpcMessage is a line of codex app-server's JSON-RPC.
type rpcMessage struct {
	ID     *int64          `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// codexStatus asks a real codex app-server, over its JSON-RPC on stdio, for
// the live status of every configured server: Codex starts the stdio ones
// and connects to the others. Every page of the list is read.
func (c client) codexStatus(codex string, inThread bool) ([]serverStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), clientWait)
	defer cancel()
	cmd := c.command(true, codex, "app-server", "--strict-config")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// stdout through a pipe of ours: Wait then returns once the app-server
	// has exited (WaitDelay), even if something it started holds the
	// other end.
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	stderr := &capped{max: 64 << 10}
	cmd.Stderr = stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	// This goroutine owns Wait; it ends when the app-server has exited,
	// which the deferred close of stdin, then kill, make sure of.
	exited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		pw.Close()
		exited <- err
	}()
	defer func() {
		stdin.Close() // the app-server exits at the end of its input
		select {
		case <-exited:
		case <-time.After(exitWait):
			killGroup(cmd)
			<-exited
		}
		killGroup(cmd) // servers that outlived it
	}()

	var mu sync.Mutex // one writer at a time on stdin
	send := func(m any) error {
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		_, err = stdin.Write(append(b, '\n'))
		return err
	}
	// The reader goroutine hands over responses, answers requests, and
	// ends when stdout does (the app-server exited: the deferred function
	// above); once done is closed, or its input is unreadable, it only
	// drains stdout.
	responses := make(chan rpcMessage)
	done := make(chan struct{})
	defer close(done)
	readErr := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 32<<20) // a server's tools can make a long line
		for sc.Scan() {
			var m rpcMessage
			if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil {
				continue // notifications, log lines
			}
			if m.Method != "" {
				// A request to us: refuse it rather than leave it hanging.
				_ = send(map[string]any{"jsonrpc": "2.0", "id": *m.ID, "error": map[string]any{"code": -32601, "message": "not supported by the mcpgen e2e validator"}})
				continue
			}
			select {
			case responses <- m:
			case <-done:
				io.Copy(io.Discard, pr)
				return
			}
		}
		readErr <- sc.Err()
		close(responses)
		io.Copy(io.Discard, pr)
	}()
	call := func(id int64, method string, params any) (json.RawMessage, error) {
		if err := send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
			return nil, fmt.Errorf("%s: %v: %s", method, err, codexNoise(stderr.String()))
		}
		for {
			select {
			case m, ok := <-responses:
				if !ok {
					var why error
					select {
					case why = <-readErr:
					default:
					}
					return nil, fmt.Errorf("%s: the app-server ended its output (%v): %s", method, why, codexNoise(stderr.String()))
				}
				if *m.ID != id {
					continue
				}
				if m.Error != nil {
					return nil, fmt.Errorf("%s: error %d: %s", method, m.Error.Code, m.Error.Message)
				}
				return m.Result, nil
			case <-ctx.Done():
				return nil, fmt.Errorf("%s: no answer in %s: %s", method, clientWait, codexNoise(stderr.String()))
			}
		}
	}

	if _, err := call(1, "initialize", map[string]any{"clientInfo": map[string]string{"name": "mcpgen-e2e", "version": "1"}}); err != nil {
		return nil, err
	}
	if err := send(map[string]string{"jsonrpc": "2.0", "method": "initialized"}); err != nil {
		return nil, err
	}
	var all []serverStatus
	params := map[string]any{"detail": "toolsAndAuthOnly"}
	if inThread {
		raw, err := call(2, "thread/start", map[string]any{"cwd": c.dir, "ephemeral": true})
		if err != nil {
			return nil, err
		}
		var thread struct {
			Thread struct {
				ID string `json:"id"`
			} `json:"thread"`
		}
		if err := json.Unmarshal(raw, &thread); err != nil || thread.Thread.ID == "" {
			return nil, fmt.Errorf("thread/start in %s: no thread id (%v): %s", c.dir, err, raw)
		}
		params["threadId"] = thread.Thread.ID
	}
	for page := int64(0); ; page++ {
		if page == 100 {
			return all, errors.New("mcpServerStatus/list: more than 100 pages")
		}
		raw, err := call(3+page, "mcpServerStatus/list", params)
		if err != nil {
			return all, err
		}
		var res struct {
			Data       []serverStatus `json:"data"`
			NextCursor *string        `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return all, fmt.Errorf("mcpServerStatus/list: %v", err)
		}
		all = append(all, res.Data...)
		if res.NextCursor == nil {
			return all, nil
		}
		params["cursor"] = *res.NextCursor
	}
}

// validateClaudeFile checks file, a .mcp.json, with the real Claude Code in
// a scratch home made under base, and returns the servers that claude mcp
// get accepts. env is the environment the client and its servers get: HOME
// is replaced, so ${VAR}s are expanded from the caller's variables.
func validateClaudeFile(base string, env, flags []string, file string) validation {
	var tr transcript
	f, err := parseValidatorFlags(flags, "--desktop", "--strict-warnings")
	if err != nil {
		tr.problem("%v", err)
		return tr.result(nil)
	}
	scratch, err := os.MkdirTemp(base, "claude-")
	if err != nil {
		tr.problem("%v", err)
		return tr.result(nil)
	}
	defer os.RemoveAll(scratch)
	home, project := filepath.Join(scratch, "home"), filepath.Join(scratch, "project")
	if err := mkdirs(filepath.Join(home, ".claude"), project); err != nil {
		tr.problem("%v", err)
		return tr.result(nil)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		tr.problem("%v", err)
		return tr.result(nil)
	}
	if f.inProject != "" {
		abs, err := filepath.Abs(file)
		if want := filepath.Join(f.inProject, ".mcp.json"); err != nil || abs != want {
			tr.problem("--in-project %s: the file must be %s, not %s", f.inProject, want, file)
			return tr.result(nil)
		}
		project = f.inProject
	} else if err := writeFile(filepath.Join(project, ".mcp.json"), data); err != nil {
		tr.problem("%v", err)
		return tr.result(nil)
	}
	c := client{dir: project, netns: f.netns, env: withEnv(env, []string{"CLAUDE_CONFIG_DIR"},
		"HOME="+home, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1")}
	claude := os.Getenv("CLAUDE_BIN")
	fmt.Fprintf(&tr.out, "# claude %s, in %s (offline: %s)\n", file, project, c.offlineBy())
	names, entries := mcpServers(data)

	if f.desktop {
		tr.step("Claude Desktop: stdio entries only")
		if entries == nil {
			tr.problem("not a JSON object with an mcpServers object")
		}
		for _, name := range names {
			var e map[string]any
			_ = json.Unmarshal(entries[name], &e)
			_, hasURL := e["url"]
			typ, hasType := e["type"]
			_, isString := e["command"].(string)
			if e == nil || hasURL || (hasType && typ != "stdio") || !isString {
				tr.problem("%s: not a stdio command, which Claude Desktop skips", name)
			}
		}
	}

	// Static: the project's servers are not approved in this new home, so
	// Claude Code parses them and starts nothing.
	tr.step("claude mcp list (servers not approved: nothing started)")
	res := c.run(true, claude, "mcp", "list")
	tr.print(res.stdout + res.stderr)
	if res.err != nil {
		tr.problem("claude mcp list: %v", res.err)
	}
	if strings.Contains(res.stdout+res.stderr, "[Error]") {
		tr.problem("Claude Code reports an error in %s", file)
	}
	if f.strict && strings.Contains(res.stdout+res.stderr, "[Warning]") {
		tr.problem("Claude Code warns about %s (--strict-warnings)", file)
	}

	var servers []string
	for _, name := range names {
		tr.step("claude mcp get %s", name)
		res := c.run(true, claude, "mcp", "get", name)
		tr.print(res.stdout + res.stderr)
		if res.err != nil {
			tr.problem("claude mcp get %s: Claude Code did not load this server (%v)", name, res.err)
			continue
		}
		servers = append(servers, name)
	}

	tr.step("lint: what Claude Code accepts silently but is surely a mistake")
	for _, finding := range lintClaude(names, entries) {
		if f.strict {
			tr.problem("%s (--strict-warnings)", finding)
		} else {
			tr.print("LINT: " + finding)
		}
	}

	if f.health {
		tr.step("health: claude mcp list, the servers approved")
		if err := writeFile(filepath.Join(home, ".claude", "settings.json"), []byte(`{"enableAllProjectMcpServers": true}`+"\n")); err != nil {
			tr.problem("%v", err)
			return tr.result(servers)
		}
		res := c.run(true, claude, "mcp", "list")
		tr.print(res.stdout + res.stderr)
		if res.err != nil {
			tr.problem("claude mcp list: %v", res.err)
		}
		for _, name := range names {
			line, ok := claudeListLine(res.stdout, name)
			switch {
			case !ok:
				tr.problem("server %s is not listed by Claude Code", name)
			case !strings.HasSuffix(strings.TrimSpace(line), "✔ Connected"):
				tr.problem("server %s did not connect in Claude Code: %s", name, line)
			}
		}
	}
	return tr.result(servers)
}

// claudeListLine returns the line of claude mcp list about server name:
// "NAME: COMMAND - STATUS".
func claudeListLine(out, name string) (string, bool) {
	for line := range strings.Lines(out) {
		if rest, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), name+": "); ok {
			return rest, true
		}
	}
	return "", false
}

// mcpServers returns the names of a .mcp.json's servers, in the file's
// order, and their entries; nil if it is no JSON object with an
// mcpServers object, which Claude Code reports as an error of its own.
func mcpServers(data []byte) ([]string, map[string]json.RawMessage) {
	var doc struct {
		MCPServers json.RawMessage `json:"mcpServers"`
	}
	if json.Unmarshal(data, &doc) != nil || len(doc.MCPServers) == 0 {
		return nil, nil
	}
	entries := map[string]json.RawMessage{}
	if json.Unmarshal(doc.MCPServers, &entries) != nil {
		return nil, nil
	}
	// The order: the object's keys as its tokens come.
	var names []string
	dec := json.NewDecoder(bytes.NewReader(doc.MCPServers))
	if _, err := dec.Token(); err != nil { // {
		return nil, nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, nil
		}
		if name, ok := key.(string); ok && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names, entries
}

// The keys Claude Code 2.1's schemas read in a server entry, by type:
// anything else there it drops without a word.
var claudeKeys = map[string][]string{
	"stdio": {"type", "command", "args", "env", "timeout", "alwaysLoad"},
	"http":  {"type", "url", "headers", "headersHelper", "oauth", "timeout", "tools", "alwaysLoad", "displayName"},
	"ws":    {"type", "url", "headers", "headersHelper", "timeout", "alwaysLoad"},
}

var claudeName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// lintClaude finds what Claude Code accepts in silence but is almost
// surely a generator's mistake: a name that claude mcp add would refuse,
// keys it ignores, a URL that is not absolute.
func lintClaude(names []string, entries map[string]json.RawMessage) []string {
	var findings []string
	for _, name := range names {
		if !claudeName.MatchString(name) {
			findings = append(findings, fmt.Sprintf("%s: a name outside [A-Za-z0-9_-], which claude mcp add refuses", name))
		}
		var e map[string]any
		if json.Unmarshal(entries[name], &e) != nil || e == nil {
			continue
		}
		typ, _ := e["type"].(string)
		if typ == "" {
			typ = "stdio"
		}
		kind := map[string]string{"stdio": "stdio", "http": "http", "streamable-http": "http", "sse": "http", "ws": "ws"}[typ]
		if kind == "" {
			continue
		}
		var extra []string
		for key := range e {
			if !slices.Contains(claudeKeys[kind], key) {
				extra = append(extra, key)
			}
		}
		if len(extra) > 0 {
			slices.Sort(extra)
			findings = append(findings, fmt.Sprintf("%s: keys Claude Code ignores for type %s: %s", name, typ, strings.Join(extra, ", ")))
		}
		if raw, ok := e["url"].(string); ok && kind != "stdio" && !strings.Contains(raw, "${") {
			u, err := url.Parse(raw)
			if err != nil || !slices.Contains([]string{"http", "https", "ws", "wss"}, u.Scheme) || u.Host == "" {
				findings = append(findings, fmt.Sprintf("%s: url %q is not an absolute http(s) or ws(s) URL", name, raw))
			}
		}
	}
	return findings
}

// A client runs a real client's commands in one directory and environment.
type client struct {
	dir   string
	env   []string
	netns bool // inside unshare -n, where that works
}

func (c client) offlineBy() string {
	if c.netns && len(unshare) > 0 {
		return strings.Join(unshare, " ")
	}
	return "no"
}

// command returns the command line args as a client process: in its own
// process group, so that what it leaves behind can be stopped, and
// offline if asked. loopback brings the namespace's lo up first, for the
// servers that listen on 127.0.0.1.
func (c client) command(loopback bool, args ...string) *exec.Cmd {
	if c.netns && len(unshare) > 0 {
		if loopback {
			args = append([]string{"sh", "-c", `ip link set lo up 2>/dev/null; exec "$@"`, "sh"}, args...)
		}
		args = append(slices.Clip(unshare), args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = c.dir
	cmd.Env = withEnv(c.env, nil, "PWD="+c.dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// clientResult is what a client command did.
type clientResult struct {
	stdout, stderr string
	err            error
}

// run runs a client command to its end, or kills its group after
// clientWait, and then stops whatever the command left in its group.
func (c client) run(loopback bool, args ...string) clientResult {
	cmd := c.command(loopback, args...)
	stdout, stderr := &capped{max: 1 << 20}, &capped{max: 1 << 20}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return clientResult{err: err}
	}
	timer := time.AfterFunc(clientWait, func() { killGroup(cmd) })
	err := cmd.Wait()
	if !timer.Stop() {
		err = fmt.Errorf("%v after %s", err, clientWait)
	}
	killGroup(cmd)
	return clientResult{stdout: stdout.String(), stderr: stderr.String(), err: err}
}

// killGroup stops the process group that cmd leads, if any is left.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// capped keeps the first max bytes written to it: a client's output,
// bounded whatever it prints.
type capped struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	max       int
	truncated bool
}

func (w *capped) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if room := w.max - w.buf.Len(); len(p) > room {
		w.buf.Write(p[:max(room, 0)])
		w.truncated = true
	} else {
		w.buf.Write(p)
	}
	return len(p), nil
}

func (w *capped) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.truncated {
		return w.buf.String() + "\n[output cut at " + strconv.Itoa(w.max) + " bytes]"
	}
	return w.buf.String()
}

// withEnv returns env without the variables drop and those set sets, then
// with set.
func withEnv(env, drop []string, set ...string) []string {
	for _, kv := range set {
		k, _, _ := strings.Cut(kv, "=")
		drop = append(drop, k)
	}
	var out []string
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); !slices.Contains(drop, k) {
			out = append(out, kv)
		}
	}
	return append(out, set...)
}

func mkdirs(dirs ...string) error {
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}
