package main

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/mcpgen/mcpgen/internal/lazyregexp"
	"github.com/mcpgen/mcpgen/internal/termtext"
	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/providers"
	"github.com/mcpgen/mcpgen/providers/claude"
	"github.com/mcpgen/mcpgen/providers/codex"
	"github.com/mcpgen/mcpgen/providers/registry"
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
	gateway              bool
	gatewayName          string
	gatewayURL           string
	gatewayTokenEnv      string
	gatewayTools         string
	// cache, with several agents, keeps what they share (emitAll).
	cache *providers.Cache
}

// gatewayNameRE is what Claude Code and Codex accept as an entry's name.
var gatewayNameRE = lazyregexp.New(`^[A-Za-z0-9_-]{1,64}$`)

func (a *app) emitCommand() *cobra.Command {
	var o emitOptions
	cmd := &cobra.Command{
		Use:   "emit --provider NAME[,NAME...]|all",
		Short: "Write the MCP server config of Codex, Claude, Gemini CLI, Cursor, VS Code and other agents",
		Long: `Emit renders the manifest's servers for one provider: Codex's
[mcp_servers.NAME] tables, the mcpServers entries of Claude Code, Claude
Desktop, Gemini CLI, Qwen Code, Cursor, Copilot CLI, Windsurf, Kiro, Junie,
Warp, Cline and Antigravity, Amp's amp.mcpServers, VS Code's servers, Zed's
context_servers, opencode's and Crush's mcp, Goose's extensions (YAML), each
with the agent's own keys and reference syntax.

By default it prints them. With -o FILE or --write it merges them into the
file: only the entries of this manifest are replaced, its servers that left
it are removed, everything else in the file is kept (in TOML, byte for
byte, comments and Codex's own approval tables included). The write is
atomic, and nothing is written when nothing changed. The replaced content
is kept, readable by its owner alone, and emit says where: in FILE.bak
beside a file of the user's, in mcpgen's state dir (_backups/NAME-HASH/)
for a file in a project (a git work tree, or a --scope project config),
where git would see a FILE.bak. When it held literal secrets that the new
file references instead, emit says so. An entry written by hand under a
manifest server's name, or owned by another manifest, and a file whose
mode makes it read-only, are errors unless --force.

Scopes. A server with scope = "project" (import sets it on the servers of
a project's .mcp.json or .codex/config.toml) goes to project configs only,
one with scope = "user" to user configs only; emit names what it leaves
out. A user config (~/.codex/config.toml, ~/.claude.json, Claude
Desktop's) holds the servers of every project: its entries name the mcpgen
binary and the manifest by absolute path, and take the manifest's prefix;
each one records the manifest that owns it (its name, else its path), so
that several manifests share the file. A project's config (.mcp.json,
.codex/config.toml), committed and cloned, names no path of the checkout:
its entries run mcpgen from PATH, which finds the manifest from where the
agent starts the server, as git finds .git. --write writes Codex's user
config and Claude's project config unless --scope says otherwise; -o of a
.mcp.json or a .codex/config.toml writes a project's config, of any other
file a user config; printing writes a user config.

Without --workspace the output is portable: WORKSPACE_ID, WORKSPACE_DIR and
USER_ID are left for the agent's environment to provide. With --workspace
ID they are written literally, except what comes from mcpgen's
environment: emit never writes a value it reads there, into a file or
into the arguments of an entry. A context variable whose value would come
from it (USER_ID from $USER by default, workspace.user = "${GITHUB_TOKEN}",
a [workspace.vars] value "${OPENAI_API_KEY}") stays a reference that the
agent resolves, or goes through mcpgen serve or connect, which resolve it
when the server starts; --dir and --user write theirs. Other ${VAR}s are
secrets: they stay references in every mode. In a project's config, a
WORKSPACE_DIR that would be this checkout's path is left to serve.

With --launcher, stdio servers run as mcpgen connect NAME: every agent of
the workspace shares the processes of its launcher (mcpgen launch), which
connect starts when none runs. The workspace is --workspace, or else the
agent's MCPGEN_WORKSPACE: run the agent under mcpgen launch --workspace ID
-- AGENT, which sets it.

With --gateway (which implies --launcher), the whole workspace is one
entry, named by --gateway-name: mcpgen connect without a server, the
workspace gateway, whose tools are those of every enabled server meant
for the provider, remote ones included. The entries mcpgen wrote for each
server are removed from the file.

With --gateway-url URL (which implies --gateway), that one entry reaches
the gateway of a launcher that serves it over HTTP (mcpgen launch
--listen): an http entry for Claude Code and Codex, with the bearer token
of --gateway-token-env VAR as a reference that the agent resolves
(Authorization: Bearer ${VAR} for Claude, bearer_token_env_var for
Codex); the token is never written. Without --gateway-token-env the entry
has no token: a launcher on loopback without [session.auth], or one whose
OAuth issuer the agent logs in to. Claude Desktop runs only stdio servers
from its file: its entry runs mcpgen serve --url URL, which relays to the
gateway and reads VAR from the environment Desktop gives it.

--provider all --write writes each agent whose config is there, in its
usual scope (or --scope): a user config whose directory exists (the agent
is set up), a project's config that exists; emit names the others.
--provider gemini,cursor writes the agents it names, there or not. One
agent's failure does not stop the others. mcpgen agents lists them all.

--write targets (a project's file is in the manifest's directory):
  codex           $CODEX_HOME/config.toml (default ~/.codex/config.toml);
                  --scope project: .codex/config.toml
  claude          .mcp.json; --scope user: ~/.claude.json
  claude-desktop  Claude Desktop's claude_desktop_config.json
  gemini          .gemini/settings.json; --scope user: ~/.gemini/settings.json
  qwen            .qwen/settings.json; --scope user: ~/.qwen/settings.json
  opencode        opencode.json (or .jsonc); --scope user:
                  ~/.config/opencode/opencode.json
  cursor          .cursor/mcp.json; --scope user: ~/.cursor/mcp.json
  vscode          .vscode/mcp.json; --scope user: the profile's mcp.json
  zed             .zed/settings.json; --scope user: ~/.config/zed/settings.json
  copilot         .github/mcp.json; --scope user: ~/.copilot/mcp-config.json
  windsurf        ~/.codeium/windsurf/mcp_config.json; --scope project:
                  .windsurf/mcp_config.json
  kiro            .kiro/settings/mcp.json; --scope user: ~/.kiro/settings/mcp.json
  crush           .crush.json (or crush.json); --scope user:
                  ~/.config/crush/crush.json
  junie           .junie/mcp/mcp.json; --scope user: ~/.junie/mcp/mcp.json
  warp            .warp/.mcp.json; --scope user: ~/.warp/.mcp.json
  amp             ~/.config/amp/settings.json; --scope project:
                  .amp/settings.json
  cline           ~/.cline/data/settings/cline_mcp_settings.json
  goose           ~/.config/goose/config.yaml (%APPDATA%\Block\goose\config
                  on Windows, $GOOSE_PATH_ROOT/config when set)
  antigravity     .agents/mcp_config.json; --scope user:
                  ~/.gemini/config/mcp_config.json`,
		Example: `  mcpgen emit --provider codex
  mcpgen emit --provider codex --workspace ws-42 --write
  mcpgen emit --provider codex --launcher            # agents share the launcher's servers
  mcpgen emit --provider claude --gateway -o .mcp.json   # one entry: every tool of the workspace
  mcpgen emit --provider codex --gateway-url https://mcp.example.com/mcp --gateway-token-env MCPGEN_TOKEN
  mcpgen emit --provider claude -o .mcp.json
  mcpgen emit --provider claude --write --check      # in CI: exit 1 when .mcp.json is out of date
  mcpgen emit --provider codex --write --scope project  # .codex/config.toml, committed with the project
  mcpgen emit --provider claude-desktop --workspace ws-42 --write --diff
  mcpgen emit --provider all --write --scope user     # every agent set up for you`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.emit(o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.provider, "provider", "p", "", "the agent: "+strings.Join(registry.Names(), ", ")+"; several, comma-separated; or all (required)")
	f.StringVarP(&o.workspace, "workspace", "w", "", "write the context of workspace `ID` literally")
	f.StringVar(&o.dir, "dir", "", "WORKSPACE_DIR (default: the manifest's workspace.dir, else the manifest's directory)")
	f.StringVar(&o.user, "user", "", "USER_ID (default: the manifest's workspace.user, else $USER)")
	f.StringVarP(&o.output, "output", "o", "", "merge into `FILE` instead of printing")
	f.BoolVar(&o.write, "write", false, "merge into the provider's own config file")
	f.StringVar(&o.scope, "scope", "", "user (a config every project shares: absolute paths, prefixed names) or project (committed with the project: no path of the checkout); default: --write user for codex, project for claude; -o project for .mcp.json and .codex/config.toml; stdout user")
	f.BoolVar(&o.check, "check", false, "write nothing; exit 1 with a diff when the file is out of date")
	f.BoolVar(&o.diff, "diff", false, "write nothing; show what would change")
	f.BoolVar(&o.force, "force", false, "replace entries written or edited by hand, and a read-only file (the old file is kept as a backup)")
	f.StringVar(&o.mcpgenPath, "mcpgen-path", "", "the mcpgen that entries run (default: this binary in a user config, mcpgen from PATH in a project's)")
	f.BoolVar(&o.launcher, "launcher", false, "stdio servers go through mcpgen connect: every agent of the workspace shares the launcher's processes")
	f.BoolVar(&o.gateway, "gateway", false, "one entry for the whole workspace: the launcher's gateway, with every server's tools (implies --launcher)")
	f.StringVar(&o.gatewayName, "gateway-name", "mcpgen", "with --gateway: the entry's `NAME`")
	f.StringVar(&o.gatewayURL, "gateway-url", "", "the gateway of a launcher served over HTTP (launch --listen), at `URL`: one entry that reaches it there (implies --gateway)")
	f.StringVar(&o.gatewayTokenEnv, "gateway-token-env", "", "with --gateway-url: the environment `VAR` that holds the gateway's bearer token, which the entry references, never holds")
	f.StringVar(&o.gatewayTools, "gateway-tools", "", "with --gateway or --gateway-url: how the gateway lists tools to this agent, `all` or search (search_tools, call_tool and the pinned tools); default: [gateway] tools")
	_ = cmd.MarkFlagRequired("provider")
	_ = cmd.RegisterFlagCompletionFunc("provider", cobra.FixedCompletions(registry.Names(), cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("scope", cobra.FixedCompletions([]string{"user", "project"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.MarkFlagsMutuallyExclusive("output", "write")
	cmd.MarkFlagsMutuallyExclusive("check", "diff")
	return cmd
}

func (a *app) emit(o emitOptions) error {
	if err := o.checkFlags(); err != nil {
		return err
	}
	if names := o.providers(); len(names) != 1 || o.provider == allProviders {
		return a.emitAll(o, names)
	}
	p, _ := registry.Lookup(o.provider)
	load := a.loadManifest
	if o.output == "" && !o.write {
		load = a.loadManifestOrDemo // printing writes nothing: the demo may show
	}
	m, err := load()
	if err != nil {
		return err
	}
	place, err := o.placement(m, p)
	if err != nil {
		return err
	}
	pl, err := a.plan(m, p, o, place)
	if err != nil {
		return err
	}
	return a.apply(m, p, o, pl)
}

// An emitPlan is what emit would write for one provider: the file's content
// before and after, and the options that rendered it.
type emitPlan struct {
	place    placement
	po       providers.Options
	target   string // place.target, links resolved
	old, out []byte
	n        int
}

// plan renders the manifest for p at place, merged into the file that is
// there: nothing is written.
func (a *app) plan(m *manifest.Manifest, p providers.Provider, o emitOptions, place placement) (*emitPlan, error) {
	var err error
	po := providers.Options{Launcher: o.launcher || o.gateway && o.gatewayURL == "", Scope: place.scope, Root: place.root}
	if o.gateway || o.gatewayURL != "" {
		po.Gateway = o.gatewayName
	}
	po.GatewayURL, po.GatewayTokenEnv = o.gatewayURL, o.gatewayTokenEnv
	if o.gatewayURL != "" && o.gatewayTools != "" {
		po.GatewayURL = withQuery(o.gatewayURL, "tools", o.gatewayTools) // the HTTP face's ?tools
	} else {
		po.GatewayTools = o.gatewayTools
	}
	if place.scope == providers.ScopeProject {
		po.Mcpgen = a.mcpgenOnPath(o.mcpgenPath)
	} else {
		po.Mcpgen = a.mcpgenPath(o.mcpgenPath)
	}
	// The context as templates, not values: no value of mcpgen's
	// environment is read, so none can be written (only the flags and the
	// manifest's own text are).
	po.Cache = o.cache
	po.Context, err = o.cache.Context(m, manifest.ContextOptions{WorkspaceID: o.workspace, Dir: o.dir, User: o.user, Project: place.scope == providers.ScopeProject})
	if err != nil {
		return nil, err
	}
	a.noteFromEnv(po.Context)
	if o.gatewayURL == "" {
		a.noteScope(m, p, po) // a remote gateway's servers are its launcher's
	}
	if po.Context.DirLeft {
		fmt.Fprintf(a.stderr, "mcpgen: WORKSPACE_DIR is not written: in a project's config it would name this checkout; the agent's WORKSPACE_DIR, else mcpgen serve (the manifest's workspace.dir, else the manifest's directory) gives it (pass --dir with an absolute path to write one)\n")
	}
	a.noteGatewayURL(o)
	if (o.launcher || o.gateway) && o.gatewayURL == "" && o.workspace == "" {
		fmt.Fprintf(a.stderr, "mcpgen: these entries run mcpgen connect without a workspace: run the agent under `mcpgen launch --workspace ID -- AGENT` (or with MCPGEN_WORKSPACE set), else connect fails; --workspace writes one\n")
	}

	target := place.target
	var old []byte
	if target != "" {
		target, err = resolveLinks(target)
		if err != nil {
			return nil, err
		}
		if fi, err := os.Stat(target); err == nil && fi.IsDir() {
			return nil, fmt.Errorf("%s is a directory, where %s's config file goes: move it away, then re-run (or write elsewhere with -o FILE)", target, p.Title())
		}
		old, err = os.ReadFile(target)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	out, n, err := a.render(m, p, o, po, old)
	if err != nil {
		if target != "" {
			return nil, inFile(target, err)
		}
		return nil, err
	}
	return &emitPlan{place: place, po: po, target: target, old: old, out: out, n: n}, nil
}

// apply prints, diffs, checks or writes what pl says.
func (a *app) apply(m *manifest.Manifest, p providers.Provider, o emitOptions, pl *emitPlan) error {
	place, po, target, old, out, n := pl.place, pl.po, pl.target, pl.old, pl.out, pl.n
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
	if place.private {
		mode = 0o600
	}
	if bytes.HasPrefix(old, providers.UTF8BOM) && !bytes.HasPrefix(out, providers.UTF8BOM) {
		fmt.Fprintf(a.stderr, "mcpgen: %s started with a UTF-8 byte order mark, which JSON readers may refuse: it is written without one\n", target)
	}
	project := ""
	if place.scope == providers.ScopeProject {
		project = place.root
	}
	backup, err := writeFile(target, out, mode, project)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "wrote %d server%s to %s", n, plural(n), target)
	if backup != "" {
		fmt.Fprintf(a.stderr, " (previous content in %s)", backup)
	}
	fmt.Fprintln(a.stderr)
	if backup != "" {
		a.noteBackup(p, target, backup, old, out)
	}
	a.noteOthers(p, out, m, po)
	if p.Name() == codex.Name && place.scope == providers.ScopeProject && o.write {
		// Codex keys projects by absolute path, in the user's own config.
		userConfig := "~/.codex/config.toml"
		if dir := os.Getenv("CODEX_HOME"); dir != "" {
			userConfig = filepath.Join(dir, "config.toml")
		}
		fmt.Fprintf(a.stderr, "note: Codex reads %s only in a trusted project: add [projects.%q] trust_level = \"trusted\" to %s (in every clone: Codex trusts a project by its path)\n", target, codexProject(place.root), userConfig)
	}
	return nil
}

// noteScope names the servers meant for the provider that the config's
// scope leaves out (scope = "project" in a user config, "user" in a
// project's), and how to write them.
func (a *app) noteScope(m *manifest.Manifest, p providers.Provider, po providers.Options) {
	provider := p.Name()
	var names []string
	for _, s := range m.Servers {
		// What Claude leaves out anyway (disabled servers; remote ones for
		// Desktop) needs no word about its scope.
		skipped := provider != codex.Name && !s.Enabled || provider == claude.Desktop && s.Kind == manifest.KindRemote
		if s.ForProvider(provider) && !po.Holds(s) && !skipped {
			names = append(names, s.Name)
		}
	}
	switch {
	case len(names) == 0:
	case po.Scope == providers.ScopeProject:
		fmt.Fprintf(a.stderr, "mcpgen: left out %s (scope = \"user\"): this is a project's config; --scope user writes them to your own\n", strings.Join(names, ", "))
	case len(p.Files().Project) == 0:
		fmt.Fprintf(a.stderr, "mcpgen: left out %s (scope = \"project\"): %s has only a user config, which every project shares\n", strings.Join(names, ", "), p.Title())
	default:
		fmt.Fprintf(a.stderr, "mcpgen: left out %s (scope = \"project\"): this is a user config, which every project shares; --scope project writes them to the project's\n", strings.Join(names, ", "))
	}
}

// noteBackup says what a backup holds that the user should know of: the
// literal secrets that the new content no longer has (import made them
// references, and emit --force replaced the entries that held them), and
// an older backup that an mcpgen before this one left beside a project
// file, where git sees it.
func (a *app) noteBackup(p providers.Provider, target, backup string, old, out []byte) {
	if n := droppedSecrets(p, target, old, out); n > 0 {
		fmt.Fprintf(a.stderr, "mcpgen: %s holds %d literal secret%s that %s no longer has (it references variables now): delete the backup once the agents work with the new file\n", backup, n, plural(n), target)
	}
	if beside := target + ".bak"; backup != beside {
		if _, err := os.Lstat(beside); err == nil {
			fmt.Fprintf(a.stderr, "note: %s, beside it, is not a backup of this mcpgen's (it keeps them in %s): if an older mcpgen wrote it, it is in the project, where git sees it, and may hold secrets; delete it\n", beside, filepath.Dir(backup))
		}
	}
}

// droppedSecrets counts the literal secrets of old's servers, as import
// finds them, that out does not hold: what only the backup of old keeps.
func droppedSecrets(p providers.Provider, file string, old, out []byte) int {
	f, err := p.Import(old, file)
	if err != nil {
		return 0 // emit has merged into it: a file it cannot read has no entries
	}
	n := 0
	for _, v := range providers.SecretValues(f.Servers) {
		if !bytes.Contains(out, []byte(v)) {
			n++
		}
	}
	return n
}

// noteOthers says what the merged file keeps that is not this manifest's:
// the servers of other manifests (so that "wrote 1 server" is not read as
// "the file holds 1 server"), and the entries of an older mcpgen that
// recorded no owner, which only their own manifest can remove.
func (a *app) noteOthers(p providers.Provider, out []byte, m *manifest.Manifest, po providers.Options) {
	owned, err := p.Owners(out)
	if err != nil {
		return
	}
	own := providers.Ownership{}
	own.Owner, own.Aliases = providers.Owner(m, po)
	var others, legacy []string
	for _, e := range owned {
		switch {
		case own.Mine(e.Owner):
		case e.Owner == "":
			legacy = append(legacy, e.Name)
		default:
			others = append(others, e.Name)
		}
	}
	if len(others) > 0 {
		// The names are the config's, which anyone may have written.
		fmt.Fprintf(a.stderr, "kept %d server%s of other manifests: %s\n", len(others), plural(len(others)), termtext.Line(strings.Join(others, ", ")))
	}
	if len(legacy) > 0 {
		fmt.Fprintf(a.stderr, "note: kept %s, written by an mcpgen that recorded no owner: the manifest that has %s takes %s over when it emits; remove by hand what no manifest has\n", termtext.Line(strings.Join(legacy, ", ")), map[bool]string{true: "it", false: "them"}[len(legacy) == 1], map[bool]string{true: "it", false: "them"}[len(legacy) == 1])
	}
}

// codexProject is the directory that Codex trusts for a project config
// under root: the root of its git work tree, as Codex finds a project,
// else root itself.
func codexProject(root string) string {
	if d, ok := gitRoot(root); ok {
		return d
	}
	return root
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
	case o.provider != allProviders && slices.ContainsFunc(o.providers(), func(n string) bool { return !slices.Contains(registry.Names(), n) }):
		bad := o.providers()[slices.IndexFunc(o.providers(), func(n string) bool { return !slices.Contains(registry.Names(), n) })]
		return usageError("unknown provider %q: use %s, a list of them (gemini,cursor), or all", bad, strings.Join(registry.Names(), ", "))
	case len(o.providers()) != 1 && !o.write:
		return usageError("--provider %s writes each agent's own file: add --write (with --check or --diff to write nothing)", o.provider)
	case o.workspace == "" && (o.dir != "" || o.user != ""):
		return usageError("--dir and --user set the context that --workspace writes: pass --workspace ID too")
	case o.scope != "" && o.scope != "user" && o.scope != "project":
		return usageError("unknown scope %q: use user or project", o.scope)
	case o.scope != "" && o.oneFile():
		return usageError("%s has one config file: drop --scope", o.provider)
	case (o.check || o.diff || o.force) && o.output == "" && !o.write:
		return usageError("--check, --diff and --force work on a file: add -o FILE or --write")
	case o.gatewayName != "mcpgen" && !o.gateway && o.gatewayURL == "":
		return usageError("--gateway-name names the entry of --gateway: pass --gateway too")
	case o.gatewayTools != "" && !o.gateway && o.gatewayURL == "":
		return usageError("--gateway-tools chooses how the gateway of --gateway lists tools: pass --gateway or --gateway-url too")
	case o.gatewayTools != "" && o.gatewayTools != manifest.GatewayToolsAll && o.gatewayTools != manifest.GatewayToolsSearch:
		return usageError("--gateway-tools %q: use %q (every tool) or %q (search_tools, call_tool and the pinned tools)", o.gatewayTools, manifest.GatewayToolsAll, manifest.GatewayToolsSearch)
	case o.gatewayTokenEnv != "" && o.gatewayURL == "":
		return usageError("--gateway-token-env names the token of --gateway-url: pass --gateway-url URL too")
	case o.gatewayURL != "" && o.launcher:
		return usageError("--gateway-url reaches a launcher over HTTP, not through mcpgen connect: drop --launcher")
	case o.gatewayURL != "" && o.workspace != "":
		return usageError("--gateway-url reaches a launcher that has its workspace already: drop --workspace")
	case !gatewayNameRE.MatchString(o.gatewayName):
		return usageError("--gateway-name %q: an entry name is 1 to 64 characters of A-Z, a-z, 0-9, _ and -", o.gatewayName)
	case slices.Contains(manifest.ReservedNames, o.gatewayName):
		return usageError("--gateway-name %q is reserved by Claude Code: choose another", o.gatewayName)
	}
	if o.workspace != "" {
		if err := manifest.CheckWorkspaceID(o.workspace); err != nil {
			return usageError("%v", err)
		}
	}
	if o.gatewayURL != "" {
		if err := checkGatewayURL(o.gatewayURL); err != nil {
			return usageError("--gateway-url %s", err)
		}
	}
	if o.gatewayTokenEnv != "" {
		if err := manifest.CheckVarName(o.gatewayTokenEnv); err != nil {
			return usageError("--gateway-token-env names the variable that holds the token, such as MCPGEN_TOKEN: %v", err)
		}
	}
	return nil
}

// checkGatewayURL says what is wrong with the URL of --gateway-url, if
// anything: an absolute http or https URL, which the file holds, so
// without credentials (the token goes in a variable).
func checkGatewayURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "":
		return fmt.Errorf("%q is not an absolute http or https URL, such as https://mcp.example.com/mcp", raw)
	case u.User != nil:
		return fmt.Errorf("%q holds credentials, which the config file would hold too: remove them, and pass the token in a variable with --gateway-token-env", u.Redacted())
	case u.Fragment != "" || strings.HasSuffix(raw, "#"):
		return fmt.Errorf("%q has a fragment (#...), which no server sees: remove it", raw)
	}
	return nil
}

// noteGatewayURL says what an entry of --gateway-url needs that emit
// cannot check: a path (the launcher serves the gateway at /mcp), and
// https for a token that crosses a network.
func (a *app) noteGatewayURL(o emitOptions) {
	if o.gatewayURL == "" {
		return
	}
	u, _ := url.Parse(o.gatewayURL)
	if u.Path == "" || u.Path == "/" {
		fmt.Fprintf(a.stderr, "mcpgen: %s has no path: a launcher serves its gateway at /mcp (%s://%s/mcp), unless a proxy maps it elsewhere\n", o.gatewayURL, u.Scheme, u.Host)
	}
	if o.gatewayTokenEnv != "" && u.Scheme == "http" && !manifest.LoopbackHost(u.Hostname()) {
		fmt.Fprintf(a.stderr, "mcpgen: %s is plain http: the token of %s would cross the network unencrypted; use https\n", o.gatewayURL, o.gatewayTokenEnv)
	}
	if o.provider == claude.Desktop && o.gatewayTokenEnv != "" {
		fmt.Fprintf(a.stderr, "mcpgen: Claude Desktop runs the entry as mcpgen serve --url, which reads %s from the environment Desktop gives it, not from your shell's; it fails at start, naming %s, when that environment lacks it\n", o.gatewayTokenEnv, o.gatewayTokenEnv)
	}
}

// render returns the provider's file content: old with the manifest's
// entries merged in, and how many servers it holds.
func (a *app) render(m *manifest.Manifest, p providers.Provider, o emitOptions, po providers.Options, old []byte) ([]byte, int, error) {
	entries, notes, err := p.Render(m, po)
	for _, n := range notes {
		fmt.Fprintf(a.stderr, "mcpgen: %s\n", termtext.Line(n))
	}
	if err != nil {
		return nil, 0, err
	}
	mo := providers.MergeOptions{Force: o.force}
	mo.Owner, mo.Aliases = providers.Owner(m, po)
	out, err := p.Merge(old, entries, mo)
	return out, len(entries), err
}

// oneFile reports whether the provider has a config of one scope only
// (Claude Desktop's user config), which --scope cannot choose.
func (o *emitOptions) oneFile() bool {
	p, ok := registry.Lookup(o.provider)
	if !ok {
		return false
	}
	f := p.Files()
	return len(f.Project) == 0 || f.User == nil
}

// placement is where emit's output goes, and what it may name.
type placement struct {
	target  string // the file to merge into; "" for stdout
	private bool   // a file of the user's home, created with mode 0600
	scope   providers.Scope
	root    string // for a project's config: where its agents run
}

// placement decides the file and its scope. --write goes to the provider's
// own file for --scope, else the provider's usual scope (Codex: the user's
// config, Claude Code: the project's .mcp.json); a project's file is in
// the manifest's directory, where agents that read it run. -o FILE is a
// project's config when it is where agents read one (.mcp.json,
// .codex/config.toml) and not one of the user's own files, else a user
// config; stdout is a user config; --scope says otherwise.
func (o *emitOptions) placement(m *manifest.Manifest, prov providers.Provider) (placement, error) {
	var p placement
	project := m.Dir
	if project == "" {
		project = "."
	}
	files := prov.Files()
	switch {
	case o.write:
		scope := o.scope
		if scope == "" {
			scope = map[providers.Scope]string{providers.ScopeUser: "user", providers.ScopeProject: "project"}[files.Default]
			if files.User == nil {
				scope = "project"
			}
		}
		if scope == "project" {
			if len(files.Project) == 0 {
				return p, usageError("%s has no project config: drop --scope project", prov.Title())
			}
			p.scope, p.root = providers.ScopeProject, project
			p.target = relToWd(providers.ProjectFile(prov, project))
			return p, nil
		}
		target, err := userConfig(prov)
		if err != nil {
			return p, err
		}
		p.target, p.private = target, true
		return p, nil
	case o.output != "":
		p.target = o.output
		abs, err := filepath.Abs(o.output)
		if err != nil {
			return p, err
		}
		dir, projectFile := filepath.Dir(abs), false
		for _, name := range files.Project {
			if root, ok := strings.CutSuffix(abs, string(filepath.Separator)+filepath.FromSlash(name)); ok {
				dir, projectFile = root, true
				break
			}
		}
		if user, err := userConfig(prov); err == nil && user != "" && sameFile(user, abs) {
			projectFile = false // ~/.codex/config.toml with a manifest in ~
		}
		if o.scope == "project" || o.scope == "" && projectFile {
			p.scope, p.root = providers.ScopeProject, dir
		}
		return p, nil
	}
	if o.scope == "project" {
		wd, err := os.Getwd()
		if err != nil {
			return p, err
		}
		p.scope, p.root = providers.ScopeProject, wd
	}
	return p, nil
}

// userConfig is the provider's config file in the user's home (or where
// CODEX_HOME, CLAUDE_CONFIG_DIR and the like move it); an error when the
// provider has none.
func userConfig(p providers.Provider) (string, error) {
	file, err := providers.UserFile(p)
	if err == nil && file == "" {
		err = usageError("%s has no user config: use --scope project", p.Title())
	}
	return file, err
}

// sameFile reports whether two paths name one file, symlinks resolved; a
// file that does not exist yet is compared by its path.
func sameFile(a, b string) bool {
	canon := func(p string) string {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		if dir, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
			p = filepath.Join(dir, filepath.Base(p))
		}
		return p
	}
	return canon(a) == canon(b)
}

// relToWd names path relative to the current directory when it is inside
// it (".mcp.json"), as messages have always named it, else as it is.
func relToWd(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

// mcpgenOnPath returns the program that the entries of a project's config
// run: --mcpgen-path, else "mcpgen", which every machine finds on its PATH;
// the path of this binary would hold only on this one. It says so when
// there is no mcpgen on this PATH.
func (a *app) mcpgenOnPath(flag string) string {
	if flag != "" {
		return flag
	}
	if _, err := exec.LookPath("mcpgen"); err != nil {
		fmt.Fprintln(a.stderr, "mcpgen: a project's config runs mcpgen from PATH, and there is none on this one: "+installHint+" where the agents run")
	}
	return "mcpgen"
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
	fmt.Fprintln(a.stderr, "mcpgen: this binary was built by go run and will be gone, and there is no mcpgen on PATH: entries run \"mcpgen\"; "+installHint+", or set --mcpgen-path")
	return "mcpgen"
}

// installHint says how to put mcpgen on PATH. The module is not published
// yet, so go install of its module path cannot work: a clone can.
const installHint = "install it from a clone of mcpgen with go install ./cmd/mcpgen (and put $(go env GOPATH)/bin on PATH)"

// isGoRunBinary reports whether path is where go run puts its binaries:
// $GOTMPDIR or the temp dir, go-buildNNN/bNNN/exe/NAME.
func isGoRunBinary(path string) bool {
	return strings.Contains(path, string(filepath.Separator)+"go-build") && filepath.Base(filepath.Dir(path)) == "exe"
}

// allProviders, for --provider, is every agent that mcpgen finds set up.
const allProviders = "all"

// providers are the names --provider gives: one, a comma-separated list, or
// every registered one for "all".
func (o *emitOptions) providers() []string {
	if o.provider == allProviders {
		return registry.Names()
	}
	var names []string
	for _, n := range strings.Split(o.provider, ",") {
		if n = strings.TrimSpace(n); n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// emitAll runs emit --write for each provider of names, one after the other,
// with one manifest. With --provider all, an agent whose config is not there
// is left out, and emit says so: a user config whose directory does not
// exist (the agent is not set up for this user), a project's config that the
// project does not have. A list names agents to write whatever is there.
// One agent's failure does not stop the others; emit fails at the end.
func (a *app) emitAll(o emitOptions, names []string) error {
	m, err := a.loadManifest()
	if err != nil {
		return err
	}
	// Each agent's work, in --provider's order: what to say first (a skip, a
	// failure to place), then its plan, rendered with the others', then its
	// write, one after the other.
	type job struct {
		p      providers.Provider
		o      emitOptions
		place  placement
		say    string // said before anything else; the agent is not written
		failed bool
		notes  bytes.Buffer // what plan said
		plan   *emitPlan
		err    error
	}
	jobs := make([]*job, len(names))
	o.cache = providers.NewCache()
	for i, name := range names {
		p, _ := registry.Lookup(name)
		j := &job{p: p, o: o}
		j.o.provider = name
		jobs[i] = j
		if j.o.scope != "" && j.o.oneFile() && !hasScope(p, j.o.scope) {
			if o.provider != allProviders {
				j.failed, j.say = true, fmt.Sprintf("mcpgen: %s: %s has no %s config\n", name, p.Title(), j.o.scope)
			} else {
				j.say = " " // nothing to say: all means the agents that have one
			}
			continue
		}
		if j.place, err = j.o.placement(m, p); err != nil {
			j.failed, j.say = true, fmt.Sprintf("mcpgen: %s: %v\n", name, err)
			continue
		}
		if o.provider == allProviders {
			if missing := absent(j.place); missing != "" {
				j.say = fmt.Sprintf("%s: skipped: %s does not exist (--provider %s writes it anyway)\n", name, missing, name)
			} else if name == claude.Desktop && o.workspace == "" && o.gatewayURL == "" {
				// Portable output is what it cannot run: a skip, not a failure of all.
				j.say = fmt.Sprintf("%s: skipped: Claude Desktop expands no ${VAR}, so it needs the context written: pass --workspace ID (with --provider %s)\n", name, name)
			}
		}
	}
	// Rendering and merging read the manifest and the files, and write
	// nothing: the agents' plans are made side by side, by as many goroutines
	// as there are CPUs, each of which ends when no job is left, before emitAll
	// goes on.
	// The plans make garbage many times the size of what they keep (every agent's
	// file read, parsed and rendered), in one short burst: the collector, at its usual
	// pace, spent a third of the time on it. Like the compiler (cmd/compile raises its
	// starting heap for the same reason), the burst runs with a heap allowed to grow
	// five times what is live, and the usual pace comes back after it. A GOGC of the
	// user's that is already slower (or off) stays.
	if old := debug.SetGCPercent(400); old < 0 || old > 400 {
		debug.SetGCPercent(old)
	} else {
		defer debug.SetGCPercent(old)
	}
	next := make(chan *job)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				quiet := *a
				quiet.stderr = &j.notes
				j.plan, j.err = quiet.plan(m, j.p, j.o, j.place)
			}
		}()
	}
	// The largest files first: a plan costs about its file's size, and the one started
	// last, if large (Goose's YAML, which takes longest to parse), would keep the
	// others waiting on it alone.
	order := slices.Clone(jobs)
	sizes := make(map[*job]int64, len(jobs)) // a file not there: 0
	for _, j := range order {
		if fi, err := os.Stat(j.place.target); err == nil {
			sizes[j] = fi.Size()
		}
	}
	slices.SortStableFunc(order, func(a, b *job) int { return cmp.Compare(sizes[b], sizes[a]) })
	for _, j := range order {
		if j.say == "" {
			next <- j
		}
	}
	close(next)
	wg.Wait()

	var failed, stale []string
	for _, j := range jobs {
		name := j.p.Name()
		if j.say != "" {
			fmt.Fprint(a.stderr, strings.TrimPrefix(j.say, " "))
			if j.failed {
				failed = append(failed, name)
			}
			continue
		}
		a.stderr.Write(j.notes.Bytes())
		err := j.err
		if err == nil {
			err = a.apply(m, j.p, j.o, j.plan)
		}
		var ee *exitError
		switch {
		case errors.As(err, &ee) && j.o.check:
			stale = append(stale, name)
		case err != nil:
			failed = append(failed, name)
			fmt.Fprintf(a.stderr, "mcpgen: %s: %v\n", name, err)
		}
	}
	switch {
	case len(failed) > 0:
		return fmt.Errorf("emit failed for %s; the other agents' files are written", strings.Join(failed, ", "))
	case len(stale) > 0:
		return &exitError{code: exitFail, err: fmt.Errorf("out of date: %s: run the same mcpgen emit without --check to update them", strings.Join(stale, ", "))}
	}
	return nil
}

// hasScope reports whether p has a config of scope ("user" or "project").
func hasScope(p providers.Provider, scope string) bool {
	f := p.Files()
	if scope == "project" {
		return len(f.Project) > 0
	}
	return f.User != nil
}

// absent returns what must exist for --provider all to write the config of
// place, when it does not: the project's file itself, or the directory of a
// user config (where the agent keeps its settings once it is set up).
func absent(place placement) string {
	path := place.target
	if home, _ := os.UserHomeDir(); place.scope == providers.ScopeUser && !sameFile(filepath.Dir(path), home) {
		path = filepath.Dir(path) // a file right in the home (~/.claude.json) must exist itself
	}
	if _, err := os.Stat(path); err != nil {
		return path
	}
	return ""
}

// withQuery is raw, a URL checkGatewayURL accepted, with its query's name
// set to value (whatever it was).
func withQuery(raw, name, value string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw // checked before: not reached
	}
	q := u.Query()
	q.Set(name, value)
	u.RawQuery = q.Encode()
	return u.String()
}
