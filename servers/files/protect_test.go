package files

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// protectFixture is a workspace with a git directory, a symlink to its
// config and one to the directory, and a second git directory reached
// through a .git symlink (as "git worktree" and some tools lay them out).
func protectFixture(t *testing.T, protect []string) (*workspace, string) {
	t.Helper()
	w := workspaceWith(t, map[string]string{
		".git/config":      "[core]\n",
		".git/HEAD":        "ref: refs/heads/main\n",
		"src/main.go":      "package main\n",
		"nested/real/conf": "[core]\n",
		"secrets/a.env":    "KEY=1\n",
		"Makefile":         "all:\n",
	})
	for name, target := range map[string]string{
		"cfg":         ".git/config",
		"g":           ".git",
		"nested/.git": "real",
	} {
		if err := os.Symlink(target, filepath.Join(w.dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if protect != nil {
		w.protect = protect
	}
	return w, w.dir
}

// TestProtect is the .git attack: a writable files server must not write
// .git/config (core.fsmonitor, aliases: a declared git tool would run what
// is planted there) by any spelling of the path, while reads still work.
func TestProtect(t *testing.T) {
	const refused = "is protected"
	tests := []struct {
		name    string
		protect []string // nil: the default
		path    string
		want    string // in the error; "" when the write must succeed
	}{
		{"config", nil, ".git/config", `path ".git/config" is protected: ".git/**" in the files server's protect list keeps the writing tools out of it (reading it still works); the manifest's author can change "protect" if this file must be written`},
		{"the directory itself", nil, ".git", refused},
		{"new hook", nil, ".git/hooks/pre-commit", refused},
		{"dot slash", nil, "./.git/config", `path "./.git/config" (".git/config" in the workspace) is protected`},
		{"climb", nil, "src/../.git/config", refused},
		{"absolute", nil, "/WS/.git/config", refused},
		{"quoted", nil, `".git/config"`, refused},
		{"symlink to the file", nil, "cfg", `path "cfg" (".git/config" in the workspace) is protected`},
		{"symlinked directory", nil, "g/config", refused},
		{"upper case", nil, ".GIT/config", refused},
		{"mixed case", nil, ".Git/HEAD", refused},
		{"git dir behind a .git symlink, by its own name", []string{"nested/.git/**"}, "nested/real/conf", `"nested/.git/**" in the files server's protect list`},
		{"nested repository", nil, "vendor/lib/.git/config", `"**/.git/**" in the files server's protect list`},
		{"submodule's .git file", nil, "sub/.git", refused},
		{"a name that starts like it", nil, ".github/workflows/ci.yml", ""},
		{"a name that ends like it", nil, "a.git/config", ""},
		{"a file beside it", nil, "src/main.go", ""},
		{"nothing protected", []string{}, ".git/config", ""},
		{"custom glob", []string{"secrets/*.env", "Makefile"}, "secrets/a.env", `"secrets/*.env" in the files server's protect list`},
		{"custom glob, deeper", []string{"secrets/*.env"}, "secrets/sub/b.env", ""},
		{"custom glob into a hidden directory", []string{"**/*.pem"}, ".ssh/id.pem", `"**/*.pem" in the files server's protect list`},
		{"custom literal, other case", []string{"Makefile"}, "makefile", `"Makefile" in the files server's protect list`},
		{"custom list leaves .git", []string{"Makefile"}, ".git/config", ""},
	}
	writes := map[string]func(w *workspace, name string) error{
		"write": func(w *workspace, name string) error {
			_, err := w.write(context.Background(), name, []byte("[core]\n\tfsmonitor = touch /tmp/pwned\n"))
			return err
		},
		"edit": func(w *workspace, name string) error {
			_, err := w.edit(context.Background(), name, "[core]\n", "[core]\n\tfsmonitor = touch /tmp/pwned\n", false)
			return err
		},
	}
	for _, tt := range tests {
		for op, write := range writes {
			t.Run(tt.name+"/"+op, func(t *testing.T) {
				w, dir := protectFixture(t, tt.protect)
				p := strings.ReplaceAll(tt.path, "/WS", dir)
				before := snapshot(t, dir)
				err := write(w, p)
				if tt.want == "" {
					// Edits of files that hold no "[core]" fail for that
					// reason, which is not protection.
					if err != nil && strings.Contains(err.Error(), refused) {
						t.Errorf("%s %s: %v, want it allowed", op, p, err)
					}
					return
				}
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("%s %s: got %v, want an error with %q", op, p, err, tt.want)
				}
				if diff := diffSnapshots(before, snapshot(t, dir)); len(diff) > 0 {
					t.Errorf("%s %s changed the tree: %v", op, p, diff)
				}
			})
		}
	}
}

// TestProtectReads checks that protection is about writes only.
func TestProtectReads(t *testing.T) {
	w, _ := protectFixture(t, nil)
	if win, err := w.read(t.Context(), ".git/config", 1, 10); err != nil || string(win.text) != "[core]\n" {
		t.Errorf("read .git/config = %v, %v; want its content", win, err)
	}
	if in, err := w.info(".git/config"); err != nil || in.path != ".git/config" {
		t.Errorf("info .git/config = %v, %v", in, err)
	}
	if l, err := w.list(t.Context(), ".git"); err != nil || l.total != 2 {
		t.Errorf("list .git = %v, %v; want its 2 entries", l, err)
	}
}

// TestProtectServer checks protection through the protocol: the refusal is
// an isError result, the instructions tell the model, and New refuses a
// malformed pattern.
func TestProtectServer(t *testing.T) {
	w, dir := protectFixture(t, nil)
	c := connect(t, Options{Root: w.dir})
	res, err := c.CallTool(t.Context(), "write_file", map[string]any{"path": ".git/config", "content": "x"})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), `path ".git/config" is protected`) {
		t.Errorf("write_file .git/config = %+v, %v; want an isError result saying it is protected", res, err)
	}
	if got, want := instructions(dir, false, []string{".git/**"}), `Paths matching ".git/**" are protected: they can be read but not written.`; !strings.Contains(got, want) {
		t.Errorf("instructions = %q, want them to contain %q", got, want)
	}
	if _, err := New(Options{Root: dir, Protect: []string{"[a-"}}); err == nil || !strings.Contains(err.Error(), `files: protect pattern "[a-": malformed`) {
		t.Errorf("New with a malformed pattern: got %v", err)
	}
}
