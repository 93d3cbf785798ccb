package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/providers"
	"github.com/mcpgen/mcpgen/providers/claude"
	"github.com/mcpgen/mcpgen/providers/codex"
)

type emitOptions struct {
	provider             string
	workspace, dir, user string
	output               string
	write                bool
	scope                string
	check, diff, force   bool
	mcpgenPath           string
	launcher             bool
}

var providerNames = []string{codex.Name, claude.Code, claude.Desktop}

func (a *app) emitCommand() *cobra.Command {
	var o emitOptions
	cmd := &cobra.Command{
		Use:   "emit --provider codex|claude|claude-desktop",
		Short: "Write the MCP server config of Codex, Claude Code or Claude Desktop",
		Long: `Emit renders the manifest's servers for one provider: Codex's
[mcp_servers.NAME] tables, or the mcpServers entries of Claude Code and
Claude Desktop.

By default it prints them. With -o FILE or --write it merges them into the
file: only the entries mcpgen wrote are replaced, servers that left the
manifest are removed, everything else in the file is kept (in TOML, byte
for byte, comments and Codex's own approval tables included). The write is
atomic, the replaced content is kept in FILE.bak, and nothing is written
when nothing changed. An entry written by hand under a manifest server's
name, and a file whose mode makes it read-only, are errors unless --force.

Without --workspace the output is portable: WORKSPACE_ID, WORKSPACE_DIR and
USER_ID are left for the agent's environment to provide. With --workspace
ID they are written literally, except what comes from mcpgen's
environment: emit never writes a value it reads there, into a file or
into the arguments of an entry. A context variable whose value would come
from it (USER_ID from $USER by default, workspace.user = "${GITHUB_TOKEN}",
a [workspace.vars] value "${OPENAI_API_KEY}") stays a reference that the
agent resolves, or goes through mcpgen serve or connect, which resolve it
when the server starts; --dir and --user write theirs. Other ${VAR}s are
secrets: they stay references in every mode.

With --launcher, stdio servers run as mcpgen connect NAME: every agent of
the workspace shares the processes of its launcher (mcpgen launch), which
connect starts when none runs. The workspace is --workspace, or the
agent's MCPGEN_WORKSPACE.

--write targets:
  codex           $CODEX_HOME/config.toml (default ~/.codex/config.toml);
                  --scope project: ./.codex/config.toml
  claude          ./.mcp.json; --scope user: ~/.claude.json
  claude-desktop  Claude Desktop's claude_desktop_config.json`,
		Example: `  mcpgen emit --provider codex
  mcpgen emit --provider codex --workspace ws-42 --write
  mcpgen emit --provider codex --launcher            # agents share the launcher's servers
  mcpgen emit --provider claude -o .mcp.json
  mcpgen emit --provider claude --write --check      # in CI: exit 1 when .mcp.json is out of date
  mcpgen emit --provider claude-desktop --workspace ws-42 --write --diff`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.emit(o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.provider, "provider", "p", "", "codex, claude or claude-desktop (required)")
	f.StringVarP(&o.workspace, "workspace", "w", "", "write the context of workspace `ID` literally")
	f.StringVar(&o.dir, "dir", "", "WORKSPACE_DIR (default: the manifest's workspace.dir, else the current directory)")
	f.StringVar(&o.user, "user", "", "USER_ID (default: the manifest's workspace.user, else $USER)")
	f.StringVarP(&o.output, "output", "o", "", "merge into `FILE` instead of printing")
	f.BoolVar(&o.write, "write", false, "merge into the provider's own config file")
	f.StringVar(&o.scope, "scope", "", "with --write: user or project (default: user for codex, project for claude)")
	f.BoolVar(&o.check, "check", false, "write nothing; exit 1 with a diff when the file is out of date")
	f.BoolVar(&o.diff, "diff", false, "write nothing; show what would change")
	f.BoolVar(&o.force, "force", false, "replace entries written or edited by hand, and a read-only file (the old file is kept in FILE.bak)")
	f.StringVar(&o.mcpgenPath, "mcpgen-path", "", "the mcpgen binary that entries run (default: this one)")
	f.BoolVar(&o.launcher, "launcher", false, "stdio servers go through mcpgen connect: every agent of the workspace shares the launcher's processes")
	_ = cmd.MarkFlagRequired("provider")
	_ = cmd.RegisterFlagCompletionFunc("provider", cobra.FixedCompletions(providerNames, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("scope", cobra.FixedCompletions([]string{"user", "project"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.MarkFlagsMutuallyExclusive("output", "write")
	cmd.MarkFlagsMutuallyExclusive("check", "diff")
	return cmd
}

func (a *app) emit(o emitOptions) error {
	if err := o.checkFlags(); err != nil {
		return err
	}
	m, err := a.loadManifest(true)
	if err != nil {
		return err
	}
	po := providers.Options{Mcpgen: a.mcpgenPath(o.mcpgenPath), Launcher: o.launcher}
	// The context as templates, not values: no value of mcpgen's
	// environment is read, so none can be written (only the flags and the
	// manifest's own text are).
	po.Context, err = m.ContextTemplate(manifest.ContextOptions{WorkspaceID: o.workspace, Dir: o.dir, User: o.user})
	if err != nil {
		return err
	}
	a.noteFromEnv(po.Context)

	target, private, err := o.target()
	if err != nil {
		return err
	}
	var old []byte
	if target != "" {
		target, err = resolveLinks(target)
		if err != nil {
			return err
		}
		old, err = os.ReadFile(target)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	out, n, err := a.render(m, o, po, old)
	if err != nil {
		if target != "" {
			return inFile(target, err)
		}
		return err
	}

	switch {
	case target == "":
		_, err := a.stdout.Write(out)
		return err
	case o.diff:
		_, err := a.stdout.Write(unifiedDiff(target, old, out))
		return err
	case o.check:
		if bytes.Equal(old, out) {
			fmt.Fprintf(a.stderr, "%s is up to date\n", target)
			return nil
		}
		a.stdout.Write(unifiedDiff(target, old, out))
		return &exitError{code: exitFail, err: fmt.Errorf("%s is out of date: run the same mcpgen emit without --check to update it", target)}
	case bytes.Equal(old, out):
		fmt.Fprintf(a.stderr, "%s is up to date (%d server%s)\n", target, n, plural(n))
		return nil
	}
	if !o.force {
		if err := checkWritable(target); err != nil {
			return err
		}
	}
	mode := os.FileMode(0o644)
	if private {
		mode = 0o600
	}
	if bytes.HasPrefix(old, providers.UTF8BOM) && !bytes.HasPrefix(out, providers.UTF8BOM) {
		fmt.Fprintf(a.stderr, "mcpgen: %s started with a UTF-8 byte order mark, which JSON readers may refuse: it is written without one\n", target)
	}
	backup, err := writeFile(target, out, mode)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "wrote %d server%s to %s", n, plural(n), target)
	if backup != "" {
		fmt.Fprintf(a.stderr, " (previous content in %s)", backup)
	}
	fmt.Fprintln(a.stderr)
	if o.provider == codex.Name && o.scope == "project" {
		// Codex keys projects by absolute path.
		userConfig := "~/.codex/config.toml"
		if dir := os.Getenv("CODEX_HOME"); dir != "" {
			userConfig = filepath.Join(dir, "config.toml")
		}
		fmt.Fprintf(a.stderr, "note: Codex reads %s only in a trusted project: add [projects.%q] trust_level = \"trusted\" to %s\n", target, absPath(filepath.Dir(filepath.Dir(target))), userConfig)
	}
	return nil
}

// noteFromEnv says which context variables emit --workspace leaves as
// references because they come from the environment, and which flag
// writes them.
func (a *app) noteFromEnv(c *manifest.ContextTemplate) {
	vars := c.FromEnv()
	if len(vars) == 0 {
		return
	}
	var names, flags []string
	for _, v := range vars {
		names = append(names, fmt.Sprintf("%s (%s)", v.Name, v.Value))
		if f := manifest.Flag(v.Name); f != "" {
			flags = append(flags, fmt.Sprintf("%s to write %s", f, v.Name))
		}
	}
	fmt.Fprintf(a.stderr, "mcpgen: from the environment, so not written: %s; the agent, or mcpgen serve or connect, resolves them when a server starts", strings.Join(names, ", "))
	if len(flags) > 0 {
		fmt.Fprintf(a.stderr, " (pass %s)", strings.Join(flags, ", "))
	}
	fmt.Fprintln(a.stderr)
}

// inFile puts the file that a merge error is about in front of it, as
// FILE:LINE:COL: when the error starts with a position in the file (the
// form editors and terminals link), else as FILE: .
func inFile(path string, err error) error {
	sep := ": "
	if msg := err.Error(); msg != "" && msg[0] >= '0' && msg[0] <= '9' {
		sep = ":"
	}
	return fmt.Errorf("%s%s%w", path, sep, err)
}

func (o *emitOptions) checkFlags() error {
	switch {
	case !slices.Contains(providerNames, o.provider):
		return usageError("unknown provider %q: use %s", o.provider, strings.Join(providerNames, ", "))
	case o.workspace == "" && (o.dir != "" || o.user != ""):
		return usageError("--dir and --user set the context that --workspace writes: pass --workspace ID too")
	case o.scope != "" && !o.write:
		return usageError("--scope goes with --write")
	case o.scope != "" && o.scope != "user" && o.scope != "project":
		return usageError("unknown scope %q: use user or project", o.scope)
	case o.scope != "" && o.provider == claude.Desktop:
		return usageError("claude-desktop has one config file: drop --scope")
	case (o.check || o.diff || o.force) && o.output == "" && !o.write:
		return usageError("--check, --diff and --force work on a file: add -o FILE or --write")
	}
	if o.workspace != "" {
		if err := manifest.CheckWorkspaceID(o.workspace); err != nil {
			return usageError("%v", err)
		}
	}
	return nil
}

// render returns the provider's file content: old with the manifest's
// entries merged in, and how many servers it holds.
func (a *app) render(m *manifest.Manifest, o emitOptions, po providers.Options, old []byte) ([]byte, int, error) {
	switch o.provider {
	case codex.Name:
		entries, err := codex.Render(m, po)
		if err != nil {
			return nil, 0, err
		}
		out, err := codex.Merge(old, entries, codex.MergeOptions{Force: o.force})
		return out, len(entries), err
	default:
		entries, warnings, err := claude.Render(m, o.provider, po)
		for _, w := range warnings {
			fmt.Fprintf(a.stderr, "mcpgen: %s\n", w)
		}
		if err != nil {
			return nil, 0, err
		}
		out, err := claude.Merge(old, entries, claude.MergeOptions{Force: o.force})
		return out, len(entries), err
	}
}

// target returns the file to merge into ("" for stdout) and whether it is a
// private file of the user's home, created with mode 0600.
func (o *emitOptions) target() (path string, private bool, err error) {
	if o.output != "" {
		return o.output, false, nil
	}
	if !o.write {
		return "", false, nil
	}
	home, err := os.UserHomeDir()
	if err != nil && !(o.provider != claude.Desktop && o.scope == "project") {
		return "", false, fmt.Errorf("finding the home directory: %w (use -o FILE)", err)
	}
	switch o.provider {
	case codex.Name:
		if o.scope == "project" {
			return filepath.Join(".codex", "config.toml"), false, nil
		}
		dir := os.Getenv("CODEX_HOME")
		if dir == "" {
			return filepath.Join(home, ".codex", "config.toml"), true, nil
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return "", false, fmt.Errorf("CODEX_HOME=%s is not a directory: Codex requires it to exist; create it or unset CODEX_HOME", dir)
		}
		return filepath.Join(dir, "config.toml"), true, nil
	case claude.Code:
		if o.scope == "user" {
			if dir := os.Getenv("CLAUDE_CONFIG_DIR"); dir != "" {
				return filepath.Join(dir, ".claude.json"), true, nil
			}
			return filepath.Join(home, ".claude.json"), true, nil
		}
		return ".mcp.json", false, nil
	default:
		return hostDesktopConfig(home, os.Getenv), true, nil
	}
}

// mcpgenPath returns the program that `mcpgen serve` entries run: --mcpgen-path,
// else this binary. A binary that `go run` built lives in a temporary
// directory that is gone when it exits, so then mcpgen on PATH is used, with
// a warning.
func (a *app) mcpgenPath(flag string) string {
	if flag != "" {
		return flag
	}
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err == nil && !isGoRunBinary(self) {
		return self
	}
	if p, err := exec.LookPath("mcpgen"); err == nil {
		fmt.Fprintf(a.stderr, "mcpgen: this binary was built by go run and will be gone; entries run %s instead (set --mcpgen-path to choose)\n", p)
		return p
	}
	fmt.Fprintln(a.stderr, "mcpgen: this binary was built by go run and will be gone, and there is no mcpgen on PATH: entries run \"mcpgen\"; install it with go install github.com/mcpgen/mcpgen/cmd/mcpgen@latest, or set --mcpgen-path")
	return "mcpgen"
}

// isGoRunBinary reports whether path is where go run puts its binaries:
// $GOTMPDIR or the temp dir, go-buildNNN/bNNN/exe/NAME.
func isGoRunBinary(path string) bool {
	return strings.Contains(path, string(filepath.Separator)+"go-build") && filepath.Base(filepath.Dir(path)) == "exe"
}
