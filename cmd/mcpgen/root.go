package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcpgen/mcpgen/internal/termtext"
	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/providers"
	"github.com/mcpgen/mcpgen/templates"
)

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1 // the command ran and found a problem: invalid manifest, out-of-date file
	exitUsage = 2 // the command line was wrong
)

// exitError carries an exit code with the error to print.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError marks a wrong command line: exit 2, and the usage is shown.
func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// silentFailure exits 1 without printing: the command already said why.
var silentFailure = &exitError{code: exitFail, err: errors.New("")}

// app holds what every command shares: the streams (injected, so tests read
// them) and the manifest flags.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	manifestPath string
	demo         bool
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	return a.execute(a.rootCommand(args), args)
}

// execute runs the command line args through root.
func (a *app) execute(root *cobra.Command, args []string) int {
	usageChecks(root)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(context.Background())
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if !errors.As(err, &ee) {
		ee = &exitError{code: exitFail, err: err}
	}
	if msg := ee.err.Error(); msg != "" {
		// An error may carry what a server, a tool or a manifest wrote:
		// its control characters must not reach the terminal.
		fmt.Fprintf(a.stderr, "mcpgen: %s\n", termtext.Text(msg))
	}
	if ee.code == exitUsage {
		// The help of the command whose usage was wrong.
		path := root.CommandPath()
		if cmd != nil {
			path = cmd.CommandPath()
		}
		fmt.Fprintf(a.stderr, "Run '%s --help' for usage.\n", path)
	}
	return ee.code
}

// usageChecks makes the checks that cobra does itself on a command line
// (the number of arguments, unknown commands, required flags, flags that
// exclude each other) usage errors, exit 2, like the flag errors: cobra
// returns them as plain errors, which would exit 1.
func usageChecks(c *cobra.Command) {
	switch {
	case c.Runnable():
		check := c.Args
		if check == nil {
			check = cobra.ArbitraryArgs
		}
		c.Args = func(cmd *cobra.Command, args []string) error {
			for _, err := range []error{check(cmd, args), cmd.ValidateRequiredFlags(), cmd.ValidateFlagGroups()} {
				if err != nil {
					return &exitError{code: exitUsage, err: err}
				}
			}
			return nil
		}
	case c.HasSubCommands():
		// A command that only holds commands (the root, tools) shows its
		// help; given an argument that names none of them, it says so.
		c.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			return unknownCommand(cmd, args[0])
		}
		c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	}
	for _, sub := range c.Commands() {
		usageChecks(sub)
	}
}

// unknownCommand is the usage error for a word that names no subcommand
// of cmd, with cobra's suggestions.
func unknownCommand(cmd *cobra.Command, word string) error {
	msg := fmt.Sprintf("unknown command %q for %q", word, cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's own default
	}
	if s := cmd.SuggestionsFor(word); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
	}
	return usageError("%s", msg)
}

// flagError makes a flag error a usage error. For a command that holds
// commands, a flag it does not know most likely belongs to the command
// that a word before it was meant to name (mcpgen stpo --workspace x): the
// news is that the word names no command, not that the flag is unknown.
func flagError(cmd *cobra.Command, err error) error {
	if cmd.HasAvailableSubCommands() {
		// What pflag took for arguments before it failed.
		if words := cmd.Flags().Args(); len(words) > 0 {
			return unknownCommand(cmd, words[0])
		}
	}
	return &exitError{code: exitUsage, err: err}
}

// A namedCommand is one of mcpgen's commands, built when needed.
type namedCommand struct {
	name  string // as the command line names it: the first word of its Use
	build func() *cobra.Command
}

// commands are mcpgen's commands, in the order that help lists them.
func (a *app) commands() []namedCommand {
	return []namedCommand{
		{"init", a.initCommand},
		{"validate", a.validateCommand},
		{"schema", a.schemaCommand},
		{"emit", a.emitCommand},
		{"serve", a.serveCommand},
		{"build", a.buildCommand},
		{"new", a.newCommand},
		{"launch", a.launchCommand},
		{"ps", a.psCommand},
		{"status", a.statusCommand},
		{"stop", a.stopCommand},
		{"restart", a.restartCommand},
		{"reload", a.reloadCommand},
		{"logs", a.logsCommand},
		{"connect", a.connectCommand},
		{"import", a.importCommand},
		{"agents", a.agentsCommand},
		{"tools", a.toolsCommand},
	}
}

// rootCommand is mcpgen with the commands that the command line args may
// run: the one they name, or, for help, completion and words that name no
// command, all of them. Every agent starts mcpgen serve or connect once
// per server, and building every command, with its flags and help, would
// cost each of those starts more than its own command does.
func (a *app) rootCommand(args []string) *cobra.Command {
	root := a.bareRoot()
	cmds := a.commands()
	name := commandName(root, args)
	if i := slices.IndexFunc(cmds, func(c namedCommand) bool { return c.name == name }); i >= 0 {
		root.AddCommand(cmds[i].build())
		// The completion command is not what args run either.
		root.CompletionOptions.DisableDefaultCmd = true
		return root
	}
	for _, c := range cmds {
		root.AddCommand(c.build())
	}
	return root
}

// commandName returns the word of args that names a command, or "" if
// there is none: the first that is not a flag, as cobra's Find reads them
// (stripFlags), with the root's flags: the word after a flag that takes a
// value is its value, as is the one after a flag root does not know; "--"
// ends the flags and the search. TestRootAsNeededSaysTheSame holds it to
// what cobra runs.
func commandName(root *cobra.Command, args []string) string {
	flags := root.PersistentFlags()
	takesValue := func(name string, short bool) bool {
		f := flags.Lookup(name)
		if short {
			f = flags.ShorthandLookup(name)
		}
		return f == nil || f.NoOptDefVal == ""
	}
	for len(args) > 0 {
		s := args[0]
		args = args[1:]
		switch {
		case s == "--":
			return ""
		case strings.HasPrefix(s, "--") && !strings.Contains(s, "=") && takesValue(s[2:], false),
			strings.HasPrefix(s, "-") && !strings.Contains(s, "=") && len(s) == 2 && takesValue(s[1:], true):
			args = args[min(1, len(args)):] // its value
		case s != "" && !strings.HasPrefix(s, "-"):
			return s
		}
	}
	return ""
}

// bareRoot is mcpgen's root command, its flags and help, without commands.
func (a *app) bareRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "mcpgen",
		Short: "One manifest for the MCP servers of Claude and Codex",
		Long: `mcpgen reads one manifest, mcpgen.toml, and from it:

  - builds standalone stdio MCP servers: built-in ones, ones declared in the
    manifest (each tool is a command), and your own, built from source;
  - emits their configs for Claude Code, Claude Desktop and Codex, merged
    into your files without losing your edits;
  - launches them for a workspace, supervised, reloaded when the manifest
    changes, and shared by every agent of the workspace.

Every command reads the nearest mcpgen.toml: in the current directory, or
in the nearest one above it that holds one, as git finds .git (--manifest
names another). Where there is none, they fail, except emit printing to
stdout, which shows the embedded demo manifest's servers and says so
(--demo uses the demo anywhere).`,
		Example: `  mcpgen init
  mcpgen emit --provider codex --workspace demo
  mcpgen emit --provider claude -o .mcp.json`,
		Version:       versionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(flagError)
	root.PersistentFlags().StringVarP(&a.manifestPath, "manifest", "m", "", "the manifest (default: the nearest mcpgen.toml, here or above); a relative path is looked for here, then above")
	root.PersistentFlags().BoolVar(&a.demo, "demo", false, "use the embedded demo manifest")
	root.MarkFlagsMutuallyExclusive("manifest", "demo")
	return root
}

// defaultManifest is the manifest commands read when --manifest is not given.
const defaultManifest = providers.DefaultManifest

// findManifest returns the manifest's path: --manifest, else mcpgen.toml,
// a relative one looked for in the current directory and then in each
// directory above it, as git looks for .git. Agents start the servers of a
// project's config (mcpgen serve, connect) in the project's directory or
// below it, and the config names the manifest relative to the project, so
// that it works in every clone. file is how messages name the manifest:
// as given, or relative to the current directory when it was found above.
func (a *app) findManifest() (path, file string, err error) {
	name := a.manifestPath
	if name == "" {
		name = defaultManifest
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", "", err
	}
	path, err = manifest.Find(wd, name, ceilings()...)
	var nf *manifest.NotFoundError
	switch {
	case errors.As(err, &nf) && a.manifestPath == "":
		return "", "", fmt.Errorf("%v: run `mcpgen init`, or pass --demo", err)
	case errors.As(err, &nf):
		return "", "", fmt.Errorf("%v: check the path, or run mcpgen init --manifest %s", err, name)
	case errors.Is(err, os.ErrNotExist):
		return "", "", fmt.Errorf("manifest %s does not exist: check the path, or run mcpgen init --manifest %s", name, name)
	case err != nil:
		return "", "", err
	}
	file = name
	if !filepath.IsAbs(name) && filepath.Dir(path) != filepath.Dir(filepath.Join(wd, name)) {
		if rel, err := filepath.Rel(wd, path); err == nil {
			file = rel
		}
	}
	return path, file, nil
}

// ceilings are the directories that the search for the manifest does not
// go up into: $MCPGEN_CEILING_DIRECTORIES, a list like $PATH, as git's
// GIT_CEILING_DIRECTORIES (for a slow network mount, or a test that must
// not find a stray manifest above it).
func ceilings() []string {
	return filepath.SplitList(os.Getenv("MCPGEN_CEILING_DIRECTORIES"))
}

// loadManifest reads the manifest that findManifest finds, or the embedded
// demo with --demo. Without one it fails: a command that runs or writes
// something must not do it for a demo the user did not ask for.
func (a *app) loadManifest() (*manifest.Manifest, error) {
	if a.demo {
		return a.loadDemo()
	}
	_, file, err := a.findManifest()
	if err != nil {
		return nil, err
	}
	// Messages name it as the user would: relative to here.
	m, err := manifest.Load(file)
	if err != nil {
		return nil, err
	}
	m.Searched = !filepath.IsAbs(a.manifestPath)
	return m, nil
}

// loadManifestOrDemo is loadManifest, but where there is no mcpgen.toml and
// no --manifest, it reads the embedded demo and says so on stderr: for
// emit printing to stdout, the README's first command, which writes
// nothing.
func (a *app) loadManifestOrDemo() (*manifest.Manifest, error) {
	if !a.demo && a.manifestPath == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		var nf *manifest.NotFoundError
		if _, err := manifest.Find(wd, defaultManifest, ceilings()...); errors.As(err, &nf) {
			fmt.Fprintf(a.stderr, "mcpgen: %v: showing the %s (mcpgen init writes a starter; commands that write or run fail without one)\n", err, templates.DemoName)
			return a.loadDemo()
		}
	}
	return a.loadManifest()
}

func (a *app) loadDemo() (*manifest.Manifest, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	return manifest.Parse(templates.Demo, templates.DemoName, wd)
}

// absPath returns path made absolute, for messages that must be unambiguous.
func absPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}
