package manifest

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
)

// A Context is the workspace context of one session: the variables that
// every stdio server receives in its environment.
type Context struct {
	WorkspaceID  string
	WorkspaceDir string
	UserID       string
	Vars         []EnvVar // [workspace.vars], expanded, in file order
}

// An EnvVar is one resolved environment variable.
type EnvVar struct {
	Name, Value string
}

// Lookup returns the value of a context variable.
func (c *Context) Lookup(name string) (string, bool) {
	switch name {
	case VarWorkspaceID:
		return c.WorkspaceID, true
	case VarWorkspaceDir:
		return c.WorkspaceDir, true
	case VarUserID:
		return c.UserID, true
	}
	for _, v := range c.Vars {
		if v.Name == name {
			return v.Value, true
		}
	}
	return "", false
}

// All returns every context variable, the three of mcpgen first.
func (c *Context) All() []EnvVar {
	return append([]EnvVar{
		{VarWorkspaceID, c.WorkspaceID},
		{VarWorkspaceDir, c.WorkspaceDir},
		{VarUserID, c.UserID},
	}, c.Vars...)
}

// ContextNames returns the names of every context variable of m.
func (m *Manifest) ContextNames() []string {
	names := []string{VarWorkspaceID, VarWorkspaceDir, VarUserID}
	for _, v := range m.Workspace.Vars {
		names = append(names, v.Name)
	}
	return names
}

// IsContext reports whether name is a context variable of m.
func (m *Manifest) IsContext(name string) bool {
	if name == VarWorkspaceID || name == VarWorkspaceDir || name == VarUserID {
		return true
	}
	for _, v := range m.Workspace.Vars {
		if v.Name == name {
			return true
		}
	}
	return false
}

// CheckWorkspaceID reports why id cannot name a workspace, or nil. An id
// becomes part of paths, so anything that could climb out of a directory is
// refused.
func CheckWorkspaceID(id string) error {
	if !workspaceID.MatchString(id) || strings.Contains(id, "..") {
		return fmt.Errorf("workspace id %q is not valid: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit, without \"..\"", id)
	}
	return nil
}

// ContextOptions are what the command line and the environment say about
// the workspace; empty fields fall back to the manifest, then to defaults.
type ContextOptions struct {
	WorkspaceID string // --workspace
	Dir         string // --dir
	User        string // --user
	Getenv      Lookup // the environment; nil: the process's
	Cwd         string // the current directory; empty: the process's
	// Project says that the context is written into a project's config,
	// committed and used in other clones: ContextTemplate then writes
	// WORKSPACE_DIR only when it is given as an absolute path, not one
	// made absolute against this checkout (see ContextTemplate).
	Project bool
}

// VarPWD, in [workspace], is the directory mcpgen runs in (where the agent
// started the server, or the launcher): dir = "${PWD}" makes the workspace
// follow the agent. It is read from the process, never from $PWD, which a
// parent that changed directory without a shell leaves stale (Codex passes
// its own).
const VarPWD = "PWD"

// Context resolves the workspace context: WORKSPACE_ID from the options,
// WORKSPACE_DIR from --dir, else workspace.dir, else the manifest's
// directory (DefaultDir),
// USER_ID from --user, else workspace.user, else $USER, then
// [workspace.vars] in order. A variable may use the ones before it, and
// mcpgen's environment.
func (m *Manifest) Context(o ContextOptions) (*Context, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.LookupEnv
	}
	if o.WorkspaceID != "" {
		if err := CheckWorkspaceID(o.WorkspaceID); err != nil {
			return nil, err
		}
	}
	c := &Context{WorkspaceID: o.WorkspaceID}
	known := map[string]bool{VarWorkspaceID: o.WorkspaceID != ""}
	cwd := func() (string, error) {
		if o.Cwd != "" {
			return o.Cwd, nil
		}
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("workspace dir: %w (pass --dir)", err)
		}
		return wd, nil
	}
	var cwdErr error
	lookup := func(name string) (string, bool) {
		switch {
		case known[name]:
			return c.Lookup(name)
		case m.IsContext(name):
			return "", false // not resolved yet: a later variable
		case name == VarPWD:
			wd, err := cwd()
			cwdErr = err
			return wd, err == nil
		}
		return getenv(name)
	}

	switch {
	case o.Dir != "":
		c.WorkspaceDir = o.Dir
	case len(m.Workspace.Dir) > 0:
		dir, err := m.expand(m.Workspace.Dir, lookup, "workspace", "dir")
		if cwdErr != nil {
			return nil, cwdErr
		}
		if err != nil {
			return nil, err
		}
		c.WorkspaceDir = dir
	case m.DefaultDir() != "":
		c.WorkspaceDir = m.DefaultDir()
	default:
		wd, err := cwd()
		if err != nil {
			return nil, err
		}
		c.WorkspaceDir = wd
	}
	if !filepath.IsAbs(c.WorkspaceDir) {
		base := m.Dir
		if o.Dir != "" || base == "" {
			base = o.Cwd // --dir is relative to where mcpgen runs
		}
		abs, err := filepath.Abs(filepath.Join(base, c.WorkspaceDir))
		if err != nil {
			return nil, err
		}
		c.WorkspaceDir = abs
	}
	c.WorkspaceDir = filepath.Clean(c.WorkspaceDir)
	known[VarWorkspaceDir] = true

	switch {
	case o.User != "":
		c.UserID = o.User
	case len(m.Workspace.User) > 0:
		u, err := m.expand(m.Workspace.User, lookup, "workspace", "user")
		if err != nil {
			return nil, err
		}
		c.UserID = u
	default:
		if u, ok := getenv("USER"); ok && u != "" {
			c.UserID = u
		} else if u, err := user.Current(); err == nil {
			c.UserID = u.Username
		}
	}
	known[VarUserID] = true

	for _, v := range m.Workspace.Vars {
		val, err := m.expand(v.Value, lookup, "workspace", "vars", v.Name)
		if err != nil {
			return nil, err
		}
		c.Vars = append(c.Vars, EnvVar{v.Name, val})
		known[v.Name] = true
	}
	return c, nil
}

// DefaultDir is WORKSPACE_DIR when neither --dir nor workspace.dir sets
// it, for a manifest that was looked for (Searched): its directory, so
// that an agent started anywhere in the project (Claude Code and Codex
// start a project's servers in the directory they run in, which may be
// below the manifest) gets the project's servers on the project. A
// manifest named by its absolute path, as a user config's entries name a
// personal manifest that serves every project, has none: WORKSPACE_DIR is
// then where mcpgen runs, which is where the agent started it.
// dir = "${PWD}" asks for that in any case.
func (m *Manifest) DefaultDir() string {
	if m.Searched {
		return m.Dir
	}
	return ""
}

// expand resolves t and, on failure, says where t is written.
func (m *Manifest) expand(t Template, lookup Lookup, path ...string) (string, error) {
	s, err := t.Expand(lookup)
	if err != nil {
		return "", m.errorAt(path, err)
	}
	return s, nil
}

func (m *Manifest) errorAt(path []string, err error) *Error {
	e := &Error{File: m.File, Pos: m.pos.value(path)}
	if len(path) >= 2 && path[0] == "servers" {
		e.Server, path = path[1], path[2:]
	}
	e.Key = dotted(path)
	e.Msg = e.Key + ": " + err.Error()
	return e
}

// Environ returns the variables that server s adds to the environment it
// inherits: the context variables it selects, then its own env, resolved
// from the context and, failing that, from getenv.
func (m *Manifest) Environ(s *Server, c *Context, getenv Lookup) ([]EnvVar, error) {
	var env []EnvVar
	for _, v := range c.All() {
		if s.Context.Includes(v.Name) {
			env = append(env, v)
		}
	}
	lookup := m.lookup(c, getenv)
	for _, v := range s.Env {
		val, err := m.expand(v.Value, lookup, "servers", s.Name, "env", v.Name)
		if err != nil {
			return nil, err
		}
		env = setEnv(env, v.Name, val)
	}
	return env, nil
}

func setEnv(env []EnvVar, name, value string) []EnvVar {
	for i := range env {
		if env[i].Name == name {
			env[i].Value = value
			return env
		}
	}
	return append(env, EnvVar{name, value})
}

// lookup resolves a reference: a context variable, else getenv.
func (m *Manifest) lookup(c *Context, getenv Lookup) Lookup {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	return func(name string) (string, bool) {
		if v, ok := c.Lookup(name); ok {
			return v, true
		}
		return getenv(name)
	}
}

// ProcessEnv returns the whole environment a stdio server of m runs with:
// base (the inherited environment) without the context variables, plus the
// context the server selects and its own env, resolved from the context
// and, failing that, from base.
func (m *Manifest) ProcessEnv(s *Server, c *Context, base []string) ([]string, error) {
	extra, err := m.Environ(s, c, EnvLookup(base))
	if err != nil {
		return nil, err
	}
	env := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if m.IsContext(k) || slices.ContainsFunc(extra, func(v EnvVar) bool { return v.Name == k }) {
			continue
		}
		env = append(env, kv)
	}
	for _, v := range extra {
		env = append(env, v.Name+"="+v.Value)
	}
	return env, nil
}

// EnvLookup looks variables up in a "K=V" environment; the last one wins,
// as in the process that receives it.
func EnvLookup(env []string) Lookup {
	vars := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// A Process is how to start one command server: its templates resolved.
type Process struct {
	Path string   // the program: absolute, or a name to find on PATH
	Args []string // without the program
	Dir  string   // the working directory
	Env  []EnvVar // added to the inherited environment
}

// Process resolves a command server's command, args, cwd and environment.
func (m *Manifest) Process(s *Server, c *Context, getenv Lookup) (*Process, error) {
	if s.Kind != KindCommand {
		return nil, fmt.Errorf("server %q is a %s server, not a command", s.Name, s.Kind)
	}
	lookup := m.lookup(c, getenv)
	p := &Process{}
	var err error
	if p.Path, err = m.expand(s.Command, lookup, "servers", s.Name, "command"); err != nil {
		return nil, err
	}
	p.Path = m.ResolvePath(p.Path)
	for i, a := range s.Args {
		v, err := m.expand(a, lookup, "servers", s.Name, "args", indexKey(i))
		if err != nil {
			return nil, err
		}
		p.Args = append(p.Args, v)
	}
	if p.Dir, err = m.WorkDir(s, c, getenv); err != nil {
		return nil, err
	}
	if p.Env, err = m.Environ(s, c, getenv); err != nil {
		return nil, err
	}
	return p, nil
}

// WorkDir resolves a stdio server's working directory: its cwd, relative to
// the manifest's directory, else the workspace dir.
func (m *Manifest) WorkDir(s *Server, c *Context, getenv Lookup) (string, error) {
	if len(s.Cwd) == 0 {
		return c.WorkspaceDir, nil
	}
	dir, err := m.expand(s.Cwd, m.lookup(c, getenv), "servers", s.Name, "cwd")
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(m.Dir, dir)
	}
	return filepath.Clean(dir), nil
}

// ResolvePath makes a relative program path ("./bin/x", "bin/x") absolute
// against the manifest's directory. A bare name ("npx") is left for PATH.
func (m *Manifest) ResolvePath(p string) string {
	if p == "" || filepath.IsAbs(p) || !strings.ContainsRune(p, filepath.Separator) && !strings.ContainsRune(p, '/') {
		return p
	}
	return filepath.Join(m.Dir, p)
}

// NamesDir reports whether the manifest's workspace.dir, resolved for the
// context o describes, is dir: whether the manifest itself chose it. The
// files server serves / or a home directory only then, not when it comes
// from where an agent happened to start.
func (m *Manifest) NamesDir(o ContextOptions, dir string) bool {
	// "${PWD}" is where the agent started, as the default once was.
	if len(m.Workspace.Dir) == 0 || slices.Contains(m.Workspace.Dir.Refs(), VarPWD) {
		return false
	}
	o.Dir = ""
	c, err := m.Context(o)
	return err == nil && filepath.Clean(c.WorkspaceDir) == filepath.Clean(dir)
}
