package manifest

import (
	"errors"
	"strings"
	"testing"
)

// grepTool is the newcomer's tool: a pipeline written as one string.
const grepTool = "[servers.grep.tools.search]\nrun = \"grep -rn {pattern} . | head -20\"\nargs.pattern = { type = \"string\" }\n"

// TestShellSuggestion: a command line that needs a shell gets, as its fix,
// the positional form, where the argument never becomes part of the
// script; and no false "argument not used" beside it.
func TestShellSuggestion(t *testing.T) {
	_, err := Parse([]byte(grepTool), "m.toml", "/")
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("got %v, want Errors", err)
	}
	if len(errs) != 1 {
		t.Fatalf("got %d problems, want 1 (no \"not used\"):\n%v", len(errs), err)
	}
	want := `["sh", "-c", "grep -rn \"$1\" . | head -20", "sh", "{pattern}"]`
	if errs[0].Suggestion != want {
		t.Errorf("suggestion:\ngot  %s\nwant %s", errs[0].Suggestion, want)
	}
	if !strings.Contains(errs[0].Msg, want) {
		t.Errorf("the message does not give the fix: %s", errs[0].Msg)
	}

	// Applied, the fix is valid, without a warning.
	fixed := strings.Replace(grepTool, `"grep -rn {pattern} . | head -20"`, want, 1)
	m, err := Parse([]byte(fixed), "m.toml", "/")
	if err != nil {
		t.Fatalf("the suggestion applied: %v", err)
	}
	if len(m.Warnings) > 0 {
		t.Errorf("the suggestion applied warns: %v", m.Warnings)
	}
}

// TestShellSuggestionQuoting: the placeholder becomes a positional
// parameter in whatever quotes surround it, and each argument gets one.
func TestShellSuggestionQuoting(t *testing.T) {
	tests := []struct{ run, want string }{
		{`grep '{a}' x | wc -l`, `["sh", "-c", "grep ''\"$1\"'' x | wc -l", "sh", "{a}"]`},
		{`echo "x{a}y" {b} > out`, `["sh", "-c", "echo \"x$1y\" \"$2\" > out", "sh", "{a}", "{b}"]`},
		{`echo "{a}0" | cat`, `["sh", "-c", "echo \"$1\"\"0\" | cat", "sh", "{a}"]`},
		{`ls *.go`, `["sh", "-c", "ls *.go"]`},
		{`ls {n} | sort`, `["sh", "-c", "ls {n} | sort"]`}, // an integer cannot inject
	}
	for _, tt := range tests {
		in := "[servers.g.tools.s]\nrun = " + TOMLString(tt.run) + "\nargs.a = { type = \"string\", required = false }\nargs.b = { type = \"string\", required = false }\nargs.n = { type = \"integer\", required = false }\n"
		_, err := Parse([]byte(in), "m.toml", "/")
		var errs Errors
		if !errors.As(err, &errs) {
			t.Fatalf("%s: got %v", tt.run, err)
		}
		if errs[0].Suggestion != tt.want {
			t.Errorf("%s:\ngot  %s\nwant %s", tt.run, errs[0].Suggestion, tt.want)
		}
	}
}

// TestShellWarning: an argument substituted into code that an
// interpreter runs is a warning, whatever the interpreter; passed as an
// argument of its own, or not a free string, it is not.
func TestShellWarning(t *testing.T) {
	risky := []string{
		`["sh", "-c", "grep -rn {pattern} . | head -20"]`,
		`["bash", "-c", "echo {pattern}"]`,
		`["/bin/bash", "-lc", "echo {pattern}"]`,
		`["zsh", "-c", "echo {pattern}"]`,
		`["dash", "-e", "-c", "echo {pattern}"]`,
		`["sh", "-o", "pipefail", "-c", "echo {pattern}"]`,
		`["env", "LC_ALL=C", "sh", "-c", "echo {pattern}"]`,
		`["ssh", "host", "ls", "{pattern}"]`,
		`["cmd", "/c", "dir", "{pattern}"]`,
		`["cmd.exe", "/S", "/C", "dir {pattern}"]`,
		`["powershell", "-NoProfile", "-Command", "Get-Item {pattern}"]`,
		`["pwsh", "-c", "Get-Item '{pattern}'"]`,
		`["pwsh.exe", "-NoProfile", "-command", "Get-Item", "{pattern}"]`,
		`["python3", "-c", "print('{pattern}')"]`,
		`["python3.12", "-I", "-c", "print('{pattern}')"]`,
		`["node", "-e", "console.log('{pattern}')"]`,
		`["node", "--eval={pattern}"]`,
		`["perl", "-ne", "print if /{pattern}/", "file"]`,
		`["ruby", "-e", "puts '{pattern}'"]`,
		`["php", "-r", "echo '{pattern}';"]`,
		`["awk", "/{pattern}/ {{print}}", "file"]`,
		`["sed", "-n", "s/{pattern}/x/p", "file"]`,
		`["su", "-c", "ls {pattern}"]`,
		`["watch", "-n", "1", "ls", "{pattern}"]`,
		`["find", ".", "-exec", "sh", "-c", "grep {pattern} \"$1\"", "sh", "{}", ";"]`,
	}
	for _, run := range risky {
		in := "[servers.g.tools.s]\nrun = " + run + "\nargs.pattern = { type = \"string\" }\n"
		m, err := Parse([]byte(in), "m.toml", "/")
		if err != nil {
			t.Errorf("%s: %v", run, err)
			continue
		}
		if len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0].Msg, `argument "pattern" is substituted into the code that`) {
			t.Errorf("%s: got warnings %v, want one about the code", run, m.Warnings)
		}
	}

	safe := []string{
		`["sh", "-c", "grep -rn \"$1\" . | head -20", "sh", "{pattern}"]`,
		`["bash", "script.sh", "{pattern}"]`,
		`["python3", "tool.py", "-c", "{pattern}"]`,
		`["python3", "-c", "import sys; print(sys.argv[1])", "{pattern}"]`,
		`["node", "-e", "console.log(process.argv[1])", "{pattern}"]`,
		`["grep", "-rn", "-e", "{pattern}", "."]`,
		`["awk", "-v", "p={pattern}", "$0 ~ p", "file"]`,
		`["sed", "-f", "script.sed", "{pattern}"]`,
		`["ssh", "{pattern}", "uptime"]`,
		`["pwsh", "-File", "x.ps1", "{pattern}"]`,
	}
	for _, run := range safe {
		in := "[servers.g.tools.s]\nrun = " + run + "\nargs.pattern = { type = \"string\" }\n"
		m, err := Parse([]byte(in), "m.toml", "/")
		if err != nil {
			t.Errorf("%s: %v", run, err)
			continue
		}
		if len(m.Warnings) != 0 {
			t.Errorf("%s: got warnings %v, want none", run, m.Warnings)
		}
	}

	// Not a free string: an integer, an enum; or declared as code.
	for _, arg := range []string{
		`{ type = "integer" }`,
		`{ type = "string", enum = ["a", "b"] }`,
		`{ type = "string", allow_shell = true }`,
	} {
		in := "[servers.g.tools.s]\nrun = [\"sh\", \"-c\", \"echo {pattern}\"]\nargs.pattern = " + arg + "\n"
		m, err := Parse([]byte(in), "m.toml", "/")
		if err != nil {
			t.Errorf("%s: %v", arg, err)
		} else if len(m.Warnings) != 0 {
			t.Errorf("%s: got warnings %v, want none", arg, m.Warnings)
		}
	}
}

// TestShellWarningText: the warning says where, what, and the fix.
func TestShellWarningText(t *testing.T) {
	in := "[servers.grep.tools.search]\nrun = [\"sh\", \"-c\", \"grep -rn {pattern} . | head -20\"]\nargs.pattern = { type = \"string\" }\n"
	m, err := Parse([]byte(in), "m.toml", "/")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Warnings) != 1 {
		t.Fatalf("got %v, want one warning", m.Warnings)
	}
	w := m.Warnings[0]
	want := `m.toml:2:20: warning: server "grep": tool "search": argument "pattern" is substituted into the code that "sh -c" runs, so the model can make it run any command: pass it as an argument of its own, write ["sh", "-c", "grep -rn \"$1\" . | head -20", "sh", "{pattern}"] (or, if it must be code, set allow_shell = true on "pattern")`
	if w.Error() != want {
		t.Errorf("got  %s\nwant %s", w.Error(), want)
	}
	if w.Suggestion != `["sh", "-c", "grep -rn \"$1\" . | head -20", "sh", "{pattern}"]` {
		t.Errorf("suggestion: got %s", w.Suggestion)
	}
	// allow_shell is for string arguments.
	_, err = Parse([]byte("[servers.g.tools.s]\nrun = [\"echo\", \"{n}\"]\nargs.n = { type = \"integer\", allow_shell = true }\n"), "m.toml", "/")
	if err == nil || !strings.Contains(err.Error(), `"allow_shell" applies to string arguments; "n" is an integer`) {
		t.Errorf("allow_shell on an integer: got %v", err)
	}
}
