// Package manifest owns mcpgen.toml: its model, strict decoding with errors
// that point at the line and column to fix, validation of every rule of the
// contract, ${VAR} templates and the workspace context that every server
// receives.
package manifest

import (
	"fmt"
	"slices"
	"time"
)

// Defaults for servers that set no timeout.
const (
	DefaultStartupTimeout = 10 * time.Second
	DefaultToolTimeout    = 60 * time.Second
)

// The context variables every stdio server receives, besides [workspace.vars].
const (
	VarWorkspaceID  = "WORKSPACE_ID"
	VarWorkspaceDir = "WORKSPACE_DIR"
	VarUserID       = "USER_ID"
)

// Providers are the agents mcpgen writes configs for; a server's providers
// list may name any of them.
var Providers = []string{"claude", "claude-desktop", "codex"}

// Builtins are the servers shipped inside mcpgen.
var Builtins = []string{"files"}

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

	Version   int
	Workspace Workspace
	Servers   []*Server // in file order

	pos positions
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
	Env         []Var    // in file order
	Cwd         Template // empty: the workspace dir
	Context     ContextSelect

	// StartupTimeout and ToolTimeout are zero when the manifest sets none;
	// use Startup and ToolCall for the effective values.
	StartupTimeout time.Duration
	ToolTimeout    time.Duration

	// KindCommand
	Command Template
	Args    []Template
	Build   []string // an argv run in the manifest's directory
	Watch   []string // globs, relative to the manifest's directory

	// KindBuiltin
	Builtin  string
	ReadOnly bool // files: no writing tools

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

// ToolCall is how long one tool call may take.
func (s *Server) ToolCall() time.Duration {
	if s.ToolTimeout > 0 {
		return s.ToolTimeout
	}
	return DefaultToolTimeout
}

// ForProvider reports whether the server is meant for the provider.
func (s *Server) ForProvider(p string) bool {
	return len(s.Providers) == 0 || slices.Contains(s.Providers, p)
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
	// Run is the argv. {arg} in an element is replaced by the argument;
	// ${VAR} references are resolved from the server's environment.
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
}
