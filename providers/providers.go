// Package providers prepares the manifest's servers for the agents' config
// files. What the providers share lives here: which values are written
// literally and which stay references, and the `mcpgen serve` form for
// servers a provider cannot express. The subpackages render and merge each
// provider's own format.
package providers

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpgen/mcpgen/manifest"
)

// Scope is where a config lives, which decides what its entries may name.
type Scope int

const (
	// ScopeUser is a config of the user's that every project shares
	// (~/.codex/config.toml, ~/.claude.json, Claude Desktop's): entries
	// name the mcpgen binary and the manifest by absolute path, since
	// agents start them from anywhere, and their names take the
	// manifest's prefix, so that two projects' servers of one name can
	// live side by side.
	ScopeUser Scope = iota
	// ScopeProject is a config committed with the project (.mcp.json,
	// .codex/config.toml): it names no path of the checkout, so that it
	// works in every clone. Entries run mcpgen from PATH, which finds the
	// manifest from where the agent starts the server: agents start
	// project servers in the project's directory or below it. Names stay
	// as the manifest has them: one manifest writes the file, and a
	// prefix would only rename the tools that the project's prompts and
	// approvals know.
	ScopeProject
)

// DefaultManifest is the manifest's name that mcpgen looks for when it is
// given none.
const DefaultManifest = "mcpgen.toml"

// Options say how to prepare entries.
type Options struct {
	// Context is the workspace context as it may be written: literal for
	// emit --workspace, except what comes from mcpgen's environment, which
	// stays a reference (manifest.ContextTemplate). nil is the portable
	// context of the manifest: WORKSPACE_ID, WORKSPACE_DIR and USER_ID stay
	// references that the agent resolves from its own environment.
	Context *manifest.ContextTemplate
	// Mcpgen is the program that entries running `mcpgen serve` start.
	Mcpgen string
	// Launcher makes stdio servers go through `mcpgen connect`, so that
	// every agent of the workspace shares the launcher's processes.
	Launcher bool
	// Gateway, when set, names the one entry that stands for the whole
	// workspace: `mcpgen connect` without a server, the workspace gateway
	// (emit --gateway). It implies Launcher, unless GatewayURL is set.
	Gateway string
	// GatewayURL, with Gateway, is the URL of a launcher's gateway served
	// over HTTP (emit --gateway-url): the entry reaches it there, not
	// through a local launcher. GatewayTokenEnv names the variable that
	// holds its bearer token; empty: none (loopback, or the agent's own
	// OAuth).
	GatewayURL      string
	GatewayTokenEnv string
	// GatewayTools is how the gateway lists the workspace's tools for
	// this agent (emit --gateway-tools: "all" or "search"); "" leaves it
	// to [gateway] tools. Over HTTP it is in GatewayURL already.
	GatewayTools string
	// Scope is where the config lives: ScopeUser (the zero value) or
	// ScopeProject.
	Scope Scope
	// Root is, for a project config, the directory where agents that read
	// it run: the file's own directory (the project's, for .codex/). The
	// manifest is named relative to it.
	Root string
	// Cache, when set, keeps the servers prepared for the other providers
	// of the same run.
	Cache *Cache
}

// EntryName is the name of s's entry in the config: the manifest's prefix
// and s's name in a user config, s's name in a project's.
func (o Options) EntryName(m *manifest.Manifest, s *manifest.Server) string {
	if o.Scope == ScopeUser {
		return m.Prefix + s.Name
	}
	return s.Name
}

// ManifestFlags are the flags that make `mcpgen serve` and `connect`
// started by the config read m: --manifest and its absolute path in a
// user config; in a project's, nothing when m is the mcpgen.toml of the
// root (found by walking up from where the agent runs), else its path
// relative to the root, which mcpgen looks for from there and above too.
// --demo for the embedded demo.
func ManifestFlags(m *manifest.Manifest, o Options) []string {
	if m.Path == "" || o.Scope == ScopeUser {
		return m.Flags()
	}
	rel := relativeManifest(m, o)
	if rel == DefaultManifest {
		return nil
	}
	return []string{"--manifest", rel}
}

// relativeManifest is m's path relative to the project's root, with
// forward slashes, which every OS reads.
func relativeManifest(m *manifest.Manifest, o Options) string {
	root := o.Root
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	rel, err := filepath.Rel(root, m.CanonicalPath())
	if err != nil {
		rel = filepath.Base(m.Path) // on another volume: found from the root or above, if at all
	}
	return filepath.ToSlash(rel)
}

// Owner returns the id that marks the entries m writes into the config, and
// the other ids that mean m too. In a user config the id is m's name, else
// its canonical path, and that path is an alias (it marked m's entries
// before m had a name). A project's config names no path of the checkout:
// the id is m's name, else its path relative to the root.
func Owner(m *manifest.Manifest, o Options) (owner string, aliases []string) {
	if o.Scope == ScopeUser || m.Path == "" {
		owner = m.OwnerID()
		if p := m.CanonicalPath(); p != owner {
			aliases = append(aliases, p)
		}
		return owner, aliases
	}
	rel := relativeManifest(m, o)
	if m.Name == "" {
		return rel, nil
	}
	return m.Name, []string{rel}
}

// WithContext returns o with its Context set: the portable context of m
// when o has none.
func (o Options) WithContext(m *manifest.Manifest) (Options, error) {
	if o.Context != nil {
		return o, nil
	}
	c, err := m.ContextTemplate(manifest.ContextOptions{})
	if err != nil {
		return o, err
	}
	o.Context = c
	return o, nil
}

// An Entry is one server as a provider should start it, with the context
// applied. Values are templates: what remains a reference after preparation
// is for the agent to resolve (a secret, or the context in portable output).
type Entry struct {
	Server *manifest.Server

	// Serve is set when the entry runs `mcpgen serve NAME`, which resolves
	// the manifest when the agent spawns it.
	Serve bool

	// Stdio servers.
	Command manifest.Template
	Args    []manifest.Template
	Env     []manifest.Var
	Cwd     manifest.Template
	// Passthrough names the variables of the agent's environment that a
	// serve entry needs (its secrets); providers whose servers do not
	// inherit the agent's environment must pass them on.
	Passthrough []string

	// Remote servers.
	URL            manifest.Template
	Headers        []manifest.Var
	BearerTokenEnv string

	inCheckout bool
}

// InCheckout reports whether a native entry names a path of the manifest's
// directory (a relative command or cwd, made absolute against it), which a
// project's config must not: such an entry goes through serve, which
// resolves the path where the agent runs.
func (e *Entry) InCheckout() bool { return e.inCheckout }

// Native prepares s as written in the manifest, with the context applied.
// The provider then decides whether it can express the result, and falls
// back to Serve when it cannot.
func Native(m *manifest.Manifest, s *manifest.Server, o Options) *Entry {
	return o.Cache.entry(howNative, s, o, func() *Entry { return native(m, s, o) })
}

func native(m *manifest.Manifest, s *manifest.Server, o Options) *Entry {
	subst := substitution(o)
	e := &Entry{Server: s}
	if s.Kind == manifest.KindRemote {
		e.URL = s.URL.Substitute(subst)
		for _, h := range s.Headers {
			e.Headers = append(e.Headers, manifest.Var{Name: h.Name, Value: h.Value.Substitute(subst)})
		}
		e.BearerTokenEnv = s.BearerTokenEnv
		return e
	}
	e.Command = s.Command.Substitute(subst)
	if p, ok := e.Command.Literal(); ok {
		abs := m.ResolvePath(p)
		e.inCheckout = abs != p
		e.Command = literal(abs)
	}
	for _, a := range s.Args {
		e.Args = append(e.Args, a.Substitute(subst))
	}
	if len(s.Cwd) > 0 {
		e.Cwd = s.Cwd.Substitute(subst)
		if dir, ok := e.Cwd.Literal(); ok && !filepath.IsAbs(dir) {
			e.Cwd = literal(filepath.Join(m.Dir, dir))
			e.inCheckout = true
		}
	}
	e.Env = contextEnv(m, s, o, subst)
	for _, v := range s.Env {
		e.Env = setVar(e.Env, v.Name, v.Value.Substitute(subst))
	}
	return e
}

// Sandboxed reports whether s runs in a sandbox, which only mcpgen can
// give it: its entry runs `mcpgen serve NAME`, never the command itself.
func Sandboxed(m *manifest.Manifest, s *manifest.Server) bool {
	return m.Sandbox(s).Enabled
}

// InManifestDir reports whether s is a command server whose workspace is
// the manifest's directory by default (see manifest.DefaultDir), which a
// native entry cannot give it: it sets no cwd (so it runs in the workspace directory), it takes
// WORKSPACE_DIR from the context, and neither workspace.dir nor --dir
// names another. An agent starts a native entry where the agent runs,
// which may be below the manifest, with the agent's WORKSPACE_DIR or none;
// such a server goes through serve, which gives it the agent's
// WORKSPACE_DIR, else the manifest's directory, as both (a project's
// config may not name the directory: it differs in every clone). Servers
// that take no WORKSPACE_DIR (context = false, as import writes them) stay
// native: they run where the agent starts them, as before.
func InManifestDir(m *manifest.Manifest, s *manifest.Server, o Options) bool {
	if s.Kind != manifest.KindCommand || m.Path == "" || len(m.Workspace.Dir) > 0 || len(s.Cwd) > 0 || !s.Context.Includes(manifest.VarWorkspaceDir) {
		return false
	}
	if o.Context.Literal() && !o.Context.DirLeft {
		dir, _ := o.Context.Lookup(manifest.VarWorkspaceDir)
		d, ok := dir.Literal()
		return ok && d == m.Dir // else --dir, or where emit ran, named another
	}
	// Left to the agent: a project's entries look for the manifest, whose
	// directory is then the workspace; a user config's name it by its
	// absolute path, and the workspace is where the agent starts them,
	// as a native entry has it.
	return o.Scope == ScopeProject
}

// Serve prepares s as `mcpgen serve NAME`: the manifest is resolved when the
// agent spawns the server, so anything the provider cannot express works.
// The entry carries WORKSPACE_ID, WORKSPACE_DIR and USER_ID (from which
// serve derives the rest of the context) as o.Context has them: literal,
// or references (to the agent's context, or to what they come from in
// the environment), which a provider that cannot express them leaves out
// for serve to resolve itself. It names the secrets it needs.
func Serve(m *manifest.Manifest, s *manifest.Server, o Options) *Entry {
	return o.Cache.entry(howServe, s, o, func() *Entry { return serve(m, s, o) })
}

func serve(m *manifest.Manifest, s *manifest.Server, o Options) *Entry {
	e := &Entry{Server: s, Serve: true, Command: literal(o.Mcpgen)}
	for _, a := range slices.Concat([]string{"serve"}, ManifestFlags(m, o), []string{s.Name}) {
		e.Args = append(e.Args, literal(a))
	}
	for _, name := range []string{manifest.VarWorkspaceID, manifest.VarWorkspaceDir, manifest.VarUserID} {
		t, ok := o.Context.Lookup(name)
		if !ok {
			t = reference(name)
		}
		e.Env = append(e.Env, manifest.Var{Name: name, Value: t})
	}
	e.Passthrough = Secrets(m, s)
	return e
}

// UTF8BOM is the byte order mark that some Windows editors put at the start of UTF-8 files;
// the mergers read past it.
var UTF8BOM = []byte{0xEF, 0xBB, 0xBF}

// LauncherEnv names the variables that `mcpgen connect` reads to find the
// workspace's launcher: agents that do not pass their environment on
// (Codex) must pass these.
var LauncherEnv = []string{"MCPGEN_WORKSPACE", "MCPGEN_RUNTIME_DIR", "XDG_RUNTIME_DIR", "MCPGEN_STATE_DIR", "XDG_STATE_HOME"}

// Connect prepares s as `mcpgen connect NAME`: the agent reaches the
// workspace launcher's process, shared with every other agent, and the
// launcher is started if none runs. With a literal context the workspace is
// written into the entry, with the directory and user when they may be
// written, so that a launcher that connect starts has the same context; a
// directory or user that comes from the environment is left to that
// launcher, which resolves the manifest itself. Without one, connect reads
// MCPGEN_WORKSPACE from the agent's environment. The agent passes on the
// secrets the launcher needs for s and for the context.
func Connect(m *manifest.Manifest, s *manifest.Server, o Options) *Entry {
	return o.Cache.entry(howConnect, s, o, func() *Entry { return connect(m, s, o) })
}

func connect(m *manifest.Manifest, s *manifest.Server, o Options) *Entry {
	e := &Entry{Server: s, Serve: true, Command: literal(o.Mcpgen)}
	args := []string{"connect"}
	if o.Context.Literal() {
		args = append(args, "--workspace", o.Context.WorkspaceID)
		for _, name := range []string{manifest.VarWorkspaceDir, manifest.VarUserID} {
			t, _ := o.Context.Lookup(name)
			if v, ok := t.Literal(); ok && v != "" {
				args = append(args, manifest.Flag(name), v)
			}
		}
	}
	for _, a := range slices.Concat(args, ManifestFlags(m, o), []string{s.Name}) {
		e.Args = append(e.Args, literal(a))
	}
	e.Passthrough = slices.Clone(LauncherEnv)
	for _, name := range Secrets(m, s) {
		if !slices.Contains(e.Passthrough, name) {
			e.Passthrough = append(e.Passthrough, name)
		}
	}
	return e
}

// Gateway prepares the one entry of emit --gateway, named o.Gateway:
// `mcpgen connect` without a server, the workspace gateway, whose tools are
// those of servers (the enabled servers of m meant for the provider, in
// manifest order). When they are not every enabled server of m, the entry
// names them (--servers), so that the agent sees what the manifest means
// for it. The context is written as Connect writes it; the agent passes on
// the secrets the launcher needs for every one of them. The entry's
// timeouts are the longest the servers set.
func Gateway(m *manifest.Manifest, servers []*manifest.Server, o Options) *Entry {
	gw := &manifest.Server{Name: o.Gateway, Kind: manifest.KindCommand, Enabled: true}
	e := &Entry{Server: gw, Serve: true, Command: literal(o.Mcpgen)}
	args := []string{"connect"}
	if o.Context.Literal() {
		args = append(args, "--workspace", o.Context.WorkspaceID)
		for _, name := range []string{manifest.VarWorkspaceDir, manifest.VarUserID} {
			t, _ := o.Context.Lookup(name)
			if v, ok := t.Literal(); ok && v != "" {
				args = append(args, manifest.Flag(name), v)
			}
		}
	}
	args = append(args, ManifestFlags(m, o)...)
	if o.GatewayTools != "" {
		args = append(args, "--tools", o.GatewayTools)
	}
	enabled := 0
	for _, s := range m.Servers {
		if s.Enabled {
			enabled++
		}
	}
	if len(servers) < enabled {
		names := make([]string, len(servers))
		for i, s := range servers {
			names[i] = s.Name
		}
		args = append(args, "--servers", strings.Join(names, ","))
	}
	for _, a := range args {
		e.Args = append(e.Args, literal(a))
	}
	e.Passthrough = slices.Clone(LauncherEnv)
	for _, s := range servers {
		gw.StartupTimeout = max(gw.StartupTimeout, s.StartupTimeout)
		gw.ToolTimeout = max(gw.ToolTimeout, s.ToolTimeout)
		for _, name := range Secrets(m, s) {
			if !slices.Contains(e.Passthrough, name) {
				e.Passthrough = append(e.Passthrough, name)
			}
		}
	}
	return e
}

// RemoteGateway prepares the one entry of emit --gateway-url, named
// o.Gateway: the gateway of a launcher that serves it over HTTP, at
// o.GatewayURL, with the token of o.GatewayTokenEnv as a reference that
// the agent resolves.
func RemoteGateway(o Options) *Entry {
	gw := &manifest.Server{Name: o.Gateway, Kind: manifest.KindRemote, Enabled: true}
	return &Entry{Server: gw, URL: literal(o.GatewayURL), BearerTokenEnv: o.GatewayTokenEnv}
}

// RelayGateway prepares the entry of emit --gateway-url for an agent that
// runs stdio servers only (Claude Desktop): `mcpgen serve --url URL`,
// which relays to the gateway over Streamable HTTP and reads the token
// from the variable o.GatewayTokenEnv names, in the environment the agent
// gives it.
func RelayGateway(o Options) *Entry {
	gw := &manifest.Server{Name: o.Gateway, Kind: manifest.KindCommand, Enabled: true}
	e := &Entry{Server: gw, Serve: true, Command: literal(o.Mcpgen)}
	args := []string{"serve", "--url", o.GatewayURL}
	if o.GatewayTokenEnv != "" {
		args = append(args, "--bearer-token-env", o.GatewayTokenEnv)
		e.Passthrough = []string{o.GatewayTokenEnv}
	}
	for _, a := range args {
		e.Args = append(e.Args, literal(a))
	}
	return e
}

// Holds reports whether a config of o's scope gets s: a server of
// scope = "project" goes to project configs only (one that import took
// from a project's .mcp.json must not reach every project of the user),
// one of scope = "user" to user configs only.
func (o Options) Holds(s *manifest.Server) bool {
	if o.Scope == ScopeProject {
		return s.ForScope(manifest.ScopeProject)
	}
	return s.ForScope(manifest.ScopeUser)
}

// Meant reports whether the config that o describes, of provider, gets s.
func (o Options) Meant(s *manifest.Server, provider string) bool {
	return s.ForProvider(provider) && o.Holds(s)
}

// GatewayServers returns the servers that the gateway entry for provider
// stands for: the enabled ones meant for it and for o's scope, in manifest
// order.
func GatewayServers(m *manifest.Manifest, provider string, o Options) []*manifest.Server {
	var out []*manifest.Server
	for _, s := range m.Servers {
		if s.Enabled && o.Meant(s, provider) {
			out = append(out, s)
		}
	}
	return out
}

// Secrets returns the variables that s (and the workspace context it builds
// on) reads from the environment: every reference that is not a context
// variable. Their values are never written into a config file.
func Secrets(m *manifest.Manifest, s *manifest.Server) []string {
	var ts []manifest.Template
	// ${PWD} in [workspace] is where mcpgen runs, not the variable.
	ts = append(ts, withoutPWD(m.Workspace.Dir), withoutPWD(m.Workspace.User))
	for _, v := range m.Workspace.Vars {
		ts = append(ts, withoutPWD(v.Value))
	}
	ts = append(ts, s.Command, s.Cwd, s.URL)
	ts = append(ts, s.Args...)
	for _, v := range slices.Concat(s.Env, s.Headers) {
		ts = append(ts, v.Value)
	}
	for _, t := range s.Tools {
		ts = append(ts, t.Run...)
	}
	var names []string
	for _, t := range ts {
		for _, r := range t.Refs() {
			if !m.IsContext(r) && !slices.Contains(names, r) {
				names = append(names, r)
			}
		}
	}
	if s.BearerTokenEnv != "" && !slices.Contains(names, s.BearerTokenEnv) {
		names = append(names, s.BearerTokenEnv)
	}
	return names
}

// withoutPWD returns t without its ${PWD} references.
func withoutPWD(t manifest.Template) manifest.Template {
	var out manifest.Template
	for _, seg := range t {
		if seg.Ref != manifest.VarPWD {
			out = append(out, seg)
		}
	}
	return out
}

// substitution decides what each reference becomes: a context variable is
// its template in o.Context (literal, or references to what it comes from);
// the three variables of mcpgen in portable output, and anything else (a
// secret), stay references.
func substitution(o Options) func(string) (manifest.Template, bool) {
	return o.Context.Lookup
}

// contextEnv returns the context variables that s selects.
func contextEnv(m *manifest.Manifest, s *manifest.Server, o Options, subst func(string) (manifest.Template, bool)) []manifest.Var {
	var env []manifest.Var
	for _, name := range m.ContextNames() {
		if !s.Context.Includes(name) {
			continue
		}
		t, ok := subst(name)
		if !ok {
			t = reference(name)
		}
		env = append(env, manifest.Var{Name: name, Value: t})
	}
	return env
}

func setVar(vars []manifest.Var, name string, value manifest.Template) []manifest.Var {
	for i := range vars {
		if vars[i].Name == name {
			vars[i].Value = value
			return vars
		}
	}
	return append(vars, manifest.Var{Name: name, Value: value})
}

func literal(s string) manifest.Template {
	if s == "" {
		return manifest.Template{}
	}
	return manifest.Template{{Text: s}}
}

func reference(name string) manifest.Template {
	return manifest.Template{{Ref: name}}
}

// EmbedsAgentContext reports whether t holds WORKSPACE_ID, WORKSPACE_DIR or
// USER_ID, left for the agent, inside a longer value and without a
// default: "${WORKSPACE_DIR}/.memory.json". An agent that does not set the
// variable would make that "/.memory.json", a path at the root of the file
// system, so such a value goes through serve, which resolves the
// variable's default (the manifest's workspace.dir, else the directory
// where the agent runs).
func EmbedsAgentContext(t manifest.Template) bool {
	if len(t) < 2 {
		return false
	}
	return slices.ContainsFunc(t, func(s manifest.Segment) bool {
		return s.Ref != "" && !s.HasDefault && manifest.IsAgentContext(s.Ref)
	})
}
