package main

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// notRun are the mcpgen commands of the README and docs/ that
// testdata/script/readme.txtar does not run, and why. Each is still
// checked against mcpgen's commands and flags.
var notRun = map[string]string{
	"mcpgen tools ls --url http://127.0.0.1:3001/mcp":                                                                                         "a server at a fixed port: tools_test.go runs tools ls --url against a local one",
	"mcpgen tools call --url http://127.0.0.1:3001/mcp echo message=hi":                                                                       "a server at a fixed port: tools_test.go runs tools call --url against a local one",
	"mcpgen tools ls --url http://127.0.0.1:3001/mcp --protocol 2025-11-25":                                                                   "a server at a fixed port: tools_test.go runs --protocol against local ones of both eras",
	`mcpgen tools call --url https://mcp.example.com/mcp search --args '{"tags":["a"]}' --bearer-token-env DOCS_TOKEN --header X-Tenant=acme`: "a server on the internet: tools_test.go runs --bearer-token-env and --header against a local one",
	"mcpgen launch --workspace ws-42 --listen 127.0.0.1:8080":                                                                                 "a launcher on a fixed port, beside the script's own for ws-42: launch_errors.txtar runs --listen and --no-auth",
}

// TestReadme: every mcpgen command that the README and docs/ show is one
// that mcpgen takes (its command, flags and number of arguments), and
// testdata/script/readme.txtar runs it, but for those in notRun. A README
// command that fails as written (a flag renamed, a tool name that changed)
// then fails a test.
func TestReadme(t *testing.T) {
	script, err := os.ReadFile(filepath.Join("testdata", "script", "readme.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	run := strings.Join(strings.Fields(string(script)), " ")
	cmds := docCommands(t)
	if len(cmds) < 40 {
		t.Fatalf("found %d mcpgen commands in the README and docs/, want at least 40: is the extraction broken?", len(cmds))
	}
	seen := map[string]bool{}
	for _, c := range cmds {
		args, err := shellWords(strings.TrimPrefix(c.line, "mcpgen "))
		if err != nil {
			t.Errorf("%s: %q: %v", c.where, c.line, err)
			continue
		}
		if err := takes(args); err != nil {
			t.Errorf("%s: %q: mcpgen does not take it: %v", c.where, c.line, err)
		}
		if _, ok := notRun[c.line]; ok {
			seen[c.line] = true
			continue
		}
		if !strings.Contains(run, c.line) {
			t.Errorf("%s: %q is not run by testdata/script/readme.txtar: run it there, or say in notRun why not", c.where, c.line)
		}
	}
	for line := range notRun {
		if !seen[line] {
			t.Errorf("notRun names %q, which the README and docs/ no longer show: remove it", line)
		}
	}
}

// A docCommand is an mcpgen command line of the docs, as a user would
// type it: comments and redirections removed, spaces collapsed.
type docCommand struct {
	where string // file:line
	line  string
}

var (
	shBlock = regexp.MustCompile("(?s)```sh\n(.*?)```")
	comment = regexp.MustCompile(`\s+#\s.*$`)
	// > FILE, 2>&1 and the like end a command as mcpgen sees it.
	redirect = regexp.MustCompile(`\s+\d?>.*$`)
)

func docCommands(t *testing.T) []docCommand {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join("..", "..", "README.md")}, files...)
	var cmds []docCommand
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		for _, m := range shBlock.FindAllStringSubmatchIndex(text, -1) {
			block := text[m[2]:m[3]]
			first := strings.Count(text[:m[2]], "\n") + 1
			lines := strings.Split(strings.ReplaceAll(block, "\\\n", "  \x00"), "\n")
			n := first
			for _, l := range lines {
				at := n
				n += 1 + strings.Count(l, "\x00")
				l = strings.ReplaceAll(l, "\x00", "")
				l = strings.TrimPrefix(strings.TrimSpace(l), "go run ./cmd/")
				if !strings.HasPrefix(l, "mcpgen ") && l != "mcpgen" {
					continue
				}
				l = redirect.ReplaceAllString(comment.ReplaceAllString(l, ""), "")
				cmds = append(cmds, docCommand{where: filepath.Base(f) + ":" + strconv.Itoa(at), line: strings.Join(strings.Fields(l), " ")})
			}
		}
	}
	return cmds
}

// takes parses args as mcpgen would, without running anything: the
// command must exist, and its flags and number of arguments be right.
func takes(args []string) error {
	a := &app{}
	root := a.rootCommand(nil)
	usageChecks(root)
	root.InitDefaultVersionFlag() // as Execute does
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	cmd.InitDefaultHelpFlag()
	if err := cmd.ParseFlags(rest); err != nil {
		return err
	}
	if cmd.Args != nil {
		return cmd.Args(cmd, cmd.Flags().Args())
	}
	return nil
}

// shellWords splits a command line as sh would, for what the docs write:
// words, single and double quotes, and $VAR or ~ left as they are.
func shellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	in, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case unicode.IsSpace(r):
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, errors.New("an unterminated quote")
	}
	if in {
		words = append(words, w.String())
	}
	return words, nil
}
