package launcher

import (
	"fmt"
	"slices"

	"github.com/mcpgen/mcpgen/internal/proc"
	"github.com/mcpgen/mcpgen/manifest"
)

// serverSpec resolves how to start server s of m in context c: a command
// server as itself, a built-in or declared one as `mcpgen serve NAME`
// (self is the mcpgen binary). base is the environment it inherits.
func serverSpec(m *manifest.Manifest, s *manifest.Server, c *manifest.Context, self string, base []string) (*proc.Spec, error) {
	spec, err := processSpec(m, s, c, self, base)
	if err != nil {
		return nil, err
	}
	// Its sandbox, resolved here: the restart key sums it up, so that a
	// change of [sandbox] restarts the servers it covers.
	if spec.Sandbox, err = m.SandboxPolicy(s, c, manifest.EnvLookup(base)); err != nil {
		return nil, err
	}
	return spec, nil
}

// processSpec is serverSpec without the sandbox.
func processSpec(m *manifest.Manifest, s *manifest.Server, c *manifest.Context, self string, base []string) (*proc.Spec, error) {
	env, err := m.ProcessEnv(s, c, base)
	if err != nil {
		return nil, err
	}
	switch s.Kind {
	case manifest.KindCommand:
		p, err := m.Process(s, c, manifest.EnvLookup(base))
		if err != nil {
			return nil, err
		}
		return &proc.Spec{Path: p.Path, Args: p.Args, Dir: p.Dir, Env: env}, nil
	case manifest.KindBuiltin, manifest.KindDeclared:
		dir, err := m.WorkDir(s, c, manifest.EnvLookup(base))
		if err != nil {
			return nil, err
		}
		// serve derives the context from these three, whatever the
		// server selects; it applies the selection itself.
		env = append(env,
			manifest.VarWorkspaceID+"="+c.WorkspaceID,
			manifest.VarWorkspaceDir+"="+c.WorkspaceDir,
			manifest.VarUserID+"="+c.UserID,
		)
		args := slices.Concat([]string{"serve"}, m.Flags(), []string{s.Name})
		return &proc.Spec{Path: self, Args: args, Dir: dir, Env: env}, nil
	}
	return nil, fmt.Errorf("server %q is remote: there is no process to start", s.Name)
}
