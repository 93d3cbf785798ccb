package manifest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A ContextTemplate is the workspace context as emit writes it into agents'
// configs: every context variable as a template, resolved as far as it may
// be written. Only literal text of the manifest and the three values given
// by flags (--workspace, --dir, --user) are written; a part that would come
// from mcpgen's environment stays a reference, for the agent (or mcpgen
// serve and connect) to resolve when it starts a server. Building one reads
// nothing from the environment, so no value of it can reach a file.
type ContextTemplate struct {
	// WorkspaceID is the id given by --workspace; empty for portable
	// output, where WORKSPACE_ID, WORKSPACE_DIR and USER_ID stay
	// references to the agent's own variables.
	WorkspaceID string
	// Vars holds every context variable: WORKSPACE_ID, WORKSPACE_DIR and
	// USER_ID (with a workspace id), then [workspace.vars], in that order.
	Vars []Var
	// DirLeft says that WORKSPACE_DIR stays ${WORKSPACE_DIR} although the
	// workspace id is written: in a project's config it would have named
	// this checkout (ContextOptions.Project).
	DirLeft bool
}

// Literal reports whether the context is written for one workspace
// (emit --workspace), rather than left to the agent.
func (c *ContextTemplate) Literal() bool { return c != nil && c.WorkspaceID != "" }

// Lookup returns the template that a reference to the context variable
// name stands for. It is false for the three variables of mcpgen in
// portable output: they stay references to themselves.
func (c *ContextTemplate) Lookup(name string) (Template, bool) {
	if c == nil {
		return nil, false
	}
	for _, v := range c.Vars {
		if v.Name == name {
			return v.Value, true
		}
	}
	return nil, false
}

// FromEnv returns the context variables whose value would come, at least in
// part, from mcpgen's environment: what emit --workspace leaves as
// references instead of writing.
func (c *ContextTemplate) FromEnv() []Var {
	if !c.Literal() {
		return nil
	}
	var vars []Var
	for _, v := range c.Vars {
		if !v.Value.IsLiteral() && !(c.DirLeft && v.Name == VarWorkspaceDir) {
			vars = append(vars, v)
		}
	}
	return vars
}

// Flag returns the emit flag that writes the context variable name
// literally ("--dir" for WORKSPACE_DIR, "--user" for USER_ID), or "".
func Flag(name string) string {
	switch name {
	case VarWorkspaceDir:
		return "--dir"
	case VarUserID:
		return "--user"
	}
	return ""
}

// ContextTemplate resolves the workspace context into templates, as
// Context resolves it into values, without reading the environment. With
// o.WorkspaceID, the id is literal, WORKSPACE_DIR is --dir, else
// workspace.dir, else the manifest's directory, USER_ID is --user, else
// workspace.user, else ${USER}; each variable may use the ones before it,
// and a reference to anything else stays one. Without it (portable output)
// the three variables of mcpgen are left to the agent and [workspace.vars]
// stand for their definitions. o.Getenv is not used.
func (m *Manifest) ContextTemplate(o ContextOptions) (*ContextTemplate, error) {
	c := &ContextTemplate{WorkspaceID: o.WorkspaceID}
	known := map[string]bool{}
	// resolve substitutes the context variables known so far. A reference
	// to one defined later is unset, as in Context: its default, or an
	// error. In portable output the three variables of mcpgen stay
	// references, and so does anything that is not context.
	resolve := func(t Template, path ...string) (Template, error) {
		var unset error
		out := t.Substitute(func(name string) (Template, bool) {
			if known[name] {
				return c.Lookup(name)
			}
			if m.IsContext(name) && (c.Literal() || !IsAgentContext(name)) {
				for _, s := range t {
					if s.Ref == name && !s.HasDefault && unset == nil {
						unset = m.errorAt(path, &UnsetError{Name: name})
					}
				}
				return Template{}, true // its default, where it has one
			}
			return nil, false
		})
		return out, unset
	}
	if c.Literal() {
		if err := CheckWorkspaceID(o.WorkspaceID); err != nil {
			return nil, err
		}
		c.Vars = append(c.Vars, Var{VarWorkspaceID, literal(o.WorkspaceID)})
		known[VarWorkspaceID] = true

		dir, err := m.dirTemplate(o, resolve)
		if err != nil {
			return nil, err
		}
		if o.Project && !m.absoluteDir(o) {
			dir, c.DirLeft = Template{{Ref: VarWorkspaceDir}}, true
		}
		c.Vars = append(c.Vars, Var{VarWorkspaceDir, dir})
		known[VarWorkspaceDir] = true

		var user Template
		switch {
		case o.User != "":
			user = literal(o.User)
		case len(m.Workspace.User) > 0:
			if user, err = resolve(m.Workspace.User, "workspace", "user"); err != nil {
				return nil, err
			}
		default:
			user = Template{{Ref: "USER"}}
		}
		c.Vars = append(c.Vars, Var{VarUserID, user})
		known[VarUserID] = true
	}
	for _, v := range m.Workspace.Vars {
		t, err := resolve(v.Value, "workspace", "vars", v.Name)
		if err != nil {
			return nil, err
		}
		c.Vars = append(c.Vars, Var{v.Name, t})
		known[v.Name] = true
	}
	return c, nil
}

// dirTemplate resolves WORKSPACE_DIR: --dir, else workspace.dir, else the
// default of the manifest as emit found it (DefaultDir), else where emit
// runs. ${PWD} in workspace.dir stays a
// reference: it is where serve runs, which Context reads. A relative path is made absolute, against where mcpgen
// runs for --dir and the manifest's directory for workspace.dir; a
// template that starts with a reference is left as it is, its variable
// taken to hold an absolute path.
func (m *Manifest) dirTemplate(o ContextOptions, resolve func(Template, ...string) (Template, error)) (Template, error) {
	var dir Template
	base := m.Dir
	switch {
	case o.Dir != "":
		dir, base = literal(o.Dir), o.Cwd
	case len(m.Workspace.Dir) > 0:
		var err error
		if dir, err = resolve(m.Workspace.Dir, "workspace", "dir"); err != nil {
			return nil, err
		}
	case m.DefaultDir() != "":
		dir = literal(m.DefaultDir())
	default:
		wd := o.Cwd
		if wd == "" {
			var err error
			if wd, err = os.Getwd(); err != nil {
				return nil, fmt.Errorf("workspace dir: %w (pass --dir)", err)
			}
		}
		dir = literal(wd)
	}
	if base == "" {
		base = o.Cwd
	}
	if s, ok := dir.Literal(); ok {
		if !filepath.IsAbs(s) {
			abs, err := filepath.Abs(filepath.Join(base, s))
			if err != nil {
				return nil, err
			}
			s = abs
		}
		return literal(filepath.Clean(s)), nil
	}
	if first := dir[0]; first.Ref == "" && !filepath.IsAbs(first.Text) {
		abs, err := filepath.Abs(base)
		if err != nil {
			return nil, err
		}
		prefix := abs + string(filepath.Separator)
		if strings.HasSuffix(abs, string(filepath.Separator)) {
			prefix = abs
		}
		dir = slices.Concat(Template{{Text: prefix + first.Text}}, dir[1:])
	}
	return dir, nil
}

// absoluteDir reports whether WORKSPACE_DIR is given as an absolute path,
// which holds in every clone: --dir /srv/ws, a workspace.dir such as
// "/srv/${WORKSPACE_ID}", "${HOME}/ws" or "${PWD}". The manifest's
// directory (the default), and a workspace.dir relative to it, are this
// checkout's path.
func (m *Manifest) absoluteDir(o ContextOptions) bool {
	switch {
	case o.Dir != "":
		return filepath.IsAbs(o.Dir)
	case len(m.Workspace.Dir) > 0:
		first := m.Workspace.Dir[0]
		return first.Ref != "" || filepath.IsAbs(first.Text)
	}
	return false
}

// IsAgentContext reports whether name is one of the three variables of
// mcpgen, which portable output leaves for the agent's environment to
// provide.
func IsAgentContext(name string) bool {
	return name == VarWorkspaceID || name == VarWorkspaceDir || name == VarUserID
}

func literal(s string) Template {
	if s == "" {
		return Template{}
	}
	return Template{{Text: s}}
}
