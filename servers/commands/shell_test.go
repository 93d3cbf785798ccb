package commands

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/manifest"
)

// pwned is a pattern that, substituted into a shell script, ends the
// grep and runs touch: the model chooses tool arguments.
const pwned = `x' . ; touch PWNED; echo '`

// TestShellRefused: a server whose tool substitutes an argument into the
// script of sh -c does not start, and says where and what to write; with
// allow_shell = true on the argument, it does.
func TestShellRefused(t *testing.T) {
	text := "[servers.t.tools.search]\nrun = [\"sh\", \"-c\", \"grep -rn '{pattern}' . | head -20\"]\nargs.pattern = { type = \"string\" }\n"
	m, s := load(t, text)
	_, err := New(m, s, Options{Dir: t.TempDir(), Env: os.Environ(), Containment: containment(t)})
	var errs manifest.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("got %v, want the manifest's errors", err)
	}
	want := `m.toml:2:20: server "t": tool "search": argument "pattern" is substituted into the code that "sh -c" runs, so the model can make it run any command, and mcpgen serve refuses to run such a tool: pass it as an argument of its own, write ["sh", "-c", "grep -rn ''\"$1\"'' . | head -20", "sh", "{pattern}"] (or, if it must be code, set allow_shell = true on "pattern")`
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}

	m, s = load(t, strings.Replace(text, `{ type = "string" }`, `{ type = "string", allow_shell = true }`, 1))
	if _, err := New(m, s, Options{Dir: t.TempDir(), Env: os.Environ(), Containment: containment(t)}); err != nil {
		t.Errorf("allow_shell = true: %v", err)
	}
}

// TestShellSuggestionRuns: the fix that validate suggests for a command
// line with a pipe, applied as it is, searches for the hostile pattern
// instead of running it: no PWNED file appears, and grep reports the line
// that holds the pattern.
func TestShellSuggestionRuns(t *testing.T) {
	_, err := manifest.Parse([]byte("[servers.t.tools.search]\nrun = \"grep -rn {pattern} . | head -20\"\nargs.pattern = { type = \"string\" }\n"), "m.toml", "/")
	var errs manifest.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("got %v, want the manifest's errors", err)
	}
	fix := ""
	for _, e := range errs {
		if e.Path == "servers.t.tools.search.run" {
			fix = e.Suggestion
		}
	}
	if fix == "" {
		t.Fatalf("got %v, want a suggestion for run", err)
	}
	m, s := load(t, "[servers.t.tools.search]\nrun = "+fix+"\nargs.pattern = { type = \"string\" }\n")
	if len(m.Warnings) > 0 {
		t.Errorf("the fix warns: %v", m.Warnings)
	}

	dir := t.TempDir()
	srv, err := New(m, s, Options{Dir: dir, Env: os.Environ(), Version: "test", Containment: containment(t)})
	if err != nil {
		t.Fatalf("the fix %s is refused: %v", fix, err)
	}
	c := connect(t, srv)
	// One pattern breaks out of quotes around the placeholder, the other
	// stands where it is bare.
	for _, pattern := range []string{pwned, "x . ; touch PWNED; echo"} {
		if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("a line with "+pattern+" in it\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		args, _ := json.Marshal(map[string]string{"pattern": pattern})
		res, err := c.CallTool(context.Background(), "search", json.RawMessage(args))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
			t.Fatalf("run = %s ran the pattern %q: PWNED was created", fix, pattern)
		}
		if res.IsError || len(res.Content) != 1 || !strings.Contains(res.Content[0].Text, "notes.txt:1:a line with") {
			t.Errorf("%q: got isError=%v %q, want the line that holds the pattern", pattern, res.IsError, res.Content)
		}
	}
}

// TestShellInjectionRuns shows what the other tests guard against: with
// allow_shell = true, the same pattern substituted into the script runs
// touch. If it did not, TestShellSuggestionRuns could not tell.
func TestShellInjectionRuns(t *testing.T) {
	m, s := load(t, "[servers.t.tools.search]\nrun = [\"sh\", \"-c\", \"grep -rn '{pattern}' . | head -20\"]\nargs.pattern = { type = \"string\", allow_shell = true }\n")
	dir := t.TempDir()
	srv, err := New(m, s, Options{Dir: dir, Env: os.Environ(), Version: "test", Containment: containment(t)})
	if err != nil {
		t.Fatal(err)
	}
	c := connect(t, srv)
	args, _ := json.Marshal(map[string]string{"pattern": pwned})
	if _, err := c.CallTool(context.Background(), "search", json.RawMessage(args)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "PWNED")); err != nil {
		t.Errorf("the script did not run the pattern: %v", err)
	}
}
