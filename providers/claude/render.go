// Package claude writes the mcpServers entries of Claude Code (.mcp.json,
// ~/.claude.json) and Claude Desktop (claude_desktop_config.json), and
// merges them into the user's file.
package claude

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/providers"
	"github.com/mcpgen/mcpgen/providers/jsonfile"
)

// The providers this package writes for, as named in the manifest and on
// the command line.
const (
	Code    = "claude"
	Desktop = "claude-desktop"
)

// Render returns the entry of every server of m meant for provider (Code or
// Desktop), in the manifest's order, and warnings about servers it left out
// on purpose. It reports every server it cannot express at once.
func Render(m *manifest.Manifest, provider string, o providers.Options) (entries []Entry, warnings []string, err error) {
	if o, err = o.WithContext(m); err != nil {
		return nil, nil, err
	}
	desktop := provider == Desktop
	if o.Gateway != "" {
		return renderGateway(m, provider, o)
	}
	var errs []error
	for _, s := range m.Servers {
		switch {
		case !o.Meant(s, provider), !s.Enabled:
			continue
		case desktop && s.Kind == manifest.KindRemote:
			warnings = append(warnings, fmt.Sprintf("server %q left out: Claude Desktop runs only stdio servers from its config file", s.Name))
			continue
		}
		e, err := prepare(m, s, o, desktop)
		if err != nil {
			errs = append(errs, fmt.Errorf("server %q: %w", s.Name, err))
			continue
		}
		entries = append(entries, Entry{Name: o.EntryName(m, s), Value: encode(e, desktop)})
	}
	return entries, warnings, errors.Join(errs...)
}

// renderGateway renders the one entry of emit --gateway. Remote servers
// are in it for Claude Desktop too: the launcher reaches them, and the
// gateway is a stdio server.
func renderGateway(m *manifest.Manifest, provider string, o providers.Options) ([]Entry, []string, error) {
	desktop := provider == Desktop
	if o.GatewayURL != "" {
		// Claude Code reaches Streamable HTTP itself, the token a
		// ${VAR} of its header; Claude Desktop runs stdio servers only
		// from its file, so mcpgen serve relays to the URL.
		e := providers.RemoteGateway(o)
		if desktop {
			e = providers.RelayGateway(o)
			e.Passthrough = nil // Claude's servers inherit its environment
		}
		return []Entry{{Name: o.EntryName(m, e.Server), Value: encode(e, desktop)}}, nil, nil
	}
	if desktop && !o.Context.Literal() {
		return nil, nil, errors.New("Claude Desktop expands no ${VAR}: pass --workspace ID with --gateway")
	}
	servers := providers.GatewayServers(m, provider, o)
	if len(servers) == 0 {
		return nil, nil, fmt.Errorf("no enabled server of the manifest is meant for %s: the gateway would have no tools", provider)
	}
	e := providers.Gateway(m, servers, o)
	e.Passthrough = nil // Claude's servers inherit its environment
	return []Entry{{Name: o.EntryName(m, e.Server), Value: encode(e, desktop)}}, nil, nil
}

func prepare(m *manifest.Manifest, s *manifest.Server, o providers.Options, desktop bool) (*providers.Entry, error) {
	if desktop && !o.Context.Literal() && !s.Context.None {
		return nil, errors.New("Claude Desktop expands no ${VAR}, so the workspace context must be written literally: pass --workspace ID (or set context = false)")
	}
	if o.Launcher && s.Kind.Stdio() {
		if desktop && !o.Context.Literal() {
			return nil, errors.New("Claude Desktop expands no ${VAR}: pass --workspace ID with --launcher")
		}
		e := providers.Connect(m, s, o)
		e.Passthrough = nil // Claude's servers inherit its environment
		return e, nil
	}
	e := providers.Native(m, s, o)
	switch {
	case s.Kind == manifest.KindRemote:
		return e, nil
	// Claude Code has no cwd; Claude Desktop expands nothing; a project's
	// config names no path of its checkout; a path built on the agent's
	// WORKSPACE_DIR must not fall to the root when it is unset; and a
	// server whose workspace is the manifest's directory must not run
	// where the agent happens to start; a sandboxed one runs in mcpgen's
	// sandbox.
	case s.Kind == manifest.KindCommand && len(e.Cwd) == 0 && (!desktop || allLiteral(e)) &&
		!(o.Scope == providers.ScopeProject && e.InCheckout()) && !embedsAgentContext(e) &&
		!providers.InManifestDir(m, s, o) && !providers.Sandboxed(m, s):
		return e, nil
	}
	e = providers.Serve(m, s, o)
	var env []manifest.Var
	for _, v := range e.Env {
		switch {
		case v.Value.IsLiteral():
			env = append(env, v)
		case !desktop:
			// Claude leaves an unset ${VAR} as that text: serve would take
			// "${USER}" for the user. Empty, serve falls back to the
			// manifest's defaults, as it does for what it is not given.
			env = append(env, manifest.Var{Name: v.Name, Value: emptyDefaults(v.Value)})
		}
		// Claude Desktop expands nothing: a reference would reach serve as
		// text. Left out, serve resolves it from the manifest itself.
	}
	e.Env = env
	return e, nil
}

// emptyDefaults gives every reference of t without a default an empty one.
func emptyDefaults(t manifest.Template) manifest.Template {
	out := make(manifest.Template, len(t))
	for i, seg := range t {
		if seg.Ref != "" && !seg.HasDefault {
			seg.HasDefault = true
		}
		out[i] = seg
	}
	return out
}

// embedsAgentContext reports whether a value of e builds on context that
// the agent provides, without a default: see providers.EmbedsAgentContext.
func embedsAgentContext(e *providers.Entry) bool {
	ts := append([]manifest.Template{e.Command}, e.Args...)
	for _, v := range e.Env {
		ts = append(ts, v.Value)
	}
	return slices.ContainsFunc(ts, providers.EmbedsAgentContext)
}

func allLiteral(e *providers.Entry) bool {
	ok := e.Command.IsLiteral()
	for _, a := range e.Args {
		ok = ok && a.IsLiteral()
	}
	for _, v := range e.Env {
		ok = ok && v.Value.IsLiteral()
	}
	return ok
}

// encode writes the entry's JSON object, keys in the order Claude's own
// writer uses.
func encode(e *providers.Entry, desktop bool) []byte {
	var o jsonfile.Object
	s := e.Server
	if s.Kind == manifest.KindRemote {
		o.Add("type", str("http"))
		o.Add("url", str(value(e.URL)))
		var headers jsonfile.Object
		if e.BearerTokenEnv != "" {
			headers.Add("Authorization", str("Bearer ${"+e.BearerTokenEnv+"}"))
		}
		for _, h := range e.Headers {
			headers.Add(h.Name, str(value(h.Value)))
		}
		if headers.Len() > 0 {
			o.Add("headers", headers.Bytes())
		}
	} else {
		if !desktop {
			o.Add("type", str("stdio"))
		}
		o.Add("command", str(value(e.Command)))
		if len(e.Args) > 0 {
			args := make([]string, len(e.Args))
			for i, a := range e.Args {
				args[i] = value(a)
			}
			o.Add("args", strs(args))
		}
		if len(e.Env) > 0 {
			var env jsonfile.Object
			for _, v := range e.Env {
				env.Add(v.Name, str(value(v.Value)))
			}
			o.Add("env", env.Bytes())
		}
	}
	if s.ToolTimeout > 0 && !desktop {
		o.Add("timeout", []byte(strconv.FormatInt(s.ToolTimeout.Milliseconds(), 10)))
	}
	return o.Bytes()
}

// value writes a template in Claude's ${VAR} syntax. The context that
// portable output leaves to the agent gets an empty default: an agent
// without it then passes an empty value, as Codex's env_vars does, instead
// of the literal text "${WORKSPACE_ID}" and a warning at every start.
func value(t manifest.Template) string {
	out := make(manifest.Template, len(t))
	for i, seg := range t {
		if seg.Ref != "" && !seg.HasDefault && manifest.IsAgentContext(seg.Ref) {
			seg.HasDefault = true
		}
		out[i] = seg
	}
	return out.String()
}

// str encodes a JSON string; URLs keep their & as is.
func str(s string) []byte { return jsonfile.Str(s) }

func strs(ss []string) []byte { return jsonfile.Strs(ss) }
