package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcpgen/mcpgen/internal/termtext"
	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/providers"
	"github.com/mcpgen/mcpgen/providers/claude"
	"github.com/mcpgen/mcpgen/providers/codex"
	"github.com/mcpgen/mcpgen/providers/goose"
	"github.com/mcpgen/mcpgen/providers/registry"
)

type importOptions struct {
	output        string
	force         bool
	project       string
	rename        bool
	mergeTimeouts bool
	from          string
}

// importFormats are the kinds of file --from names: Codex's, the kinds of
// Claude files, and every other provider's.
var importFormats = func() []string {
	kinds := append([]string{codex.Name}, claude.ImportKinds...)
	for _, name := range registry.Names() {
		if !slices.Contains(kinds, name) {
			kinds = append(kinds, name)
		}
	}
	return kinds
}()

func (a *app) importCommand() *cobra.Command {
	var o importOptions
	cmd := &cobra.Command{
		Use:   "import FILE...",
		Short: "Write an mcpgen.toml that holds the servers of existing Codex and Claude configs",
		Long: `Import reads the MCP servers of agent config files and writes an
mcpgen.toml that holds them all (-o FILE; without it, it prints it):
command, args, env, cwd, url, headers, bearer token variables, timeouts,
enabled flags and tool filters. -o writes the file atomically, and only
when import succeeds; a shell's > empties the file before import runs,
and leaves it empty when import fails. It reads
Codex's config.toml ([mcp_servers.*]), Claude Code's .mcp.json and
~/.claude.json, and Claude Desktop's claude_desktop_config.json, telling
them apart by name and content (--from says it when neither does).

Secrets are not copied: a literal value that looks like one (a token under
a key such as *_TOKEN, *_KEY, *_SECRET, *PASSWORD*, a token of a known
service anywhere, a password in a url) becomes a ${VAR} reference, and
import lists on stderr the variables to set, with the server and key,
never the value. Headers named *-Key, *-Token, *-Secret, Authorization or
Cookie, and url query parameters named like a key, a token, a secret or a
signature (api_key, key, access_token, sig, X-Amz-Signature, ...) are
secrets whatever their value. ${VAR} references of Claude Code stay
references.

~/.claude.json holds the user's servers, and each project's local servers:
--project PATH imports those of one project too (they win over user servers
of the same name), and without it import lists the projects that have some.
A project without local servers (or that Claude was never opened in) gets
the user's servers, and import says so.

Two files that define a server of the same name the same way give one
server; defined differently, it is an error that names both places, unless
--rename, which imports the later one as NAME-2. A timeout that one file's
agent has no per-server value of (Claude Code's startup timeout, Claude
Desktop's tool timeout) is no difference: the other file's is kept. Two
timeouts that would both reach their agents are one: the manifest has
one value for every provider, so one agent's would change; import says
whose, and --merge-timeouts keeps the longer, with a note.

Servers mcpgen cannot hold (SSE servers, say) are left in their files, and
import says why; so are Codex's approval tables, which emit keeps in place.
After import, mcpgen emit --write --force replaces the imported entries of
your agents' files by mcpgen's own (emit says where it keeps the old file,
and that it holds the secrets import made references of).`,
		Example: `  mcpgen import ~/.codex/config.toml .mcp.json -o mcpgen.toml
  mcpgen import ~/.claude.json --project "$PWD" -o mcpgen.toml
  mcpgen import --from claude-desktop ~/backup/claude.json     # print it`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := a.importConfigs(o, args)
			if err != nil && o.output == "" && emptiedFile(a.stdout) {
				fmt.Fprintln(a.stderr, "note: stdout is a file, and the shell emptied it before import ran: mcpgen import FILE... -o MANIFEST writes the manifest only when import succeeds, and never half of it")
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", "", "write the manifest to `FILE` instead of printing it")
	f.BoolVar(&o.force, "force", false, "with -o: replace FILE if it exists (the old one is kept as a backup)")
	f.StringVar(&o.project, "project", "", "with ~/.claude.json: import the local servers of the project at `PATH` too")
	f.BoolVar(&o.rename, "rename", false, "import a server that another file defines differently under the same name as NAME-2")
	f.BoolVar(&o.mergeTimeouts, "merge-timeouts", false, "import a server that two files define with different timeouts once, with the longer of each (import says whose value changes)")
	f.StringVar(&o.from, "from", "", "the kind of every FILE: "+strings.Join(importFormats, ", ")+" (default: from its name and content)")
	_ = cmd.RegisterFlagCompletionFunc("from", cobra.FixedCompletions(importFormats, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (a *app) importConfigs(o importOptions, files []string) error {
	switch {
	case o.from != "" && !slices.Contains(importFormats, o.from):
		return usageError("unknown kind %q for --from: use %s", o.from, strings.Join(importFormats, ", "))
	case o.force && o.output == "":
		return usageError("--force replaces the file of -o: add -o FILE")
	}
	project := ""
	if o.project != "" {
		var err error
		if project, err = filepath.Abs(o.project); err != nil {
			return err
		}
	}
	if o.output != "" {
		for _, file := range files {
			if samePath(file, o.output) {
				return usageError("-o %s names a file that import reads: write the manifest to another file", o.output)
			}
		}
	}
	if o.output != "" && !o.force {
		// Fail before reading anything: nothing would be written.
		if _, err := os.Lstat(o.output); err == nil {
			return existsError(o.output)
		}
	}

	var imported []*providers.ImportedFile
	var projectFiles []string
	usedProject := false
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		kind := o.from
		if kind == "" {
			if kind, err = detectKind(file, data); err != nil {
				return err
			}
		}
		var f *providers.ImportedFile
		switch {
		case kind == codex.Name:
			f, err = codex.Import(data, file)
		case slices.Contains(claude.ImportKinds, kind):
			opts := claude.ImportOptions{Kind: kind}
			if kind == claude.UserFile {
				opts.Project, usedProject = project, true
			}
			f, err = claude.Import(data, file, opts)
		default:
			p, _ := registry.Lookup(kind)
			f, err = p.Import(data, file)
		}
		if err != nil {
			return err
		}
		if projectConfig(file, kind) {
			// Committed with its project, and meant for it: not for
			// every project of the user, as a user config's entries are.
			projectFiles = append(projectFiles, f.File)
			for _, s := range f.Servers {
				s.Server.Scope = manifest.ScopeProject
				s.NoteKey("scope", "from a project's config: emit writes it to project configs only")
			}
		}
		imported = append(imported, f)
	}
	if project != "" && !usedProject {
		return usageError("--project picks the local servers of a project in ~/.claude.json: name that file among the FILEs")
	}

	var all []*providers.ImportedServer
	for _, f := range imported {
		all = append(all, f.Servers...)
	}
	// Before combining: two files that hold the same secret then define
	// the same server, and two different secrets never share a variable.
	secrets := providers.HideSecrets(all)
	servers, err := providers.Combine(imported, providers.CombineOptions{Rename: o.rename, MergeTimeouts: o.mergeTimeouts})
	if err != nil {
		return err
	}
	a.reportImport(imported, servers, secrets)
	for _, f := range projectFiles {
		fmt.Fprintf(a.stderr, "%s is a project's config: its servers get scope = \"project\", so that emit writes them to project configs only (.mcp.json, .codex/config.toml), never to your user configs\n", f)
	}
	if len(servers) == 0 {
		return fmt.Errorf("no server to import from %s", strings.Join(files, ", "))
	}

	m := &manifest.Manifest{Version: 1}
	for _, s := range servers {
		m.Servers = append(m.Servers, s.Server)
	}
	out, err := manifest.Format(m, importComments(imported, servers, secrets))
	if err != nil {
		return fmt.Errorf("internal error: import made a manifest it cannot write (%w); please report this bug", err)
	}
	// What is written must be what validate accepts, with every server.
	if back, err := manifest.Parse(out, "the imported manifest", ""); err != nil || len(back.Servers) != len(servers) {
		return fmt.Errorf("internal error: the imported manifest does not read back (%v); please report this bug", err)
	}

	if o.output == "" {
		_, err := a.stdout.Write(out)
		return err
	}
	if o.force {
		target, err := resolveLinks(o.output)
		if err != nil {
			return err
		}
		backup, err := writeFile(target, out, 0o644, "")
		if err != nil {
			return err
		}
		if backup != "" {
			fmt.Fprintf(a.stderr, "wrote %s (previous content in %s)\n", o.output, backup)
			return nil
		}
	} else if err := writeNew(o.output, out, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "wrote %s: check it with mcpgen validate --manifest %s\n", o.output, o.output)
	return nil
}

// projectConfig reports whether file, of kind, is a project's own config,
// committed with it: a .mcp.json, or a .codex/config.toml that is not the
// user's Codex config (~/.codex/config.toml, $CODEX_HOME/config.toml).
func projectConfig(file, kind string) bool {
	if p, ok := registry.Lookup(kind); ok && kind != codex.Name && kind != claude.Code && kind != claude.Desktop {
		_, project := agentFile(p, file)
		return project
	}
	switch kind {
	case claude.ProjectFile:
		return filepath.Base(file) == ".mcp.json"
	case codex.Name:
		abs, err := filepath.Abs(file)
		if err != nil || filepath.Base(abs) != "config.toml" || filepath.Base(filepath.Dir(abs)) != ".codex" {
			return false
		}
		user, err := userConfig(codex.Provider)
		return err == nil && !sameFile(user, abs)
	}
	return false
}

// emptiedFile reports whether w is an empty regular file: import's stdout
// redirected with >, which the shell emptied before import ran.
func emptiedFile(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode().IsRegular() && fi.Size() == 0
}

// samePath reports whether a and b name the same file, links followed.
func samePath(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(fa, fb)
	}
	return absPath(a) == absPath(b)
}

// detectKind tells what file holds: a JSON object is a Claude file (which
// kind, from its name and keys); anything else is read as Codex's TOML.
func detectKind(file string, data []byte) (string, error) {
	for _, p := range registry.All() {
		if p.Name() == codex.Name || p.Name() == claude.Code || p.Name() == claude.Desktop {
			continue // told apart by name and content below
		}
		if ok, _ := agentFile(p, file); ok {
			return p.Name(), nil
		}
	}
	if ext := strings.ToLower(filepath.Ext(file)); ext == ".yaml" || ext == ".yml" {
		return goose.Name, nil // of the agents, Goose alone keeps its config in YAML
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if !bytes.HasPrefix(trimmed, []byte("{")) && !strings.EqualFold(filepath.Ext(file), ".json") {
		return codex.Name, nil
	}
	kind := claude.Detect(file, data)
	if kind == "" {
		return "", fmt.Errorf("%s: a JSON file without mcpServers, and not ~/.claude.json: not a config import reads (pass --from %s if it is one)", file, strings.Join(claude.ImportKinds, "|"))
	}
	return kind, nil
}

// writeNew writes a file that must not exist yet, atomically: a temporary
// file, synced, then linked to its name, which fails if the name exists,
// so that a file created meanwhile is not overwritten either.
func writeNew(path string, data []byte, mode os.FileMode) error {
	tmp, err := writeTemp(path, data, mode)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	err = os.Link(tmp, path)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrExist):
		return existsError(path)
	}
	// No hard links here (some file systems): check, then rename.
	if _, lerr := os.Lstat(path); lerr == nil {
		return existsError(path)
	}
	return os.Rename(tmp, path)
}

// existsError refuses to replace the file of -o, saying where --force
// would keep it.
func existsError(path string) error {
	where := path + ".bak"
	if b, err := backupPath(path, ""); err == nil {
		where = b
	}
	return fmt.Errorf("%s exists: pass --force to replace it (it is kept in %s), or choose another -o", path, where)
}

// reportImport says on stderr what import did: the servers, what it left
// out and why, the notes, and the variables to set. Each line is escaped:
// it quotes configs that anyone may have written (a cloned project's).
func (a *app) reportImport(files []*providers.ImportedFile, servers []*providers.ImportedServer, secrets []providers.HiddenSecret) {
	say := func(format string, args ...any) {
		fmt.Fprintln(a.stderr, termtext.Line(fmt.Sprintf(format, args...)))
	}
	for _, f := range files {
		names := serversOf(f, servers)
		if len(names) == 0 {
			say("%s (%s): no server imported", f.File, f.Format)
		} else {
			say("%s (%s): %d server%s: %s", f.File, f.Format, len(names), plural(len(names)), strings.Join(names, ", "))
		}
		for _, sk := range f.Skipped {
			say("%s: server %q left in the file: %s", where(f.File, sk.Line), sk.Name, sk.Reason)
		}
		for _, n := range f.Notes {
			say("%s: %s", f.File, n)
		}
	}
	for _, s := range servers {
		if s.Managed {
			say("%s: server %q was written by mcpgen emit: it came from a manifest already", s.Where(), s.Server.Name)
		}
		for _, n := range s.Notes {
			say("%s: server %q: %s", s.Where(), s.Server.Name, n)
		}
		for _, k := range sortedKeys(s.KeyNotes) {
			if k != "scope" && !strings.Contains(s.KeyNotes[k], "literal secret") && !strings.Contains(s.KeyNotes[k], "literal bearer token") {
				say("%s: server %q: %s: %s", s.Where(), s.Server.Name, k, s.KeyNotes[k])
			}
		}
	}
	if len(secrets) > 0 {
		say("secrets were not copied; set these variables where the agents run:")
		for _, line := range secretLines(secrets) {
			say("  %s", line)
		}
	}
}

// secretLines lists each variable once, with every place it stands for.
func secretLines(secrets []providers.HiddenSecret) []string {
	var vars []string
	places := map[string][]string{}
	for _, s := range secrets {
		if _, ok := places[s.Var]; !ok {
			vars = append(vars, s.Var)
		}
		p := fmt.Sprintf("server %s, %s (%s)", s.Server, s.Key, s.From)
		if !slices.Contains(places[s.Var], p) {
			places[s.Var] = append(places[s.Var], p)
		}
	}
	lines := make([]string, len(vars))
	for i, v := range vars {
		lines[i] = v + ": " + strings.Join(places[v], "; ")
	}
	return lines
}

// serversOf returns the names of the servers that f defines, those that
// another file defines the same way included.
func serversOf(f *providers.ImportedFile, servers []*providers.ImportedServer) []string {
	var names []string
	for _, s := range servers {
		if s.File == f.File || slices.ContainsFunc(s.Also, func(w string) bool { return w == f.File || strings.HasPrefix(w, f.File+":") }) {
			names = append(names, s.Server.Name)
		}
	}
	return names
}

func where(file string, line int) string {
	if line > 0 {
		return fmt.Sprintf("%s:%d", file, line)
	}
	return file
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// importComments makes the comments of the imported manifest: where it
// came from and what to do next at the top, where each server came from
// above it, and remarks on single keys at the end of their lines.
func importComments(files []*providers.ImportedFile, servers []*providers.ImportedServer, secrets []providers.HiddenSecret) *manifest.Comments {
	c := &manifest.Comments{Above: map[string][]string{}, Trail: map[string]string{}}
	head := []string{"mcpgen.toml, written by mcpgen import from:"}
	for _, f := range files {
		names := serversOf(f, servers)
		list := "no server"
		if len(names) > 0 {
			list = strings.Join(names, ", ")
		}
		head = append(head, fmt.Sprintf("  %s (%s): %s", f.File, f.Format, list))
	}
	head = append(head, "")
	head = append(head, wrap("The servers are as they were: stdio servers get no workspace context (context = false: remove it to give a server WORKSPACE_ID, WORKSPACE_DIR and USER_ID), and every server goes to every provider (providers = [...] keeps one for some). Check the file with mcpgen validate; then mcpgen emit --provider P --write --force (or -o FILE) replaces the imported entries of your agents' files by mcpgen's own (emit says where it keeps the old file).")...)
	if len(secrets) > 0 {
		head = append(head, "", "Secrets were not copied. Set these variables where the agents run:")
		for _, line := range secretLines(secrets) {
			head = append(head, "  "+line)
		}
	}
	var left []string
	for _, f := range files {
		for _, sk := range f.Skipped {
			left = append(left, wrapIndent(fmt.Sprintf("%s %s: %s", where(f.File, sk.Line), sk.Name, sk.Reason))...)
		}
		for _, n := range f.Notes {
			left = append(left, wrapIndent(n)...)
		}
	}
	if len(left) > 0 {
		head = append(head, "", "Left in their files:")
		head = append(head, left...)
	}
	c.Head = head

	for _, s := range servers {
		p := "servers." + s.Server.Name
		from := "From " + s.Where()
		if len(s.Also) > 0 {
			from += ", and the same in " + strings.Join(s.Also, ", ")
		}
		lines := []string{from + "."}
		if s.Managed {
			lines = append(lines, wrap("Written by mcpgen emit (it carries mcpgen's mark): it came from a manifest already.")...)
		}
		for _, n := range s.Notes {
			lines = append(lines, wrap(n)...)
		}
		c.Above[p] = lines
		for _, k := range sortedKeys(s.KeyNotes) {
			key := k
			if strings.HasPrefix(k, "args[") {
				key = "args" // Format writes args on one line
			}
			if old := c.Trail[p+"."+key]; old != "" {
				c.Trail[p+"."+key] = old + "; " + k + ": " + s.KeyNotes[k]
			} else if key != k {
				c.Trail[p+"."+key] = k + ": " + s.KeyNotes[k]
			} else {
				c.Trail[p+"."+key] = s.KeyNotes[k]
			}
		}
	}
	return c
}

// wrap breaks text into comment lines of at most 76 characters.
func wrap(text string) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > 76 {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// wrapIndent wraps text as a list item: "  " before the first line, four
// spaces before the others.
func wrapIndent(text string) []string {
	lines := wrap(text)
	for i := range lines {
		if i == 0 {
			lines[i] = "  " + lines[i]
		} else {
			lines[i] = "    " + lines[i]
		}
	}
	return lines
}

// agentFile reports whether file is one of p's config files (its project
// file under a project, or its user file), and whether it is the project's.
func agentFile(p providers.Provider, file string) (ok, project bool) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return false, false
	}
	if user, err := providers.UserFile(p); err == nil && user != "" && sameFile(user, abs) {
		return true, false
	}
	for _, name := range p.Files().Project {
		if strings.HasSuffix(filepath.ToSlash(abs), "/"+name) {
			return true, true
		}
	}
	return false, false
}
