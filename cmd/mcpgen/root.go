package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcpgen/mcpgen/manifest"
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
	root := a.rootCommand()
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
		fmt.Fprintf(stderr, "mcpgen: %s\n", msg)
	}
	if ee.code == exitUsage {
		// The help of the command whose usage was wrong.
		path := root.CommandPath()
		if cmd != nil {
			path = cmd.CommandPath()
		}
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", path)
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

func (a *app) rootCommand() *cobra.Command {
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

Without mcpgen.toml (and without --manifest), commands that can use the
embedded demo manifest, and say so.`,
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
	root.PersistentFlags().StringVarP(&a.manifestPath, "manifest", "m", "", "the manifest (default ./mcpgen.toml)")
	root.PersistentFlags().BoolVar(&a.demo, "demo", false, "use the embedded demo manifest")
	root.MarkFlagsMutuallyExclusive("manifest", "demo")
	root.AddCommand(
		a.initCommand(),
		a.validateCommand(),
		a.emitCommand(),
		a.serveCommand(),
		a.buildCommand(),
		a.newCommand(),
		a.launchCommand(),
		a.psCommand(),
		a.statusCommand(),
		a.stopCommand(),
		a.restartCommand(),
		a.reloadCommand(),
		a.logsCommand(),
		a.connectCommand(),
		a.importCommand(),
		a.toolsCommand(),
	)
	return root
}

// defaultManifest is the manifest commands read when --manifest is not given.
const defaultManifest = "mcpgen.toml"

// loadManifest reads --manifest, else ./mcpgen.toml, else, when the command
// can work on it, the embedded demo manifest, which it says on stderr.
func (a *app) loadManifest(demoOK bool) (*manifest.Manifest, error) {
	path := a.manifestPath
	if a.demo {
		return a.loadDemo()
	}
	if path == "" {
		path = defaultManifest
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			if demoOK {
				fmt.Fprintf(a.stderr, "mcpgen: no %s here: using the %s (mcpgen init writes a starter)\n", defaultManifest, templates.DemoName)
				return a.loadDemo()
			}
			return nil, fmt.Errorf("no %s in this directory: run mcpgen init, or pass --manifest PATH", defaultManifest)
		}
	}
	m, err := manifest.Load(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("manifest %s does not exist: check the path, or run mcpgen init --manifest %s", path, path)
	}
	return m, err
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
