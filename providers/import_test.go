package providers

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/manifest"
)

func server(name, command string, timeout time.Duration) *manifest.Server {
	return &manifest.Server{Name: name, Kind: manifest.KindCommand, Enabled: true, Command: lit(command), ToolTimeout: timeout}
}

func file(name string, servers ...*manifest.Server) *ImportedFile {
	f := &ImportedFile{File: name}
	for i, s := range servers {
		f.Add(&ImportedServer{Server: s, Line: i + 1})
	}
	return f
}

func names(servers []*ImportedServer) string {
	var out []string
	for _, s := range servers {
		out = append(out, s.Server.Name+"@"+s.Where())
	}
	return strings.Join(out, " ")
}

func TestCombine(t *testing.T) {
	tests := []struct {
		name    string
		files   []*ImportedFile
		rename  bool
		want    string // name@FILE:LINE, in order
		wantErr string
	}{
		{
			name:  "in file order",
			files: []*ImportedFile{file("a", server("z", "z", 0), server("y", "y", 0)), file("b", server("x", "x", 0))},
			want:  "z@a:1 y@a:2 x@b:1",
		},
		{
			name:  "the same server twice is one",
			files: []*ImportedFile{file("a", server("s", "run", time.Second)), file("b", server("t", "t", 0), server("s", "run", time.Second))},
			want:  "s@a:1 t@b:1",
		},
		{
			name:    "the same name, another server",
			files:   []*ImportedFile{file("a", server("s", "run", time.Second)), file("b", server("s", "other", 0))},
			wantErr: `server "s" is defined in a:1 and, differently (command, tool_timeout), in b:1: remove or rename one of them in its file, or pass --rename to import the second as s-2`,
		},
		{
			name:   "renamed past the names taken",
			files:  []*ImportedFile{file("a", server("s", "run", 0), server("s-2", "two", 0)), file("b", server("s", "other", 0)), file("c", server("s", "third", 0))},
			rename: true,
			want:   "s@a:1 s-2@a:2 s-3@b:1 s-4@c:1",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Combine(tc.files, CombineOptions{Rename: tc.rename})
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error:\ngot  %v\nwant %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g := names(got); g != tc.want {
				t.Errorf("got %s, want %s", g, tc.want)
			}
		})
	}
}

func TestCombineNotesWhereElse(t *testing.T) {
	a, b := file("a", server("s", "run", 0)), file("b", server("s", "run", 0))
	b.Servers[0].Managed = true
	got, err := Combine([]*ImportedFile{a, b}, CombineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || strings.Join(got[0].Also, ",") != "b:1" || !got[0].Managed {
		t.Errorf("got %+v, want one server, also in b:1, managed", got[0])
	}
}

// TestCombineTimeouts: the same server in the files of two providers, with
// different timeouts. A timeout that a provider has no per-server value of
// (Claude Code's startup timeout, Claude Desktop's tool timeout) is no
// difference: the other file's value is kept, and no provider's changes.
// Two values that would both reach their providers are: the manifest has
// one for every provider, so import stops, says so and which value would
// change, unless --merge-timeouts, which keeps the longer and notes whose
// value changes.
func TestCombineTimeouts(t *testing.T) {
	timed := func(startup, tool time.Duration) *manifest.Server {
		s := server("s", "run", tool)
		s.StartupTimeout = startup
		return s
	}
	of := func(provider, name string, s *manifest.Server) *ImportedFile {
		f := &ImportedFile{File: name, Provider: provider}
		f.Add(&ImportedServer{Server: s, Line: 1})
		return f
	}
	tests := []struct {
		name              string
		a, b              *ImportedFile
		merge             bool
		startup, tool     time.Duration // the server's, when combined
		wantNote, wantErr string
	}{
		{
			name:    "Claude Code has no startup timeout",
			a:       of("codex", "config.toml", timed(20*time.Second, 0)),
			b:       of("claude", ".mcp.json", timed(0, 0)),
			startup: 20 * time.Second,
		},
		{
			name:    "Claude Code has no startup timeout, in either order",
			a:       of("claude", ".mcp.json", timed(0, 0)),
			b:       of("codex", "config.toml", timed(20*time.Second, 0)),
			startup: 20 * time.Second,
		},
		{
			name: "Claude Desktop has no tool timeout",
			a:    of("claude-desktop", "claude_desktop_config.json", timed(0, 0)),
			b:    of("codex", "config.toml", timed(0, 90*time.Second)),
			tool: 90 * time.Second,
		},
		{
			name:    "two tool timeouts",
			a:       of("codex", "config.toml", timed(0, 90*time.Second)),
			b:       of("claude", ".mcp.json", timed(0, 45*time.Second)),
			wantErr: `server "s" is defined in config.toml:1 and, differently (tool_timeout: 1m30s and 45s), in .mcp.json:1: the manifest has one tool_timeout for every provider, so one of them would change: pass --merge-timeouts to keep the longer (Claude Code's tool_timeout goes from 45s to 1m30s), or --rename to import the second as s-2`,
		},
		{
			name:     "two tool timeouts, merged",
			a:        of("codex", "config.toml", timed(0, 90*time.Second)),
			b:        of("claude", ".mcp.json", timed(0, 45*time.Second)),
			merge:    true,
			tool:     90 * time.Second,
			wantNote: "tool_timeout: 1m30s in config.toml:1, 45s in .mcp.json:1; --merge-timeouts kept the longer: Claude Code's tool_timeout goes from 45s to 1m30s.",
		},
		{
			name:    "a tool timeout, and Claude Code's default",
			a:       of("claude", ".mcp.json", timed(0, 0)),
			b:       of("codex", "config.toml", timed(0, 90*time.Second)),
			wantErr: `server "s" is defined in .mcp.json:1 and, differently (tool_timeout: none and 1m30s), in config.toml:1: the manifest has one tool_timeout for every provider, so one of them would change: pass --merge-timeouts to keep the longer (Claude Code's tool_timeout goes from its default to 1m30s), or --rename to import the second as s-2`,
		},
		{
			name:     "two Codex files, merged",
			a:        of("codex", "a.toml", timed(30*time.Second, 0)),
			b:        of("codex", "b.toml", timed(20*time.Second, 0)),
			merge:    true,
			startup:  30 * time.Second,
			wantNote: "startup_timeout: 30s in a.toml:1, 20s in b.toml:1; --merge-timeouts kept the longer: Codex's startup_timeout goes from 20s to 30s.",
		},
		{
			name:    "a timeout and more: --merge-timeouts is not enough",
			a:       of("codex", "config.toml", timed(0, 90*time.Second)),
			b:       of("claude", ".mcp.json", server("s", "other", 45*time.Second)),
			merge:   true,
			wantErr: `server "s" is defined in config.toml:1 and, differently (command, tool_timeout), in .mcp.json:1: remove or rename one of them in its file, or pass --rename to import the second as s-2`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Combine([]*ImportedFile{tc.a, tc.b}, CombineOptions{MergeTimeouts: tc.merge})
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error:\ngot  %v\nwant %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 {
				t.Fatalf("got %s, want one server", names(got))
			}
			s := got[0].Server
			if s.StartupTimeout != tc.startup || s.ToolTimeout != tc.tool {
				t.Errorf("timeouts: got startup %v, tool %v; want %v, %v", s.StartupTimeout, s.ToolTimeout, tc.startup, tc.tool)
			}
			notes := strings.Join(got[0].Notes, "\n")
			if tc.wantNote != "" && !strings.Contains(notes, tc.wantNote) || tc.wantNote == "" && notes != "" {
				t.Errorf("notes:\ngot  %s\nwant %s", notes, tc.wantNote)
			}
		})
	}
}

// TestAddChecksTheManifestRules: a server the manifest would refuse is
// skipped, with the manifest's reason, never written.
func TestAddChecksTheManifestRules(t *testing.T) {
	f := &ImportedFile{File: "in"}
	f.Add(&ImportedServer{Server: server("my.server", "run", 0), Line: 3})
	f.Add(&ImportedServer{Server: server("workspace", "run", 0), Line: 4})
	bad := server("env", "run", 0)
	bad.Env = []manifest.Var{{Name: "1BAD", Value: lit("x")}}
	f.Add(&ImportedServer{Server: bad, Line: 5})
	f.Add(&ImportedServer{Server: &manifest.Server{Name: "web", Kind: manifest.KindRemote, Enabled: true, URL: lit("ftp://x")}, Line: 6})
	f.Add(&ImportedServer{Server: server("ok", "run", 0), Line: 7})
	if len(f.Servers) != 1 || f.Servers[0].Server.Name != "ok" {
		t.Errorf("servers: got %s, want ok@in:7", names(f.Servers))
	}
	want := []string{
		`my.server:3: mcpgen cannot hold it: server name "my.server" is not valid`,
		`workspace:4: mcpgen cannot hold it: the name is reserved by Claude Code`,
		`env:5: mcpgen cannot hold it: env.1BAD: "1BAD" is not a valid environment variable name`,
		`web:6: mcpgen cannot hold it: "url" must be an absolute http or https URL`,
	}
	if len(f.Skipped) != len(want) {
		t.Fatalf("skipped: got %+v, want %d", f.Skipped, len(want))
	}
	for i, w := range want {
		got := f.Skipped[i].Name + ":" + strconv.Itoa(f.Skipped[i].Line) + ": " + f.Skipped[i].Reason
		if !strings.HasPrefix(got, w) {
			t.Errorf("skipped %d:\ngot  %s\nwant %s...", i, got, w)
		}
	}
}
