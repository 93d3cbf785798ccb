// Package manifest owns mcpgen.toml: its model, strict decoding with errors
// that point at the line and column to fix, validation of every rule of the
// contract, ${VAR} templates and the workspace context that every server
// receives.
package manifest

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"
)

// Defaults for servers that set no timeout.
const (
	DefaultStartupTimeout = 10 * time.Second
	DefaultToolTimeout    = 60 * time.Second
	DefaultInputTimeout   = 5 * time.Minute
)

// The context variables every stdio server receives, besides [workspace.vars].
const (
	VarWorkspaceID  = "WORKSPACE_ID"
	VarWorkspaceDir = "WORKSPACE_DIR"
	VarUserID       = "USER_ID"
)

// Providers are the agents mcpgen writes configs for; a server's providers
// list may name any of them.
var Providers = []string{"claude", "claude-desktop", "codex", "gemini", "qwen", "opencode", "cursor", "vscode", "zed", "copilot", "windsurf", "kiro", "crush", "junie", "warp", "amp", "cline", "goose", "antigravity"}

// Builtins are the servers shipped inside mcpgen.
var Builtins = []string{"files"}

// DefaultProtect is what the files server never writes unless the manifest
// says otherwise: a planted .git/config (core.fsmonitor, say) would run
// commands the next time a git tool runs. Nested repositories and
// submodules count too, since a git command at the root walks into them;
// the root's own pattern comes first because a pattern with a literal
// start also catches other names for that directory (a bind mount, a
// Windows short name).
var DefaultProtect = []string{".git/**", "**/.git/**"}

// ReservedNames are server names that Claude Code keeps for itself: an entry
// with one of them is skipped there, so the manifest refuses them.
var ReservedNames = []string{
	"workspace", "computer-use", "claude-in-chrome", "remote-devices", "claude_ai",
	"ccr-email", "hearthbot", "webagent", "claude-code-remote",
}

// A Manifest is a decoded, valid mcpgen.toml.
type Manifest struct {
	// Path is the manifest's absolute path, empty for the embedded demo.
	Path string
	// File names the manifest in messages: the path as the user gave it.
	File string
	// Dir is where relative paths in the manifest resolve: the manifest's
	// directory.
	Dir string
	// Searched says that the manifest was looked for, in the current
	// directory and those above it (mcpgen.toml, or a relative
	// --manifest), rather than named by its absolute path: WORKSPACE_DIR
	// then defaults to Dir (see DefaultDir).
	Searched bool

	Version int
	// Name is the manifest's own stable id (top-level name): it marks the
	// entries it owns in configs that several manifests share. Empty when
	// unset; OwnerID then falls back to the manifest's path.
	Name string
	// Prefix is put before every server's name in the entries of shared
	// (user-scope) configs, so that two projects' servers of the same name
	// can live side by side.
	Prefix    string
	Workspace Workspace
	Session   Session
	Gateway   Gateway
	// SandboxDefaults is the top-level [sandbox] table, the defaults of
	// every stdio server's sandbox; nil when the manifest has none (see
	// Manifest.Sandbox).
	SandboxDefaults *SandboxRules
	Servers         []*Server // in file order

	// Warnings are what validate shows about a valid manifest: things
	// allowed but likely a mistake or a risk, in file order.
	Warnings Errors

	pos positions
	// canonical is Path with the symlinks of its directory resolved.
	canonical string
}

// Session is the [session] table: how a launcher of this manifest behaves.
type Session struct {
	// IdleExit is how long a launcher with no client and no running server
	// waits before it exits; zero when the manifest sets none.
	IdleExit time.Duration

	// Listen is the host:port where the launcher serves the workspace over
	// HTTP (launch --listen overrides it); empty: no HTTP. Port 0 picks a
	// free one.
	Listen string
	// TLSCert and TLSKey are the PEM files of HTTPS, both or neither, as
	// written (SessionPath resolves them). Neither: plain HTTP, for behind
	// an ingress.
	TLSCert, TLSKey string
	// SessionTimeout ends an HTTP client's session once unused for that
	// long; zero when the manifest sets none (see HTTPSessionTimeout).
	SessionTimeout time.Duration
	// Auth is [session.auth]; nil when the manifest has none.
	Auth *Auth
	// Metrics says who may read /metrics of the HTTP face: MetricsAuth
	// (the face's authentication, as the MCP endpoints) or MetricsOpen
	// (anyone who reaches the address, for a scraper inside the cluster);
	// empty when the manifest sets none (auth).
	Metrics string
	// DrainTimeout bounds a launcher's drain on SIGTERM, from the signal
	// to its exit; zero when the manifest sets none (see Drain).
	DrainTimeout time.Duration
}

// The values of [session] metrics.
const (
	MetricsAuth = "auth"
	MetricsOpen = "open"
)

// DefaultDrainTimeout is how long a drain may take when [session]
// drain_timeout says nothing: Kubernetes' default grace period, after
// which it kills the container.
const DefaultDrainTimeout = 30 * time.Second

// Drain is how long a launcher's drain on SIGTERM may take.
func (s *Session) Drain() time.Duration {
	if s.DrainTimeout > 0 {
		return s.DrainTimeout
	}
	return DefaultDrainTimeout
}

// DefaultSessionTimeout is how long an unused HTTP session lasts when
// [session] session_timeout says nothing.
const DefaultSessionTimeout = 30 * time.Minute

// HTTPSessionTimeout is how long an unused HTTP session lasts.
func (s *Session) HTTPSessionTimeout() time.Duration {
	if s.SessionTimeout > 0 {
		return s.SessionTimeout
	}
	return DefaultSessionTimeout
}

// Auth is the [session.auth] table: how the launcher's HTTP face tells an
// agent it serves from anyone else. Each way that is set admits a request:
// a bearer token of token_env or tokens_file, or a JWT access token of
// issuer.
type Auth struct {
	// TokenEnv names the variable that holds a bearer token, read once
	// when the launcher starts; the token is never in the manifest.
	TokenEnv string
	// TokensFile is a file of bearer tokens, one a line, as written:
	// relative to the manifest's directory (see SessionPath).
	TokensFile string
	// Issuer is the OAuth authorization server whose JWT access tokens
	// are accepted; empty: none are.
	Issuer string
	// Audience is the aud that a JWT must hold; empty: the URL of the
	// launcher's endpoint.
	Audience string
	// JWKSURL is where the issuer's keys are; empty: the jwks_uri of the
	// issuer's metadata.
	JWKSURL string
	// RequiredScopes must all be granted by a JWT.
	RequiredScopes []string
}

// SessionPath resolves a path of [session] (tls_cert, tls_key,
// tokens_file) against the manifest's directory: any relative path, bare
// file names too, since these are files of the manifest's own, never
// programs looked up on PATH.
func (m *Manifest) SessionPath(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(m.Dir, p)
}

// Gateway prefix modes: how the workspace gateway names tools.
const (
	GatewayPrefixConflicts = "conflicts" // SERVER__TOOL only for names that collide
	GatewayPrefixAlways    = "always"    // SERVER__TOOL for every tool
)

// Gateway tools modes: what the workspace gateway lists.
const (
	GatewayToolsAll    = "all"    // every tool of every server
	GatewayToolsSearch = "search" // search_tools, call_tool and the pinned tools
)

// Gateway is the [gateway] table: how the workspace gateway presents the
// workspace's servers.
type Gateway struct {
	Prefix string // GatewayPrefixConflicts (the default) or GatewayPrefixAlways
	// Tools is GatewayToolsAll ("" too, the default) or GatewayToolsSearch;
	// connect --tools chooses for one agent.
	Tools string
	// Pin names tools, as the gateway names them, that search mode lists
	// as themselves.
	Pin []string
	// SearchReveal lists the tools an agent found in search mode from
	// then on, and tells it (list_changed).
	SearchReveal bool
}

// Server returns the server called name, or nil.
func (m *Manifest) Server(name string) *Server {
	for _, s := range m.Servers {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// OwnerID is the stable id that marks the entries this manifest writes into
// configs that several manifests share: its name when it has one, else
// its canonical path ("demo" for the embedded demo).
func (m *Manifest) OwnerID() string {
	if m.Name != "" {
		return m.Name
	}
	return m.CanonicalPath()
}

// CanonicalPath is the manifest's path with the symlinks of its directory
// resolved, so that one manifest has one path however it is reached (a
// symlinked checkout, macOS's /tmp and /private/tmp); "demo" for the
// embedded demo. The file's own name is kept: a manifest that is itself
// a symlink, as a Kubernetes ConfigMap mounts it, keeps its id when the
// link moves to a new version.
func (m *Manifest) CanonicalPath() string {
	switch {
	case m.canonical != "":
		return m.canonical
	case m.Path != "":
		return m.Path
	}
	return "demo"
}

// Flags are the mcpgen flags that make another mcpgen process read this
// manifest: --manifest PATH, or --demo for the embedded one.
func (m *Manifest) Flags() []string {
	if m.Path == "" {
		return []string{"--demo"}
	}
	return []string{"--manifest", m.Path}
}

// Where returns "file:line:col" of a dotted key path such as
// servers.git.env.TOKEN, for errors found after loading (an unset variable
// at launch, say).
func (m *Manifest) Where(path ...string) string {
	p := m.pos.value(path)
	return fmt.Sprintf("%s:%d:%d", m.File, p.Line, p.Column)
}

// Workspace is the [workspace] table: how a workspace id maps to the
// context variables.
type Workspace struct {
	Dir  Template // WORKSPACE_DIR; empty: the current directory
	User Template // USER_ID; empty: $USER
	Vars []Var    // [workspace.vars], in file order
}

// A Var is a named template: an env entry, a header, a workspace variable.
type Var struct {
	Name  string
	Value Template
}

// Kind is what a server is made of. Each server is exactly one kind.
type Kind int

const (
	KindCommand  Kind = iota // a stdio process: command, args
	KindBuiltin              // a server shipped in mcpgen
	KindDeclared             // tools declared in the manifest, each a command
	KindRemote               // a streamable HTTP server: url
)

var kindNames = [...]string{"command", "builtin", "declared", "remote"}

func (k Kind) String() string { return kindNames[k] }

// Stdio reports whether servers of this kind run as local stdio processes.
func (k Kind) Stdio() bool { return k != KindRemote }

// A Server is one [servers.NAME] table.
type Server struct {
	Name        string
	Kind        Kind
	Description string
	Enabled     bool
	Providers   []string // empty: every provider
	Scope       string   // ScopeUser, ScopeProject, or "": configs of both
	Env         []Var    // in file order
	Cwd         Template // empty: the workspace dir
	Context     ContextSelect

	// StartupTimeout, ToolTimeout and InputTimeout are zero when the
	// manifest sets none; use Startup, ToolCall and Input for the
	// effective values.
	StartupTimeout time.Duration
	ToolTimeout    time.Duration
	InputTimeout   time.Duration

	// EnabledTools, when not nil, are the only tools the hub and the
	// gateway expose; DisabledTools are hidden. Codex's own key names.
	EnabledTools  []string
	DisabledTools []string

	// Lazy servers start on first use (start = "lazy"), not at launch.
	Lazy bool
	// Protocol is the revision of MCP that the launcher speaks to the
	// server (protocol = "..."); "" (auto): the server's answers decide.
	// Omitted from JSON when auto, so that the launcher's keys of servers
	// that do not set it stay what they were.
	Protocol string `json:",omitempty"`
	// IdleTimeout stops a running server with no client and no call for
	// that long; zero: never.
	IdleTimeout time.Duration

	// MemoryMax (bytes) and CPUMax (CPUs) limit a stdio server's processes
	// where cgroups are available; zero: no limit.
	MemoryMax int64
	CPUMax    float64
	// MemoryMaxPos and CPUMaxPos are where their values are, for errors
	// about a limit that the system cannot enforce.
	MemoryMaxPos, CPUMaxPos Position
	// Sandbox is [servers.NAME.sandbox], over the top-level defaults; nil
	// when the server has none (see Manifest.Sandbox). Omitted from JSON
	// when nil, as Protocol is, so that the launcher's keys of servers
	// without one stay what they were.
	Sandbox *SandboxRules `json:",omitempty"`

	// KindCommand
	Command Template
	Args    []Template
	Build   []string // an argv run in the manifest's directory
	Watch   []string // globs, relative to the manifest's directory

	// KindBuiltin
	Builtin  string
	ReadOnly bool // files: no writing tools
	// Protect lists globs, relative to the workspace, that the files
	// server never writes: DefaultProtect unless the manifest says otherwise.
	Protect []string

	// KindDeclared
	Tools []*Tool // in file order

	// KindRemote
	URL            Template
	Headers        []Var
	BearerTokenEnv string // the name of the variable that holds the token

	Pos Position // the table's header
}

// Startup is how long the server may take to become ready.
func (s *Server) Startup() time.Duration {
	if s.StartupTimeout > 0 {
		return s.StartupTimeout
	}
	return DefaultStartupTimeout
}

// Input is how long a call that waits for an agent's input is held for
// its retry (see docs/eras.md).
func (s *Server) Input() time.Duration {
	if s.InputTimeout > 0 {
		return s.InputTimeout
	}
	return DefaultInputTimeout
}

// ToolCall is how long one tool call may take.
func (s *Server) ToolCall() time.Duration {
	if s.ToolTimeout > 0 {
		return s.ToolTimeout
	}
	return DefaultToolTimeout
}

// ExposesTool reports whether the tool filters (enabled_tools,
// disabled_tools) let the tool through.
func (s *Server) ExposesTool(name string) bool {
	if s.EnabledTools != nil && !slices.Contains(s.EnabledTools, name) {
		return false
	}
	return !slices.Contains(s.DisabledTools, name)
}

// ForProvider reports whether the server is meant for the provider.
func (s *Server) ForProvider(p string) bool {
	return len(s.Providers) == 0 || slices.Contains(s.Providers, p)
}

// The scopes of the configs a server may be written to (scope = "..."): a
// user's own config, which every project of the user shares
// (~/.codex/config.toml, ~/.claude.json, Claude Desktop's), or a project's,
// committed with it (.mcp.json, .codex/config.toml).
const (
	ScopeUser    = "user"
	ScopeProject = "project"
)

// Scopes are the values of scope.
var Scopes = []string{ScopeUser, ScopeProject}

// ForScope reports whether the server goes to configs of the scope
// (ScopeUser or ScopeProject): a server without one goes to both.
func (s *Server) ForScope(scope string) bool {
	return s.Scope == "" || s.Scope == scope
}

// ContextSelect chooses which context variables a server receives. The zero
// value selects all of them.
type ContextSelect struct {
	None bool     // context = false
	Only []string // context = ["NAME", ...]
}

// Includes reports whether the variable name is selected.
func (c ContextSelect) Includes(name string) bool {
	if c.None {
		return false
	}
	return c.Only == nil || slices.Contains(c.Only, name)
}

// A Tool is one [servers.NAME.tools.TOOL] table of a declared server.
type Tool struct {
	Name        string
	Description string
	// Run is the argv. {arg} in an element is replaced by the argument
	// (Load refuses a {name} that names none); ${VAR} references are
	// resolved from the server's environment.
	Run     []Template
	Args    []*Arg        // in file order
	Timeout time.Duration // zero: the server's tool timeout
	Pos     Position
}

// Arg types of declared tools.
const (
	TypeString  = "string"
	TypeInteger = "integer"
	TypeNumber  = "number"
	TypeBoolean = "boolean"
)

// An Arg is one argument of a declared tool.
type Arg struct {
	Name        string
	Type        string
	Description string
	// Default holds a string, int64, float64 or bool, matching Type; nil when
	// there is none.
	Default  any
	Required bool
	Enum     []any
	// AllowDash lets a string argument start with "-". Off by default: a
	// value such as "--output=/x" substituted as a whole argv element
	// would be read as an option by the command.
	AllowDash bool
	// AllowShell lets a string argument be substituted into code that an
	// interpreter runs (sh -c, python -c: see ShellUses). Off by default:
	// the model would write code.
	AllowShell bool
}
