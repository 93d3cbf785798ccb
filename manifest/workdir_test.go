package manifest

import (
	"testing"
)

// TestWorkspaceDirDefault: without workspace.dir, WORKSPACE_DIR is the
// directory of a manifest that was looked for, wherever mcpgen runs (an
// agent started in sub/dir of the project), and where mcpgen runs for a
// manifest named by its absolute path (a user config's, which serves every
// project); dir = "${PWD}" is where mcpgen runs; --dir wins over both.
// emit --workspace writes the same, for the manifest as emit found it.
func TestWorkspaceDirDefault(t *testing.T) {
	env := func(string) (string, bool) { return "/stale/pwd", true } // $PWD of a parent that moved
	tests := []struct {
		name, manifest string
		opts           ContextOptions
		want           string
		named          bool // by its absolute path, not looked for
	}{
		{"no dir", "version = 1\n", ContextOptions{Cwd: "/proj/sub/dir"}, "/proj", false},
		{"no dir, named", "version = 1\n", ContextOptions{Cwd: "/proj/sub/dir"}, "/proj/sub/dir", true},
		{"dir = \"${PWD}\"", "[workspace]\ndir = \"${PWD}\"\n", ContextOptions{Cwd: "/proj/sub/dir"}, "/proj/sub/dir", false},
		{"dir below ${PWD}", "[workspace]\ndir = \"${PWD}/ws\"\n", ContextOptions{Cwd: "/proj/sub"}, "/proj/sub/ws", false},
		{"--dir", "version = 1\n", ContextOptions{Dir: "/elsewhere", Cwd: "/proj/sub/dir"}, "/elsewhere", false},
		{"--dir over ${PWD}", "[workspace]\ndir = \"${PWD}\"\n", ContextOptions{Dir: "rel", Cwd: "/proj/sub"}, "/proj/sub/rel", false},
		{"relative dir", "[workspace]\ndir = \"ws\"\n", ContextOptions{Cwd: "/proj/sub/dir"}, "/proj/ws", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse([]byte(tt.manifest), "/proj/mcpgen.toml", "/proj")
			if err != nil {
				t.Fatal(err)
			}
			m.Searched = !tt.named
			tt.opts.Getenv = env
			c, err := m.Context(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if c.WorkspaceDir != tt.want {
				t.Errorf("Context: got %s, want %s", c.WorkspaceDir, tt.want)
			}
			// emit --workspace writes the same, but for what it leaves to
			// serve (${PWD} is where serve runs).
			tt.opts.WorkspaceID = "ws"
			ct, err := m.ContextTemplate(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			dir, _ := ct.Lookup(VarWorkspaceDir)
			if s, ok := dir.Literal(); ok && s != tt.want {
				t.Errorf("ContextTemplate: got %s, want %s", s, tt.want)
			}
		})
	}
}

// TestNamesDirPWD: dir = "${PWD}" is where the agent started, which the
// manifest did not choose: the files server still refuses / and ~ there.
func TestNamesDirPWD(t *testing.T) {
	m, err := Parse([]byte("[workspace]\ndir = \"${PWD}\"\n"), "/proj/mcpgen.toml", "/proj")
	if err != nil {
		t.Fatal(err)
	}
	if m.NamesDir(ContextOptions{Cwd: "/"}, "/") {
		t.Error(`dir = "${PWD}" names the directory the agent started in`)
	}
}
